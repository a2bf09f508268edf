//! fio's values as fio's parser reads them (parse.c: `str_to_decimal`, `get_mult_bytes`,
//! `get_mult_time`; the arithmetic of HOWTO "Job file parameters"), so that a job file means the
//! same bytes and seconds to storlab as to fio:
//!
//! - sizes: a whole number (hexadecimal with `0x`), then a unit whose first letters decide it —
//!   `k`, `kb`, `m`… are powers of `kb_base` (1024 by default), and the IEC spellings `kib`,
//!   `mib`… the *other* base (fio's "compatibility mode": with the default `kb_base=1024`,
//!   `4kib` is 4000 bytes, while `4k`, `4kb` and `4ki` are 4096); a trailing `%` makes a
//!   percentage;
//! - times: a whole number and `us`/`usec`, `ms`/`msec`, `s`, `m`, `h`, `d`; no unit is seconds
//!   for `runtime`-like options and microseconds for the others;
//! - an arithmetic expression in parentheses wherever a number goes, `+ - * / % ^` over numbers
//!   with the same units (microseconds by default inside a time expression);
//! - ranges `lo-hi` (or `lo:hi`), lists `a:b:c`, and `read,write,trim` triples.
//!
//! Written here rather than taken from a crate: no crate reads fio's units, and their quirks
//! (the inverted IEC prefixes, the first-letter rule) are what a job file's numbers mean.

/// How fio counts a `k`: `kb_base` (1024 or 1000).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KbBase(pub u64);

impl Default for KbBase {
    fn default() -> KbBase {
        KbBase(1024)
    }
}

/// A size option's value: bytes, or a percentage of the file or device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeValue {
    /// Bytes.
    Bytes(u64),
    /// A percentage (0 < p ≤ 100).
    Percent(f64),
}

/// The multiplier of a size unit (`get_mult_bytes`): the first letters decide, as in fio.
fn size_unit(unit: &str, kb: KbBase) -> Result<u64, String> {
    let u = unit.to_ascii_lowercase();
    let other: u64 = if kb.0 == 1000 { 1024 } else { 1000 };
    let iec = [("pib", 5), ("tib", 4), ("gib", 3), ("mib", 2), ("kib", 1)];
    for (name, pow) in iec {
        if u.starts_with(name) {
            return Ok(other.pow(pow));
        }
    }
    let pow = match u.chars().next() {
        None => 0,
        Some('p') => 5,
        Some('t') => 4,
        Some('g') => 3,
        Some('m') => 2,
        Some('k') => 1,
        Some('b') => 0,
        Some(_) => {
            return Err(format!(
                "unknown unit '{unit}' (fio's sizes take k, m, g, t, p, optionally b or ib, or %)"
            ))
        }
    };
    Ok(kb.0.pow(pow))
}

/// Splits `text` into its leading whole number and the rest.
fn leading_number(text: &str) -> Result<(i128, &str), String> {
    let t = text.trim();
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (n, rest) = if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        let end = hex.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(hex.len());
        let n = i128::from_str_radix(&hex[..end], 16).map_err(|_| format!("'{text}' is not a number"))?;
        (n, &hex[end..])
    } else {
        let end = body.find(|c: char| !c.is_ascii_digit()).unwrap_or(body.len());
        if end == 0 {
            return Err(format!("'{text}' is not a number"));
        }
        let n: i128 = body[..end].parse().map_err(|_| format!("'{text}' is too large"))?;
        (n, &body[end..])
    };
    if rest.starts_with('.') {
        return Err(format!(
            "'{text}': fio reads whole numbers only (it would take {n} and drop the fraction); write it in a smaller unit"
        ));
    }
    Ok((if neg { -n } else { n }, rest))
}

/// A size as fio reads it: bytes or a percentage.
pub fn size(text: &str, kb: KbBase) -> Result<SizeValue, String> {
    let t = text.trim();
    if t.starts_with('(') {
        let v = expression(t, Units::Bytes(kb))?;
        return u64::try_from(v.round() as i128)
            .map(SizeValue::Bytes)
            .map_err(|_| format!("'{text}' is negative"));
    }
    let (n, unit) = leading_number(t)?;
    let unit = unit.trim();
    if unit.starts_with('%') {
        let p = n as f64;
        if !(p > 0.0 && p <= 100.0) {
            return Err(format!("'{text}': a percentage is from 1% to 100%"));
        }
        return Ok(SizeValue::Percent(p));
    }
    if n < 0 {
        return Err(format!("'{text}' is negative"));
    }
    let bytes = (n as u128) * size_unit(unit, kb)? as u128;
    u64::try_from(bytes)
        .map(SizeValue::Bytes)
        .map_err(|_| format!("'{text}' is more than 2^64 bytes"))
}

