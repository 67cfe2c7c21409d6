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
//! - [`cluster`]: a rank's runtime carrying the plan out with send and receive tasks;
//! - [`kernels`]: `jacobi-2d`, `cholesky` and `random-dag`, distributed and verified
//!   bit for bit on rank 0 against the sequential references of `locus-bench`;
//! - `mpi` (feature `mpi`): the MPI transport, a communication thread over rsmpi;
//! - `launch` (feature `mpi`): a kernel on this rank under `mpirun`, for the
//!   `locus-mpi` binary and `locus run BENCH --distributed`.
//!
//! See `docs/guide.md`, "Distributed runs".

pub mod cluster;
pub mod dist;
pub mod kernels;
#[cfg(feature = "mpi")]
pub mod launch;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod plan;
pub mod transport;

pub use cluster::{Cluster, CommReport, DistData, DistFinished, DistScope, DistTask, Error, Views};
pub use dist::{Distribution, ProcessGrid};
pub use plan::{Extent, Plan, Purpose, Route, Traffic, Transfer};
pub use transport::{Arrival, Loopback, Tag, Transport};
