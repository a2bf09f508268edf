//! A phase's workers as fio's clones. fio reports each clone of a job of `numjobs=N` on its
//! own unless the job asks for `group_reporting`: an entry in its JSON, a block of its text, a
//! terse line, each from that clone's own figures. A phase whose plan says so
//! (`group_reporting = false`, which `storlab fio` sets for such a job) and whose workers each
//! kept their own figures (`worker_samples`) is reported as one phase per worker here, each
//! holding only that worker's bytes, I/Os, time, CPU, latency histograms, queue depths and
//! interval samples, so that the rest of the fio writers report it as they report a phase.

use std::borrow::Cow;

use storlab_model::moments::LatencyMoments;
use storlab_model::result::{PhaseResult, Sample, Throughput, WorkerFigures, WorkerResult};
use storlab_model::run::{Phase, RankPhaseRow, RunDetail};
use storlab_workload::fio::Reporting;

/// The phases fio's outputs report for `p`: the phase itself, or one per worker where the
/// phase reports its clones apart and every worker kept its own figures (a run stored before
/// storlab kept them is reported as one group, as it was).
pub(crate) fn reported(p: &Phase) -> Vec<Cow<'_, Phase>> {
    let apart = p
        .plan()
        .is_some_and(|pl| !pl.settings.group_reporting && p.result.workers.len() > 1);
    if apart {
        if let Some(clones) = p
            .result
            .workers
            .iter()
            .map(|w| clone_of(p, w))
            .collect::<Option<Vec<_>>>()
        {
            return clones.into_iter().map(Cow::Owned).collect();
        }
    }
    vec![Cow::Borrowed(p)]
}

/// Whose figures an entry of fio's document holds, in a run of many ranks (fio's client/server
/// mode: an entry per job per server, then "All clients").
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Client {
    /// One rank's, on its host.
    Rank { host: String, rank: u32 },
    /// All of them together.
    All,
}

/// One of fio's job entries of a run: the phase it reports (by its order in the run), what it
/// holds (the phase, a clone, a rank's part), how many of fio's jobs it stands for (`jobs=N`
/// on its line) and, in a run of many ranks, whose it is.
pub(crate) struct Entry<'a> {
    pub(crate) phase: usize,
    pub(crate) view: Cow<'a, Phase>,
    pub(crate) jobs: u64,
    pub(crate) client: Option<Client>,
    /// A job that wrote and then verified: its write phase and its verifying read, whose
    /// directions the entry reports (fio counts the verification as the job's reads).
    pub(crate) verified: Option<(&'a Phase, &'a Phase)>,
    /// The phase whose job's options the entry lists: its own, or where several jobs' are one
    /// entry (group_reporting across jobs), the last one's, as fio's.
    pub(crate) options_of: usize,
}

/// fio's reporting group of each phase (its `groupid`): phases that ran together are one,
/// counted from 0 at each stonewall, and a job with new_group starts one of its own though it
/// runs with those before it.
pub(crate) fn groups(run: &RunDetail, reporting: &[Reporting]) -> Vec<u32> {
    groups_in(Ran::of(run), reporting)
}

/// A run's phases and their ranks' parts: what its entries are made of (a run stored, or
/// the phases a job will run, planned).
#[derive(Clone, Copy)]
pub(crate) struct Ran<'a> {
    pub(crate) phases: &'a [Phase],
    pub(crate) rank_phases: &'a [RankPhaseRow],
}

impl<'a> Ran<'a> {
    pub(crate) fn of(run: &'a RunDetail) -> Ran<'a> {
        Ran {
            phases: &run.phases,
            rank_phases: &run.rank_phases,
        }
    }
}

fn groups_in(run: Ran, reporting: &[Reporting]) -> Vec<u32> {
    let mut group = 0;
    let mut out = Vec::with_capacity(run.phases.len());
    for (i, p) in run.phases.iter().enumerate() {
        let new_group = reporting.get(i).is_some_and(|r| r.new_group);
        if i > 0 && (new_group || !p.plan().is_some_and(|pl| pl.together)) {
            group += 1;
        }
        out.push(group);
    }
    out
}

/// Whether phase `i` joins the entry of phase `head` before it: both jobs ask for
/// group_reporting (fio's, as the job gave it) in one reporting group, as fio sums them.
fn joins(run: Ran, reporting: &[Reporting], groups: &[u32], head: usize, i: usize) -> bool {
    let asks = |k: usize| reporting.get(k).is_some_and(|r| r.group_reporting);
    asks(head)
        && asks(i)
        && groups[head] == groups[i]
        && run.rank_phases.is_empty()
        && run.phases[i].plan().is_some()
        && reported(&run.phases[i]).len() == 1
}

/// fio's job entries of `run`, in order: per phase the phase or its clones; in a run of many
/// ranks (`mpirun storlab-mpi fio`), per phase each rank's part (or its clones) and then all
/// ranks together, as fio's client reports a server per host.
pub(crate) fn entries<'a>(run: &'a RunDetail, reporting: &[Reporting]) -> Vec<Entry<'a>> {
    entries_in(Ran::of(run), reporting)
}

