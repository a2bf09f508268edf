//! Sizes, rates and durations: parse what a storage administrator types, print with the unit
//! named every time, and keep every quantity exact and 64-bit.
//!
//! The conventions (DESIGN.md, "Units and numbers"): `k m g t` and `KiB MiB GiB TiB` are powers
//! of 1024; `kB MB GB TB` are powers of 1000. A bare number of bytes has no suffix (or `b`/`B`).
//! Rates are either operations (`20000iops`, `20kiops`) or bytes per second (`200MiB/s`,
//! `1g/s`). Durations take `ns us ms s m h d w` (`10s`, `1h30m`, `60d`).
//! One file: [`Size`], [`Rate`] and [`Duration`] with their parsers and printers, and the few
//! printers of derived figures (MiB/s, latency, thousands, hours, UTC times).
#![deny(missing_docs)]

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What went wrong when parsing a quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnitError {
    /// The text had no number where one was expected.
    #[error("'{text}' is not a {what}: expected {expected}")]
    Malformed {
        /// The text as given.
        text: String,
        /// What kind of quantity was expected ("size", "rate", "duration").
        what: &'static str,
        /// Examples of valid input.
        expected: &'static str,
    },
    /// The number was valid but the suffix is unknown.
    #[error("'{text}' has an unknown unit '{suffix}' for a {what}: expected {expected}")]
    UnknownSuffix {
        /// The text as given.
        text: String,
        /// The suffix that was not understood.
        suffix: String,
        /// What kind of quantity was expected.
        what: &'static str,
        /// Examples of valid input.
        expected: &'static str,
    },
    /// The value does not fit in 64 bits.
    #[error("'{text}' is too large: it does not fit in 64 bits")]
    Overflow {
        /// The text as given.
        text: String,
    },
}

const SIZE_EXPECTED: &str =
    "a number with k, m, g, t (or KiB, MiB, GiB, TiB; powers of 1024) or kB, MB, GB, TB (powers of 1000), e.g. 4k, 1g, 512MiB, 10GB";
const RATE_EXPECTED: &str =
    "operations per second such as 20000iops or 20kiops, or bytes per second such as 200MiB/s or 1g/s";
const DURATION_EXPECTED: &str = "a number with ns, us, ms, s, m, h, d or w, e.g. 500ms, 10s, 2m, 1h30m, 60d";

/// Splits "12.5MiB" into ("12.5", "MiB").
fn split_number(text: &str) -> (&str, &str) {
    let end = text
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '_'))
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    (&text[..end], text[end..].trim())
}

/// Multiplies a decimal number given as text by an integer factor, exactly where possible.
fn scale(number: &str, factor: u64, text: &str, what: &'static str, expected: &'static str) -> Result<u64, UnitError> {
    let number = number.replace('_', "");
    let malformed = || UnitError::Malformed {
        text: text.to_string(),
        what,
        expected,
    };
    if number.is_empty() {
        return Err(malformed());
    }
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number.as_str(), ""),
    };
    if int_part.is_empty() && frac_part.is_empty() || frac_part.contains('.') {
        return Err(malformed());
    }
    let int: u64 = if int_part.is_empty() {
        0
    } else {
        int_part
            .parse()
            .map_err(|_| UnitError::Overflow { text: text.to_string() })?
    };
    let whole = int
        .checked_mul(factor)
        .ok_or_else(|| UnitError::Overflow { text: text.to_string() })?;
    if frac_part.is_empty() {
        return Ok(whole);
    }
    // Fractions ("1.5g") are computed in 128 bits so that no precision is lost before rounding.
    let digits = frac_part.len().min(18) as u32;
    let frac: u128 = frac_part[..digits as usize].parse().map_err(|_| malformed())?;
    let extra = frac * factor as u128 / 10u128.pow(digits);
    whole
        .checked_add(extra as u64)
        .ok_or_else(|| UnitError::Overflow { text: text.to_string() })
}

/// A number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Size(pub u64);

impl Size {
    /// One KiB.
    pub const KIB: u64 = 1024;
    /// One MiB.
    pub const MIB: u64 = 1024 * 1024;
    /// One GiB.
    pub const GIB: u64 = 1024 * 1024 * 1024;

    /// The size in bytes.
    pub fn bytes(self) -> u64 {
        self.0
    }

