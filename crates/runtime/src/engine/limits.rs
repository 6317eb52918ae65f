//! What a component call's store may use: the instance memory and count
//! every store gets, the limiter that notes how large a store's memory grew
//! (so `warm.rs` keeps only small instances), and how a call that ran out of
//! memory is recognised.

use wasmtime::{StoreLimits, StoreLimitsBuilder};

/// Linear memory a single instance may grow to.
pub const INSTANCE_MEMORY_LIMIT: usize = 256 << 20;
/// Instances alive at once (also bounds the pooling allocator's reservation).
pub const MAX_INSTANCES: u32 = 128;

/// The limits every store gets (request, job step or provider call).
pub fn store_limits() -> StoreLimits {
    StoreLimitsBuilder::new().memory_size(INSTANCE_MEMORY_LIMIT).instances(16).trap_on_grow_failure(true).build()
}

/// Whether a call failed on its store's memory limit. With
/// trap_on_grow_failure the error is not a Trap: look at the cause.
pub fn hit_memory_limit(e: &wasmtime::Error) -> bool {
    let text = format!("{e:?}");
    text.contains("forcing trap when growing memory") || text.contains("memory") && text.contains("limit")
}

/// Linear memory above which an instance is not kept warm: a call that
/// grew it (a large import, a long page) would otherwise keep that memory
/// resident while the instance waits.
const MAX_KEPT_MEMORY: usize = 16 << 20;

/// A store's limits, noting the largest memory its instances grew to (so a
/// large one is not kept warm).
pub struct Limits {
    inner: wasmtime::StoreLimits,
    largest_memory: usize,
}

impl Limits {
    pub fn new(inner: wasmtime::StoreLimits) -> Limits {
        Limits { inner, largest_memory: 0 }
    }

    /// Whether the memory stayed small enough to keep.
    pub fn small(&self) -> bool {
        self.largest_memory <= MAX_KEPT_MEMORY
    }
}

impl wasmtime::ResourceLimiter for Limits {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let allowed = self.inner.memory_growing(current, desired, maximum)?;
        if allowed {
            self.largest_memory = self.largest_memory.max(desired);
        }
        Ok(allowed)
    }
    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.inner.memory_grow_failed(error)
    }
    fn table_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        self.inner.table_growing(current, desired, maximum)
    }
    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.inner.table_grow_failed(error)
    }
    fn instances(&self) -> usize {
        self.inner.instances()
    }
    fn tables(&self) -> usize {
        self.inner.tables()
    }
    fn memories(&self) -> usize {
        self.inner.memories()
    }
}
