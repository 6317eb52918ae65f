//! uploadDataSourceAsset: stores the file's bytes in chunk rows, creates
//! ingestion version N+1 (stage `received`) and enqueues the
//! `data-sources.ingest` job, all in the request's transaction; answers 202.
//!
//! Two forms reach this handler:
//! - JSON: the file is `contentBase64`, up to 64 MiB of body. [`prepare`]
//!   runs before the write transaction (the WIT's `handler.prepare`,
//!   reading and writing nothing): it parses the body with the base64 text
//!   borrowed from the request (no copy unless the JSON escapes `/` as
//!   `\/`) and decodes it, so the write gets the file's bytes
//!   (`request.prepared`: a postcard header, then the bytes) and only
//!   writes its chunks (a caller without the prepare step runs it first,
//!   in the same instance).
//! - Raw: the host has streamed the body into `staged_upload_chunks` (rows
//!   of exactly `CHUNK_BYTES`) and hands over a body it built itself, naming
//!   the staged upload (`stagedUploadId`, `byteSize`, `sha256`). The chunks
//!   move into `ingestion_chunks` with one INSERT … SELECT, so the bytes never
//!   pass through the component. Clients cannot send that body: the JSON
//!   schema (additionalProperties: false) refuses `stagedUploadId`.
//!
//! Both forms share `accept`: the source checks, the version row and the job.

use serde::{Deserialize, Serialize};
use serde_json::json;
use std::borrow::Cow;
use switchboard_guest::db;
use switchboard_guest::{fail, job, new_id, now, params, success, HResult, Request, Success};
use switchboard_tabular::{base64, xlsx};

use crate::jobs::{ingest, DataSourcesJob};
use crate::sources;
use switchboard_guest::chunking::{CHUNK_BYTES, GROUPS};

const PIECE_CHARS: usize = GROUPS * 4;

/// Borrowed from the request text unless the JSON escapes something. A
/// newtype, because serde borrows a `Cow` only when it is the field's own
/// type (an `Option<Cow>` would always copy, here up to 64 MiB).
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Upload<'a> {
    data_source_id: String,
    file_name: String,
    format: String,
    #[serde(borrow, default)]
    content_base64: Option<Text<'a>>,
    /// Only in the host-built body of a raw upload.
    #[serde(default)]
    staged_upload_id: Option<String>,
    #[serde(default)]
    byte_size: Option<i64>,
    #[serde(default)]
    sha256: Option<String>,
}

/// What [`prepare`] makes of an upload; the decoded file's bytes follow it
/// in `request.prepared`.
#[derive(Serialize, Deserialize)]
enum Prepared {
    /// A raw upload's host-built body: nothing to parse, it passes through.
    Staged(String),
    /// A JSON upload, decoded. `refused` is why its base64 did not decode
    /// past the length check (answered after the source checks, as when
    /// the decoding ran chunk by chunk in the write).
    Decoded { data_source_id: String, file_name: String, format: String, refused: Option<String> },
}

fn invalid_base64(detail: impl std::fmt::Display) -> switchboard_guest::Failure {
    fail::validation("invalid_base64", format!("`contentBase64` is not canonical standard base64: {detail}"))
}

/// The prepare step, before the write transaction: the body parsed and the
/// file decoded, nothing read or written.
pub fn prepare(req: &Request) -> HResult<Vec<u8>> {
    let text = req.body.as_deref().ok_or_else(|| fail::invalid_body("a JSON body is required"))?;
    let body: Upload = serde_json::from_str(text).map_err(fail::invalid_body)?;
    let (prepared, file) = match (&body.content_base64, &body.staged_upload_id) {
        (Some(b64), None) => {
            let size = base64::decoded_len(&b64.0).map_err(invalid_base64)?;
            if size == 0 {
                return Err(fail::validation("empty_file", "`contentBase64` decodes to an empty file"));
            }
            let b64 = b64.0.as_bytes();
            let pieces = b64.len().div_ceil(PIECE_CHARS);
            let mut file = Vec::with_capacity(size);
            let refused = b64.chunks(PIECE_CHARS).enumerate().find_map(|(seq, piece)| base64::decode_piece(piece, seq + 1 == pieces, &mut file).err());
            (Prepared::Decoded { data_source_id: body.data_source_id, file_name: body.file_name, format: body.format, refused }, file)
        }
        (None, Some(_)) => (Prepared::Staged(text.to_string()), Vec::new()),
        _ => return Err(fail::invalid_body("send the file either as `contentBase64` in JSON or as the raw request body")),
    };
    let mut out = postcard::to_allocvec(&prepared).map_err(|_| fail::internal("upload_not_prepared", "the upload could not be prepared"))?;
    out.extend_from_slice(&file);
    Ok(out)
}

