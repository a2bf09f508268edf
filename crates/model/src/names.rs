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
}