/// [`entries`] of phases and their ranks' parts.
pub(crate) fn entries_in<'a>(run: Ran<'a>, reporting: &[Reporting]) -> Vec<Entry<'a>> {
    let groups = groups_in(run, reporting);
    let mut out = Vec::new();
    let mut i = 0;
    while i < run.phases.len() {
        i += entries_from(run, reporting, &groups, i, &mut out);
    }
    out
}

/// The entries of the job whose phase `i` is, into `out`; how many phases they report (several
/// for jobs joined by group_reporting, two for a write and the read that verified it).
fn entries_from<'a>(
    run: Ran<'a>,
    reporting: &[Reporting],
    groups: &[u32],
    i: usize,
    out: &mut Vec<Entry<'a>>,
) -> usize {
    let p = &run.phases[i];
    // Jobs of one reporting group that each ask for group_reporting: one entry, as fio's.
    let mut last = i;
    while last + 1 < run.phases.len() && joins(run, reporting, groups, i, last + 1) {
        last += 1;
    }
    if last > i {
        let members: Vec<&Phase> = run.phases[i..=last].iter().collect();
        out.push(Entry {
            phase: i,
            jobs: members
                .iter()
                .map(|m| m.plan().map_or(1, |pl| pl.workers.len() as u64))
                .sum(),
            view: Cow::Owned(joined(&members)),
            client: None,
            verified: None,
            options_of: last,
        });
        return last + 1 - i;
    }
    let ranks: Vec<&RankPhaseRow> = run.rank_phases.iter().filter(|r| r.seq == p.seq).collect();
    if let Some(v) = run.phases.get(i + 1).filter(|v| ranks.is_empty() && verifies(p, v)) {
        // fio's job that writes and verifies is one entry: its writes and the reads that
        // checked them.
        out.push(Entry {
            phase: i,
            jobs: p.plan().map_or(1, |pl| pl.workers.len() as u64),
            view: Cow::Owned(verified(p, v)),
            client: None,
            verified: Some((p, v)),
            options_of: i,
        });
        return 2;
    }
    if ranks.is_empty() {
        out.extend(shown(i, Cow::Borrowed(p), None));
        return 1;
    }
    let first = out.len();
    for row in ranks {
        let client = Client::Rank {
            host: row.host.clone(),
            rank: row.rank,
        };
        out.extend(shown(i, Cow::Owned(rank_view(p, row)), Some(client)));
    }
    // fio's sum of its clients, where there is more than one entry to sum.
    if out.len() - first >= 2 {
        out.push(Entry {
            phase: i,
            jobs: p.result.workers.len().max(1) as u64,
            view: Cow::Borrowed(p),
            client: Some(Client::All),
            verified: None,
            options_of: i,
        });
    }
    1
}

/// The entries of one view of a phase: itself, its workers one job (fio's jobs=N: the plan's
/// workers, or a rank's own), or its clones, a job each.
fn shown<'a>(phase: usize, view: Cow<'a, Phase>, client: Option<Client>) -> Vec<Entry<'a>> {
    let clones: Vec<Phase> = {
        let parts = reported(&view);
        if parts.len() > 1 {
            parts.into_iter().map(Cow::into_owned).collect()
        } else {
            Vec::new()
        }
    };
    if clones.is_empty() {
        let jobs = match (&client, view.plan()) {
            (None, Some(pl)) => pl.workers.len() as u64,
            _ => view.result.workers.len().max(1) as u64,
        };
        return vec![Entry {
            phase,
            view,
            jobs,
            client,
            verified: None,
            options_of: phase,
        }];
    }
    clones
        .into_iter()
        .map(|c| Entry {
            phase,
            view: Cow::Owned(c),
            jobs: 1,
            client: client.clone(),
            verified: None,
            options_of: phase,
        })
        .collect()
}

/// Whether `v` is the read that verified what `w` wrote: one fio job's two phases (its name
/// on both, verify on both, a write and then a read), reported as one group (a job whose clones
/// are reported apart keeps its verifying read apart too).
fn verifies(w: &Phase, v: &Phase) -> bool {
    let (Some(pw), Some(pv)) = (w.plan(), v.plan()) else {
        return false;
    };
    pw.name.is_some()
        && pw.name == pv.name
        && pw.settings.verify
        && pv.settings.verify
        && pw.kind.writes()
        && !pv.kind.writes()
        && reported(w).len() == 1
}

