//! The areas' rule crates (`components/sql` and the binding-free crates of
//! the voice, campaigns and agents areas) over a storage connection: the
//! admin commands write the rows an area owns by calling the area's own
//! statements, inside the command's transaction, with this process's clock
//! and UUID v7s. The console's owner routes (host/src/console/owner.rs) use
//! the same rule crates through this module, so each rule lives in its area.

use crate::db;
pub use switchboard_channel_connections as connections;
pub use switchboard_sql::{Refusal, Refused};
use switchboard_sql::{Row, Sql, Statements, Value};
pub use switchboard_summary_prices as summary_prices;
pub use switchboard_voice_accounts as voice_accounts;

/// A storage connection (inside the caller's transaction, if it opened one)
/// with this process's clock and ids: a rule's transaction.
pub struct Tx<'a>(pub &'a db::Connection);

impl Statements for Tx<'_> {
    type Error = anyhow::Error;
    fn query(&self, sql: &str, params: &[Value]) -> anyhow::Result<Vec<Row>> {
        Statements::query(self.0, sql, params)
    }
    fn execute(&self, sql: &str, params: &[Value]) -> anyhow::Result<u64> {
        Statements::execute(self.0, sql, params)
    }
}

impl Sql for Tx<'_> {
    fn now(&self) -> String {
        crate::clock::now_rfc3339()
    }
    fn new_id(&self) -> String {
        uuid::Uuid::now_v7().to_string()
    }
}

/// A refused value in the command's words: `flag` names the setting the
/// way the command line does (`lines` → `--lines`).
pub(crate) fn refused(r: Refused, flag: impl Fn(&'static str) -> &'static str) -> anyhow::Error {
    anyhow::anyhow!("{} {}", flag(r.field), r.why)
}

/// [`refused`] for a write refused for the stored state.
pub(crate) fn refusal(r: Refusal<anyhow::Error>, flag: impl Fn(&'static str) -> &'static str) -> anyhow::Error {
    match r {
        Refusal::Refused(r) => refused(r, flag),
        Refusal::Store(e) => e,
    }
}
