//! The size of one stored upload chunk (an `ingestion_chunks` row), in one
//! place: the data-sources area cuts JSON uploads with it, and the host
//! includes this file (`host/src/staging.rs`, `#[path]`) so a streamed
//! upload is staged in chunks of exactly this size and moves into
//! `ingestion_chunks` unchanged.

/// Base64 groups per chunk: 87,381 groups = 262,143 bytes (just under 256 KiB).
pub const GROUPS: usize = 87_381;
pub const CHUNK_BYTES: usize = GROUPS * 3;
