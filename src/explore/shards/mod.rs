//! One explore as many shards, and their outputs back as one: what runs after (or
//! around) the search rather than inside it.
//!
//! ```text
//!  explore job    ─► job.rs:   a ConfigMap and an Indexed Job, pod I runs --shard I/N
//!  each pod's log ◄─ pack.rs:  its output dir as a gzip'd tar between marker lines
//!  explore gather ─► pack.rs:  the logs back into output dirs
//!  explore merge  ─► merge.rs: the shards' output dirs as one summary and one list of
//!                              findings
//! ```
//!
//! The share itself (`--shard I/N`: which plans a shard tries, and the record of it
//! in `summary.json`) is `../shard.rs`, below the search: the config, the output and the
//! search read it, and everything here reads their output — so it stays out of this
//! folder, which would otherwise depend on `output.rs` and be depended on by it.

pub mod job;
pub mod merge;
pub mod pack;
