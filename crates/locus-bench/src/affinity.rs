//! The affinity variants of paper 3's workloads (`--affinity none|init|strict|non-strict`;
//! Virouleau et al., "Description, Implementation and Evaluation of an Affinity Clause
//! for Task Directives", Figures 1-3: the KASTORS Jacobi and the SpMV).
//!
//! - `none`: no hint; initialisation tasks run wherever the scheduler puts them, so the
//!   data land where they were first written, and so do the compute tasks.
//! - `init`: initialisation tasks are bound (strictly) so that the data are spread over
//!   the nodes; compute tasks carry no hint (paper 3's `jacobi_block_*_affinity` with
//!   plain compute tasks, and its Clang and GCC SpMV runs).
//! - `strict`: as `init`, and every compute task is bound to its data's owner.
//! - `non-strict`: as `init`, and every compute task asks for its data's owner but may
//!   be stolen.

use locus::{Affinity, Runtime};
use serde::{Deserialize, Serialize};

/// Which tasks carry affinity hints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AffinityMode {
    /// No hints.
    None,
    /// Initialisation tasks bound to the owners of their data; compute tasks unhinted.
    Init,
    /// Initialisation and compute tasks bound to the owners (strict affinity).
    #[default]
    Strict,
    /// Initialisation tasks bound; compute tasks prefer the owners (non-strict).
    NonStrict,
}

impl AffinityMode {
    /// Every mode, in the order of the command line's help.
    pub const ALL: [AffinityMode; 4] = [
        AffinityMode::None,
        AffinityMode::Init,
        AffinityMode::Strict,
        AffinityMode::NonStrict,
    ];

    /// The hint of an initialisation task whose data `owner` should hold.
    pub(crate) fn init(self, owner: Affinity) -> Option<Affinity> {
        match self {
            AffinityMode::None => None,
            _ => Some(owner.strict()),
        }
    }

    /// The hint of a compute task whose data `owner` holds.
    pub(crate) fn compute(self, owner: Affinity) -> Option<Affinity> {
        match self {
            AffinityMode::None | AffinityMode::Init => None,
            AffinityMode::Strict => Some(owner.strict()),
            AffinityMode::NonStrict => Some(owner),
        }
    }

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            AffinityMode::None => "none",
            AffinityMode::Init => "init",
            AffinityMode::Strict => "strict",
            AffinityMode::NonStrict => "non-strict",
        }
    }
}

impl std::fmt::Display for AffinityMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The nodes of the runtime that have workers, in order: the owners data are spread
/// over (a strict hint to a node without workers could never run).
pub(crate) fn worker_nodes(rt: &Runtime) -> Vec<usize> {
    let mut nodes = rt.worker_nodes().to_vec();
    nodes.sort_unstable();
    nodes.dedup();
    nodes
}

/// The owner of part `i` of `parts` among `owners` (nodes or workers): contiguous runs
/// of parts, as even as can be.
pub(crate) fn owner_of(i: usize, parts: usize, owners: usize) -> usize {
    (i as u128 * owners as u128 / parts.max(1) as u128) as usize
}

/// Submits `builder` with `hint` if there is one.
pub(crate) fn hinted<L: locus::AccessList>(
    builder: locus::TaskBuilder<'_, L>,
    hint: Option<Affinity>,
) -> locus::TaskBuilder<'_, L> {
    match hint {
        Some(a) => builder.affinity(a),
        None => builder,
    }
}
