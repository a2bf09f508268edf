//! When a pool may verify: windows in a week, such as `Mon-Fri 22:00-06:00` (an end before its
//! start runs into the next day), `Sat-Sun 00:00-24:00`, `daily 20:00-06:00`, or `always`.
//! Times are UTC.

/// Minutes in a week.
pub const WEEK: u32 = 7 * 24 * 60;

const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// Open stretches of the week, as [start, end) minutes from Monday 00:00 UTC (an end beyond a
/// week wraps to Monday).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Windows(pub Vec<(u32, u32)>);

fn day(s: &str) -> Option<usize> {
    let l = s.to_ascii_lowercase();
    DAYS.iter().position(|d| l.starts_with(d) && l.len() >= 3)
}

fn minute(s: &str) -> Option<u32> {
    let (h, m) = s.split_once(':')?;
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    (h <= 24 && m < 60 && (h < 24 || m == 0)).then_some(h * 60 + m)
}

/// One window: `always`, or DAYS HH:MM-HH:MM with DAYS `daily`, a day (`Mon`) or a range
/// (`Mon-Fri`, `Fri-Mon`). Err says what is wrong.
pub fn parse_one(text: &str) -> Result<Vec<(u32, u32)>, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("always") {
        return Ok(vec![(0, WEEK)]);
    }
    let expected =
        "expected `always` or DAYS HH:MM-HH:MM, e.g. `Mon-Fri 22:00-06:00`, `Sat 00:00-24:00`, `daily 20:00-06:00`";
    let (days, hours) = t.split_once(' ').ok_or_else(|| format!("window '{t}': {expected}"))?;
    let days: Vec<usize> = if days.eq_ignore_ascii_case("daily") {
        (0..7).collect()
    } else if let Some((a, b)) = days.split_once('-') {
        let (a, b) = (
            day(a).ok_or_else(|| format!("window '{t}': '{a}' is not a day (Mon … Sun)"))?,
            day(b).ok_or_else(|| format!("window '{t}': '{b}' is not a day (Mon … Sun)"))?,
        );
        let mut v = vec![a];
        let mut d = a;
        while d != b {
            d = (d + 1) % 7;
            v.push(d);
        }
        v
    } else {
        vec![day(days).ok_or_else(|| format!("window '{t}': '{days}' is not a day (Mon … Sun) or `daily`"))?]
    };
    let (from, to) = hours
        .trim()
        .split_once('-')
        .ok_or_else(|| format!("window '{t}': {expected}"))?;
    let (from, to) = (
        minute(from).ok_or_else(|| format!("window '{t}': '{from}' is not a time HH:MM"))?,
        minute(to).ok_or_else(|| format!("window '{t}': '{to}' is not a time HH:MM"))?,
    );
    if from == to {
        return Err(format!(
            "window '{t}': it starts and ends at {}, so it never opens",
            &hours.trim()[..5.min(hours.trim().len())]
        ));
    }
    let len = if to > from { to - from } else { 24 * 60 - from + to };
    Ok(days
        .into_iter()
        .map(|d| (d as u32 * 24 * 60 + from, d as u32 * 24 * 60 + from + len))
        .collect())
}

impl Windows {
    /// Every window of a list (empty: always open).
    pub fn parse(list: &[String]) -> Result<Windows, String> {
        if list.is_empty() {
            return Ok(Windows(vec![(0, WEEK)]));
        }
        let mut all = Vec::new();
        for w in list {
            all.extend(parse_one(w)?);
        }
        Ok(Windows(all))
    }

    /// Whether the minute of the week `m` (0 = Monday 00:00 UTC) is inside a window.
    pub fn open_at(&self, m: u32) -> bool {
        self.0
            .iter()
            .any(|(a, b)| (m >= *a && m < *b) || (*b > WEEK && m < b - WEEK))
    }