/// The write, inside the request's transaction, of what [`prepare`] made
/// (a caller without the prepare step has it made here).
pub fn run(req: &Request) -> HResult<Success> {
    let inline;
    let prepared = match &req.prepared {
        Some(prepared) => prepared,
        None => {
            inline = prepare(req)?;
            &inline
        }
    };
    let unreadable = || fail::internal("upload_not_prepared", "the prepared upload could not be read");
    let (prepared, file) = postcard::take_from_bytes::<Prepared>(prepared).map_err(|_| unreadable())?;
    match prepared {
        Prepared::Staged(text) => {
            let body: Upload = serde_json::from_str(&text).map_err(fail::invalid_body)?;
            let staged = body.staged_upload_id.clone().ok_or_else(unreadable)?;
            from_staged(req, &body, &staged)
        }
        Prepared::Decoded { data_source_id, file_name, format, refused } => {
            let body = Upload { data_source_id, file_name, format, content_base64: None, staged_upload_id: None, byte_size: None, sha256: None };
            from_decoded(req, &body, file, refused)
        }
    }
}

/// The write of a prepared JSON upload: the decoded file's chunks.
fn from_decoded(req: &Request, body: &Upload, file: &[u8], refused: Option<String>) -> HResult<Success> {
    accept(req, body, file.len() as i64, CHUNK_BYTES as i64, |biz, version_id| {
        if let Some(detail) = refused {
            return Err(invalid_base64(detail));
        }
        for (seq, chunk) in file.chunks(CHUNK_BYTES).enumerate() {
            db::execute("INSERT INTO ingestion_chunks (business_id, version_id, stream, seq, data) VALUES (?1, ?2, 0, ?3, ?4)", &params![biz, version_id, seq as i64, chunk])?;
        }
        Ok(())
    })
}

/// A staged upload the host could not produce as promised; 5xx, so the
/// answer is not kept for the Idempotency-Key and a retry starts afresh.
fn staged_missing(detail: &str) -> switchboard_guest::Failure {
    fail::failure(500, "internal", "staged_upload_missing", format!("the uploaded body could not be found in staging ({detail}); retry the upload"), true)
}

fn from_staged(req: &Request, body: &Upload, staged_id: &str) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let (size, sha, chunk_size, chunks) = db::query_one_as::<(i64, String, i64, i64)>(
        "SELECT byte_size, sha256, chunk_size, (SELECT COUNT(*) FROM staged_upload_chunks c WHERE c.upload_id = s.id AND c.business_id = s.business_id) \
         FROM staged_uploads s WHERE s.id = ?1 AND s.business_id = ?2 AND s.state = 'complete'",
        &params![staged_id, biz],
    )?
    .ok_or_else(|| staged_missing("no complete staged upload of this business with that id"))?;
    if Some(size) != body.byte_size || Some(&sha) != body.sha256.as_ref() {
        return Err(staged_missing("its size or hash differs from the request's"));
    }
    if size == 0 {
        return Err(fail::validation("empty_file", "the request body is empty"));
    }
    if chunk_size <= 0 || chunks != (size + chunk_size - 1) / chunk_size {
        return Err(staged_missing("chunks are missing"));
    }
    accept(req, body, size, chunk_size, |biz, version_id| {
        db::execute(
            "INSERT INTO ingestion_chunks (business_id, version_id, stream, seq, data) \
             SELECT ?1, ?2, 0, seq, data FROM staged_upload_chunks WHERE upload_id = ?3 AND business_id = ?1 ORDER BY seq",
            &params![biz, version_id, staged_id],
        )?;
        db::execute("DELETE FROM staged_upload_chunks WHERE upload_id = ?1 AND business_id = ?2", &params![staged_id, biz])?;
        db::execute("DELETE FROM staged_uploads WHERE id = ?1 AND business_id = ?2", &params![staged_id, biz])?;
        Ok(())
    })
}

