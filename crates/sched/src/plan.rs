//! A schedule's plan: per pool, how many servers may verify at once within its budget (k, the
//! projection `storlab impact` computes: k of S servers cost the pool cost × k / S), what that
//! costs the pool, and how long a round takes — ⌈S/k⌉ tasks one after another, alone and under
//! the users' load, and in calendar time when the task may run only in its windows.

pub use storlab_model::sched::PoolPlan;
use storlab_stats::impact::{project, round_seconds};

use crate::schedule::{Pool, Schedule};
use crate::window::WEEK;

/// The plan of one pool.
pub fn pool_plan(p: &Pool) -> PoolPlan {
    let n = p.servers.len() as u32;
    let k = project(p.cost, n, p.budget).largest_k;
    let round = |d: Option<f64>| d.and_then(|d| round_seconds(d, n, k));
    let (idle, loaded) = (round(p.duration), round(p.duration_loaded));
    let open = p.windows.open_minutes() as f64 / WEEK as f64;
    PoolPlan {
        pool: p.name.clone(),
        servers: n,
        budget: p.budget,
        cost: p.cost,
        k,
        pool_loss: p.cost * k as f64 / n as f64,
        round_idle: idle,
        round_loaded: loaded,
        window_hours: open * 168.0,
        round_calendar: loaded.or(idle).filter(|_| open > 0.0).map(|r| r / open),
        order: p.servers.iter().map(|s| s.name.clone()).collect(),
    }
}

/// The plan of every pool.
pub fn plan(s: &Schedule) -> Vec<PoolPlan> {
    s.pools.iter().map(pool_plan).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k_and_the_round_follow_the_budget_the_cost_and_the_windows() {
        // RAL's pool: ten servers, a verify costs one 13.9 %, the budget is 5 %: three at once
        // (4.17 %), a round of ⌈10/3⌉ = 4 tasks.
        let mut text = String::from(
            "[[pool]]\nname = \"P\"\nbudget = \"5%\"\ncost = \"13.9%\"\nduration = \"6h\"\nduration_loaded = \"9h\"\nwindows = [\"daily 00:00-12:00\"]\n",
        );
        for i in 0..10 {
            text += &format!("[[pool.server]]\nname = \"s{i}\"\ntask = \"cmd:true\"\n");
        }
        let s = crate::schedule::Schedule::parse(&text, std::path::Path::new("s.toml")).unwrap();
        let p = &plan(&s)[0];
        assert_eq!((p.servers, p.k), (10, 3));
        assert!((p.pool_loss - 4.17).abs() < 0.01);
        assert_eq!(p.round_idle, Some(4.0 * 6.0 * 3600.0));
        assert_eq!(p.round_loaded, Some(4.0 * 9.0 * 3600.0));
        assert_eq!(p.window_hours, 84.0);
        assert_eq!(
            p.round_calendar,
            Some(2.0 * 4.0 * 9.0 * 3600.0),
            "open half the week: twice the task time"
        );
        assert_eq!(p.order[0], "s0");
    }
}
