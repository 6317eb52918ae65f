//! The statements of the shared request path (`switchboard_gateway::
//! storage`, the mutation flow), on the request's stream to the primary.

use crate::bindings::switchboard::platform::transaction;
use switchboard_gateway::exchange;
use switchboard_gateway::storage::{self, Statements, Value};
use switchboard_gateway::Failure;

pub(crate) fn unavailable() -> Failure {
    Failure::new(503, "upstream", "primary_unavailable", "the database primary cannot be reached; nothing was written, retry shortly")
}

/// Statements of the shared request path, on the request's stream.
pub(crate) struct EdgeSql;

/// Parameters as the `store` import takes them (the conversion is
/// switchboard_guest's, one for every component).
pub(crate) use switchboard_guest::db::to_store as to_wit;

impl Statements for EdgeSql {
    type Error = String;
    fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String> {
        if storage::transaction_control(sql) {
            return transaction::control(sql).map(|_| Vec::new()).map_err(|e| e.message);
        }
        let rows = switchboard_guest::store::query(sql, &to_wit(params)).map_err(|e| e.message)?;
        Ok(rows.into_iter().map(|r| r.into_iter().map(Value::from).collect()).collect())
    }
    fn execute(&self, sql: &str, params: &[Value]) -> Result<u64, String> {
        if storage::transaction_control(sql) {
            return transaction::control(sql).map(|_| 0).map_err(|e| e.message);
        }
        switchboard_guest::store::execute(sql, &to_wit(params)).map_err(|e| e.message)
    }
}

impl exchange::Owner for EdgeSql {
    fn unavailable(&self) -> Failure {
        unavailable()
    }
    fn log_error(&self, request_id: &str, message: &'static str, error: &str) {
        crate::log_event("error", message, &[("requestId", &request_id), ("error", &error)]);
    }
}
