//! IOzone's tests (`-i`) and their phases, as IOzone names them in every report: one table.

use storlab_model::plan::PhaseKind;

/// One phase of an IOzone test, as IOzone names it everywhere it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IozonePhase {
    /// storlab's phase.
    pub kind: PhaseKind,
    /// The name in IOzone's throughput report and workbook ("Initial write").
    pub label: &'static str,
    /// The workers' word in "Children see throughput for 3 initial writers".
    pub who: &'static str,
    /// The name of its -R report ("Writer" for "Writer report").
    pub report: &'static str,
}

/// One IOzone test (`-i N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IozoneTest {
    /// Its number.
    pub number: u8,
    /// Its name in IOzone's help.
    pub name: &'static str,
    /// Its phases, in order.
    pub phases: &'static [IozonePhase],
}

macro_rules! iozone_phase {
    ($kind:ident, $label:literal, $who:literal, $report:literal) => {
        IozonePhase {
            kind: PhaseKind::$kind,
            label: $label,
            who: $who,
            report: $report,
        }
    };
}

/// IOzone's tests and every name IOzone gives their phases: the one table the parser, the
/// IOzone-layout report, the workbook and the import of IOzone's output all read.
pub const TESTS: &[IozoneTest] = &[
    IozoneTest {
        number: 0,
        name: "write/rewrite",
        phases: &[
            iozone_phase!(Write, "Initial write", "initial writers", "Writer"),
            iozone_phase!(Rewrite, "Rewrite", "rewriters", "Re-writer"),
        ],
    },
    IozoneTest {
        number: 1,
        name: "read/reread",
        phases: &[
            iozone_phase!(Read, "Read", "readers", "Reader"),
            iozone_phase!(Reread, "Re-read", "re-readers", "Re-Reader"),
        ],
    },
    IozoneTest {
        number: 2,
        name: "random read/write",
        phases: &[
            iozone_phase!(Randread, "Random read", "random readers", "Random read"),
            iozone_phase!(Randwrite, "Random write", "random writers", "Random write"),
        ],
    },
    IozoneTest {
        number: 3,
        name: "backward read",
        phases: &[iozone_phase!(
            Backread,
            "Reverse Read",
            "reverse readers",
            "Backward read"
        )],
    },
    IozoneTest {
        number: 4,
        name: "record rewrite",
        phases: &[iozone_phase!(
            Recrewrite,
            "Record rewrite",
            "record rewriters",
            "Record rewrite"
        )],
    },
    IozoneTest {
        number: 5,
        name: "stride read",
        phases: &[iozone_phase!(
            Strideread,
            "Stride read",
            "stride readers",
            "Stride read"
        )],
    },
    IozoneTest {
        number: 6,
        name: "fwrite/frewrite",
        phases: &[
            iozone_phase!(Write, "Fwrite", "fwriters", "Fwrite"),
            iozone_phase!(Rewrite, "Re-fwrite", "re-fwriters", "Re-Fwrite"),
        ],
    },
    IozoneTest {
        number: 7,
        name: "fread/freread",
        phases: &[
            iozone_phase!(Read, "Fread", "freaders", "Fread"),
            iozone_phase!(Reread, "Re-fread", "re-freaders", "Re-Fread"),
        ],
    },
    IozoneTest {
        number: 8,
        name: "random mix",
        phases: &[iozone_phase!(
            Randrw,
            "Mixed workload",
            "mixed workload",
            "Mixed workload"
        )],
    },
    IozoneTest {
        number: 9,
        name: "pwrite/re-pwrite",
        phases: &[
            iozone_phase!(Write, "Pwrite", "pwrite writers", "Pwrite"),
            iozone_phase!(Rewrite, "Re-pwrite", "re-pwrite writers", "Re-Pwrite"),
        ],
    },
    IozoneTest {
        number: 10,
        name: "pread/re-pread",
        phases: &[
            iozone_phase!(Read, "Pread", "pread readers", "Pread"),
            iozone_phase!(Reread, "Re-pread", "re-pread readers", "Re-Pread"),
        ],
    },
    IozoneTest {
        number: 11,
        name: "pwritev/re-pwritev",
        phases: &[
            iozone_phase!(Randwrite, "Pwritev", "pwritev writers", "Pwritev"),
            iozone_phase!(Randwrite, "Re-pwritev", "re-pwritev writers", "Re-Pwritev"),
        ],
    },
    IozoneTest {
        number: 12,
        name: "preadv/re-preadv",
        phases: &[
            iozone_phase!(Randread, "Preadv", "preadv readers", "Preadv"),
            iozone_phase!(Randread, "Re-preadv", "re-preadv readers", "Re-Preadv"),
        ],
    },
];

/// The test of a number.
pub fn test(number: u8) -> Option<&'static IozoneTest> {
    TESTS.iter().find(|t| t.number == number)
}

/// The phase IOzone's output names so, by any of its names (label, workers' word, report).
pub fn phase_named(name: &str) -> Option<&'static IozonePhase> {
    TESTS
        .iter()
        .flat_map(|t| t.phases)
        .find(|p| p.label == name || p.who == name || p.report == name)
}
