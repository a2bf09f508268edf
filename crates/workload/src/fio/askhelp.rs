//! fio's `--cmdhelp[=OPTION]` and `--enghelp[=ENGINE]`, answered from storlab's own tables: the
//! options (options.rs) with what storlab does with each — fio's effect, a note on why it
//! changes nothing storlab measures, or why it is refused — and the engines it runs
//! (convert/engine.rs). In fio's layout, so that a script that greps fio's answer finds the
//! option's name where fio puts it.

use super::options::{self, Does, FioOption, Kind};

/// What storlab does with `o`, in a line.
fn does(o: &FioOption) -> String {
    match o.does {
        Does::Honour => "fio's effect".into(),
        Does::Note(why) => format!("accepted, changes nothing storlab measures: {why}"),
        Does::Refuse(why) => format!("refused: {why}"),
    }
}

fn kind_text(k: Kind) -> &'static str {
    match k {
        Kind::Switch => "switch (may stand bare)",
        Kind::Bool => "boolean (0 or 1)",
        Kind::Int => "integer value",
        Kind::Size => "size (k, m, g, … or a percentage where fio allows one)",
        Kind::Seconds => "time (bare numbers in seconds)",
        Kind::Micros => "time (bare numbers in microseconds)",
        Kind::Str => "string",
        Kind::Range => "range of sizes (lo-hi)",
        Kind::FloatList => "list of numbers (a:b:…)",
        Kind::Deprecated => "deprecated: fio ignores it",
    }
}

/// `--cmdhelp` (all options, a line each) or `--cmdhelp=NAME` (one, whole); an option there is
/// not gets fio's words, on stdout with exit 0 as fio's.
pub fn cmdhelp(name: &str) -> Result<String, String> {
    if name.is_empty() || name == "all" {
        return Ok(options::OPTIONS
            .iter()
            .map(|o| format!("{:<24}: {}\n", o.name, does(o)))
            .collect());
    }
    let Some(o) = options::find(name) else {
        return Ok(format!("No such command: {name}\n"));
    };
    let mut s = format!("{:>20}: {}\n", o.name, does(o));
    if !o.aliases.is_empty() {
        s += &format!("{:>20}: {}\n", "alias", o.aliases.join(", "));
    }
    s += &format!("{:>20}: {}\n", "type", kind_text(o.kind));
    Ok(s)
}

/// `--enghelp` (the engines storlab runs) or `--enghelp=ENGINE` (its options: storlab's engines
/// take the generic ones); Err with fio's words for an engine storlab does not run.
pub fn enghelp(engine: &str) -> Result<String, String> {
    let engines = super::convert::engine_names();
    if engine.is_empty() {
        return Ok(format!(
            "Available IO engines:\n{}",
            engines.iter().map(|e| format!("\t{e}\n")).collect::<String>()
        ));
    }
    let name = engine.split(',').next().unwrap_or(engine);
    if engines.contains(&name) {
        Ok(format!("IO engine {name} has no options of its own in storlab: it takes fio's generic ones (iodepth, iodepth_batch, direct, …)\n"))
    } else {
        Err(format!(
            "IO engine {name} not found (storlab runs {})",
            engines.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_and_engines_are_answered_from_the_tables() {
        let all = cmdhelp("").unwrap();
        assert_eq!(all.lines().count(), options::OPTIONS.len());
        assert!(
            all.lines().any(|l| l.starts_with("bs ") && l.contains("fio's effect")),
            "{all}"
        );
        let bs = cmdhelp("blocksize").unwrap();
        assert!(bs.contains("                  bs: fio's effect"), "{bs}");
        assert!(cmdhelp("sprandom").unwrap().contains("refused: "));
        assert_eq!(cmdhelp("nosuch"), Ok("No such command: nosuch\n".into()));
        assert!(enghelp("").unwrap().contains("\tio_uring\n"));
        assert!(enghelp("psync").is_ok());
        assert!(enghelp("rdma").unwrap_err().starts_with("IO engine rdma not found"));
    }
}
