//! Measurements placed on fixed intervals by what they measured.
//!
//! A host's sample says what it moved between two moments of its own: `[end − seconds, end]`.
//! Its clock and its sleeps drift, so a sample's end falls anywhere near an interval's edge
//! (1.001, 2.001, … 30.011 s), and a rule that rounds the end up to an interval puts two samples
//! in one interval and none in the next: a rate of 0 where data never stopped, and twice the
//! rate beside it. Here a sample's amount is spread over the intervals its span covers in
//! proportion to the time it covers in each (a uniform rate within a sample: the finest
//! resolution the sample has), and each interval's rate is its amount over its length. So:
//!
//! - the intervals are `[k·width, (k+1)·width)`: from 0 for a challenge (its start); on the
//!   epoch's grid for the monitors (so that every window and the live figures cut time alike),
//!   the first beginning at the window's first sample; the last one ending at the last
//!   sample's end: a partial interval has its own length, and its rate is over that length;
//! - a source (a host, an agent) is running from its first sample's start to its last one's
//!   end; an interval in which a running source measured nothing at all (no sample covers it:
//!   a lost sample, a host suspended) has no rate (None): what it moved then is unknown, and
//!   is not a zero; where its samples cover only part of its running time in an interval, its
//!   rate over the covered part stands for the rest;
//! - an interval in which sources measured and nothing moved has the rate 0.
//!
//! The long-term averages (seed 002's smoothing of 10 s samples over 100 s) are each interval's
//! rate averaged over the last `k` intervals, weighted by their lengths, the unknown ones left
//! out; and the table's statistics over them weigh each interval by its length in intervals (a
//! full interval 1, a partial last one its fraction): see `weighted_row`.

use std::collections::BTreeMap;

/// One measurement: what `source` moved between `start` and `end` (seconds on a common time
/// base), per channel (a pool's reads, its writes, …).
#[derive(Debug, Clone, PartialEq)]
pub struct Span<'a> {
    /// Who measured it: a host, or an agent (host/pid).
    pub source: &'a str,
    /// When the measurement began.
    pub start: f64,
    /// When it ended.
    pub end: f64,
    /// What moved, per channel (bytes).
    pub amounts: Vec<f64>,
}

/// The measurements on their intervals.
#[derive(Debug, Clone, PartialEq)]
pub struct Intervals {
    /// The intervals' width in seconds.
    pub width: f64,
    /// Each interval's end (the last one's: the last measurement's end).
    pub ends: Vec<f64>,
    /// Each interval's length in seconds: `width`, the last one less when the measurements end
    /// inside it.
    pub lengths: Vec<f64>,
    /// Per channel, per interval: the amount per second, summed over the sources; None where a
    /// running source measured nothing.
    pub rates: Vec<Vec<Option<f64>>>,
}

/// A span shorter than this share of an interval (or than a microsecond) is taken as touching
/// it, not covering it: the edges of floating-point times, which on epoch seconds are good to
/// about a quarter of a microsecond.
fn edge(width: f64) -> f64 {
    (width * 1e-6).max(1e-6)
}

/// The overlap of `[a0, a1]` and `[b0, b1]`, in seconds (0 when apart).
fn overlap(a0: f64, a1: f64, b0: f64, b1: f64) -> f64 {
    (a1.min(b1) - a0.max(b0)).max(0.0)
}

/// Places `spans` (each with `channels` amounts; missing ones are 0) on intervals of `width`
/// seconds from 0: a challenge, whose sources (its agents) are what moves the data. Spans that
/// end before 0 or cover no time are left out; a span that begins before 0 counts from 0 (its
/// share before is left out). A source counts from its first span's start to its last span's
/// end: in an interval it ran part of, its rate over what its samples covered stands for the
/// part it ran (not for the whole interval: before it started it moved nothing); an interval
/// it ran in without a sample is unknown; an interval in which no source ran has moved nothing.
pub fn place(spans: &[Span], channels: usize, width: f64) -> Intervals {
    let grid = Grid::new(spans, width, 0.0);
    let n = grid.n;
    let (mut totals, mut unknown) = (vec![vec![0.0; n]; channels], vec![false; n]);
    for spans in grid.by_source(spans).values() {
        let mine = grid.covered(spans, channels);
        let running_from = spans.iter().map(|s| s.0.max(grid.from)).fold(f64::INFINITY, f64::min);
        let running_to = spans.iter().map(|s| s.1).fold(0.0, f64::max);
        for k in grid.index(running_from)..n {
            let running = overlap(running_from, running_to, grid.start_of(k), grid.end_of(k));
            if running <= grid.edge {
                continue;
            }
            match mine.get(&k) {
                Some((amounts, covered)) if *covered > grid.edge => {
                    for (c, a) in amounts.iter().enumerate() {
                        totals[c][k] += a * running / covered;
                    }
                }
                _ => unknown[k] = true,
            }
        }
    }
    grid.intervals(totals, |_, k| unknown[k])
}