/// A size that must be bytes (not a percentage).
pub fn bytes(text: &str, kb: KbBase) -> Result<u64, String> {
    match size(text, kb)? {
        SizeValue::Bytes(b) => Ok(b),
        SizeValue::Percent(_) => Err(format!("'{text}': a percentage is not taken here")),
    }
}

/// A whole number (fio's `int` options read sizes' units too: `iodepth=1k` is 1024).
pub fn int(text: &str, kb: KbBase) -> Result<u64, String> {
    bytes(text, kb)
}

/// Where a time without a unit counts: seconds (`runtime`, `ramp_time`, `startdelay`…) or
/// microseconds (`thinktime`, `latency_target`…).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeBase {
    /// A bare number is seconds.
    Seconds,
    /// A bare number is microseconds.
    Micros,
    /// A bare number is milliseconds (`log_avg_msec`, `flow_sleep` is µs).
    Millis,
}

/// A time as fio reads it, in microseconds.
pub fn time_us(text: &str, base: TimeBase) -> Result<u64, String> {
    let t = text.trim();
    if t.starts_with('(') {
        let v = expression(t, Units::Time)?;
        // fio: "For time values in expressions, units are microseconds by default"; for a
        // seconds option the result is still microseconds.
        return u64::try_from(v.round() as i128).map_err(|_| format!("'{text}' is negative"));
    }
    let (n, unit) = leading_number(t)?;
    if n < 0 {
        return Err(format!("'{text}' is negative"));
    }
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" => match base {
            TimeBase::Seconds => 1_000_000,
            TimeBase::Micros => 1,
            TimeBase::Millis => 1000,
        },
        u if u.starts_with("us") => 1,
        u if u.starts_with("ms") => 1000,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        u => return Err(format!("unknown time unit '{u}' (fio's times take us, ms, s, m, h, d)")),
    };
    u64::try_from(n as u128 * mult as u128).map_err(|_| format!("'{text}' is too long"))
}

/// A switch's value: fio's `0` or `1` (a bare boolean option is given as `key=1`; a bare
/// switch such as `norandommap` is 1).
pub fn switch(text: &str) -> Result<bool, String> {
    match text.trim() {
        "1" => Ok(true),
        "0" => Ok(false),
        t => match leading_number(t) {
            Ok((n, rest)) if rest.trim().is_empty() => Ok(n != 0),
            _ => Err(format!("'{t}' is not 0 or 1")),
        },
    }
}

/// fio's `read,write,trim` triple: the parts given (an empty part keeps the default; a single
/// value is all three).
pub fn triple(text: &str) -> [Option<&str>; 3] {
    let parts: Vec<&str> = text.split(',').collect();
    if parts.len() == 1 {
        let v = Some(parts[0].trim()).filter(|s| !s.is_empty());
        return [v, v, v];
    }
    let at = |i: usize| parts.get(i).map(|s| s.trim()).filter(|s| !s.is_empty());
    [at(0), at(1), at(2)]
}

/// A range `lo-hi` or `lo:hi` of sizes (fio swaps them when given high first).
pub fn size_range(text: &str, kb: KbBase) -> Result<(u64, u64), String> {
    let t = text.trim();
    let (a, b) = t
        .split_once('-')
        .or_else(|| t.split_once(':'))
        .ok_or_else(|| format!("'{t}' is not a range (expected LOW-HIGH, e.g. 4k-64k)"))?;
    let (a, b) = (bytes(a, kb)?, bytes(b, kb)?);
    Ok((a.min(b), a.max(b)))
}

/// A list of floating-point numbers separated by `:` (`percentile_list=99:99.9:99.99`).
pub fn float_list(text: &str) -> Result<Vec<f64>, String> {
    text.split(':')
        .map(|p| {
            p.trim()
                .parse::<f64>()
                .map_err(|_| format!("'{p}' in '{text}' is not a number"))
        })
        .collect()
}

/// What a bare number inside an expression counts in.
#[derive(Debug, Clone, Copy)]
enum Units {
    Bytes(KbBase),
    Time,
}

