//! [`Sim`]: the simulator's settings and its [`EngineFactory`].

use std::path::PathBuf;

use locus::engine::{Bodies, Engine, EngineFactory, EngineSetup};
use locus::{Error, Topology};

use crate::costs::Costs;
use crate::engine::SimEngine;
use crate::probe::Probe;

/// Above this many bytes declared by a run's tasks, [`BodiesChoice::Auto`] skips bodies.
pub const DEFAULT_SKIP_ABOVE_BYTES: u64 = 256 << 20;

/// Whether task bodies run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodiesChoice {
    /// Always ([`Bodies::Run`]) or never ([`Bodies::Skip`]).
    Fixed(Bodies),
    /// Bodies run until the bytes declared by the run's tasks (summed as each becomes
    /// ready) pass the bound; from then on they are skipped. A run that skipped no body
    /// verifies as on `threads`; [`Summary::bodies_skipped`](crate::Summary) says.
    Auto {
        /// The bound, in bytes.
        skip_above_bytes: u64,
    },
}

/// The simulator engine's settings: pass it to
/// [`RuntimeBuilder::engine`](locus::RuntimeBuilder::engine).
///
/// Tasks that declare no data access (control programs, the root) always run their
/// bodies, since those bodies spawn the other tasks.
#[derive(Clone, Debug)]
pub struct Sim {
    pub(crate) seed: u64,
    pub(crate) bodies: BodiesChoice,
    pub(crate) costs: Option<Costs>,
    pub(crate) trace: Option<PathBuf>,
    pub(crate) probe: Option<Probe>,
    pub(crate) first_touch: bool,
}

impl Default for Sim {
    fn default() -> Self {
        Sim::new()
    }
}

impl Sim {
    /// Seed 0, bodies run (results verify as on `threads`), the costs of the
    /// topology's machine ([`Costs::for_topology`]), no trace. Paper sizes need
    /// [`Sim::bodies`]`(Bodies::Skip)`.
    pub fn new() -> Self {
        Sim {
            seed: 0,
            bodies: BodiesChoice::Fixed(Bodies::Run),
            costs: None,
            trace: None,
            probe: None,
            first_touch: true,
        }
    }

    /// The seed of the simulator's one random generator (victim order, choice of a
    /// worker on a node). Run `k` of a runtime uses `seed + k`.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Runs or skips every body that accesses data. With [`Bodies::Skip`] the pools are
    /// accounting-only (`PoolConfig::accounting_only`): buffers hold no memory, so the
    /// program must not fill data from values (`Runtime::data_from`) nor fetch them.
    pub fn bodies(mut self, bodies: Bodies) -> Self {
        self.bodies = BodiesChoice::Fixed(bodies);
        self
    }

    /// Skips bodies once the run's tasks have declared more than `bytes`
    /// ([`DEFAULT_SKIP_ABOVE_BYTES`] is a sensible bound). A run that switched cannot
    /// verify its result, and programs cannot know in advance whether it will: use it
    /// for programs that do not fetch results.
    pub fn skip_above_bytes(mut self, bytes: u64) -> Self {
        self.bodies = BodiesChoice::Auto {
            skip_above_bytes: bytes,
        };
        self
    }

    /// The machine and runtime costs; default: [`Costs::for_topology`].
    pub fn costs(mut self, costs: Costs) -> Self {
        self.costs = Some(costs);
        self
    }

    /// Writes a Chrome trace of every run to `path` (each run rewrites the file with
    /// itself and the runs before it; a name ending in `.gz` is compressed) through the
    /// runtime's trace recorder, laid out as the `locus::observe` module describes: one
    /// process per node, slices named by kind with their locality as category, arrows to
    /// the tasks each made ready, counter tracks per node.
    pub fn trace(mut self, path: impl Into<PathBuf>) -> Self {
        self.trace = Some(path.into());
        self
    }

    /// Whether fresh pool blocks are placed by their first writer (default: yes), as
    /// the operating system placed the fresh blocks of paper 1's pools (Drebes et al.,
    /// section 3.1): under immediate allocation a never-used block that a task on node
    /// 0 allocated for its successor lands where that successor runs, while a block
    /// reused from a pool keeps its node. The report counts the blocks moved in
    /// `memory.first_touched`. Modelled with skipped bodies (accounting-only pools);
    /// real pools bind their memory to its node.
    pub fn first_touch(mut self, on: bool) -> Self {
        self.first_touch = on;
        self
    }

    /// Publishes the simulator's counters (and spans, if the probe keeps them) to
    /// `probe` at the end of every run.
    pub fn probe(mut self, probe: Probe) -> Self {
        self.probe = Some(probe);
        self
    }
}

impl EngineFactory for Sim {
    /// Keeps the topology as given: simulated CPUs need no host CPU.
    fn prepare_topology(&self, topology: Topology) -> Result<Topology, Error> {
        Ok(topology)
    }

    fn start(self: Box<Self>, mut setup: EngineSetup) -> Result<Box<dyn Engine>, Error> {
        if setup.pools.node_limit.is_none() {
            setup.pools.node_limit = node_memory(&setup.topology);
        }
        Ok(Box::new(SimEngine::new(*self, setup)?))
    }
}

/// The memory of the modelled machine's nodes, as a pool limit: a node's pool holds at
/// most what the node has, and an allocation beyond it falls back to the nearest node
/// with room, as on the real machine (counted in the report's `memory.fallbacks`).
/// `None` (no limit) when a node does not state its memory (synthetic topologies);
/// the smallest node's when they differ. `RuntimeBuilder::node_limit` overrides it.
fn node_memory(topology: &Topology) -> Option<u64> {
    let nodes = topology.nodes();
    if nodes.is_empty() || nodes.iter().any(|n| n.memory_bytes == 0) {
        return None;
    }
    nodes.iter().map(|n| n.memory_bytes).min()
}
