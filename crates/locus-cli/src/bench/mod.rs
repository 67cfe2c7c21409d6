//! The pieces of `locus bench` (the command itself is [`crate::cmd::bench`]).

pub mod figures;
pub mod home;
pub mod peers;
pub mod report;
pub mod summary;
pub mod svg;
pub mod timeline;
pub mod twisted;
