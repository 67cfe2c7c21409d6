//! Scheduling configurations and the settings a runtime is built with.
//!
//! A [`Config`] names a combination of a scheduling policy, an allocation mode and a data
//! model, as in paper 1 section 4.4 and Figure 9. The names are the ones the command line,
//! reports and tests use.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;
use crate::sched::push::{Heuristic, DEFAULT_WEIGHTS};

/// A named scheduling configuration (`docs/guide.md`, "Choosing a configuration").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Config {
    /// Random work-stealing that ignores the topology; immediate allocation.
    Ws,
    /// Hierarchical work-stealing (same node first, then nodes by increasing cost);
    /// immediate allocation.
    DsaBase,
    /// `dsa-base` plus enhanced work-pushing with the input-only heuristic.
    PushIn,
    /// `dsa-base` plus enhanced work-pushing with the output-only heuristic.
    PushOut,
    /// `dsa-base` plus enhanced work-pushing with the weighted heuristic.
    PushWeighted,
    /// Hierarchical work-stealing with deferred allocation (paper 1 section 3).
    Dfa,
    /// Input-only work-pushing with deferred allocation (paper 1 section 3.3).
    DsaOpt,
    /// Hierarchical work-stealing over shared data updated in place, interleaved over
    /// the nodes by default (paper 1's SHM versions).
    ShmBase,
    /// Home-based scheduling with a steal vicinity (paper 4 section 3.1).
    Home,
    /// Breadth-first: one global FIFO queue from which every worker takes the oldest
    /// ready task, blind to the topology (the Nanos++ `bf` policy paper 4 compares
    /// home-based scheduling with); immediate allocation.
    Bf,
}

/// When and where the buffer of a new version is allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AllocMode {
    /// When the writing task is submitted, on the submitting worker's node (the classic
    /// scheme).
    Immediate,
    /// By the worker that runs the writer, on its own node, right before the body runs
    /// (paper 1 section 3.2).
    Deferred,
}

/// Which CPUs the workers take when there are fewer workers than CPUs (OpenMP's
/// `proc_bind`), [`RuntimeBuilder::proc_bind`](crate::RuntimeBuilder::proc_bind).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ProcBind {
    /// One CPU of each node in turn, so that every node gets workers as early as
    /// possible (the default).
    #[default]
    Spread,
    /// Every CPU of the first node, then of the next, in the topology's node order, so
    /// that the fewest nodes are used (paper 3's scaling runs: up to 8 cores, one node
    /// of the SGI UV2000).
    Close,
}

impl ProcBind {
    /// The name the command line uses.
    pub fn name(self) -> &'static str {
        match self {
            ProcBind::Spread => "spread",
            ProcBind::Close => "close",
        }
    }
}

/// What a task does with shared data that lies on another node than the one it starts
/// on ([`RuntimeBuilder::migration`](crate::RuntimeBuilder::migration); module
/// [`sched::migrate`](crate::sched::migrate)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Migration {
    /// Access it where it is (the default).
    #[default]
    None,
    /// Migrate its pages to the task's node before the task runs.
    Now,
    /// As `now`, counted as migration on next touch: with every access declared, the
    /// first task to touch the data after it moved away is its next toucher.
    NextTouch,
    /// Migrate when the migration model costs less than the remote accesses it saves
    /// over this task and the tasks already submitted that declare the datum.
    Auto,
}

impl Migration {
    /// Every setting, in the order of the command line's help.
    pub const ALL: [Migration; 4] = [
        Migration::None,
        Migration::Now,
        Migration::NextTouch,
        Migration::Auto,
    ];

    /// The name the command line and the report use.
    pub fn name(self) -> &'static str {
        match self {
            Migration::None => "none",
            Migration::Now => "now",
            Migration::NextTouch => "next-touch",
            Migration::Auto => "auto",
        }
    }
}

impl std::str::FromStr for Migration {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Migration::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                format!("unknown migration `{s}` (expected none, now, next-touch or auto)")
            })
    }
}

/// How an idle worker orders its steal attempts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StealKind {
    /// All other workers form one class; victims are tried from a random start.
    Random,
    /// Workers of the same node first, then nodes by increasing access cost, random
    /// within each class.
    Hierarchical,
    /// Hierarchical, restricted to a fixed group ("vicinity") of this many workers
    /// built from the cost matrix (paper 4 section 3.1): 1 means no stealing, the
    /// number of workers means full stealing.
    Vicinity(usize),
}

impl Config {
    /// Every configuration, in the order of the table in `docs/guide.md`.
    pub const ALL: [Config; 10] = [
        Config::Ws,
        Config::DsaBase,
        Config::PushIn,
        Config::PushOut,
        Config::PushWeighted,
        Config::Dfa,
        Config::DsaOpt,
        Config::ShmBase,
        Config::Home,
        Config::Bf,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Config::Ws => "ws",
            Config::DsaBase => "dsa-base",
            Config::PushIn => "push-in",
            Config::PushOut => "push-out",
            Config::PushWeighted => "push-weighted",
            Config::Dfa => "dfa",
            Config::DsaOpt => "dsa-opt",
            Config::ShmBase => "shm-base",
            Config::Home => "home",
            Config::Bf => "bf",
        }
    }

    /// The allocation mode of versioned data under this configuration.
    pub fn alloc_mode(self) -> AllocMode {
        match self {
            Config::Dfa | Config::DsaOpt => AllocMode::Deferred,
            _ => AllocMode::Immediate,
        }
    }

    /// The steal order of idle workers under this configuration (`home` steals in a
    /// vicinity whose size the builder sets; this returns full stealing for it).
    pub fn steal_kind(self) -> StealKind {
        match self {
            Config::Ws => StealKind::Random,
            _ => StealKind::Hierarchical,
        }
    }

    /// The work-pushing heuristic of this configuration, if it pushes (weights of
    /// `push-weighted` are the defaults; the builder can change them).
    pub fn push_heuristic(self) -> Option<Heuristic> {
        match self {
            Config::PushIn | Config::DsaOpt => Some(Heuristic::InputOnly),
            Config::PushOut => Some(Heuristic::OutputOnly),
            Config::PushWeighted => Some(Heuristic::Weighted {
                read: DEFAULT_WEIGHTS.0,
                write: DEFAULT_WEIGHTS.1,
            }),
            _ => None,
        }
    }

    /// Whether data created under this configuration is shared (one buffer placed by a
    /// policy, updated in place) rather than versioned: `shm-base`.
    pub fn shared_data(self) -> bool {
        matches!(self, Config::ShmBase)
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Config {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Config::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Config::ALL.iter().map(|c| c.name()).collect();
                Error::Config(format!(
                    "unknown configuration `{s}` (expected one of: {})",
                    names.join(", ")
                ))
            })
    }
}

impl serde::Serialize for Config {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for c in Config::ALL {
            assert_eq!(c.name().parse::<Config>().unwrap(), c);
        }
    }

    #[test]
    fn unknown_name_lists_the_known_ones() {
        let err = "dsa".parse::<Config>().unwrap_err().to_string();
        assert!(err.contains("unknown configuration `dsa`"), "{err}");
        assert!(err.contains("dsa-opt"), "{err}");
    }

    #[test]
    fn deferred_allocation_configs() {
        assert_eq!(Config::Dfa.alloc_mode(), AllocMode::Deferred);
        assert_eq!(Config::DsaOpt.alloc_mode(), AllocMode::Deferred);
        assert_eq!(Config::DsaBase.alloc_mode(), AllocMode::Immediate);
        assert_eq!(Config::Ws.steal_kind(), StealKind::Random);
    }
}