/// fio's arithmetic (HOWTO, "Job file parameters"): `( … )` with `+ - * / % ^` and
/// parentheses over numbers that may carry a unit. Precedence as usual, `^` right-associative.
fn expression(text: &str, units: Units) -> Result<f64, String> {
    struct P<'a> {
        s: &'a [u8],
        i: usize,
        units: Units,
    }
    impl P<'_> {
        fn ws(&mut self) {
            while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
                self.i += 1;
            }
        }
        fn peek(&mut self) -> Option<u8> {
            self.ws();
            self.s.get(self.i).copied()
        }
        fn sum(&mut self) -> Result<f64, String> {
            let mut v = self.product()?;
            while let Some(c @ (b'+' | b'-')) = self.peek() {
                self.i += 1;
                let r = self.product()?;
                v = if c == b'+' { v + r } else { v - r };
            }
            Ok(v)
        }
        fn product(&mut self) -> Result<f64, String> {
            let mut v = self.power()?;
            while let Some(c @ (b'*' | b'/' | b'%')) = self.peek() {
                self.i += 1;
                let r = self.power()?;
                v = match c {
                    b'*' => v * r,
                    _ if r == 0.0 => return Err("division by zero".into()),
                    b'/' => v / r,
                    _ => v % r,
                };
            }
            Ok(v)
        }
        fn power(&mut self) -> Result<f64, String> {
            let b = self.unary()?;
            if self.peek() == Some(b'^') {
                self.i += 1;
                return Ok(b.powf(self.power()?));
            }
            Ok(b)
        }
        fn unary(&mut self) -> Result<f64, String> {
            match self.peek() {
                Some(b'-') => {
                    self.i += 1;
                    Ok(-self.unary()?)
                }
                Some(b'(') => {
                    self.i += 1;
                    let v = self.sum()?;
                    if self.peek() != Some(b')') {
                        return Err("a '(' without its ')'".into());
                    }
                    self.i += 1;
                    Ok(v)
                }
                Some(c) if c.is_ascii_digit() || c == b'.' => {
                    let start = self.i;
                    while self.i < self.s.len() && (self.s[self.i].is_ascii_digit() || self.s[self.i] == b'.') {
                        self.i += 1;
                    }
                    let n: f64 = std::str::from_utf8(&self.s[start..self.i])
                        .unwrap_or("")
                        .parse()
                        .map_err(|_| "a malformed number".to_string())?;
                    let ustart = self.i;
                    while self.i < self.s.len() && self.s[self.i].is_ascii_alphabetic() {
                        self.i += 1;
                    }
                    let unit = std::str::from_utf8(&self.s[ustart..self.i]).unwrap_or("");
                    let mult = match self.units {
                        Units::Bytes(kb) => size_unit(unit, kb)? as f64,
                        Units::Time => time_us(&format!("1{unit}"), TimeBase::Micros)? as f64,
                    };
                    Ok(n * mult)
                }
                Some(c) => Err(format!("unexpected '{}'", c as char)),
                None => Err("the expression ends early".into()),
            }
        }
    }
    let mut p = P {
        s: text.as_bytes(),
        i: 0,
        units,
    };
    let v = p.sum().map_err(|e| format!("'{text}': {e}"))?;
    if p.peek().is_some() {
        return Err(format!("'{text}': unexpected text after the expression"));
    }
    Ok(v)
}