/// Places `spans` on the intervals `[k·width, (k+1)·width)` of one grid for every reader (the
/// epoch's: any window, and the live figures, cut time the same way), from the interval holding
/// `from` — which begins at `from`, a partial first interval with its own length as the last
/// one has — to the last span's end: the monitors', whose sources only watch. What a span
/// covered before `from` is left out. `measures(source, channel)` says which channels a source
/// watches (a host, its pools). A channel's rate in an interval is known when every source
/// watching it has a sample there, and is their sum, each source's rate over what its samples
/// covered standing for the whole interval; where one of them has none (its monitor not
/// running, a sample lost) it is unknown, never a zero.
pub fn place_watched(
    spans: &[Span],
    channels: usize,
    width: f64,
    from: f64,
    measures: &dyn Fn(&str, usize) -> bool,
) -> Intervals {
    let grid = Grid::new(spans, width, from);
    let n = grid.n;
    let (mut totals, mut unknown) = (vec![vec![0.0; n]; channels], vec![vec![false; n]; channels]);
    for (source, spans) in grid.by_source(spans) {
        let mine = grid.covered(&spans, channels);
        for c in (0..channels).filter(|c| measures(source, *c)) {
            for k in 0..n {
                match mine.get(&k) {
                    Some((amounts, covered)) if *covered > grid.edge => {
                        totals[c][k] += amounts[c] * grid.length(k) / covered;
                    }
                    _ => unknown[c][k] = true,
                }
            }
        }
    }
    grid.intervals(totals, |c, k| unknown[c][k])
}

/// A span's start and end relative to the grid's origin, and its amounts.
type Rel<'a> = (f64, f64, &'a [f64]);

/// The intervals' grid: `n` intervals from the one holding `from`, times relative to that
/// interval's start (`origin`) so that epoch seconds keep their precision.
struct Grid {
    width: f64,
    origin: f64,
    from: f64,
    last_end: f64,
    n: usize,
    edge: f64,
}

impl Grid {
    fn new(spans: &[Span], width: f64, from: f64) -> Grid {
        let edge = edge(width);
        let (origin, from) = if width > 0.0 {
            let origin = (from / width + 1e-6).floor() * width;
            (origin, (from - origin).max(0.0))
        } else {
            (0.0, 0.0)
        };
        let last_end = spans
            .iter()
            .filter(|s| s.end > s.start && s.end - origin > from + edge)
            .map(|s| s.end - origin)
            .fold(f64::NEG_INFINITY, f64::max);
        let n = if width > 0.0 && last_end.is_finite() {
            (last_end / width - 1e-6).ceil().max(1.0) as usize
        } else {
            0
        };
        Grid {
            width,
            origin,
            from,
            last_end,
            n,
            edge,
        }
    }

    fn start_of(&self, k: usize) -> f64 {
        (k as f64 * self.width).max(self.from)
    }

    fn end_of(&self, k: usize) -> f64 {
        ((k + 1) as f64 * self.width).min(self.last_end)
    }

    fn length(&self, k: usize) -> f64 {
        self.end_of(k) - self.start_of(k)
    }

    /// The interval holding relative time `t`.
    fn index(&self, t: f64) -> usize {
        ((t / self.width).floor().max(0.0) as usize).min(self.n.saturating_sub(1))
    }

