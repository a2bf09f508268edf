//! The kinds of background task, in one table: each kind's name, what it takes, and how it is
//! made from a description `KIND:ARGS`. A new kind is a module implementing `task::Task` and a
//! row here.

use std::path::Path;

use crate::task::{Task, TaskError};

/// Makes a task from its whole description and what follows the colon.
pub type Maker = fn(spec: &str, args: &str) -> Result<Box<dyn Task>, TaskError>;

/// One kind of task.
pub struct Kind {
    /// The name before the colon.
    pub name: &'static str,
    /// What follows the colon, as `--help` and errors show it.
    pub args: &'static str,
    /// Makes the task from the whole description and what follows the colon.
    pub make: Maker,
}

/// Every kind storlab drives.
pub const KINDS: &[Kind] = &[
    Kind {
        name: "btrfs-scrub",
        args: "MOUNTPOINT[@SPEED]",
        make: |spec, args| {
            let (mount, speed) = split_speed(spec, args)?;
            Ok(Box::new(crate::btrfs::Scrub::new(Path::new(mount), speed)?))
        },
    },
    Kind {
        name: "btrfs-replace",
        args: "MOUNTPOINT:DEVID:NEWDEVICE",
        make: |spec, args| {
            let mut parts = args.rsplitn(3, ':');
            let (Some(new), Some(devid), Some(mount)) = (parts.next(), parts.next(), parts.next()) else {
                return Err(TaskError::Malformed {
                    spec: spec.into(),
                    why: "expected btrfs-replace:MOUNTPOINT:DEVID:NEWDEVICE".into(),
                });
            };
            Ok(Box::new(crate::btrfs::Replace::new(
                Path::new(mount),
                devid,
                Path::new(new),
            )?))
        },
    },
    Kind {
        name: "md-check",
        args: "/dev/mdN[@SPEED]",
        make: |spec, args| {
            let (dev, speed) = split_speed(spec, args)?;
            Ok(Box::new(crate::md::MdSync::new(dev, false, speed)?))
        },
    },
    Kind {
        name: "md-repair",
        args: "/dev/mdN[@SPEED]",
        make: |spec, args| {
            let (dev, speed) = split_speed(spec, args)?;
            Ok(Box::new(crate::md::MdSync::new(dev, true, speed)?))
        },
    },
    Kind {
        name: "zfs-scrub",
        args: "POOL",
        make: |_, args| {
            Ok(Box::new(crate::vendor::VendorTask::new(
                crate::vendor::Vendor::ZfsScrub,
                args,
            )?))
        },
    },
    Kind {
        name: "tw_cli-verify",
        args: "/cX/uY",
        make: |_, args| {
            Ok(Box::new(crate::vendor::VendorTask::new(
                crate::vendor::Vendor::TwCliVerify,
                args,
            )?))
        },
    },
    Kind {
        name: "storcli-cc",
        args: "/cX/vY",
        make: |_, args| {
            Ok(Box::new(crate::vendor::VendorTask::new(
                crate::vendor::Vendor::StorcliCc,
                args,
            )?))
        },
    },
    Kind {
        name: "cmd",
        args: "NAME (a job file's [task.NAME]) or START|STATUS|STOP[|PAUSE|RESUME]",
        make: crate::cmd::parse,
    },
];

/// Every kind with its arguments: `btrfs-scrub:MOUNTPOINT[@SPEED], ...`.
pub fn known() -> String {
    KINDS
        .iter()
        .map(|k| format!("{}:{}", k.name, k.args))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Makes a task from its description `KIND:ARGS`.
pub fn parse(spec: &str) -> Result<Box<dyn Task>, TaskError> {
    let unknown = || TaskError::Unknown {
        spec: spec.into(),
        known: known(),
    };
    let (name, args) = spec.split_once(':').ok_or_else(unknown)?;
    let kind = KINDS.iter().find(|k| k.name == name).ok_or_else(unknown)?;
    (kind.make)(spec, args)
}

/// "WHERE@SPEED" → (WHERE, speed in bytes per second).
fn split_speed<'a>(spec: &str, args: &'a str) -> Result<(&'a str, Option<u64>), TaskError> {
    match args.rsplit_once('@') {
        Some((w, s)) => Ok((
            w,
            Some(parse_speed(s).ok_or_else(|| TaskError::Malformed {
                spec: spec.into(),
                why: format!("'{s}' is not a speed: expected bytes per second such as 20m"),
            })?),
        )),
        None => Ok((args, None)),
    }
}

fn parse_speed(s: &str) -> Option<u64> {
    let s = s.trim();
    let (n, m) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1u64 << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    n.parse::<u64>().ok()?.checked_mul(m).filter(|v| *v > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_parse_or_say_why_not() {
        let e = parse("raid-check:/dev/md0").err().unwrap().to_string();
        assert!(
            e.contains("unknown task") && e.contains("btrfs-scrub:MOUNTPOINT[@SPEED]"),
            "{e}"
        );
        let err = |spec: &str| parse(spec).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err("cmd:a|b").contains("three commands"));
        assert!(err("btrfs-scrub:/mnt@fast").contains("not a speed"));
        assert_eq!(parse_speed("20m"), Some(20 << 20));
        assert!(parse("cmd:true|echo done|true").is_ok());
    }
}
