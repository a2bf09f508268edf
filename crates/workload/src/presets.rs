//! Jobs storlab ships: `storlab demo`'s short qualification.

use crate::{Job, WorkloadError};

/// The job `storlab demo` runs: a short qualification of one directory (under a minute on a
/// virtual disk): write, rewrite, read, reread, then 5 s each of 4 KiB random reads and writes,
/// two workers of 128 MiB in 1 MiB requests.
const DEMO_JOB: &str = r#"
name = "demo"
threads = 2
size = "128m"
bs = "1m"
fsync = "end"
phase = [
    "write",
    "rewrite",
    "read",
    "reread",
    { kind = "randread", bs = "4k", runtime = "5s" },
    { kind = "randwrite", bs = "4k", runtime = "5s" },
]
"#;

/// `storlab demo`'s job on `dir`.
pub fn demo(dir: &std::path::Path) -> Result<Job, WorkloadError> {
    let mut job = Job::parse(DEMO_JOB, "demo job")?;
    job.targets = vec![dir.to_path_buf()];
    Ok(job)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_demo_runs_six_phases_on_its_directory() {
        let d = std::path::Path::new("/tmp/storlab-demo-test");
        let job = super::demo(d).unwrap();
        assert_eq!(job.targets, vec![d.to_path_buf()]);
        assert_eq!(job.phases.len(), 6);
        assert_eq!(job.name.as_deref(), Some("demo"));
    }
}
