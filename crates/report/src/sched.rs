//! The verify scheduler's tables.

use storlab_model::sched::PoolPlan;

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
