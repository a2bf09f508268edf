//! The importers under mutation: the real tools' outputs of tests/fixtures/import, each changed
//! thousands of ways by a seeded generator of the test's own (a figure made infinite, NaN, huge,
//! negative or empty, a line dropped, doubled or swapped, the text cut short, a byte flipped or
//! made invalid UTF-8), read and stored as `storlab results import` does. Whatever a file holds,
//! the importer never panics; a file it takes is stored whole and every run of it reads back
//! with only finite figures (`db check` finds nothing unreadable); a file it refuses stores
//! nothing and says why in a sentence, never a database's raw error. A sample of the mutants
//! goes through the real binary too.

mod common;

use std::panic::AssertUnwindSafe;

use common::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// How many mutants each fixture gets (1,000 and more in all).
const PER_FIXTURE: usize = 60;

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import");
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt" || x == "json"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// The numbers of a text: (start, end) of each run of digits with its dot and exponent.
fn numbers(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let s = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.' || b[i] == b'e' || b[i] == b'E') {
                i += 1;
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}

/// One mutation of `b`, chosen by `rng`.
fn mutate(b: &[u8], rng: &mut SmallRng) -> Vec<u8> {
    const FIGURES: [&str; 12] = [
        "inf",
        "-inf",
        "NaN",
        "nan",
        "1e308",
        "-1e308",
        "1e400",
        "-1",
        "0",
        "",
        "18446744073709551616",
        "9e99999",
    ];
    let mut v = b.to_vec();
    let lines: Vec<(usize, usize)> = {
        let mut l = Vec::new();
        let mut s = 0;
        for (i, c) in v.iter().enumerate() {
            if *c == b'\n' {
                l.push((s, i + 1));
                s = i + 1;
            }
        }
        l
    };
    match rng.gen_range(0..8) {
        0..=2 => {
            let nums = numbers(&v);
            if let Some(&(s, e)) = nums.get(rng.gen_range(0..nums.len().max(1))) {
                let f = FIGURES[rng.gen_range(0..FIGURES.len())];
                v.splice(s..e, f.bytes());
            }
        }
        3 if !lines.is_empty() => {
            let (s, e) = lines[rng.gen_range(0..lines.len())];
            v.drain(s..e);
        }
        4 if !lines.is_empty() => {
            let (s, e) = lines[rng.gen_range(0..lines.len())];
            let copy = v[s..e].to_vec();
            v.splice(s..s, copy);
        }
        5 if lines.len() > 1 => {
            let (a, b2) = (rng.gen_range(0..lines.len()), rng.gen_range(0..lines.len()));
            let (x, y) = (lines[a.min(b2)], lines[a.max(b2)]);
            if x != y {
                let (lx, ly) = (v[x.0..x.1].to_vec(), v[y.0..y.1].to_vec());
                v.splice(y.0..y.1, lx);
                v.splice(x.0..x.1, ly);
            }
        }
        6 => {
            let at = rng.gen_range(0..v.len().max(1));
            v.truncate(at);
        }
        _ => {
            if !v.is_empty() {
                let at = rng.gen_range(0..v.len());
                v[at] = [0xff, 0x00, b'{', b'-', b'9', 0xc3][rng.gen_range(0..6)];
            }
        }
    }
    v
}

/// Every stored run of `store` read back as the commands read it, each figure finite.
fn all_read_back(store: &storlab_store::Store, ids: &[i64]) {
    for id in ids {
        let run = store
            .run(*id, true)
            .unwrap_or_else(|e| panic!("run {id} was stored but does not read: {e}"))
            .unwrap_or_else(|| panic!("run {id} was stored but is not there"));
        assert_eq!(storlab_model::finite::first_non_finite(&run.phases), None, "run {id}");
    }
}

#[test]
fn a_thousand_mutants_of_the_real_outputs_never_panic_and_never_store_what_does_not_read() {
    let s = Scratch::new();
    let mut store = s.store_new();
    let mut rng = SmallRng::seed_from_u64(0x5EED_F022);
    let (mut taken, mut refused, mut total) = (0, 0, 0);
    let mut sample = Vec::new();
    for (name, bytes) in fixtures() {
        for k in 0..PER_FIXTURE {
            let mutant = mutate(&bytes, &mut rng);
            total += 1;
            let origin = storlab_import::Origin {
                path: format!("{name}~{k}"),
                ..Default::default()
            };
            let parsed = std::panic::catch_unwind(AssertUnwindSafe(|| {
                let text = storlab_model::source::utf8(&mutant);
                text.map(|t| storlab_import::parse(&origin, &t))
            }))
            .unwrap_or_else(|_| panic!("the importer panicked on mutant {k} of {name}"));
            let before = s.run_count().unwrap_or(0);
            match parsed {
                Ok(Ok(pieces)) => match storlab_import::record::store_pieces(&mut store, &origin.path, &pieces) {
                    Ok(done) => {
                        taken += 1;
                        all_read_back(&store, &done.stored);
                    }
                    Err(e) => {
                        let said = e.to_string();
                        assert!(
                            !said.contains("constraint failed") && !said.contains("invalid type"),
                            "mutant {k} of {name}: a raw error reached the user: {said}"
                        );
                        assert_eq!(s.run_count().unwrap_or(0), before, "a refused import stores nothing");
                        refused += 1;
                    }
                },
                Ok(Err(e)) => {
                    assert!(!e.to_string().is_empty());
                    refused += 1;
                }
                Err(why) => {
                    assert!(why.contains("line "), "{why}");
                    refused += 1;
                }
            }
            if k % 15 == 0 {
                sample.push((format!("{name}.{k}"), mutant));
            }
        }
    }
    eprintln!("{total} mutants: {taken} imported (each read back), {refused} refused");
    assert!(total >= 1000, "{total} mutants");
    assert!(
        taken > 0 && refused > 0,
        "both outcomes seen: {taken} taken, {refused} refused"
    );
    drop(store);
    // A sample through the real binary: an answer, never a panic, and the file still sound.
    let dir = s.path().join("mutants");
    std::fs::create_dir(&dir).unwrap();
    for (name, mutant) in &sample {
        let f = dir.join(name);
        std::fs::write(&f, mutant).unwrap();
        let out = s.storlab(&["results", "import", f.to_str().unwrap()]);
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert!(
            matches!(out.status.code(), Some(0) | Some(2)),
            "{name}: {:?} {err}",
            out.status
        );
    }
    if !on_postgres() {
        let check = s.storlab(&["db", "check", "--db", &s.db(), "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
        assert_eq!(v["sound"], true, "{v}");
    }
}
