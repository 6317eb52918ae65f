//! Activating an ingestion version: one transaction (the caller's) switches
//! `data_sources.active_version_id`, marks the version `active` and the
//! previously active one `ready` (still readable, unchanged, re-activatable
//! through resolve), and, for sources without declared fields, makes the
//! source's fields mirror the version's columns.
//!
//! Used by resolve (a request) and by the last step of `data-sources.ingest`
//! (automatic activation): one copy of the rule.

use switchboard_guest::db;
use switchboard_guest::{now, params, HResult};

/// Activates `version_id` of `source_id`. Returns false (and leaves the
/// version `ready`) when the source is archived or missing.
pub fn activate(biz: &str, source_id: &str, version_id: &str) -> HResult<bool> {
    let now = now();
    let src = db::query_one_as::<(String, bool)>("SELECT status, fields_declared FROM data_sources WHERE business_id = ?1 AND id = ?2", &params![biz, source_id])?;
    let Some((_, fields_declared)) = src.filter(|(status, _)| status != "archived") else {
        db::execute("UPDATE ingestion_versions SET stage = 'ready', updated_at = ?3 WHERE business_id = ?1 AND id = ?2", &params![biz, version_id, &now])?;
        return Ok(false);
    };
    db::execute(
        "UPDATE ingestion_versions SET stage = 'ready', updated_at = ?3 \
         WHERE business_id = ?1 AND data_source_id = ?2 AND stage = 'active'",
        &params![biz, source_id, &now],
    )?;
    db::execute(
        "UPDATE ingestion_versions SET stage = 'active', failure_reason = NULL, activated_at = ?3, updated_at = ?3 \
         WHERE business_id = ?1 AND id = ?2",
        &params![biz, version_id, &now],
    )?;
    db::execute("UPDATE data_sources SET active_version_id = ?3, updated_at = ?4 WHERE business_id = ?1 AND id = ?2", &params![biz, source_id, version_id, &now])?;
    if !fields_declared {
        db::execute("DELETE FROM data_source_fields WHERE business_id = ?1 AND data_source_id = ?2", &params![biz, source_id])?;
        db::execute(
            "INSERT INTO data_source_fields (business_id, data_source_id, field_key, label, type, position, lookup) \
             SELECT business_id, ?2, field_key, \
                    CASE WHEN trim(name) = '' THEN field_key ELSE substr(trim(name), 1, 120) END, \
                    COALESCE(type, 'text'), position, lookup \
             FROM ingestion_columns WHERE business_id = ?1 AND version_id = ?3",
            &params![biz, source_id, version_id],
        )?;
    }
    Ok(true)
}
