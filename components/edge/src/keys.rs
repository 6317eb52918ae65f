//! What a request reads at main (the primary) before its area runs: its
//! key's row, its rate limit's update and its business's placement, queued
//! to travel with the request's next statement; and admission's views of
//! a key ([`PrimaryKeys`] for a write, [`Assumed`] and [`Known`] for a
//! speculative read).

use crate::bindings::switchboard::platform::transaction;
use crate::limits;
use crate::store::{to_wit, unavailable, EdgeSql};
use crate::{log_event, settings};
use switchboard_gateway::storage::{self, Statements, Value};
use switchboard_gateway::{Admitted, Failure, KeyDirectory, KeyRecord, SessionRecord};
use switchboard_guest::FromRow;

/// The key lookup, the rate limit's update and the placement of the
/// business the request names, of one request, queued to travel with its
/// next statement (all three read at main).
pub(crate) struct Pending {
    key: u32,
    rate: Option<u32>,
    /// The business placed, and its placement's handle.
    place: Option<(String, u32)>,
}

impl Pending {
    /// Queues the rate limit's update (outside the transaction) and, after
    /// a `BEGIN` when `begin`, the key lookup and `business`'s placement
    /// (the stream moves to its database when the placement is back).
    pub(crate) fn queue(hash: &str, begin: bool, business: Option<&str>) -> Pending {
        let rate = settings().rates.map(|r| {
            let (sql, params) = r.statement(hash);
            transaction::prefetch(&sql, &to_wit(&params))
        });
        if begin {
            let _ = transaction::control("BEGIN");
        }
        let key = transaction::prefetch(storage::FIND_KEY, &to_wit(&switchboard_guest::params![hash]));
        let place = business.map(|b| (b.to_string(), transaction::place(b)));
        Pending { key, rate, place }
    }

    /// Whether the business's placement was read (the stream is at its
    /// database); 503 when it could not be.
    pub(crate) fn placed(&self) -> Result<(), Failure> {
        match &self.place {
            Some((_, handle)) => transaction::prefetched(*handle).map(|_| ()).map_err(|_| unavailable()),
            None => Ok(()),
        }
    }

    /// The key's row (sent now if nothing carried it yet).
    pub(crate) fn key(&self) -> Result<Option<KeyRecord>, Failure> {
        let rows = transaction::prefetched(self.key).map_err(|_| unavailable())?;
        let row = rows.into_iter().next().map(|r| r.into_iter().map(Value::from).collect());
        row.map(KeyRecord::from_row).transpose().map_err(|_| unavailable())
    }

    /// The answer's `RateLimit-*` headers, or the 429. A limit that could
    /// not be read limits nothing (a missing table is made after the
    /// answer).
    pub(crate) fn rate_outcome(&self) -> Result<Vec<(&'static str, String)>, Failure> {
        let (Some(rates), Some(handle)) = (settings().rates, self.rate) else { return Ok(Vec::new()) };
        match transaction::prefetched(handle) {
            Ok(rows) => rates.outcome(rows.into_iter().map(|r| r.into_iter().map(Value::from).collect()).collect()),
            Err(e) => {
                if limits::table_missing(&e.message) {
                    MAKE_RATE_TABLE.with(|m| m.set(true));
                } else {
                    log_event("error", "the rate limit could not be read", &[("error", &e.message)]);
                }
                Ok(Vec::new())
            }
        }
    }
}

thread_local! {
    /// Set when a request found the rate-limit table missing.
    static MAKE_RATE_TABLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// After the answer: ends a read's transaction at the primary (one round
/// trip the client does not wait for), and makes the rate-limit table when
/// a request found it missing.
pub fn after_answer() {
    let _ = transaction::control("ROLLBACK");
    if MAKE_RATE_TABLE.with(|m| m.replace(false)) {
        if let Err(e) = EdgeSql.execute(limits::TABLE, &[]) {
            log_event("error", "the rate-limit table could not be made", &[("error", &e)]);
        }
    }
}

/// Admission's view of a key whose row is still on its way: it belongs to
/// the business the request names and holds every scope.
pub(crate) struct Assumed {
    pub(crate) business_id: String,
}

impl KeyDirectory for Assumed {
    fn find_by_hash(&self, _key_hash: &str) -> Result<Option<KeyRecord>, Failure> {
        Ok(Some(KeyRecord { key_id: String::new(), business_id: self.business_id.clone(), scopes: switchboard_gateway::auth::SCOPES.iter().map(|s| s.to_string()).collect(), revoked: false }))
    }
    fn find_session(&self, _token_hash: &str) -> Result<Option<SessionRecord>, Failure> {
        Ok(None)
    }
}

/// A key's row, once known.
pub(crate) struct Known(pub(crate) Option<KeyRecord>);

impl KeyDirectory for Known {
    fn find_by_hash(&self, _key_hash: &str) -> Result<Option<KeyRecord>, Failure> {
        Ok(self.0.clone())
    }
    fn find_session(&self, _token_hash: &str) -> Result<Option<SessionRecord>, Failure> {
        Ok(None)
    }
}

/// API keys, read at the primary on every request (revocation is
/// immediate), with the rate limit's update and the placement of the
/// business the request names in the same round trip.
pub(crate) struct PrimaryKeys {
    business: Option<String>,
    pending: std::cell::RefCell<Option<Pending>>,
}

impl PrimaryKeys {
    /// Keys whose lookup carries `business`'s placement.
    pub(crate) fn placing(business: Option<String>) -> PrimaryKeys {
        PrimaryKeys { business, pending: std::cell::RefCell::new(None) }
    }

    /// Moves the request's stream to the admitted business's database
    /// before its transaction begins: the placement read with the key, or
    /// (a business the request did not name as expected) read now.
    pub(crate) fn place(&self, a: &Admitted) -> Result<(), Failure> {
        let Some(business) = a.business_id.as_deref().filter(|b| !b.is_empty()) else { return Ok(()) };
        if let Some(pending) = &*self.pending.borrow() {
            if pending.place.as_ref().is_some_and(|(placed, _)| placed == business) {
                return pending.placed();
            }
        }
        transaction::prefetched(transaction::place(business)).map(|_| ()).map_err(|_| unavailable())
    }

    pub(crate) fn rate_outcome(&self) -> Result<Vec<(&'static str, String)>, Failure> {
        match &*self.pending.borrow() {
            Some(p) => p.rate_outcome(),
            None => Ok(Vec::new()),
        }
    }
}

impl KeyDirectory for PrimaryKeys {
    fn find_by_hash(&self, key_hash: &str) -> Result<Option<KeyRecord>, Failure> {
        let pending = Pending::queue(key_hash, false, self.business.as_deref());
        let key = pending.key();
        *self.pending.borrow_mut() = Some(pending);
        key
    }
    fn find_session(&self, _token_hash: &str) -> Result<Option<SessionRecord>, Failure> {
        Ok(None)
    }
}