    /// The spans that end after `from`, relative, by source.
    fn by_source<'a>(&self, spans: &'a [Span]) -> BTreeMap<&'a str, Vec<Rel<'a>>> {
        let mut out: BTreeMap<&str, Vec<Rel>> = BTreeMap::new();
        if self.n == 0 {
            return out;
        }
        for s in spans {
            let (start, end) = (s.start - self.origin, s.end - self.origin);
            if end > start && end > self.from + self.edge {
                out.entry(s.source).or_default().push((start, end, &s.amounts[..]));
            }
        }
        out
    }

    /// One source's amounts and covered seconds per interval it touches: each span's amounts
    /// spread in proportion to the time it covers in each.
    fn covered(&self, spans: &[Rel], channels: usize) -> BTreeMap<usize, (Vec<f64>, f64)> {
        let mut mine: BTreeMap<usize, (Vec<f64>, f64)> = BTreeMap::new();
        for (start, end, amounts) in spans {
            let lo = start.max(self.from);
            let mut k = self.index(lo);
            while k < self.n && self.start_of(k) < *end {
                let part = overlap(lo, *end, self.start_of(k), self.end_of(k));
                if part > self.edge {
                    let share = part / (end - start);
                    let e = mine.entry(k).or_insert_with(|| (vec![0.0; channels], 0.0));
                    for (c, a) in amounts.iter().take(channels).enumerate() {
                        e.0[c] += a * share;
                    }
                    e.1 += part;
                }
                k += 1;
            }
        }
        mine
    }

    /// The intervals with `totals` (amounts per channel and interval) as rates, None where
    /// `unknown(channel, interval)`.
    fn intervals(&self, totals: Vec<Vec<f64>>, unknown: impl Fn(usize, usize) -> bool) -> Intervals {
        let rates = totals
            .into_iter()
            .enumerate()
            .map(|(c, t)| {
                t.into_iter()
                    .enumerate()
                    .map(|(k, a)| (!unknown(c, k)).then(|| a / self.length(k)))
                    .collect()
            })
            .collect();
        Intervals {
            width: self.width,
            ends: (0..self.n).map(|k| self.end_of(k) + self.origin).collect(),
            lengths: (0..self.n).map(|k| self.length(k)).collect(),
            rates,
        }
    }
}

impl Intervals {
    /// How many intervals.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The sum of `channels`' rates per interval (None where any is unknown).
    pub fn sum(&self, channels: &[usize]) -> Vec<Option<f64>> {
        (0..self.len())
            .map(|k| channels.iter().map(|c| self.rates[*c][k]).sum())
            .collect()
    }

    /// Each interval's long-term average of `series` (one of `rates`, or a `sum`): the mean
    /// over the last `k` intervals up to it, weighted by their lengths, unknown intervals left
    /// out (None when all of them are unknown).
    pub fn long_term(&self, series: &[Option<f64>], k: usize) -> Vec<Option<f64>> {
        let k = k.max(1);
        (0..series.len())
            .map(|i| {
                let from = (i + 1).saturating_sub(k);
                let (mut amount, mut secs) = (0.0, 0.0);
                for (r, len) in series[from..=i].iter().zip(&self.lengths[from..=i]) {
                    if let Some(r) = r {
                        amount += r * len;
                        secs += len;
                    }
                }
                (secs > 0.0).then(|| amount / secs)
            })
            .collect()
    }

    /// Each interval's weight in the statistics: its length in intervals (1, the partial last
    /// one less).
    pub fn weights(&self) -> Vec<f64> {
        self.lengths.iter().map(|l| l / self.width).collect()
    }
}

/// A row of seed 002's table over weighted values: MAX and MIN of the values with a weight,
/// AVG their weighted mean, SD the weighted sample standard deviation with frequency weights
/// (sqrt(Σ w·(x − AVG)² / (Σ w − 1)); with every weight 1 it is the ordinary n − 1 standard
/// deviation; NIST/SEMATECH e-Handbook §1.3.5.2 for the unweighted form). Values whose weight is
/// 0 and unknown values (None) are left out; zeros when none is left, SD 0 when Σ w ≤ 1.
pub fn weighted_row(
    name: String,
    pool: Option<String>,
    direction: &str,
    values: &[Option<f64>],
    weights: &[f64],
) -> storlab_model::challenge::StatRow {
    let known: Vec<(f64, f64)> = values
        .iter()
        .zip(weights)
        .filter_map(|(v, w)| v.filter(|_| *w > 0.0).map(|v| (v, *w)))
        .collect();
    let total: f64 = known.iter().map(|(_, w)| w).sum();
    let (mut max, mut min, mut avg, mut sd) = (0.0, 0.0, 0.0, 0.0);
    if !known.is_empty() {
        max = known.iter().map(|(v, _)| *v).fold(f64::NEG_INFINITY, f64::max);
        min = known.iter().map(|(v, _)| *v).fold(f64::INFINITY, f64::min);
        avg = known.iter().map(|(v, w)| v * w).sum::<f64>() / total;
        if total > 1.0 {
            let ss: f64 = known.iter().map(|(v, w)| w * (v - avg).powi(2)).sum();
            sd = (ss / (total - 1.0)).sqrt();
        }
    }
    storlab_model::challenge::StatRow {
        name,
        pool,
        direction: direction.to_string(),
        max,
        min,
        avg,
        sd,
    }
}

