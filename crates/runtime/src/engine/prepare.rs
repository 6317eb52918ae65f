//! The prepare step of a mutation: the body work that needs no storage (the
//! CSV of a contacts import, a JSON upload's base64), run before the write
//! transaction, so a large or hostile body never holds the write gate
//! while it is parsed. The host
//! calls it for the operations the operation table marks
//! (`Operation::prepared_before_write`) and hands the bytes it returns to
//! `handle` as `request.prepared` (WIT: `handler.prepare`).

use super::{classify, classify_instantiate, types, CallError, Components};
use std::time::Duration;

impl Components {
    /// Instantiates `name` in a fresh store without a connection and calls
    /// `prepare`, whose `store`, `jobs` and provider calls all fail: it
    /// sees the request and nothing else. Runs on a blocking thread, never
    /// the writer.
    pub fn prepare(&self, name: &str, req: &types::Request, deadline: Duration) -> Result<Result<Vec<u8>, types::Failure>, CallError> {
        let mut store = self.store(None, format!("component={name} requestId={} step=prepare", req.request_id), &req.business_id, deadline);
        store.data_mut().preparing = true;
        // A fresh instance every time, never a warm one: a prepare step's
        // state must not meet a request's.
        match self.pres[name].instantiate(&mut store) {
            Ok(inst) => inst.switchboard_platform_handler().call_prepare(&mut store, req).map_err(classify),
            Err(e) => match classify_instantiate(e) {
                e if self.made_room(&e) => self.prepare(name, req, deadline),
                e => Err(e),
            },
        }
    }
}
