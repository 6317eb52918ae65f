//! The settings of the running `serve` that components read from the
//! `runtime_settings` table (migration 0020), written into every database
//! when a node opens it: the campaigns area's retry-delay minute
//! (`campaign_minute_ms`) and the voice area's safety-net poll of a call
//! (`voice_line_poll_ms`).

use crate::db::{self, Db, SqlValue};
use anyhow::Result;

/// What `serve --campaign-minute-ms` and `--voice-line-poll-ms` set.
#[derive(Debug, Clone, Copy)]
pub struct RuntimeSettings {
    pub campaign_minute_ms: u64,
    pub voice_line_poll_ms: u64,
}

impl RuntimeSettings {
    /// Writes the settings into `db`, replacing what an earlier start wrote.
    pub fn store(&self, db: &Db) -> Result<()> {
        let conn = db.conn()?;
        for (name, value) in [("campaign_minute_ms", self.campaign_minute_ms), ("voice_line_poll_ms", self.voice_line_poll_ms)] {
            db::execute(&conn, "INSERT OR REPLACE INTO runtime_settings (name, value) VALUES (?1, ?2)", vec![SqlValue::Text(name.into()), SqlValue::Text(value.to_string())])?;
        }
        Ok(())
    }
}