/// Integer arithmetic as `bc` does it (fio hands a value to bc after putting in `$ncpus`,
/// `$mb_memory` or `$pagesize`, when it holds + - * /): whole numbers, `/` truncating.
pub fn bc(text: &str) -> Result<i128, String> {
    fn sum(s: &[u8], i: &mut usize) -> Result<i128, String> {
        let mut v = term(s, i)?;
        loop {
            skip(s, i);
            match s.get(*i) {
                Some(b'+') => {
                    *i += 1;
                    v += term(s, i)?
                }
                Some(b'-') => {
                    *i += 1;
                    v -= term(s, i)?
                }
                _ => return Ok(v),
            }
        }
    }
    fn term(s: &[u8], i: &mut usize) -> Result<i128, String> {
        let mut v = atom(s, i)?;
        loop {
            skip(s, i);
            match s.get(*i) {
                Some(&c @ (b'*' | b'/' | b'%')) => {
                    *i += 1;
                    let r = atom(s, i)?;
                    v = match c {
                        b'*' => v * r,
                        _ if r == 0 => return Err("division by zero".into()),
                        b'/' => v / r,
                        _ => v % r,
                    };
                }
                _ => return Ok(v),
            }
        }
    }
    fn atom(s: &[u8], i: &mut usize) -> Result<i128, String> {
        skip(s, i);
        match s.get(*i) {
            Some(b'(') => {
                *i += 1;
                let v = sum(s, i)?;
                skip(s, i);
                if s.get(*i) != Some(&b')') {
                    return Err("a '(' without its ')'".into());
                }
                *i += 1;
                Ok(v)
            }
            Some(b'-') => {
                *i += 1;
                Ok(-atom(s, i)?)
            }
            Some(c) if c.is_ascii_digit() => {
                let start = *i;
                while s.get(*i).is_some_and(u8::is_ascii_digit) {
                    *i += 1;
                }
                std::str::from_utf8(&s[start..*i])
                    .unwrap_or("")
                    .parse()
                    .map_err(|_| "a number too large".into())
            }
            _ => Err("expected a number".into()),
        }
    }
    fn skip(s: &[u8], i: &mut usize) {
        while s.get(*i).is_some_and(u8::is_ascii_whitespace) {
            *i += 1;
        }
    }
    let s = text.as_bytes();
    let mut i = 0;
    let v = sum(s, &mut i).map_err(|e| format!("'{text}': {e} (fio hands this to bc)"))?;
    skip(s, &mut i);
    if i < s.len() {
        return Err(format!(
            "'{text}': bc cannot read it (fio hands a value with $ncpus, $mb_memory or $pagesize and + - * / to bc)"
        ));
    }
    Ok(v)
}

