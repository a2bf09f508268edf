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
//! - the intervals are `[k·width, (k+1)·width)` from 0 (the challenge's start, or the
//!   monitor's window), the last one ending at the last sample's end: a partial last interval
//!   has its own length, and its rate is over that length;
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

/// A span shorter than this share of an interval is taken as touching it, not covering it
/// (the edges of floating-point times).
const EDGE: f64 = 1e-9;

/// The overlap of `[a0, a1]` and `[b0, b1]`, in seconds (0 when apart).
fn overlap(a0: f64, a1: f64, b0: f64, b1: f64) -> f64 {
    (a1.min(b1) - a0.max(b0)).max(0.0)
}

/// Places `spans` (each with `channels` amounts; missing ones are 0) on intervals of `width`
/// seconds from 0. Spans that end before 0 or cover no time are left out; a span that begins
/// before 0 counts from 0 (its share before is left out).
pub fn place(spans: &[Span], channels: usize, width: f64) -> Intervals {
    let spans: Vec<&Span> = spans
        .iter()
        .filter(|s| s.end > s.start && s.end > 0.0 && width > 0.0)
        .collect();
    let last_end = spans.iter().map(|s| s.end).fold(0.0, f64::max);
    let n = if spans.is_empty() {
        0
    } else {
        ((last_end / width) * (1.0 - EDGE)).ceil().max(1.0) as usize
    };
    let start_of = |k: usize| k as f64 * width;
    let end_of = |k: usize| ((k + 1) as f64 * width).min(last_end);
    let lengths: Vec<f64> = (0..n).map(|k| end_of(k) - start_of(k)).collect();
    let mut totals = vec![vec![0.0; n]; channels];
    let mut unknown = vec![false; n];
    let mut by_source: BTreeMap<&str, Vec<&Span>> = BTreeMap::new();
    for s in spans {
        by_source.entry(s.source).or_default().push(s);
    }
    for spans in by_source.values() {
        // This source's amounts and covered seconds per interval it touches.
        let mut mine: BTreeMap<usize, (Vec<f64>, f64)> = BTreeMap::new();
        for s in spans {
            let (from, to) = (s.start.max(0.0), s.end);
            let first = (from / width).floor() as usize;
            let mut k = first.min(n - 1);
            while k < n && start_of(k) < to {
                let part = overlap(from, to, start_of(k), end_of(k));
                if part > EDGE * width {
                    let share = part / (s.end - s.start);
                    let e = mine.entry(k).or_insert_with(|| (vec![0.0; channels], 0.0));
                    for (c, a) in s.amounts.iter().take(channels).enumerate() {
                        e.0[c] += a * share;
                    }
                    e.1 += part;
                }
                k += 1;
            }
        }
        let running_from = spans.iter().map(|s| s.start.max(0.0)).fold(f64::INFINITY, f64::min);
        let running_to = spans.iter().map(|s| s.end).fold(0.0, f64::max);
        let first = ((running_from / width).floor() as usize).min(n - 1);
        for k in first..n {
            let running = overlap(running_from, running_to, start_of(k), end_of(k));
            if running <= EDGE * width {
                continue;
            }
            match mine.get(&k) {
                Some((amounts, covered)) if *covered > EDGE * width => {
                    let scale = running / covered;
                    for (c, a) in amounts.iter().enumerate() {
                        totals[c][k] += a * scale;
                    }
                }
                _ => unknown[k] = true,
            }
        }
    }
    let rates = totals
        .into_iter()
        .map(|t| {
            t.into_iter()
                .enumerate()
                .map(|(k, a)| (!unknown[k]).then(|| a / lengths[k]))
                .collect()
        })
        .collect();
    Intervals {
        width,
        ends: (0..n).map(end_of).collect(),
        lengths,
        rates,
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
}
