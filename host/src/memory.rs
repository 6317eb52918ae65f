//! The allocator's settings (mimalloc is the global allocator, `main.rs`).
//!
//! Purge delay 0: a page mimalloc frees back to its arena is returned to
//! the system (`madvise`) at once, not a second later. With the delay, a
//! freed range that is taken again within the second keeps every page it
//! ever touched resident, and one that is not waits for some thread's next
//! call into the allocator to be returned: after the request rounds and a
//! 100k-row import, mimalloc's arena held 40-50 MiB instead of 27, and the
//! server's RSS was 105-116 MiB instead of 90-93 (bench/README.md,
//! `bench/import_rss.py`). A purge on a timer or on each worker's park
//! returns only the second kind and was measured at 97-104 MiB.
//!
//! An operator's `MIMALLOC_PURGE_DELAY` (mimalloc's own variable) still
//! wins, so the old behaviour is one variable away:
//! `MIMALLOC_PURGE_DELAY=1000` (the side-by-side bench uses it).

/// mimalloc v3's `mi_option_purge_delay` (`mimalloc.h`'s `mi_option_e`;
/// `libmimalloc-sys` names no constant for it in v3).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// mimalloc's default purge delay in v3, in ms: the option at
/// [`PURGE_DELAY`] is checked against it before it is changed, so another
/// mimalloc version (where index 15 is another option) is left alone.
const DEFAULT_PURGE_DELAY_MS: std::ffi::c_long = 1000;

/// Sets the allocator's options: first thing in `main`.
pub(crate) fn configure() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: mi_version and mi_option_get/set take no pointers; options
    // may be set at any time (mimalloc reads them on each use).
    unsafe {
        if libmimalloc_sys::mi_version() >= 30000 && libmimalloc_sys::mi_option_get(PURGE_DELAY) == DEFAULT_PURGE_DELAY_MS {
            libmimalloc_sys::mi_option_set(PURGE_DELAY, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_purge_delay_index_is_v3s() {
        // SAFETY: as in configure.
        let (version, delay) = unsafe { (libmimalloc_sys::mi_version(), libmimalloc_sys::mi_option_get(super::PURGE_DELAY)) };
        assert!(version >= 30000, "mimalloc {version}");
        // 0 if configure ran in this process, else mimalloc's default.
        assert!(delay == 0 || delay == super::DEFAULT_PURGE_DELAY_MS || std::env::var_os("MIMALLOC_PURGE_DELAY").is_some(), "option 15 is {delay}");
    }
}
