//! Each database's job runner bell on this node: a request that makes a
//! step due now rings it, so the runner starts the step at once instead of
//! at its next round.

use crate::db::Db;
use std::sync::Arc;

/// Each database's runner bell (`Runner::bell`), by the database: the
/// app's (`App::bells`), hung by the runner this node runs for it.
#[derive(Default)]
pub(crate) struct Bells(parking_lot::Mutex<Vec<(std::sync::Weak<Db>, Arc<crate::jobs::Wake>)>>);

impl Bells {
    /// Ends the idle wait of `db`'s job runner on this node, if it runs
    /// here: a step made due now starts at once instead of at the next
    /// round (up to 25 ms later).
    pub(crate) fn ring(&self, db: &Arc<Db>) {
        for (d, bell) in self.0.lock().iter() {
            if d.upgrade().is_some_and(|d| Arc::ptr_eq(&d, db)) {
                bell.notify();
            }
        }
    }

    pub(crate) fn hang(&self, db: &Arc<Db>, bell: Arc<crate::jobs::Wake>) {
        let mut bells = self.0.lock();
        bells.retain(|(d, _)| d.strong_count() > 0);
        bells.push((Arc::downgrade(db), bell));
    }
}