/// The one place an upload becomes a version: checks the target source,
/// inserts version N+1 (`received`), lets `store_chunks(business, version)`
/// write its `ingestion_chunks` (stream 0), enqueues the ingest job and
/// answers 202. Runs inside the request's transaction, so a failure
/// anywhere leaves nothing behind.
fn accept(req: &Request, body: &Upload, size: i64, chunk_size: i64, store_chunks: impl FnOnce(&str, &str) -> HResult<()>) -> HResult<Success> {
    let biz = req.business_id.as_str();
    let src = sources::find(biz, &body.data_source_id)?.ok_or_else(sources::not_found)?;
    let source_id = src.id;
    if src.built_in {
        return Err(fail::conflict("built_in_source", "assets cannot be uploaded into the built-in Contacts source; use the contacts import"));
    }
    if src.status == "archived" {
        return Err(fail::conflict("data_source_archived", "the data source is archived"));
    }
    if src.class != "structured" {
        return Err(fail::conflict("unstructured_source", "assets can only be uploaded into structured data sources; update an unstructured source's `content` instead"));
    }
    if matches!(body.format.as_str(), "xlsx" | "xlsm") && size > xlsx::MAX_FILE_BYTES as i64 {
        // Spreadsheets are unpacked in one ingestion step; refuse now rather
        // than fail the version later.
        return Err(fail::validation(
            "spreadsheet_too_large",
            format!("XLSX/XLSM files are limited to {} MiB (this one is {size} bytes); save it as CSV for larger tables", xlsx::MAX_FILE_BYTES >> 20),
        ));
    }
    let version_id = new_id();
    let now = now();
    let number = db::query_one_as::<i64>("SELECT COALESCE(MAX(version_number), 0) + 1 FROM ingestion_versions WHERE business_id = ?1 AND data_source_id = ?2", &params![biz, &source_id])?.unwrap_or(1);
    db::execute(
        "INSERT INTO ingestion_versions (id, business_id, data_source_id, version_number, file_name, format, byte_size, chunk_size, stage, created_at, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'received', ?9, ?9)",
        &params![&version_id, biz, &source_id, number, &body.file_name, &body.format, size, chunk_size, &now],
    )?;
    store_chunks(biz, &version_id)?;
    job::enqueue(biz, &DataSourcesJob::Ingest(ingest::Payload::start(&version_id)))?;
    success(202, &json!({"ingestionId": version_id, "dataSourceId": source_id, "versionNumber": number, "stage": "received"}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_text_is_borrowed_from_the_body() {
        let text = r#"{"dataSourceId":"d","fileName":"f","format":"csv","contentBase64":"YQ=="}"#;
        let u: Upload = serde_json::from_str(text).unwrap();
        assert!(matches!(u.content_base64, Some(Text(Cow::Borrowed("YQ==")))));
        assert!(u.staged_upload_id.is_none());
        let staged = r#"{"dataSourceId":"d","fileName":"f","format":"csv","stagedUploadId":"s","byteSize":3,"sha256":"ab"}"#;
        let u: Upload = serde_json::from_str(staged).unwrap();
        assert!(u.content_base64.is_none());
        assert_eq!((u.staged_upload_id.as_deref(), u.byte_size), (Some("s"), Some(3)));
    }
}
