//! A request that fails inside the component still gets the failure
//! envelope. The response outparam waits here until the answer is sent; a
//! panic (the hook) or memory running out (the allocator, which first frees
//! a reserve kept for this) answers 500 `internal` with it, and the instance
//! then traps. The next request runs in a fresh instance, unaffected.
//! The runtime's own limits (`wasmtime serve -W timeout=...`, a
//! memory-size maximum) bound every instance from outside.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use switchboard_gateway::exchange::Reply;
use switchboard_gateway::Failure;
use wasip2::http::types::ResponseOutparam;

thread_local! {
    static OUTPARAM: Cell<Option<ResponseOutparam>> = const { Cell::new(None) };
    static REQUEST_ID: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Set when the allocator has failed once (the reserve is spent).
static mut OUT_OF_MEMORY: bool = false;
/// Kept free until memory runs out, so the envelope can still be built.
static mut RESERVE: *mut u8 = std::ptr::null_mut();
const RESERVE_LAYOUT: Layout = match Layout::from_size_align(256 * 1024, 16) {
    Ok(l) => l,
    Err(_) => panic!("a valid layout"),
};

struct Guarded;

unsafe impl GlobalAlloc for Guarded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if p.is_null() {
            out_of_memory();
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if p.is_null() {
            out_of_memory();
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Guarded = Guarded;

/// Frees the reserve, answers 500 and traps. The instance is single
/// threaded, so the statics are only touched here and in [`guard`].
unsafe fn out_of_memory() {
    if OUT_OF_MEMORY {
        std::process::abort();
    }
    OUT_OF_MEMORY = true;
    if !RESERVE.is_null() {
        System.dealloc(RESERVE, RESERVE_LAYOUT);
        RESERVE = std::ptr::null_mut();
    }
    answer_failure("the request ran out of memory");
    std::process::abort();
}

/// Keeps the outparam until the answer is sent and arms the panic hook and
/// the memory reserve.
pub fn guard(out: ResponseOutparam, request_id: &str) {
    OUTPARAM.with(|o| o.set(Some(out)));
    REQUEST_ID.with(|r| *r.borrow_mut() = request_id.to_string());
    unsafe {
        if RESERVE.is_null() {
            RESERVE = System.alloc(RESERVE_LAYOUT);
        }
    }
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        answer_failure(&format!("the request panicked{at}"));
    }));
}

/// The outparam, once: whoever answers takes it.
pub fn take_outparam() -> Option<ResponseOutparam> {
    OUTPARAM.with(|o| o.take())
}

fn answer_failure(what: &str) {
    let request_id = REQUEST_ID.with(|r| r.borrow().clone());
    crate::log_event("error", "request failed inside the service", &[("requestId", &request_id), ("fault", &what)]);
    let failure = Failure::internal("the request failed inside the service; nothing was written");
    // Only if nothing was sent yet; an answer already under way is cut.
    crate::http::send(Reply::failure(&failure, &request_id), &request_id);
}

/// Fault routes for the edge tests (`SWITCHBOARD_EDGE_FAULT_ROUTES=1`, never
/// set in production): `GET /__edge/fault/panic`, `.../memory` (allocates
/// until the runtime's maximum), `.../spin` (loops until the runtime's time
/// limit).
pub fn test_route(method: &str, path: &str, request_id: &str) -> Option<Reply> {
    let fault = path.strip_prefix("/__edge/fault/")?;
    if method != "GET" || std::env::var("SWITCHBOARD_EDGE_FAULT_ROUTES").as_deref() != Ok("1") {
        return None;
    }
    match fault {
        "panic" => panic!("a test panic"),
        "memory" => {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                let mut chunk = vec![0u8; 1 << 20];
                chunk[0] = hoard.len() as u8;
                hoard.push(std::hint::black_box(chunk));
            }
        }
        "spin" => {
            let mut n: u64 = 0;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        _ => Some(Reply::failure(&Failure::not_found("not_found", "no such fault route"), request_id)),
    }
}
