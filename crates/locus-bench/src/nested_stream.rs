//! `nested-stream`: STREAM with one team per node (Broquedis et al., "Dynamic Task and
//! Data Placement over NUMA Architectures: An OpenMP Runtime Perspective",
//! Nested-STREAM): the elements
//! are split into one set of three vectors per node that has workers, and the tasks of
//! set `k` (its initialisation, hence its first touch, and its four operations) are
//! bound to node `k`, as a nested parallel region whose team stays on its node. The
//! operations, blocks, rates and verification are [`stream`](crate::stream)'s.
//!
//! # Sizes
//!
//! As `stream`: `--size N` (`len`, all sets together), `--block-len L` (`block_len`,
//! per task), `--iterations N`. Paper size: 20 million doubles per vector, split over
//! the nodes, blocks of 312 500, 10 iterations.

use locus::{Affinity, Runtime};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::size::{kernel_params, Axis, Options};
use crate::stream::{blocks_of, check, run_sets, Shape, PAPER_LEN};

/// Size of the problem.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Params {
    /// Elements per vector, all sets together.
    pub len: usize,
    /// Elements per block (one task per block and operation).
    pub block_len: usize,
    /// Iterations of the four operations.
    pub iterations: usize,
}

impl Default for Params {
    /// As `stream`'s: 2^20 elements, blocks of 2^16, 5 iterations.
    fn default() -> Self {
        let p = crate::stream::Params::default();
        Params {
            len: p.len,
            block_len: p.block_len,
            iterations: p.iterations,
        }
    }
}

impl Params {
    /// 20 million doubles per vector, blocks of 312 500, 10 iterations.
    pub fn paper() -> Self {
        Params {
            len: PAPER_LEN,
            block_len: PAPER_LEN / 64,
            iterations: 10,
        }
    }

    /// The same problem.
    pub fn paper_sgi() -> Self {
        Params::paper()
    }

    /// 4096 elements in blocks of 256, 2 iterations: for tests.
    pub fn tiny() -> Self {
        Params {
            len: 4096,
            block_len: 256,
            iterations: 2,
        }
    }

    /// At least one element, block and iteration; bounded sizes.
    pub fn validate(&self) -> Result<(), String> {
        check(&NESTED, self.len, self.block_len, self.iterations)?;
        crate::size::finishes(self)
    }

    /// Tasks on `groups` nodes: one initialisation and four operations per block and
    /// iteration.
    pub fn tasks(&self, groups: usize) -> u64 {
        crate::stream::tasks(blocks_of(self.len, self.block_len, groups), self.iterations)
    }
}

const NESTED: Options = Options {
    name: "nested-stream",
    axes: &[Axis::Extent("len", "block_len")],
    size: None,
    iterations: Some("iterations"),
};

kernel_params!(NESTED, bytes: |p| crate::size::bytes::<f64>(&[p.len, 3]));

/// Runs `nested-stream`; see the module documentation.
pub fn run(rt: &Runtime, p: &Params) -> Result<(crate::Outcome, Value), crate::Error> {
    run_flipped(rt, p, None)
}

/// [`run`] against the reference with element `flip` of set 0's `a` changed (tests).
#[cfg(test)]
pub(crate) fn run_against(
    rt: &Runtime,
    p: &Params,
    flip: Option<usize>,
) -> Result<crate::Outcome, crate::Error> {
    run_flipped(rt, p, flip).map(|(out, _)| out)
}

fn run_flipped(
    rt: &Runtime,
    p: &Params,
    flip: Option<usize>,
) -> Result<(crate::Outcome, Value), crate::Error> {
    p.validate().map_err(crate::Error::Params)?;
    let nodes = crate::affinity::worker_nodes(rt);
    let shape = Shape {
        len: p.len,
        block_len: p.block_len,
        iterations: p.iterations,
    };
    let place = |g: usize, _: usize, _: usize| Affinity::node(nodes[g]).strict();
    let run = run_sets(rt, shape, nodes.len(), &place, "nested-stream", flip)?;
    Ok((run.outcome, run.figures))
}