    /// The multiplier of a size suffix, or None when it is not one.
    fn factor(suffix: &str) -> Option<u64> {
        let f = match suffix {
            "" | "b" | "B" => 1,
            "k" | "K" | "KiB" | "kib" | "Ki" => 1 << 10,
            "m" | "M" | "MiB" | "mib" | "Mi" => 1 << 20,
            "g" | "G" | "GiB" | "gib" | "Gi" => 1 << 30,
            "t" | "T" | "TiB" | "tib" | "Ti" => 1 << 40,
            "p" | "P" | "PiB" | "pib" | "Pi" => 1 << 50,
            "kB" | "KB" => 1_000,
            "MB" => 1_000_000,
            "GB" => 1_000_000_000,
            "TB" => 1_000_000_000_000,
            "PB" => 1_000_000_000_000_000,
            _ => return None,
        };
        Some(f)
    }

    /// Prints in the largest binary unit that keeps the number at least 1 (e.g. "1.50 GiB").
    pub fn human(self) -> String {
        human_binary(self.0 as f64, "")
    }
}

fn human_binary(value: f64, per: &str) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = value;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} {}{per}", UNITS[i])
    } else {
        format!("{v:.2} {}{per}", UNITS[i])
    }
}

impl FromStr for Size {
    type Err = UnitError;
    fn from_str(text: &str) -> Result<Self, UnitError> {
        let t = text.trim();
        let (number, suffix) = split_number(t);
        let factor = Size::factor(suffix).ok_or_else(|| {
            if number.is_empty() {
                UnitError::Malformed {
                    text: text.to_string(),
                    what: "size",
                    expected: SIZE_EXPECTED,
                }
            } else {
                UnitError::UnknownSuffix {
                    text: text.to_string(),
                    suffix: suffix.to_string(),
                    what: "size",
                    expected: SIZE_EXPECTED,
                }
            }
        })?;
        scale(number, factor, text, "size", SIZE_EXPECTED).map(Size)
    }
}

impl fmt::Display for Size {
    /// Exact, in the largest binary unit that divides the size ("4k" prints "4KiB").
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (unit, factor) in [
            ("TiB", 1u64 << 40),
            ("GiB", 1 << 30),
            ("MiB", 1 << 20),
            ("KiB", 1 << 10),
        ] {
            if b >= factor && b.is_multiple_of(factor) {
                return write!(f, "{}{}", b / factor, unit);
            }
        }
        write!(f, "{b}B")
    }
}

impl Size {
    /// Exact as Display, with a space before the unit, for prose: "8 MiB", "4097 B".
    pub fn words(self) -> String {
        let exact = self.to_string();
        let unit_at = exact.find(|c: char| !c.is_ascii_digit()).unwrap_or(exact.len());
        format!("{} {}", &exact[..unit_at], &exact[unit_at..])
    }
}

impl Serialize for Size {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(self.0)
    }
}

impl<'de> Deserialize<'de> for Size {
    /// Accepts a number of bytes or a string with a unit ("4k").
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => Ok(Size(n)),
            Raw::S(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// A target rate: operations per second or bytes per second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    /// I/O operations per second.
    Iops(f64),
    /// Bytes per second.
    BytesPerSec(f64),
}

impl Rate {
    /// The value in its own unit.
    pub fn value(self) -> f64 {
        match self {
            Rate::Iops(v) | Rate::BytesPerSec(v) => v,
        }
    }

    /// This rate divided evenly among `n` workers.
    pub fn split(self, n: u32) -> Rate {
        let n = n.max(1) as f64;
        match self {
            Rate::Iops(v) => Rate::Iops(v / n),
            Rate::BytesPerSec(v) => Rate::BytesPerSec(v / n),
        }
    }
}

impl FromStr for Rate {
    type Err = UnitError;
    fn from_str(text: &str) -> Result<Self, UnitError> {
        let t = text.trim();
        let lower = t.to_ascii_lowercase();
        if let Some(n) = lower.strip_suffix("iops") {
            let (number, suffix) = split_number(n.trim());
            let factor = match suffix {
                "" => 1,
                "k" => 1_000,
                "m" => 1_000_000,
                _ => {
                    return Err(UnitError::UnknownSuffix {
                        text: text.to_string(),
                        suffix: suffix.to_string(),
                        what: "rate",
                        expected: RATE_EXPECTED,
                    })
                }
            };
            let v = scale(number, factor, text, "rate", RATE_EXPECTED)?;
            if v == 0 {
                return Err(UnitError::Malformed {
                    text: text.to_string(),
                    what: "rate",
                    expected: RATE_EXPECTED,
                });
            }
            return Ok(Rate::Iops(v as f64));
        }
        let body = t
            .strip_suffix("/s")
            .or_else(|| t.strip_suffix("ps"))
            .ok_or_else(|| UnitError::Malformed {
                text: text.to_string(),
                what: "rate",
                expected: RATE_EXPECTED,
            })?;
        let size: Size = body.parse().map_err(|_| UnitError::Malformed {
            text: text.to_string(),
            what: "rate",
            expected: RATE_EXPECTED,
        })?;
        if size.0 == 0 {
            return Err(UnitError::Malformed {
                text: text.to_string(),
                what: "rate",
                expected: RATE_EXPECTED,
            });
        }
        Ok(Rate::BytesPerSec(size.0 as f64))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rate::Iops(v) => write!(f, "{v:.0} IOPS"),
            Rate::BytesPerSec(v) => write!(f, "{}", human_binary(*v, "/s")),
        }
    }
}