/// A pool's channels on the intervals: its name, the channel of its reads and of its writes.
pub struct PoolChannels<'a> {
    /// The pool's name.
    pub name: &'a str,
    /// The channel of its bytes read.
    pub read: usize,
    /// The channel of its bytes written.
    pub write: usize,
}

/// Seed 002's table over intervals `a..=b` (all when None): the totals of `pools` and then
/// each pool, in each direction, of the long-term averages over the last `k` intervals, every
/// interval weighed by its length.
pub fn seed_rows(
    iv: &Intervals,
    k: usize,
    pools: &[PoolChannels],
    window: Option<(usize, usize)>,
) -> Vec<storlab_model::challenge::StatRow> {
    let n = iv.len();
    let (a, b) = window.unwrap_or((0, n.saturating_sub(1)));
    let weights = iv.weights();
    let row = |name: String, pool: Option<String>, direction: &str, series: &[Option<f64>]| {
        let lt = iv.long_term(series, k);
        let (values, w) = if a > b || b >= n {
            (&[][..], &[][..])
        } else {
            (&lt[a..=b], &weights[a..=b])
        };
        weighted_row(name, pool, direction, values, w)
    };
    let reads: Vec<usize> = pools.iter().map(|p| p.read).collect();
    let writes: Vec<usize> = pools.iter().map(|p| p.write).collect();
    let both: Vec<usize> = reads.iter().chain(&writes).copied().collect();
    let mut rows = vec![
        row("Tot-ReadAverage".into(), None, "Read", &iv.sum(&reads)),
        row("Tot-WriteAverage".into(), None, "Write", &iv.sum(&writes)),
        row("Tot-ReadWriteAverage".into(), None, "ReadWrite", &iv.sum(&both)),
    ];
    for p in pools {
        let pool = Some(p.name.to_string());
        rows.push(row(format!("{}-Read", p.name), pool.clone(), "Read", &iv.rates[p.read]));
        rows.push(row(
            format!("{}-Write", p.name),
            pool.clone(),
            "Write",
            &iv.rates[p.write],
        ));
        rows.push(row(
            format!("{}-ReadWrite", p.name),
            pool,
            "ReadWrite",
            &iv.sum(&[p.read, p.write]),
        ));
    }
    rows
}

/// A challenge's samples as spans: channels `0..pools` are the pools' bytes read, `pools..2·pools`
/// their bytes written.
pub fn challenge_spans(samples: &[storlab_model::challenge::ChallengeSample], pools: usize) -> Vec<Span<'_>> {
    samples
        .iter()
        .map(|s| {
            let mut amounts = vec![0.0; 2 * pools];
            for p in 0..pools {
                amounts[p] = s.read.get(p).copied().unwrap_or(0) as f64;
                amounts[pools + p] = s.written.get(p).copied().unwrap_or(0) as f64;
            }
            Span {
                source: &s.host,
                start: s.t - s.seconds,
                end: s.t,
                amounts,
            }
        })
        .collect()
}

/// A monitor window's samples as spans on a common time base, one per host and sweep:
/// channels `2·p` and `2·p + 1` are pool `pools[p]`'s bytes read and written (the pools' top
/// disks summed; the same pool name on two hosts is one pool, the hosts' bytes added).
pub fn monitor_spans<'a>(
    series: &[storlab_model::monitor::Series],
    hosts: &'a [String],
    disks: &[storlab_model::monitor::DiskSample],
    pools: &[String],
) -> Vec<Span<'a>> {
    let mut names: Vec<&String> = hosts.iter().collect();
    names.sort();
    names.dedup();
    let mut out = Vec::new();
    for host in names {
        let of_host: Vec<storlab_model::monitor::Series> = series
            .iter()
            .filter(|s| hosts.get(s.idx as usize) == Some(host))
            .cloned()
            .collect();
        let mut sweeps: Vec<(f64, f64, usize, u64, u64)> = Vec::new();
        for (pool, pts) in storlab_model::monitor::pool_points(&of_host, disks) {
            let Some(p) = pools.iter().position(|q| *q == pool) else {
                continue;
            };
            sweeps.extend(pts.iter().map(|x| (x.t, x.seconds, p, x.read_bytes, x.write_bytes)));
        }
        sweeps.sort_by(|a, b| a.0.total_cmp(&b.0));
        // A sweep's pools end within a millisecond of each other: one span.
        let mut last_t = f64::NEG_INFINITY;
        for (t, seconds, p, r, w) in sweeps {
            if (t - last_t).abs() >= 1e-3 {
                out.push(Span {
                    source: host.as_str(),
                    start: t - seconds,
                    end: t,
                    amounts: vec![0.0; 2 * pools.len()],
                });
                last_t = t;
            }
            let span = out.last_mut().expect("pushed");
            span.amounts[2 * p] += r as f64;
            span.amounts[2 * p + 1] += w as f64;
        }
    }
    out
}

