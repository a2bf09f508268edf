//! A counter's step between two readings. The kernel's disk counters are `unsigned long`
//! (64 bits here) but its time counters are milliseconds in an `unsigned int`
//! (jiffies_to_msecs), which wraps after 49.7 days of busy time; a 32-bit kernel wraps them
//! all. A device that is removed and added again under the same name starts from zero.

/// How a counter moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Forward by this much.
    Forward(u64),
    /// It passed 2^32 and started again: forward by this much all the same.
    Wrapped(u64),
    /// It went back to (near) zero: the device was reset or replaced; this much since.
    Reset(u64),
}

impl Step {
    /// The amount counted.
    pub fn amount(self) -> u64 {
        match self {
            Step::Forward(n) | Step::Wrapped(n) | Step::Reset(n) => n,
        }
    }
}

const WRAP: u64 = 1 << 32;

/// The step from `before` to `now`. A drop is a 32-bit wrap when both readings fit in 32 bits
/// and the wrapped step is under half the range (2^31: 2 TiB of sectors or 24 days of
/// milliseconds in one interval is not a step, it is a reset); otherwise a reset.
pub fn step(before: u64, now: u64) -> Step {
    if now >= before {
        return Step::Forward(now - before);
    }
    if before < WRAP {
        let wrapped = WRAP - before + now;
        if wrapped < WRAP / 2 {
            return Step::Wrapped(wrapped);
        }
    }
    Step::Reset(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_that_passes_two_to_the_32_counts_on() {
        assert_eq!(step(10, 25), Step::Forward(15));
        assert_eq!(step(u32::MAX as u64 - 9, 5), Step::Wrapped(15));
        assert_eq!(step(u32::MAX as u64, 0), Step::Wrapped(1));
    }

    #[test]
    fn a_counter_that_drops_far_or_from_beyond_32_bits_was_reset() {
        assert_eq!(step(5_000_000_000, 100), Step::Reset(100));
        assert_eq!(
            step(3_000, 100),
            Step::Reset(100),
            "a wrap would be a step of nearly 2^32"
        );
        assert_eq!(step(7, 7).amount(), 0);
    }
}
