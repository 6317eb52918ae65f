//! A component that misbehaves on request, so tests can prove the host
//! contains it: tests start the server with
//! `--component-override contacts=<this wasm>` and pick the behaviour with
//! the `search` query parameter of `listContacts`. The document lets only
//! digits through `search`, so the behaviours are numbered: `1000` loops,
//! `1001` grows memory without end, `1002` panics, anything else answers.
//!
//! `search=2<N>` answers a streamed download of `N` bytes of [`pattern`] in
//! pieces of [`download::PIECE_BYTES`] (the cursor is the offset);
//! `search=3<N>` does the same but traps at the piece that starts at 1 MiB. `createContact` answers with a body piece, which
//! the host must refuse (downloads are reads).

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

use serde_json::json;
use switchboard_guest::operations::contacts::Operation;
use switchboard_guest::req::query;
use switchboard_guest::{db, download, fail, ok, Failure, Guest, Request, Success, Value};

/// The byte at `offset` of a testbed download (the API tests compute the
/// same): varies within a piece and from piece to piece, so a lost,
/// repeated or reordered piece changes the hash.
pub fn pattern(offset: u64) -> u8 {
    ((offset % 251) as u8) ^ ((offset >> 16) as u8)
}

/// One piece of a download of `total` bytes.
fn download_piece(req: &Request, total: u64, trap: bool) -> Result<Success, Failure> {
    let start: u64 = match download::cursor(req) {
        None => 0,
        Some(c) => c.parse().map_err(|_| fail::internal("bad_cursor", "the stream cursor is not an offset"))?,
    };
    if trap && start >= 1 << 20 {
        panic!("testbed traps mid-stream on purpose");
    }
    let end = (start + download::PIECE_BYTES as u64).min(total);
    let bytes: Vec<u8> = (start..end).map(pattern).collect();
    let next = (end < total).then(|| end.to_string());
    download::piece("application/octet-stream", Some(&download::attachment("testbed.bin")), bytes, next)
}

struct Testbed;

impl Guest for Testbed {
    fn handle(req: Request) -> Result<Success, Failure> {
        match (req.operation.parse::<Operation>().ok(), query(&req, "search")) {
            (Some(Operation::ListContacts), Some("1000")) => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            (Some(Operation::ListContacts), Some("1001")) => {
                // Reserving (not writing) grows linear memory at once, so the
                // limit is reached long before any deadline, even on a busy machine.
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(Vec::with_capacity(8 << 20));
                    std::hint::black_box(&hoard);
                }
            }
            (Some(Operation::ListContacts), Some("1002")) => panic!("testbed panics on purpose"),
            (Some(Operation::ListContacts), Some(s)) if s.len() > 1 && (s.starts_with('2') || s.starts_with('3')) => {
                let (trap, size) = (s.starts_with('3'), &s[1..]);
                let total = size.parse().map_err(|_| fail::validation("invalid_size", "2<bytes> or 3<bytes>"))?;
                download_piece(&req, total, trap)
            }
            // Writes a row, then traps: the host must roll the write back.
            (Some(Operation::CreateCategory), _) => {
                db::execute(
                    "INSERT INTO categories (id, business_id, name, created_at) VALUES (?1, ?2, 'half-written', '2026-01-01T00:00:00.000Z')",
                    &[switchboard_guest::new_id().into(), req.business_id.as_str().into()],
                )?;
                panic!("trap after a write");
            }
            // A mutation may not answer with a download.
            (Some(Operation::CreateContact), _) => download::piece("text/plain", None, b"not from a mutation".to_vec(), None),
            // Reports how many categories the business has.
            (Some(Operation::ListCategories), _) => {
                let row = db::query_one("SELECT COUNT(*) FROM categories WHERE business_id = ?1", &[req.business_id.as_str().into()])?;
                let n = match row.as_ref().and_then(|r| r.first()) {
                    Some(Value::Integer(n)) => *n,
                    _ => -1,
                };
                ok(&json!({"categories": [], "nextCursor": null, "testbedCount": n}))
            }
            _ => ok(&json!({"contacts": [], "nextCursor": null})),
        }
    }

    /// `importContacts`' prepare step tries the store, a read and a write,
    /// a provider (the `ai` import) and an outbound request (`http-out`):
    /// the host must refuse all four before the write transaction. It answers 400 `prepare_store_refused`
    /// with what the host said, or 500 `prepare_store_allowed` should any
    /// have gone through.
    fn prepare(req: Request) -> Result<Vec<u8>, Failure> {
        let read = switchboard_guest::store::query("SELECT COUNT(*) FROM categories WHERE business_id = ?1", &db::to_store(&[req.business_id.as_str().into()]));
        let write = switchboard_guest::store::execute(
            "INSERT INTO categories (id, business_id, name, created_at) VALUES (?1, ?2, 'from-prepare', '2026-01-01T00:00:00.000Z')",
            &db::to_store(&[switchboard_guest::new_id().into(), req.business_id.as_str().into()]),
        );
        let provider = switchboard_guest::ai::complete("Say hello.", &[("user".to_string(), "hello".to_string())]);
        let outbound = switchboard_guest::http_out::post("http://127.0.0.1:9/prepare", &[], "{}");
        match (read, write, provider, outbound) {
            (Err(r), Err(w), Err(p), Err(o)) => Err(fail::validation("prepare_store_refused", format!("read: {}; write: {}; provider: {p}; outbound: {o}", r.message, w.message))),
            _ => Err(fail::internal("prepare_store_allowed", "the store or a provider answered a prepare step")),
        }
    }
}

#[cfg(target_arch = "wasm32")]
switchboard_guest::export!(Testbed);
