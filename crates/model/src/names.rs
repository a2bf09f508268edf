//! Refusing a name that is not one of a known list, with the nearest as a "did you mean" (a
//! mistyped phase, back-end, setting or enum value): one wording for every such refusal.

/// Of `known`, the name nearest `name` within two edits (strsim's Levenshtein distance).
pub fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .map(|n| (strsim::levenshtein(name, n), n))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, n)| n)
}

/// " (did you mean 'read'?)" when a known name is near `name`, else "".
pub fn did_you_mean<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(name, known)
        .map(|c| format!(" (did you mean '{c}'?)"))
        .unwrap_or_default()
}

/// "unknown phase 'raed' (did you mean 'read'?): expected one of write, read, …".
pub fn unknown(what: &str, name: &str, known: &[&str]) -> String {
    format!(
        "unknown {what} '{name}'{}: expected one of {}",
        did_you_mean(name, known.iter().copied()),
        known.join(", ")
    )
}

/// A serde message about a name not in a list ("unknown field `critrion`, expected one of
/// `name`, `criterion`"), with the near miss named: "unknown field `critrion` (did you mean
/// `criterion`?), expected one of …". Other messages are returned as they are.
pub fn serde_did_you_mean(message: &str) -> String {
    let Some(at) = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|p| message.find(p).map(|i| i + p.len()))
    else {
        return message.to_string();
    };
    let Some(len) = message[at..].find('`') else {
        return message.to_string();
    };
    let (name, rest) = (&message[at..at + len], &message[at + len + 1..]);
    let known: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    match closest(name, known) {
        Some(c) => format!("{} (did you mean `{c}`?){rest}", &message[..at + len + 1]),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_near_miss_is_named_and_a_far_one_is_not() {
        let known = ["write", "read", "randread"];
        assert_eq!(
            unknown("phase", "raed", &known),
            "unknown phase 'raed' (did you mean 'read'?): expected one of write, read, randread"
        );
        assert_eq!(
            unknown("phase", "fly", &known),
            "unknown phase 'fly': expected one of write, read, randread"
        );
        assert_eq!(closest("thread", ["threads", "thread_x1"]), Some("threads"));
    }

    #[test]
    fn serde_messages_name_the_near_miss() {
        assert_eq!(
            serde_did_you_mean("unknown field `critrion`, expected one of `name`, `criterion`"),
            "unknown field `critrion` (did you mean `criterion`?), expected one of `name`, `criterion`"
        );
        assert_eq!(
            serde_did_you_mean("unknown variant `fio`, expected `sync` or `io_uring`"),
            "unknown variant `fio`, expected `sync` or `io_uring`"
        );
        assert_eq!(serde_did_you_mean("invalid type: integer"), "invalid type: integer");
    }
}