/// A monitor window's samples from `from` on the epoch's grid of `interval` seconds: each
/// host's sweeps as spans (`monitor_spans`), a host watching the pools it has series of, from
/// the later of `from` and the first sample's start (`place_watched`).
pub fn monitor_placed(
    series: &[storlab_model::monitor::Series],
    hosts: &[String],
    disks: &[storlab_model::monitor::DiskSample],
    pools: &[String],
    interval: f64,
    from: f64,
) -> Intervals {
    let spans = monitor_spans(series, hosts, disks, pools);
    let first = spans.iter().map(|s| s.start).fold(f64::INFINITY, f64::min).max(from);
    // A host watches the pools it has series of (the same name on two hosts: both).
    let measures = |host: &str, c: usize| {
        series
            .iter()
            .any(|s| s.pool == pools[c / 2] && hosts.get(s.idx as usize).is_some_and(|h| h == host))
    };
    place_watched(&spans, 2 * pools.len(), interval, first, &measures)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(source: &str, start: f64, end: f64, amount: f64) -> Span<'_> {
        Span {
            source,
            start,
            end,
            amounts: vec![amount],
        }
    }

    #[test]
    fn samples_stamped_past_the_edges_fill_every_interval() {
        // A steady 100 bytes/s, each 1 s sample stamped 1 ms late and the last one partial:
        // rounding the ends up would leave the first interval empty and put two in the last.
        let mut spans = Vec::new();
        let mut t = 0.0;
        for i in 0..30 {
            let end = (i + 1) as f64 + 0.001 * (i + 1) as f64 / 3.0;
            spans.push(span("a", t, end, 100.0 * (end - t)));
            t = end;
        }
        spans.push(span("a", t, t + 0.05, 5.0));
        let iv = place(&spans, 1, 1.0);
        assert_eq!(iv.len(), 31);
        for (k, r) in iv.rates[0].iter().enumerate() {
            assert!((r.unwrap() - 100.0).abs() < 1e-6, "interval {k}: {r:?}");
        }
        let last = *iv.lengths.last().unwrap();
        assert!((last - (t + 0.05 - 30.0)).abs() < 1e-9, "{last}");
    }

    #[test]
    fn a_gap_in_a_running_source_is_unknown_and_stillness_is_zero() {
        let spans = vec![
            span("a", 0.0, 1.0, 10.0),
            // nothing measured by a in [1, 2]
            span("a", 2.0, 3.0, 0.0),
            span("a", 3.0, 4.0, 40.0),
            span("b", 0.0, 4.0, 400.0),
        ];
        let iv = place(&spans, 1, 1.0);
        assert_eq!(iv.rates[0], vec![Some(110.0), None, Some(100.0), Some(140.0)]);
        // A source that starts late counts from its start: no gap before it.
        let late = vec![span("a", 0.0, 2.0, 20.0), span("b", 1.5, 2.0, 50.0)];
        assert_eq!(place(&late, 1, 1.0).rates[0], vec![Some(10.0), Some(60.0)]);
    }

    #[test]
    fn long_term_and_rows_weigh_by_length() {
        let spans = vec![span("a", 0.0, 2.0, 20.0), span("a", 2.0, 2.5, 10.0)];
        let iv = place(&spans, 1, 1.0);
        assert_eq!(iv.lengths, vec![1.0, 1.0, 0.5]);
        assert_eq!(iv.rates[0], vec![Some(10.0), Some(10.0), Some(20.0)]);
        let lt = iv.long_term(&iv.rates[0], 2);
        // (10·1 + 20·0.5) / 1.5
        assert_eq!(lt, vec![Some(10.0), Some(10.0), Some(20.0 / 1.5)]);
        let row = weighted_row("x".into(), None, "Read", &lt, &iv.weights());
        let avg = (10.0 + 10.0 + 20.0 / 1.5 * 0.5) / 2.5;
        assert!((row.avg - avg).abs() < 1e-12);
        assert_eq!((row.min, row.max), (10.0, 20.0 / 1.5));
        let ss = 2.0 * (10.0f64 - avg).powi(2) + 0.5 * (20.0 / 1.5 - avg).powi(2);
        assert!((row.sd - (ss / 1.5).sqrt()).abs() < 1e-12);
        let empty = weighted_row("x".into(), None, "Read", &[None], &[1.0]);
        assert_eq!((empty.max, empty.avg, empty.sd), (0.0, 0.0, 0.0));
    }

    #[test]
    fn a_window_on_the_epochs_grid_has_a_partial_first_interval() {
        // 10 s intervals of the epoch's grid; samples every 10 s but 3 s off the grid, from
        // 1.8e9 + 3 (a window starting there), a steady 50 bytes/s and 150 in the last 4 s.
        let t0 = 1.8e9;
        let mut spans: Vec<Span> = (0..3)
            .map(|i| span("h", t0 + 3.0 + 10.0 * i as f64, t0 + 13.0 + 10.0 * i as f64, 500.0))
            .collect();
        spans.push(span("h", t0 + 33.0, t0 + 37.0, 600.0));
        let all = |_: &str, _: usize| true;
        let iv = place_watched(&spans, 1, 10.0, t0 + 3.0, &all);
        assert_eq!(iv.len(), 4);
        let lengths: Vec<f64> = iv.lengths.iter().map(|l| (l * 1e6).round() / 1e6).collect();
        assert_eq!(lengths, vec![7.0, 10.0, 10.0, 7.0]);
        assert_eq!(iv.ends.last().copied(), Some(t0 + 37.0));
        let r: Vec<f64> = iv.rates[0].iter().map(|r| (r.unwrap() * 1e6).round() / 1e6).collect();
        // The last interval: 3 s at 50 and 4 s at 150 over 7 s.
        assert_eq!(&r[..3], &[50.0, 50.0, 50.0]);
        assert!((r[3] - (150.0 + 600.0) / 7.0).abs() < 1e-6, "{r:?}");
        // What came before the window is left out, and the grid does not move with it.
        let later = place_watched(&spans, 1, 10.0, t0 + 15.0, &all);
        assert_eq!(later.len(), 3);
        assert!((later.lengths[0] - 5.0).abs() < 1e-6);
        assert!((later.rates[0][0].unwrap() - 50.0).abs() < 1e-6);
        // Two monitors of one host with a pause between them: unknown, not still; for the
        // challenge's agents a time with none running is still.
        let paused = vec![span("h", 0.0, 1.0, 10.0), span("i", 2.0, 3.0, 10.0)];
        assert_eq!(place_watched(&paused, 1, 1.0, 0.0, &all).rates[0][1], None);
        assert_eq!(place(&paused, 1, 1.0).rates[0][1], Some(0.0));
    }

    #[test]
    fn a_watched_channel_is_known_where_every_source_watching_it_measured() {
        // Host a watches channel 0 from 0 to 3 s; host b watches channel 1 from 0.5 to 4 s.
        let spans = vec![
            Span {
                source: "a",
                start: 0.0,
                end: 3.0,
                amounts: vec![300.0, 0.0],
            },
            Span {
                source: "b",
                start: 0.5,
                end: 4.0,
                amounts: vec![0.0, 70.0],
            },
        ];
        let measures = |s: &str, c: usize| (s == "a") == (c == 0);
        let iv = place_watched(&spans, 2, 1.0, 0.0, &measures);
        // Channel 0: 100/s while a ran, unknown after it stopped (not b's zero).
        assert_eq!(iv.rates[0], vec![Some(100.0), Some(100.0), Some(100.0), None]);
        // Channel 1: b's 20/s over the half second it ran in the first interval stands for
        // the whole of it (a monitor that started late did not see a stillness).
        assert_eq!(iv.rates[1], vec![Some(20.0), Some(20.0), Some(20.0), Some(20.0)]);
    }
}
