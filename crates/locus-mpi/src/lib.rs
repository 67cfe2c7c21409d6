//! Locus over MPI: one runtime per rank, one program on every rank.
//!
//! Users of NUMA task runtimes outgrow one machine by running one process per node
//! under MPI, as StarPU-MPI, PaRSEC and OmpSs-2@Cluster do. This crate follows
//! StarPU-MPI's model (Augonnet et al., "StarPU-MPI: Task Programming over Clusters of
//! Machines Enhanced with Accelerators"): every rank submits the same task graph; each
//! datum has an owner rank given by a [`Distribution`]; a task runs on the rank that owns
//! the data it writes, and the others skip it; each version a remote task reads is sent
//! once to each rank that reads it, and received only there. Within a rank everything is
//! Locus as usual: versions, policies, placement, metrics.
//!
//! - [`dist`]: distributions (block and block-cyclic, 1-D and 2-D, or a function);
//! - [`plan`]: the message rules, pure bookkeeping every rank keeps identically;
//! - [`transport`]: the seam to the network, with an in-process [`Loopback`];
//! - [`sim`]: a simulated cluster of preset machines joined by a network, under the
//!   same message rules, for scaling tables beyond the machines at hand;
//! - [`cluster`]: a rank's runtime carrying the plan out with send and receive tasks;
//! - [`kernels`]: `jacobi-2d`, `cholesky` and `random-dag`, distributed and verified
//!   bit for bit on rank 0 against the sequential references of `locus-bench`;
//! - `mpi` (feature `mpi`): the MPI transport, a communication thread over rsmpi;
//! - [`silence`]: the heartbeats by which the MPI transport finds a dead or silent
//!   peer and ends every rank with an error naming it;
//! - `launch` (feature `mpi`): a kernel on this rank under `mpirun`, for the
//!   `locus-mpi` binary and `locus run BENCH --distributed`.
//!
//! See `docs/guide.md`, "Distributed runs". Two ranks as threads of one process:
//!
//! ```
//! use std::sync::Arc;
//! use locus::{Runtime, Topology};
//! use locus_mpi::{Cluster, Distribution, Loopback, Transport};
//!
//! // Two ranks as threads of this process (`Loopback`); under mpirun each process gets
//! // `locus_mpi::mpi::init()`'s transport instead (feature `mpi`).
//! let ranks = Loopback::ranks(2);
//! std::thread::scope(|s| {
//!     for t in ranks {
//!         s.spawn(move || {
//!             let one_node = Topology::from_spec("1x2").unwrap(); // two workers, virtual
//!             let rt = Runtime::builder().topology(one_node).build().unwrap();
//!             let c = Cluster::new(rt, t as Arc<dyn Transport>).unwrap();
//!             let dist = Distribution::Block { len: 2, ranks: 2 };
//!             let x = c.data_with("x", 4, dist.owner(0), || vec![1u64, 2, 3, 4]).unwrap();
//!             let y = c.data::<u64>("y", 4, dist.owner(1)).unwrap();
//!             c.run(|ds| {
//!                 // Runs on rank 1, the owner of y; x travels from rank 0, once.
//!                 ds.task::<u64>("double").read(&x).write(&y).spawn(|_, mut v| {
//!                     for (o, i) in v.writes[0].iter_mut().zip(v.reads[0]) {
//!                         *o = 2 * i;
//!                     }
//!                 })?;
//!                 ds.collect(&y, 0) // bring y's current version to rank 0
//!             })
//!             .unwrap();
//!             if c.rank() == 0 {
//!                 assert_eq!(c.fetch(&y).unwrap(), vec![2, 4, 6, 8]);
//!             }
//!         });
//!     }
//! });
//! ```

pub mod cluster;
pub mod dist;
pub mod kernels;
#[cfg(feature = "mpi")]
pub mod launch;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod plan;
pub mod silence;
pub mod sim;
pub mod transport;

pub use cluster::{Cluster, CommReport, DistData, DistFinished, DistScope, DistTask, Error, Views};
pub use dist::{Distribution, ProcessGrid};
pub use plan::{Extent, Plan, Purpose, Route, Traffic, Transfer};
pub use transport::{Arrival, Loopback, Tag, Transport};