/// The job-wide figures of a job that wrote (`w`) and then verified (`v`): both phases' time,
/// CPU, workers' counts, queue depths and latency together; each direction is its own phase's
/// (json.rs reports it from that phase).
fn verified(w: &Phase, v: &Phase) -> Phase {
    let (a, b) = (&w.result, &v.result);
    let seconds = a.all_done.seconds + b.all_done.seconds;
    let (bytes, ops) = (a.bytes_written + b.bytes_read, a.ops_written + b.ops_read);
    let mut depths = a.io_depths;
    if let (Some(d), Some(e)) = (depths.as_mut(), &b.io_depths) {
        d.add(e);
    }
    let rw = [b.histograms_rw[0].clone(), a.histograms_rw[1].clone()];
    let result = PhaseResult {
        bytes_read: b.bytes_read,
        bytes_written: a.bytes_written,
        ops_read: b.ops_read,
        ops_written: a.ops_written,
        all_done: Throughput::new(seconds, bytes, ops),
        first_done: Throughput::new(seconds, bytes, ops),
        workers: a.workers.iter().chain(&b.workers).cloned().collect(),
        cpu_user: a.cpu_user + b.cpu_user,
        cpu_sys: a.cpu_sys + b.cpu_sys,
        histogram: merged(rw.iter()),
        histograms_rw: rw,
        histogram_sync: a.histogram_sync.clone(),
        histograms_slat: [b.histograms_slat[0].clone(), a.histograms_slat[1].clone()],
        histograms_clat: [b.histograms_clat[0].clone(), a.histograms_clat[1].clone()],
        histograms_issued: [b.histograms_issued[0].clone(), a.histograms_issued[1].clone()],
        moments: a.moments.zip(b.moments).map(|(w, r)| LatencyMoments {
            lat: [r.lat[0], w.lat[1]],
            slat: [r.slat[0], w.slat[1]],
            clat: [r.clat[0], w.clat[1]],
            sync: w.sync,
            issued: [r.issued[0], w.issued[1]],
        }),
        io_depths: depths,
        errors: a.errors.clone().or_else(|| b.errors.clone()),
        layout_seconds: a.layout_seconds,
        interrupted: a.interrupted || b.interrupted,
        not_measured: a.not_measured.clone(),
        ..PhaseResult::default()
    };
    Phase { result, ..w.clone() }
}

/// Several jobs' phases that ran together as one (fio's group_reporting across jobs): their
/// I/O, time (the longest), CPU, workers, latencies and queue depths together; the first's
/// plan and disks (one group's phases ran on at once, on the same disks).
fn joined(members: &[&Phase]) -> Phase {
    let head = members[0];
    let results: Vec<&PhaseResult> = members.iter().map(|m| &m.result).collect();
    let sum = |f: fn(&PhaseResult) -> u64| -> u64 { results.iter().map(|r| f(r)).sum() };
    let (bytes_read, bytes_written) = (sum(|r| r.bytes_read), sum(|r| r.bytes_written));
    let (ops_read, ops_written) = (sum(|r| r.ops_read), sum(|r| r.ops_written));
    let seconds = results.iter().map(|r| r.all_done.seconds).fold(0.0, f64::max);
    let all = |f: fn(&PhaseResult) -> &Vec<u8>| merged(results.iter().map(|r| f(r)));
    let mut depths: Option<storlab_model::result::IoDepths> = None;
    let mut errors: Option<storlab_model::result::ErrorsReport> = None;
    for r in &results {
        if let Some(d) = &r.io_depths {
            depths.get_or_insert_with(Default::default).add(d);
        }
        if let Some(e) = &r.errors {
            errors.get_or_insert_with(Default::default).merge(e.clone());
        }
    }
    let moments = results
        .iter()
        .all(|r| r.moments.is_some())
        .then(|| LatencyMoments::sum(results.iter().filter_map(|r| r.moments.as_ref())))
        .flatten();
    let done = Throughput::new(seconds, bytes_read + bytes_written, ops_read + ops_written);
    let result = PhaseResult {
        bytes_read,
        bytes_written,
        ops_read,
        ops_written,
        all_done: done.clone(),
        first_done: done,
        workers: results.iter().flat_map(|r| r.workers.iter().cloned()).collect(),
        cpu_user: results.iter().map(|r| r.cpu_user).sum(),
        cpu_sys: results.iter().map(|r| r.cpu_sys).sum(),
        histogram: all(|r| &r.histogram),
        histograms_rw: [all(|r| &r.histograms_rw[0]), all(|r| &r.histograms_rw[1])],
        histogram_sync: all(|r| &r.histogram_sync),
        histograms_slat: [all(|r| &r.histograms_slat[0]), all(|r| &r.histograms_slat[1])],
        histograms_clat: [all(|r| &r.histograms_clat[0]), all(|r| &r.histograms_clat[1])],
        histograms_issued: [all(|r| &r.histograms_issued[0]), all(|r| &r.histograms_issued[1])],
        moments,
        io_depths: depths,
        errors,
        disks: head.result.disks.clone(),
        layout_seconds: results.iter().map(|r| r.layout_seconds).fold(0.0, f64::max),
        interrupted: results.iter().any(|r| r.interrupted),
        ..PhaseResult::default()
    };
    Phase { result, ..head.clone() }
}

