//! Which parser fits which hook stage.
//!
//! A hook's output is read by its parser only where the report looks for it: DUT CPU from a
//! `proc-stat` pair of `stats-before` and `stats-after`, or from a `vmstat` sampler's mean;
//! power from a `power` sampler's mean. A parser in the wrong stage runs and reads nothing
//! useful, silently: `cat /proc/stat` as a sampler ends at once and gives one snapshot, not a
//! difference; a power meter read once in `stats-after` gives one reading, not the case's
//! mean. So a plan that puts a parser where it cannot be read is refused at the key, naming
//! the stages that fit ([`Parser::misfit`]).

use super::Parser;

/// When a profile's hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Once before the profile's first case.
    Setup,
    /// Once after the profile's last case.
    Teardown,
    /// Before each case, to completion.
    StatsBefore,
    /// After each case, to completion.
    StatsAfter,
    /// Started before each case and stopped after it.
    Sampler,
}

impl Stage {
    /// Every stage with its plan key, in the order a profile lists them.
    pub const ALL: [(&'static str, Stage); 5] = [
        ("setup", Stage::Setup),
        ("teardown", Stage::Teardown),
        ("stats-before", Stage::StatsBefore),
        ("stats-after", Stage::StatsAfter),
        ("samplers", Stage::Sampler),
    ];

    /// The plan key of the stage (`stats-before`, `samplers`, …).
    pub fn key(self) -> &'static str {
        Stage::ALL
            .iter()
            .find(|(_, s)| *s == self)
            .map_or("", |(k, _)| k)
    }
}

/// What a parser reads: one output taken at an instant, or samples over the whole case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// Counters at one instant (`cat /proc/stat`, `nft list counters`): a pair before and
    /// after the case gives what happened during it.
    Snapshot,
    /// Samples for as long as the command runs (`vmstat 1`, a power meter): the case's mean.
    Stream,
}

impl Parser {
    /// What this parser reads.
    pub fn reads(self) -> Reads {
        match self {
            Parser::ProcStat | Parser::Nft | Parser::NftJson => Reads::Snapshot,
            Parser::Vmstat | Parser::Power => Reads::Stream,
        }
    }

    /// The stages whose output this parser reads.
    pub fn stages(self) -> &'static [Stage] {
        match self.reads() {
            Reads::Snapshot => &[Stage::StatsBefore, Stage::StatsAfter],
            Reads::Stream => &[Stage::Sampler],
        }
    }

    /// Why this parser does not fit `stage`, naming the stages that fit; `None` when it fits.
    pub fn misfit(self, stage: Stage) -> Option<String> {
        if self.stages().contains(&stage) {
            return None;
        }
        let name = self.name();
        let what = match self.reads() {
            Reads::Snapshot => format!(
                "`{name}` reads counters at one instant, and a before/after pair gives what happened during the case: it fits `stats-before` and `stats-after`"
            ),
            Reads::Stream => format!(
                "`{name}` reads samples for as long as its command runs, and the report takes their mean over the case: it fits `samplers`"
            ),
        };
        let why = match stage {
            Stage::Sampler => "a sampler runs through the case and is stopped after it, and a command that prints one snapshot ends at once".to_string(),
            Stage::StatsBefore | Stage::StatsAfter => format!(
                "`{}` runs once, to completion, so it gives one sample, not the case's",
                stage.key()
            ),
            Stage::Setup | Stage::Teardown => format!(
                "the output of `{}` is stored, never read",
                stage.key()
            ),
        };
        Some(format!("{what}, not `{}` ({why})", stage.key()))
    }

    /// The parser's plan name (`proc-stat`).
    pub fn name(self) -> &'static str {
        Parser::ALL
            .iter()
            .find(|(_, p)| *p == self)
            .map_or("", |(n, _)| n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parser_fits_some_stage_and_is_refused_elsewhere() {
        for (name, p) in Parser::ALL {
            assert_eq!(p.name(), name);
            assert!(!p.stages().is_empty());
            for (key, s) in Stage::ALL {
                assert_eq!(s.key(), key);
                match p.misfit(s) {
                    None => assert!(p.stages().contains(&s), "{name} in {key}"),
                    Some(m) => {
                        assert!(m.contains(&format!("`{name}`")), "{m}");
                        assert!(m.contains(&format!("not `{key}`")), "{m}");
                        for fit in p.stages() {
                            assert!(m.contains(&format!("`{}`", fit.key())), "{m}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn snapshot_parsers_are_stats_stream_parsers_are_samplers() {
        assert_eq!(Parser::ProcStat.misfit(Stage::StatsAfter), None);
        assert_eq!(Parser::Nft.misfit(Stage::StatsBefore), None);
        assert_eq!(Parser::Vmstat.misfit(Stage::Sampler), None);
        assert_eq!(Parser::Power.misfit(Stage::Sampler), None);
        let m = Parser::ProcStat.misfit(Stage::Sampler).unwrap();
        assert!(
            m.contains("fits `stats-before` and `stats-after`, not `samplers`"),
            "{m}"
        );
        let m = Parser::Power.misfit(Stage::StatsAfter).unwrap();
        assert!(m.contains("it fits `samplers`, not `stats-after`"), "{m}");
        assert!(Parser::NftJson.misfit(Stage::Setup).is_some());
    }
}