/// fio's verify_pattern as bytes (lib/pattern.c): hexadecimal `0x…` (bytes as written, an odd
/// digit first on its own), decimal integers (their bytes, least significant first, as many as
/// the value needs), and `"strings"`, one after another. `%o` (the block's offset) is not a
/// fixed pattern: refused.
pub fn pattern(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('"') {
            let end = r
                .find('"')
                .ok_or_else(|| format!("'{text}': a string without its closing quote"))?;
            out.extend_from_slice(&r.as_bytes()[..end]);
            rest = &r[end + 1..];
        } else if rest.len() > 2 && (rest.starts_with("0x") || rest.starts_with("0X")) {
            let r = &rest[2..];
            let mut n = r.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(r.len());
            // fio's "0xff0x14": the 0 of the next 0x is not this number's.
            if n > 0 && (r[n - 1..].starts_with("0x") || r[n - 1..].starts_with("0X")) {
                n -= 1;
            }
            if n == 0 {
                return Err(format!("'{text}': 0x without hexadecimal digits"));
            }
            let digits = &r[..n];
            let mut i = 0;
            if n % 2 == 1 {
                out.push(u8::from_str_radix(&digits[..1], 16).expect("a hex digit"));
                i = 1;
            }
            while i < n {
                out.push(u8::from_str_radix(&digits[i..i + 2], 16).expect("hex digits"));
                i += 2;
            }
            rest = &r[n..];
        } else if rest.starts_with('%') {
            return Err(format!(
                "'{text}': %o writes each block's offset, not a fixed pattern: storlab's header already holds every 4 KiB's offset and checks it"
            ));
        } else if rest.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
            let end = rest[1..]
                .find(|c: char| !c.is_ascii_digit())
                .map(|e| e + 1)
                .unwrap_or(rest.len());
            // A decimal runs up to a following 0x.
            let end = rest[..end].find("0x").filter(|p| *p > 0).unwrap_or(end);
            let v: i64 = rest[..end]
                .parse()
                .map_err(|_| format!("'{text}': '{}' is not a number", &rest[..end]))?;
            if v > i32::MAX as i64 || v < i32::MIN as i64 {
                return Err(format!(
                    "'{text}': {v} is beyond a 32-bit integer; give a larger pattern as 0x…"
                ));
            }
            let mut u = v as i32 as u32;
            if u == 0 {
                out.push(0);
            }
            while u != 0 {
                out.push((u & 0xff) as u8);
                u >>= 8;
            }
            rest = &rest[end..];
        } else if rest.starts_with(char::is_whitespace) || rest.starts_with(',') {
            rest = &rest[1..];
        } else {
            return Err(format!(
                "'{text}': expected 0x followed by hexadecimal digits, a decimal number or a \"string\""
            ));
        }
        rest = rest.trim_start();
    }
    if out.is_empty() {
        return Err(format!("'{text}': an empty pattern"));
    }
    if out.len() > storlab_model::settings::MAX_PATTERN {
        return Err(format!(
            "'{text}' is {} bytes: fio's patterns hold at most 512",
            out.len()
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: KbBase = KbBase(1024);

    #[test]
    fn sizes_follow_fios_first_letter_and_inverted_iec_rules() {
        assert_eq!(bytes("4k", K), Ok(4096));
        assert_eq!(bytes("4K", K), Ok(4096));
        assert_eq!(bytes("4kb", K), Ok(4096));
        assert_eq!(bytes("4ki", K), Ok(4096));
        // fio's compatibility mode: with kb_base=1024 the IEC spelling is the power of 10.
        assert_eq!(bytes("4kib", K), Ok(4000));
        assert_eq!(bytes("1MiB", K), Ok(1_000_000));
        assert_eq!(bytes("4kib", KbBase(1000)), Ok(4096));
        assert_eq!(bytes("4k", KbBase(1000)), Ok(4000));
        assert_eq!(bytes("0x1000", K), Ok(4096));
        assert_eq!(bytes("512", K), Ok(512));
        assert_eq!(bytes("2g", K), Ok(2 << 30));
        assert_eq!(size("50%", K), Ok(SizeValue::Percent(50.0)));
        assert!(bytes("1.5g", K).unwrap_err().contains("whole numbers"));
        assert!(bytes("4x", K).unwrap_err().contains("unknown unit 'x'"));
    }

    #[test]
    fn times_count_in_the_options_own_base() {
        assert_eq!(time_us("60", TimeBase::Seconds), Ok(60_000_000));
        assert_eq!(time_us("2m", TimeBase::Seconds), Ok(120_000_000));
        assert_eq!(time_us("500ms", TimeBase::Seconds), Ok(500_000));
        assert_eq!(time_us("100", TimeBase::Micros), Ok(100));
        assert_eq!(time_us("1h", TimeBase::Micros), Ok(3_600_000_000));
        assert_eq!(time_us("(1m+30s)", TimeBase::Seconds), Ok(90_000_000));
        assert_eq!(time_us("(1000)", TimeBase::Seconds), Ok(1000));
    }

    #[test]
    fn expressions_and_bc_compute_as_fio_does() {
        assert_eq!(bytes("(4k*2)", K), Ok(8192));
        assert_eq!(bytes("((1+1)^10)", K), Ok(1024));
        assert_eq!(bytes("(10%3)", K), Ok(1));
        assert!(bytes("(4k*", K).is_err());
        assert_eq!(bc("8*24105"), Ok(192840));
        assert_eq!(bc("7/2"), Ok(3));
        assert!(bc("2*4k").is_err());
    }

    #[test]
    fn ranges_lists_and_triples() {
        assert_eq!(size_range("4k-16k", K), Ok((4096, 16384)));
        assert_eq!(size_range("16k:4k", K), Ok((4096, 16384)));
        assert_eq!(float_list("99:99.9"), Ok(vec![99.0, 99.9]));
        assert_eq!(triple("4k"), [Some("4k"); 3]);
        assert_eq!(triple("4k,,8k"), [Some("4k"), None, Some("8k")]);
        assert_eq!(triple(",8k"), [None, Some("8k"), None]);
        assert_eq!(switch("1"), Ok(true));
        assert_eq!(switch("0"), Ok(false));
        assert!(switch("yes").is_err());
    }
}

#[cfg(test)]
mod pattern_tests {
    use super::pattern;

    #[test]
    fn patterns_read_as_fios_lib_pattern_reads_them() {
        assert_eq!(pattern("0xaa555aa5").unwrap(), [0xaa, 0x55, 0x5a, 0xa5]);
        assert_eq!(pattern("0xabc").unwrap(), [0x0a, 0xbc]);
        assert_eq!(pattern("258").unwrap(), [0x02, 0x01]);
        assert_eq!(pattern("0").unwrap(), [0]);
        assert_eq!(
            pattern("0xff\"ab\"-1").unwrap(),
            [0xff, b'a', b'b', 0xff, 0xff, 0xff, 0xff]
        );
        assert_eq!(pattern("0xff0x14").unwrap(), [0xff, 0x14]);
        assert!(pattern("%o").unwrap_err().contains("offset"));
        assert!(pattern("\"ab").unwrap_err().contains("closing quote"));
        assert!(pattern("zz").is_err());
    }
}
