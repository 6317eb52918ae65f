//! uploadDataSourceAsset: stores the decoded bytes in chunk rows, creates
//! ingestion version N+1 (stage `received`) and enqueues the
//! `data-sources.ingest` job, all in the request's transaction; answers 202.
//!
//! Memory: the body is parsed with the base64 text borrowed from the request
//! (no copy unless the JSON escapes `/` as `\/`), then decoded one chunk at a
//! time, so the component holds the body plus one chunk.

use serde::Deserialize;
use serde_json::json;
use std::borrow::Cow;
use switchboard_guest::db::{self, RowExt};
use switchboard_guest::{fail, jobs, new_id, now, success, HResult, Request, Success, Value};
use switchboard_tabular::base64;

use crate::sources;

/// Base64 groups per chunk: 87,381 groups = 262,143 bytes (just under 256 KiB).
const GROUPS: usize = 87_381;
pub const CHUNK_BYTES: usize = GROUPS * 3;
const PIECE_CHARS: usize = GROUPS * 4;

pub const JOB_KIND: &str = "data-sources.ingest";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Upload<'a> {
    data_source_id: String,
    file_name: String,
    format: String,
    #[serde(borrow)]
    content_base64: Cow<'a, str>,
}

pub fn run(req: &Request) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let text = req.body.as_deref().ok_or_else(|| fail::invalid_body("a JSON body is required"))?;
    let body: Upload = serde_json::from_str(text).map_err(fail::invalid_body)?;
    let src = sources::find(biz, &body.data_source_id)?.ok_or_else(sources::not_found)?;
    let source_id = src.text(0);
    if src.boolean(5) {
        return Err(fail::conflict("built_in_source", "assets cannot be uploaded into the built-in Contacts source; use the contacts import"));
    }
    if src.text(6) == "archived" {
        return Err(fail::conflict("data_source_archived", "the data source is archived"));
    }
    if src.text(3) != "structured" {
        return Err(fail::conflict("unstructured_source", "assets can only be uploaded into structured data sources; update an unstructured source's `content` instead"));
    }
    let b64 = body.content_base64.as_bytes();
    let size = base64::decoded_len(&body.content_base64)
        .map_err(|e| fail::validation("invalid_base64", format!("`contentBase64` is not canonical standard base64: {e}")))?;
    if size == 0 {
        return Err(fail::validation("empty_file", "`contentBase64` decodes to an empty file"));
    }
    let version_id = new_id();
    let now = now();
    let number = db::query_one(
        "SELECT COALESCE(MAX(version_number), 0) + 1 FROM ingestion_versions WHERE business_id = ?1 AND data_source_id = ?2",
        &[biz.into(), source_id.as_str().into()],
    )?
    .map_or(1, |r| r.int(0));
    let pieces = b64.len().div_ceil(PIECE_CHARS);
    db::execute(
        "INSERT INTO ingestion_versions (id, business_id, data_source_id, version_number, file_name, format, byte_size, chunk_size, stage, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'received', ?9, ?9)",
        &[
            version_id.as_str().into(),
            biz.into(),
            source_id.as_str().into(),
            number.into(),
            body.file_name.as_str().into(),
            body.format.as_str().into(),
            (size as i64).into(),
            (CHUNK_BYTES as i64).into(),
            now.as_str().into(),
        ],
    )?;
    let mut chunk = Vec::with_capacity(CHUNK_BYTES);
    for (seq, piece) in b64.chunks(PIECE_CHARS).enumerate() {
        chunk.clear();
        base64::decode_piece(piece, seq + 1 == pieces, &mut chunk)
            .map_err(|e| fail::validation("invalid_base64", format!("`contentBase64` is not canonical standard base64: {e}")))?;
        db::execute(
            "INSERT INTO ingestion_chunks (business_id, version_id, stream, seq, data) VALUES (?1, ?2, 0, ?3, ?4)",
            &[biz.into(), version_id.as_str().into(), (seq as i64).into(), Value::Blob(std::mem::take(&mut chunk))],
        )?;
    }
    jobs::enqueue(JOB_KIND, biz, &json!({"versionId": version_id}).to_string(), 0).map_err(db::store_failure)?;
    success(
        202,
        &json!({"ingestionId": version_id, "dataSourceId": source_id, "versionNumber": number, "stage": "received"}),
    )
}
