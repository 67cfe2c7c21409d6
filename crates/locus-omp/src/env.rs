//! The files and environment variables shared by the runtime and `locus omp`
//! (README.md, "Settings"). The command sets these; a program run without it reads
//! them as well.

/// The file name gcc-compiled programs load (the soname of GNU libgomp).
pub const LIBRARY_FILE: &str = "libgomp.so.1";
/// The file name clang-compiled programs load (the soname of LLVM's libomp); the shim
/// is also copied as `libomp.so`, the name a program linked against an unversioned
/// libomp needs.
pub const KMP_LIBRARY_FILE: &str = "libomp.so.5";
/// The Rust runtime `libgomp.so.1` forwards to, found beside it.
pub const RUNTIME_FILE: &str = "liblocus_omp.so";

/// Locus's scheduling configuration (`dsa-opt`, `ws`, `home`, ...; default `dsa-base`).
pub const CONFIG: &str = "LOCUS_OMP_CONFIG";
/// The topology (`host`, `NxC`, a preset; default `host`).
pub const TOPOLOGY: &str = "LOCUS_OMP_TOPOLOGY";
/// `strict` or `non-strict` (default): whether a task's home node binds it.
pub const AFFINITY: &str = "LOCUS_OMP_AFFINITY";
/// Deferred tasks a team may have queued (handed to Locus, not started) per member
/// before a new task without dependences or affinity runs at once in its creator
/// (default 16; `0`: never).
pub const THROTTLE: &str = "LOCUS_OMP_THROTTLE";
/// What a task does with the memory of its out/inout dependences that lies on another
/// node than the one it starts on: `none` (default), `now`, `next-touch` or `auto`, as
/// Locus's migration setting does with shared data (README.md, "Migration").
pub const MIGRATION: &str = "LOCUS_OMP_MIGRATION";
/// Writes Locus's JSON report of the whole program there at exit.
pub const REPORT: &str = "LOCUS_OMP_REPORT";
/// Writes a Perfetto (Chrome JSON) trace of the program's last parallel region there.
pub const TRACE: &str = "LOCUS_OMP_TRACE";
/// Number of workers and default team size (OpenMP's own variable; first value of a
/// list).
pub const NUM_THREADS: &str = "OMP_NUM_THREADS";