/// A rank's part of phase `p` as a phase: its own figures, and its latency histograms from its
/// workers' own (a rank's stored row keeps its figures and samples, not its histograms).
fn rank_view(p: &Phase, row: &RankPhaseRow) -> Phase {
    let mut r = row.result.clone();
    let owns: Vec<&WorkerFigures> = r.workers.iter().filter_map(|w| w.own.as_deref()).collect();
    if owns.len() == r.workers.len() && !owns.is_empty() {
        for d in 0..2 {
            r.histograms_rw[d] = merged(owns.iter().map(|o| &o.histograms_rw[d]));
            r.histograms_slat[d] = merged(owns.iter().map(|o| &o.histograms_slat[d]));
            r.histograms_clat[d] = merged(owns.iter().map(|o| &o.histograms_clat[d]));
            r.histograms_issued[d] = merged(owns.iter().map(|o| &o.histograms_issued[d]));
        }
        r.histogram_sync = merged(owns.iter().map(|o| &o.histogram_sync));
        r.histogram = merged(r.histograms_rw.iter());
    }
    Phase { result: r, ..p.clone() }
}

/// Worker `w` of phase `p` as a phase of its own, from the figures it kept; None where it kept
/// none.
fn clone_of(p: &Phase, w: &WorkerResult) -> Option<Phase> {
    let own = w.own.as_deref()?;
    let (bytes, ops) = (own.bytes[0] + own.bytes[1], own.ops[0] + own.ops[1]);
    let done = Throughput::new(w.seconds, bytes, ops);
    let result = PhaseResult {
        bytes_read: own.bytes[0],
        bytes_written: own.bytes[1],
        ops_read: own.ops[0],
        ops_written: own.ops[1],
        all_done: done.clone(),
        first_done: done,
        worker_min_bytes_per_sec: w.bytes_per_sec,
        worker_max_bytes_per_sec: w.bytes_per_sec,
        workers: vec![w.clone()],
        cpu_user: w.cpu_user,
        cpu_sys: w.cpu_sys,
        histogram: merged(own.histograms_rw.iter()),
        histograms_rw: own.histograms_rw.clone(),
        histogram_sync: own.histogram_sync.clone(),
        histograms_slat: own.histograms_slat.clone(),
        histograms_clat: own.histograms_clat.clone(),
        histograms_issued: own.histograms_issued.clone(),
        moments: own.moments,
        io_depths: Some(own.io_depths),
        samples: w.samples.iter().enumerate().map(|(i, s)| sample(i, s)).collect(),
        // The job's own error and settings, which each clone shares; the disks are the run's.
        errors: p.result.errors.clone(),
        latency_search: p.result.latency_search.clone(),
        layout_seconds: p.result.layout_seconds,
        interrupted: p.result.interrupted,
        not_measured: p.result.not_measured.clone(),
        ..PhaseResult::default()
    };
    Some(Phase { result, ..p.clone() })
}

/// A worker's interval as a phase's sample (its rates and mean latencies; a worker keeps no
/// percentiles of its own, and fio's per-clone figures use none).
fn sample(index: usize, s: &storlab_model::result::WorkerSample) -> Sample {
    Sample {
        index: index as u32,
        t_start: s.t_start,
        t_end: s.t_end,
        ramp: s.ramp,
        bytes_read: s.bytes_read,
        bytes_written: s.bytes_written,
        ops_read: s.ops_read,
        ops_written: s.ops_written,
        lat_mean_read_ns: s.lat_mean_read_ns,
        lat_mean_write_ns: s.lat_mean_write_ns,
        ..Sample::default()
    }
}

/// Histograms (each an encoding) as one, the same encoding; empty where none holds any.
fn merged<'a>(encoded: impl IntoIterator<Item = &'a Vec<u8>>) -> Vec<u8> {
    let mut all: Option<hdrhistogram::Histogram<u64>> = None;
    for h in encoded.into_iter().filter_map(|b| super::json::decode(b)) {
        match &mut all {
            Some(a) => {
                let _ = a.add(&h);
            }
            None => all = Some(h),
        }
    }
    let mut out = Vec::new();
    if let Some(a) = all {
        use hdrhistogram::serialization::Serializer;
        let _ = hdrhistogram::serialization::V2DeflateSerializer::new().serialize(&a, &mut out);
    }
    out
}
