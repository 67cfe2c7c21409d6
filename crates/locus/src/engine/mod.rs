//! Engines: what carries the policies' decisions out and supplies time.
//!
//! - [`threads`]: one pinned OS thread per worker, real memory, wall-clock time.

pub(crate) mod threads;