    /// Whether the window is open at `t` (seconds since the epoch).
    pub fn open(&self, t: f64) -> bool {
        self.open_at(minute_of_week(t))
    }

    /// When the windows next open at or after `t` (seconds since the epoch): `t` itself when
    /// they are open, else the start of the next open minute; None when they never open.
    pub fn next_open(&self, t: f64) -> Option<f64> {
        if self.open(t) {
            return Some(t);
        }
        let start = (t / 60.0).floor() * 60.0;
        (1..=WEEK as u64)
            .map(|i| start + 60.0 * i as f64)
            .find(|t| self.open(*t))
    }

    /// Open minutes in a week (overlapping windows counted once).
    pub fn open_minutes(&self) -> u32 {
        (0..WEEK).filter(|m| self.open_at(*m)).count() as u32
    }
}

/// The minute of the week (0 = Monday 00:00 UTC) of `t`, seconds since the epoch. The epoch
/// was a Thursday.
pub fn minute_of_week(t: f64) -> u32 {
    let minutes = (t / 60.0).floor() as i64;
    ((minutes + 3 * 24 * 60).rem_euclid(WEEK as i64)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_their_days_and_hours_and_wrap_overnight() {
        let w = Windows::parse(&["Mon-Fri 22:00-06:00".into()]).unwrap();
        assert_eq!(w.0.len(), 5);
        assert!(w.open_at(22 * 60), "Monday 22:00");
        assert!(w.open_at(24 * 60 + 5 * 60), "Tuesday 05:00 (Monday's night)");
        assert!(!w.open_at(12 * 60), "Monday noon");
        assert!(w.open_at(5 * 24 * 60 + 3 * 60), "Saturday 03:00 (Friday's night)");
        assert!(!w.open_at(5 * 24 * 60 + 22 * 60), "Saturday 22:00");
        assert_eq!(w.open_minutes(), 5 * 8 * 60);
        let wrap = Windows::parse(&["Sun 23:00-01:00".into()]).unwrap();
        assert!(wrap.open_at(0), "Monday 00:00, the week's wrap");
        assert_eq!(
            Windows::parse(&["Sat-Sun 00:00-24:00".into()]).unwrap().open_minutes(),
            2 * 24 * 60
        );
        assert_eq!(Windows::parse(&[]).unwrap().open_minutes(), WEEK);
    }

    #[test]
    fn a_window_that_never_opens_or_does_not_parse_is_named() {
        let e = parse_one("Mon 10:00-10:00").unwrap_err();
        assert!(e.contains("never opens"), "{e}");
        assert!(parse_one("Moonday 10:00-11:00").unwrap_err().contains("not a day"));
        assert!(parse_one("Mon 25:00-26:00").unwrap_err().contains("not a time"));
        assert!(parse_one("nights").unwrap_err().contains("expected `always`"));
    }

    #[test]
    fn the_next_opening_is_found() {
        let w = Windows::parse(&["Mon-Fri 22:00-06:00".into()]).unwrap();
        // Monday 2026-11-23 08:30 UTC: the window opens at 22:00 the same day.
        let t = 1_795_422_600.0;
        assert_eq!(w.next_open(t), Some(t + (13.0 * 60.0 + 30.0) * 60.0));
        assert_eq!(w.next_open(t + 14.0 * 3600.0), Some(t + 14.0 * 3600.0), "open now");
        // Friday night's window ends Saturday 06:00; the next opens Monday 22:00.
        let sat = t + (5.0 * 24.0 - 2.5) * 3600.0;
        assert_eq!(w.next_open(sat), Some(t + (7.0 * 24.0 + 13.5) * 3600.0));
    }

    #[test]
    fn the_epoch_was_a_thursday() {
        assert_eq!(minute_of_week(0.0), 3 * 24 * 60);
        // 2026-11-23 is a Monday; 08:30 UTC.
        assert_eq!(minute_of_week(1_795_422_600.0), 8 * 60 + 30);
    }
}
