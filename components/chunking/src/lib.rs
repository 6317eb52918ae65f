//! The size of one stored upload chunk (an `ingestion_chunks` row), in one
//! place: the data-sources area cuts JSON uploads with it (through the guest
//! library, `switchboard_guest::chunking`), and the host stages a streamed
//! upload in chunks of exactly this size (`host/src/staging.rs`), so they
//! move into `ingestion_chunks` unchanged. A crate of its own because both
//! workspaces, the native host and the wasm guests, depend on it.

/// Base64 groups per chunk: 87,381 groups = 262,143 bytes (just under 256 KiB).
pub const GROUPS: usize = 87_381;
pub const CHUNK_BYTES: usize = GROUPS * 3;
