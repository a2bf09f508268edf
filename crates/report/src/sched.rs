//! The verify scheduler's tables.

use storlab_model::sched::{NextDue, PoolPlan, PoolStatus};

use crate::table::{Cell, Table};

fn hours(s: Option<f64>) -> Cell {
    s.map_or(Cell::Empty, |s| Cell::fixed(s / 3600.0, 1))
}

/// Per pool: servers, budget, cost, k, what k cost the pool, a round's duration.
pub fn plan_table(plans: &[PoolPlan]) -> Table {
    let mut t = Table::new(
        "plan",
        &[
            "pool",
            "servers",
            "budget %",
            "cost %",
            "k",
            "pool loss %",
            "round h (idle)",
            "round h (loaded)",
            "window h/week",
            "round h (calendar)",
        ],
    );
    for p in plans {
        t.push(vec![
            Cell::Text(p.pool.clone()),
            Cell::Int(p.servers as i64),
            Cell::fixed(p.budget, 2),
            Cell::fixed(p.cost, 2),
            Cell::Int(p.k as i64),
            Cell::fixed(p.pool_loss, 2),
            hours(p.round_idle),
            hours(p.round_loaded),
            Cell::fixed(p.window_hours, 1),
            hours(p.round_calendar),
        ]);
    }
    t
}

/// Per server of every pool: the last complete verify (UTC), how long it took, what it found,
/// what runs now, when it is next due.
pub fn status_table(pools: &[PoolStatus], now: f64) -> Table {
    let mut t = Table::new(
        "status",
        &[
            "pool",
            "k",
            "server",
            "last verify (UTC)",
            "took s",
            "errors",
            "found",
            "now",
            "next due",
        ],
    );
    for p in pools {
        for s in &p.servers {
            let now_cell = match &s.running {
                Some(r) => format!(
                    "slot {} since {}{}",
                    r.slot,
                    crate::monitor::utc(r.since),
                    r.last.as_ref().map(|l| format!(" ({l})")).unwrap_or_default()
                ),
                None if s.seen.is_none() => "no agent yet".into(),
                None => "-".into(),
            };
            let due = match &s.next_due {
                NextDue::Running => "running".to_string(),
                NextDue::Queued { place } => format!("now (place {place})"),
                NextDue::At { t } if *t <= now => "now".to_string(),
                NextDue::At { t } => crate::monitor::utc(*t),
            };
            t.push(vec![
                Cell::Text(p.pool.clone()),
                Cell::Int(p.k as i64),
                Cell::Text(s.server.clone()),
                s.last_complete
                    .map_or(Cell::Text("never".into()), |l| Cell::Text(crate::monitor::utc(l))),
                s.last_duration.map_or(Cell::Empty, |d| Cell::fixed(d, 1)),
                s.errors_found.map_or(Cell::Empty, |e| Cell::Int(e as i64)),
                Cell::Text(s.last_errors.clone().unwrap_or_default()),
                Cell::Text(now_cell),
                Cell::Text(due),
            ]);
        }
    }
    t
}

/// The scheduler's event log for the terminal: a line per event, its time in UTC, pool,
/// server, kind, token, words and agent.
pub fn events_text(events: &[storlab_store::SchedEvent]) -> String {
    events
        .iter()
        .map(|e| {
            format!(
                "{}  {:<8} {:<12} {:<10} {:>5}  {}  ({})\n",
                crate::monitor::utc(e.t),
                e.pool,
                e.server,
                e.kind,
                e.token.map(|t| t.to_string()).unwrap_or_default(),
                e.detail,
                e.agent
            )
        })
        .collect()
}

/// `storlab sched plan`'s table, then a line per pool: k, its windows (`windows`, one list per
/// plan; empty: always open) and the order its servers verify in.
pub fn plan_text(plans: &[PoolPlan], windows: &[Vec<String>]) -> String {
    let mut out = plan_table(plans).to_text();
    for (plan, w) in plans.iter().zip(windows) {
        let w = if w.is_empty() {
            "always".to_string()
        } else {
            w.join(", ")
        };
        out += &format!(
            "{}: {} at once; windows: {w}; order: {} (never verified first, then the oldest verify)\n",
            plan.pool,
            plan.k,
            plan.order.join(", ")
        );
    }
    out
}

/// `storlab sched events --json`: the event log as one document.
pub fn events_document(events: &[storlab_store::SchedEvent]) -> serde_json::Value {
    let list: Vec<serde_json::Value> = events
        .iter()
        .map(|e| {
            serde_json::json!({
                "t": e.t, "pool": e.pool, "server": e.server, "agent": e.agent,
                "token": e.token, "kind": e.kind, "detail": e.detail,
            })
        })
        .collect();
    serde_json::json!({ "events": list })
}