/// A span of time, in nanoseconds (64-bit: over 500 years).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(pub u64);

impl Duration {
    /// As a std Duration.
    pub fn std(self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.0)
    }
    /// In seconds.
    pub fn secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

impl FromStr for Duration {
    type Err = UnitError;
    fn from_str(text: &str) -> Result<Self, UnitError> {
        let mut rest = text.trim();
        if rest.is_empty() {
            return Err(UnitError::Malformed {
                text: text.to_string(),
                what: "duration",
                expected: DURATION_EXPECTED,
            });
        }
        let mut total: u64 = 0;
        while !rest.is_empty() {
            let (number, after) = split_number(rest);
            let unit_len = after.find(|c: char| c.is_ascii_digit()).unwrap_or(after.len());
            let unit = &after[..unit_len];
            let factor: u64 = match unit.trim() {
                "ns" => 1,
                "us" | "µs" => 1_000,
                "ms" => 1_000_000,
                "s" | "" => 1_000_000_000,
                "m" | "min" => 60_000_000_000,
                "h" => 3_600_000_000_000,
                "d" => 86_400_000_000_000,
                "w" => 604_800_000_000_000,
                other => {
                    return Err(if number.is_empty() {
                        UnitError::Malformed {
                            text: text.to_string(),
                            what: "duration",
                            expected: DURATION_EXPECTED,
                        }
                    } else {
                        UnitError::UnknownSuffix {
                            text: text.to_string(),
                            suffix: other.to_string(),
                            what: "duration",
                            expected: DURATION_EXPECTED,
                        }
                    })
                }
            };
            let part = scale(number, factor, text, "duration", DURATION_EXPECTED)?;
            total = total
                .checked_add(part)
                .ok_or_else(|| UnitError::Overflow { text: text.to_string() })?;
            rest = &after[unit_len..];
        }
        Ok(Duration(total))
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns == 0 {
            return write!(f, "0s");
        }
        if ns.is_multiple_of(1_000_000_000) {
            let s = ns / 1_000_000_000;
            let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
            let mut out = String::new();
            if h > 0 {
                out += &format!("{h}h");
            }
            if m > 0 {
                out += &format!("{m}m");
            }
            if s > 0 {
                out += &format!("{s}s");
            }
            return write!(f, "{out}");
        }
        if ns.is_multiple_of(1_000_000) {
            return write!(f, "{}ms", ns / 1_000_000);
        }
        if ns.is_multiple_of(1_000) {
            return write!(f, "{}us", ns / 1_000);
        }
        write!(f, "{ns}ns")
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Duration {
    /// Accepts a string with a unit ("10s") or a number of seconds.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(u64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) => n
                .checked_mul(1_000_000_000)
                .map(Duration)
                .ok_or_else(|| serde::de::Error::custom("duration too large")),
            Raw::S(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// A positive figure to three significant digits: 0.00374, 0.108, 1.78, 1664.
pub fn sig3(x: f64) -> String {
    if !(x.is_finite() && x > 0.0) {
        return format!("{x}");
    }
    let decimals = (2 - x.log10().floor() as i32).max(0) as usize;
    format!("{x:.decimals$}")
}

/// Formats bytes per second as MiB/s with two decimals ("123.45 MiB/s").
pub fn mib_per_sec(bytes_per_sec: f64) -> String {
    format!("{:.2} MiB/s", bytes_per_sec / Size::MIB as f64)
}

/// A count with its thousands grouped by commas, as people read it ("4,195,712").
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Formats a latency given in nanoseconds in microseconds ("12.3 µs"), or ms when large.
pub fn latency(ns: f64) -> String {
    if ns >= 10_000_000.0 {
        format!("{:.1} ms", ns / 1e6)
    } else if ns >= 100_000.0 {
        format!("{:.0} µs", ns / 1e3)
    } else {
        format!("{:.1} µs", ns / 1e3)
    }
}

/// Hours in words a person reads at a glance: "36.0 h", "2.50 h", "12.0 s".
pub fn human_hours(h: f64) -> String {
    if h >= 10.0 {
        format!("{h:.1} h")
    } else if h >= 0.1 {
        format!("{h:.2} h")
    } else {
        format!("{:.1} s", h * 3600.0)
    }
}

/// A moment (seconds since the epoch) as RFC 3339 UTC, to the second.
pub fn utc(t: f64) -> String {
    let st = std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(t.max(0.0));
    humantime::format_rfc3339_seconds(st).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(207_950), "207,950");
        assert_eq!(thousands(4_195_712), "4,195,712");
    }

    #[test]
    fn sizes_binary_and_decimal() {
        assert_eq!("4k".parse::<Size>().unwrap(), Size(4096));
        assert_eq!("4KiB".parse::<Size>().unwrap(), Size(4096));
        assert_eq!("4kB".parse::<Size>().unwrap(), Size(4000));
        assert_eq!("1g".parse::<Size>().unwrap(), Size(1 << 30));
        assert_eq!("10GB".parse::<Size>().unwrap(), Size(10_000_000_000));
        assert_eq!("1.5g".parse::<Size>().unwrap(), Size(3 << 29));
        assert_eq!("512".parse::<Size>().unwrap(), Size(512));
        assert_eq!("16t".parse::<Size>().unwrap(), Size(16 << 40));
    }

    #[test]
    fn sizes_are_64_bit() {
        // 5 GiB does not fit in 32 bits; Ioperf's 32-bit sizes broke at 2 GiB (seed 001).
        assert_eq!("5g".parse::<Size>().unwrap().bytes(), 5 * 1024 * 1024 * 1024);
        assert!(matches!("99999999p".parse::<Size>(), Err(UnitError::Overflow { .. })));
    }

    #[test]
    fn bad_sizes_name_the_suffix() {
        let e = "12q".parse::<Size>().unwrap_err();
        assert!(
            matches!(&e, UnitError::UnknownSuffix { suffix, .. } if suffix == "q"),
            "{e}"
        );
        assert!(e.to_string().contains("12q") && e.to_string().contains("KiB"));
        assert!("".parse::<Size>().is_err());
        assert!("k".parse::<Size>().is_err());
        assert!("1.2.3k".parse::<Size>().is_err());
    }

    #[test]
    fn size_display_is_exact() {
        assert_eq!(Size(4096).to_string(), "4KiB");
        assert_eq!(Size(1 << 30).to_string(), "1GiB");
        assert_eq!(Size(1000).to_string(), "1000B");
        assert_eq!(Size(3 << 29).to_string(), "1536MiB");
    }

    #[test]
    fn rates() {
        assert_eq!("20000iops".parse::<Rate>().unwrap(), Rate::Iops(20000.0));
        assert_eq!("20kiops".parse::<Rate>().unwrap(), Rate::Iops(20000.0));
        assert_eq!(
            "200MiB/s".parse::<Rate>().unwrap(),
            Rate::BytesPerSec(200.0 * 1048576.0)
        );
        assert_eq!("1g/s".parse::<Rate>().unwrap(), Rate::BytesPerSec(1073741824.0));
        assert!("200MiB".parse::<Rate>().is_err());
        assert!("0iops".parse::<Rate>().is_err());
        assert!("5xiops".parse::<Rate>().is_err());
        assert_eq!(Rate::Iops(100.0).split(4), Rate::Iops(25.0));
    }

    #[test]
    fn durations() {
        assert_eq!("10s".parse::<Duration>().unwrap(), Duration(10_000_000_000));
        assert_eq!("500ms".parse::<Duration>().unwrap(), Duration(500_000_000));
        assert_eq!("1h30m".parse::<Duration>().unwrap(), Duration(5_400_000_000_000));
        assert_eq!("60d".parse::<Duration>().unwrap(), Duration(60 * 86_400_000_000_000));
        assert_eq!("1.5s".parse::<Duration>().unwrap(), Duration(1_500_000_000));
        assert_eq!("7".parse::<Duration>().unwrap(), Duration(7_000_000_000));
        assert!("10x".parse::<Duration>().is_err());
        assert_eq!(Duration(5_400_000_000_000).to_string(), "1h30m");
        assert_eq!(Duration(1_500_000).to_string(), "1500us");
    }

    #[test]
    fn printing() {
        assert_eq!(mib_per_sec(1048576.0 * 2.5), "2.50 MiB/s");
        assert_eq!(latency(12_300.0), "12.3 µs");
        assert_eq!(Size(3 << 29).human(), "1.50 GiB");
    }
}
