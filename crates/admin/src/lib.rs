//! `switchboard admin …`: businesses and API keys, straight on the data dir,
//! whether or not a server is running on it (SQLite's locking and the busy
//! timeout make the two safe together); the console's accounts (users,
//! sessions) and the last use of keys and sessions (`usage`), which the
//! commands, the console and admission share.
//!
//! Never: HTTP, wasmtime, the job runner. It writes rows with SQL on a
//! storage connection.
//!
//! Entry points: the functions of each command (`create_business`, …,
//! `voice::configure`, `users::create`), called by the binary's `admin`
//! subcommands and by the console.

pub mod areas;
pub mod backup;
pub mod sessions;
pub mod summaries;
pub mod usage;
pub mod users;
pub mod voice;

use anyhow::{bail, Result};
use serde_json::json;
use switchboard_channel_connections as connections;
use switchboard_gateway::auth;
use switchboard_job_kinds::messaging::{self as kinds, MessagingJob};
use switchboard_ops::clock;
use switchboard_storage::databases::{self, Databases};
use switchboard_storage::db::{self, Db};
use switchboard_storage::jobs;

pub(crate) use db::in_transaction;

pub(crate) use db::require_business;

/// `+`, a digit 1 to 9, then 7 to 14 digits (the contract's E.164 pattern,
/// the components' one rule).
pub(crate) use switchboard_formats::e164::is_e164;

/// `admin business create`: a business and its built-in Contacts data
/// source in the database `database` names (else, beside a local main, a
/// database of its own registered now; beside a libSQL server main, the
/// one with the fewest businesses), then its control row in main, which
/// places it there. The
/// rows at its database come first, so a business is never placed where
/// its rows are not (a crash between the two leaves rows no key can reach).
pub fn create_business(dbs: &Databases, name: &str, database: Option<&str>) -> Result<serde_json::Value> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 200 {
        bail!("--name must be 1 to 200 characters");
    }
    let id = uuid::Uuid::new_v4().to_string();
    let placed = dbs.choose_for_new_business(&id, database)?;
    let now = crate::clock::now_rfc3339();
    let home = dbs.named(&placed)?;
    let c = home.conn()?;
    // The business and its built-in Contacts data source, together.
    in_transaction(&c, || {
        db::execute(&c, "INSERT INTO businesses (id, name, created_at, database) VALUES (?1, ?2, ?3, ?4)", db::params![&id, name, &now, &placed])?;
        db::execute(
            &c,
            "INSERT INTO data_sources (id, business_id, name, description, class, kind, built_in, created_at, updated_at) \
             VALUES (?1, ?2, 'Contacts', 'The built-in contacts of this business', 'structured', 'table', 1, ?3, ?3)",
            db::params![uuid::Uuid::now_v7().to_string(), &id, &now],
        )
    })?;
    drop(c);
    if placed != databases::MAIN {
        let c = dbs.main().conn()?;
        in_transaction(&c, || dbs.place(&c, &id, name, &now, &placed))?;
    }
    Ok(json!({"businessId": id, "database": placed}))
}

/// `admin business list`: every business, oldest first.
pub fn list_businesses(db: &Db) -> Result<serde_json::Value> {
    let c = db.conn()?;
    let rows: Vec<(String, String, String, Option<String>)> = db::query_as(&c, "SELECT id, name, created_at, database FROM businesses ORDER BY created_at, id", db::params![])?;
    let businesses: Vec<_> = rows.into_iter().map(|(id, name, created_at, database)| json!({"businessId": id, "name": name, "createdAt": created_at, "database": database})).collect();
    Ok(json!({"businesses": businesses}))
}

pub fn create_key(db: &Db, business: &str, scopes: &str) -> Result<serde_json::Value> {
    let scopes = auth::parse_scopes(scopes).map_err(anyhow::Error::msg)?;
    let c = db.conn()?;
    require_business(&c, &business.to_ascii_lowercase())?;
    let (id, key) = insert_key(&c, &business.to_ascii_lowercase(), &scopes, None)?;
    Ok(json!({"keyId": id, "apiKey": key, "scopes": scopes}))
}

/// Stores a new key of `business` (sorted, known `scopes`): (its id, the key
/// itself, which is never stored and never shown again). The admin command
/// and the console both make keys here.
pub fn insert_key(c: &db::Connection, business: &str, scopes: &[String], created_by_user: Option<&str>) -> Result<(String, String)> {
    let mut random = [0u8; 32];
    rand::fill(&mut random);
    let key = auth::format_key(&random);
    let id = uuid::Uuid::new_v4().to_string();
    db::execute(
        c,
        "INSERT INTO api_keys (id, business_id, key_hash, key_last4, scopes, created_at, created_by_user_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        db::params![&id, business, auth::hash_key(&key), &key[key.len() - 4..], scopes.join(","), crate::clock::now_rfc3339(), created_by_user],
    )?;
    Ok((id, key))
}

pub fn list_keys(db: &Db, business: &str) -> Result<serde_json::Value> {
    let c = db.conn()?;
    Ok(json!({"keys": key_rows(&c, business)?}))
}

/// A business's keys, oldest first: never the key, only its last four
/// characters (and the `sbk_` prefix every key has).
pub fn key_rows(c: &db::Connection, business: &str) -> Result<Vec<serde_json::Value>> {
    type KeyRow = (String, Option<String>, Option<String>, String, Option<String>, Option<String>, Option<String>);
    let rows: Vec<KeyRow> = db::query_as(
        c,
        "SELECT id, key_last4, scopes, created_at, revoked_at, last_used_at, created_by_user_id FROM api_keys WHERE business_id = ?1 ORDER BY created_at, id",
        db::params![business.to_ascii_lowercase()],
    )?;
    Ok(rows
        .into_iter()
        .map(|(id, last4, scopes, created_at, revoked_at, last_used_at, created_by)| {
            let display = last4.as_ref().map_or_else(|| auth::KEY_PREFIX.to_string(), |l| format!("{}…{l}", auth::KEY_PREFIX));
            json!({
                "keyId": id, "last4": last4,
                "display": display,
                "scopes": scopes.as_deref().map_or_else(Vec::new, |s| s.split(',').collect::<Vec<_>>()),
                "createdAt": created_at, "revokedAt": revoked_at, "lastUsedAt": last_used_at,
                "createdByUserId": created_by,
            })
        })
        .collect())
}

pub fn revoke_key(db: &Db, key_id: &str) -> Result<serde_json::Value> {
    let c = db.conn()?;
    if !revoke_key_of(db, &c, None, key_id)? {
        bail!("no key {key_id}");
    }
    Ok(json!({"keyId": key_id, "revoked": true}))
}

/// Revokes a key (of `business` when given); false when there is no such
/// key. `c` must not be inside a transaction: the revocation is committed
/// here, then the key cache is told (this process's and, through the
/// signal file, other processes' on the same data dir).
pub fn revoke_key_of(db: &Db, c: &db::Connection, business: Option<&str>, key_id: &str) -> Result<bool> {
    let changed = db::execute(
        c,
        "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?2) WHERE id = ?1 AND (?3 IS NULL OR business_id = ?3)",
        db::params![key_id.to_ascii_lowercase(), crate::clock::now_rfc3339(), business],
    )?;
    if changed > 0 {
        anyhow::Context::context(db.keys().changed(), "the key is revoked, but the signal file that tells a running server could not be written")?;
    }
    Ok(changed > 0)
}

/// `admin channel connect`: provider onboarding, outside the API. Connects a
/// chatapp phone number (`provider_id` = phoneNumberId, `label`) or the
/// photoapp professional account (`provider_id` = account id, `label` =
/// username; connecting another account disconnects the previous one) and
/// stores a fresh random provider token reference. The token reference is
/// never printed, logged or returned by the API. A number or account
/// connected to another business is refused.
pub fn connect_channel(dbs: &Databases, business: &str, channel: &str, provider_id: &str, label: Option<&str>) -> Result<serde_json::Value> {
    let business = business.to_ascii_lowercase();
    let db = dbs.of_business(&business)?;
    // The flags of this channel's id and label.
    let flag = |field: &'static str| -> &'static str {
        match (field, channel) {
            ("channel", _) => "--channel",
            ("providerId", "photoapp") => "--account-id",
            ("providerId", _) => "--phone-number-id",
            ("label", "photoapp") => "--username",
            ("label", _) => "--label",
            (other, _) => other,
        }
    };
    let checked = connections::check(channel, provider_id, label).map_err(|r| areas::refused(r, flag))?;
    if let Some(r) = connected_in_another_database(dbs, &business, checked.channel.name(), &checked.provider_id)? {
        return Err(areas::refused(r, flag));
    }
    let mut random = [0u8; 32];
    rand::fill(&mut random);
    let c = db.conn()?;
    let connection_id = in_transaction(&c, || {
        require_business(&c, &business)?;
        connections::connect(&areas::Tx(&c), &business, &checked, &random).map_err(|r| areas::refusal(r, flag))
    })?;
    let mut out = json!({"connectionId": connection_id, "businessId": business, "channel": channel, "status": "connected"});
    if checked.channel == connections::Channel::Chatapp {
        out["phoneNumberId"] = json!(provider_id);
        out["label"] = json!(checked.label);
    } else {
        out["providerAccountId"] = json!(provider_id);
        out["username"] = json!(checked.label);
    }
    Ok(out)
}

/// A refusal of `provider_id` of `channel` for `business` when another
/// database has it connected to another business. Each database refuses a
/// number or account connected to another of its own businesses
/// (`connections::connect`); across databases, this check does, so a
/// number belongs to one business of the deployment (a sandbox message
/// that names no business finds it in one database). Connecting is an
/// operator's act: it reads each database once.
pub fn connected_in_another_database(dbs: &Databases, business: &str, channel: &str, provider_id: &str) -> Result<Option<areas::Refused>> {
    dbs.open_registered();
    for (_, db) in dbs.all() {
        let c = db.read_conn()?;
        if connections::owner(&areas::Tx(&c), channel, provider_id)?.is_some_and(|owner| owner != business) {
            return Ok(Some(areas::Refused::new("providerId", format!("{provider_id} is connected to another business; disconnect it there first"))));
        }
    }
    Ok(None)
}

/// Why an injected inbound message was refused.
pub enum InboundRefusal {
    /// Bad input (the message says which).
    Invalid(String),
    /// The number or account is not connected (to this business).
    NotConnected(String),
    Storage(anyhow::Error),
}

impl From<anyhow::Error> for InboundRefusal {
    fn from(e: anyhow::Error) -> Self {
        InboundRefusal::Storage(e)
    }
}

/// Who an inbound message was written to: a chatapp phone number id or a
/// photoapp professional account id.
#[derive(Clone, Copy)]
pub enum Sender<'a> {
    Chatapp(&'a str),
    Photoapp(&'a str),
}

/// An inbound message as the provider's webhook would hand it over.
pub struct Inbound<'a> {
    pub to: Sender<'a>,
    /// E.164 (chatapp) or the provider's user id (photoapp).
    pub from: &'a str,
    pub text: &'a str,
    /// The profile name (chatapp) or handle (photoapp).
    pub name: Option<&'a str>,
    pub provider_message_id: Option<&'a str>,
}

/// Enqueues a durable `messaging.inbound` (chatapp) or
/// `messaging.photoapp-inbound` job, as the provider's inbound webhook would
/// (sandbox only: the admin command and, with `serve --sandbox-routes`, the
/// sandbox routes). With `business`, the number or account must be connected
/// to that business.
pub fn enqueue_inbound(db: &Db, business: Option<&str>, m: &Inbound) -> std::result::Result<serde_json::Value, InboundRefusal> {
    let invalid = |m: &str| Err(InboundRefusal::Invalid(m.to_string()));
    let (channel, sender) = match m.to {
        Sender::Chatapp(id) => ("chatapp", id),
        Sender::Photoapp(id) => ("photoapp", id),
    };
    let from = match m.to {
        Sender::Chatapp(_) => {
            let from: String = m.from.chars().filter(|c| !(c.is_whitespace() || matches!(c, '-' | '.' | '(' | ')'))).collect();
            if !is_e164(&from) {
                return invalid("`from` must be an E.164 number, e.g. +14155550123");
            }
            from
        }
        Sender::Photoapp(_) => {
            if !is_photoapp_user(m.from) {
                return invalid(PHOTOAPP_USER_RULE);
            }
            m.from.to_string()
        }
    };
    if m.text.trim().is_empty() || m.text.chars().count() > 4096 {
        return invalid("`text` must be 1 to 4096 characters");
    }
    let name = m.name.map(str::trim).filter(|n| !n.is_empty());
    if !name_fits(name) {
        return invalid(NAME_RULE);
    }
    let provider_message_id = match m.provider_message_id {
        Some(id) if id.is_empty() || id.len() > 256 || id.chars().any(char::is_control) => return invalid("`providerMessageId` must be 1 to 256 characters"),
        Some(id) => id.to_string(),
        None => format!("sbx.{}", uuid::Uuid::new_v4()),
    };
    let Some((c, owner)) = connected_owner_pulled(db, channel, sender, business)? else {
        return Err(InboundRefusal::NotConnected(match m.to {
            Sender::Chatapp(_) => format!("{sender} is not a connected chatapp number"),
            Sender::Photoapp(_) => format!("{sender} is not a connected photoapp account"),
        }));
    };
    let (name, text, id) = (name.map(str::to_string), m.text.to_string(), provider_message_id.clone());
    let job = match m.to {
        Sender::Chatapp(_) => MessagingJob::Inbound(kinds::Inbound { phone_number_id: sender.to_string(), from, name, text, provider_message_id: id }),
        Sender::Photoapp(_) => MessagingJob::PhotoappInbound(kinds::PhotoappInbound { account_id: sender.to_string(), from, name, text, provider_message_id: id }),
    };
    let job_id = jobs::enqueue(&c, &owner, &job)?;
    Ok(json!({"jobId": job_id, "providerMessageId": provider_message_id}))
}

/// A connection and the business `sender` is connected to (see
/// [`connected_owner`]). A node of a primary that does not show it
/// connected pulls once and looks again: the number may have been
/// connected at the primary a moment ago (the admin CLI), newer than this
/// node's replica.
fn connected_owner_pulled<'a>(db: &'a Db, channel: &str, sender: &str, business: Option<&str>) -> Result<Option<(db::Conn<'a>, String)>> {
    let c = db.conn()?;
    if let Some(owner) = connected_owner(&c, channel, sender, business)? {
        return Ok(Some((c, owner)));
    }
    drop(c);
    if !db.pull_for_missing_key() {
        return Ok(None);
    }
    let c = db.conn()?;
    Ok(connected_owner(&c, channel, sender, business)?.map(|owner| (c, owner)))
}

/// The business `sender` (a number or an account of `channel`) is connected
/// to; with `business`, only when it is that one.
fn connected_owner(c: &db::Connection, channel: &str, sender: &str, business: Option<&str>) -> Result<Option<String>> {
    Ok(connections::owner(&areas::Tx(c), channel, sender)?.filter(|owner| business.is_none_or(|b| b == owner)))
}

/// What a photoapp user does besides writing, as the provider's webhook
/// would hand it over.
pub enum PhotoappSignal<'a> {
    /// A reaction (an emoji) to a message, or its removal. `message_id`:
    /// ours or the provider's; none: the user's latest message from us.
    Reaction { reaction: &'a str, message_id: Option<&'a str>, removed: bool, occurred_at: Option<&'a str> },
    /// The user arrived from an ad or a post (`source`: `ad`, `post`, …).
    Referral { source: &'a str, ad_id: Option<&'a str>, post_id: Option<&'a str> },
    /// A public comment on one of the account's posts (`comment_id`: the
    /// provider's; a fresh one when none is given; `occurred_at`: when it
    /// was written, RFC 3339).
    Comment { text: &'a str, name: Option<&'a str>, post_id: Option<&'a str>, comment_id: Option<&'a str>, occurred_at: Option<&'a str> },
}

/// A photoapp user id as the provider sends it.
fn is_photoapp_user(from: &str) -> bool {
    (1..=64).contains(&from.len()) && from.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}
const PHOTOAPP_USER_RULE: &str = "`from` must be the photoapp user id: 1 to 64 letters, digits, `.`, `_` or `-`";

/// A sender's profile name or handle.
fn name_fits(name: Option<&str>) -> bool {
    name.is_none_or(|n| n.chars().count() <= 200)
}
const NAME_RULE: &str = "`name` must be at most 200 characters";

/// A short identifier-like value: 1 to `max` characters, no control
/// characters, not only spaces.
fn short(v: &str, max: usize) -> bool {
    !v.trim().is_empty() && v.chars().count() <= max && !v.chars().any(char::is_control)
}

/// A signal's own time in one form (UTC, milliseconds), so stored times
/// compare as text; `Err` when it is not RFC 3339.
fn signal_time(t: Option<&str>) -> std::result::Result<Option<String>, ()> {
    t.map(|t| chrono::DateTime::parse_from_rfc3339(t).ok().and_then(|d| switchboard_formats::time::rfc3339_ms_checked(d.timestamp_millis())).ok_or(())).transpose()
}
/// A provider's time in ms as a signal's `occurred_at` (none when out of range).
pub fn signal_time_of_ms(ms: i64) -> Option<String> {
    switchboard_formats::time::rfc3339_ms_checked(ms)
}
const OCCURRED_AT_RULE: &str = "`occurredAt` must be an RFC 3339 date-time such as 2026-11-26T10:00:00Z";

/// Enqueues a durable `messaging.photoapp-reaction`,
/// `messaging.photoapp-referral` or `messaging.photoapp-comment` job for the user `from` of `account` (the
/// sandbox: the admin commands and routes), like [`enqueue_inbound`].
pub fn enqueue_photoapp_signal(db: &Db, business: Option<&str>, account: &str, from: &str, signal: &PhotoappSignal) -> std::result::Result<serde_json::Value, InboundRefusal> {
    let invalid = |m: &str| Err(InboundRefusal::Invalid(m.to_string()));
    if !is_photoapp_user(from) {
        return invalid(PHOTOAPP_USER_RULE);
    }
    let (account_id, from) = (account.to_string(), from.to_string());
    let job = match signal {
        PhotoappSignal::Reaction { reaction, message_id, removed, occurred_at } => {
            if !short(reaction, 16) {
                return invalid("`reaction` must be 1 to 16 characters (an emoji or the provider's reaction name)");
            }
            if message_id.is_some_and(|m| !short(m, 256)) {
                return invalid("`messageId` must be 1 to 256 characters");
            }
            let Ok(occurred_at) = signal_time(*occurred_at) else { return invalid(OCCURRED_AT_RULE) };
            let (reaction, message_id) = (reaction.to_string(), message_id.map(str::to_string));
            MessagingJob::PhotoappReaction(kinds::Reaction { account_id, from, reaction, message_id, removed: *removed, occurred_at })
        }
        PhotoappSignal::Referral { source, ad_id, post_id } => {
            if !(1..=32).contains(&source.len()) || !source.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
                return invalid("`source` must be 1 to 32 lower-case letters or `_`, e.g. `ad` or `post`");
            }
            if ad_id.is_some_and(|v| !short(v, 128)) || post_id.is_some_and(|v| !short(v, 128)) {
                return invalid("`adId` and `postId` must be 1 to 128 characters");
            }
            let (source, ad_id, post_id) = (source.to_string(), ad_id.map(str::to_string), post_id.map(str::to_string));
            MessagingJob::PhotoappReferral(kinds::Referral { account_id, from, source, ad_id, post_id })
        }
        PhotoappSignal::Comment { text, name, post_id, comment_id, occurred_at } => {
            if text.trim().is_empty() || text.chars().count() > 2200 {
                return invalid("`text` must be 1 to 2200 characters");
            }
            if !name_fits(*name) {
                return invalid(NAME_RULE);
            }
            if post_id.is_some_and(|v| !short(v, 128)) || comment_id.is_some_and(|v| !short(v, 256)) {
                return invalid("`postId` must be 1 to 128 characters and `commentId` 1 to 256");
            }
            let Ok(occurred_at) = signal_time(*occurred_at) else { return invalid(OCCURRED_AT_RULE) };
            let comment_id = comment_id.map_or_else(|| format!("sbx-c.{}", uuid::Uuid::new_v4()), str::to_string);
            let (text, name, post_id) = (text.to_string(), name.map(str::to_string), post_id.map(str::to_string));
            MessagingJob::PhotoappComment(kinds::Comment { account_id, from, name, text, post_id, comment_id, occurred_at })
        }
    };
    let Some((c, owner)) = connected_owner_pulled(db, "photoapp", account, business)? else {
        return Err(InboundRefusal::NotConnected(format!("{account} is not a connected photoapp account")));
    };
    let mut answer = json!({"jobId": jobs::enqueue(&c, &owner, &job)?});
    if let MessagingJob::PhotoappComment(comment) = &job {
        answer["commentId"] = json!(comment.comment_id);
    }
    Ok(answer)
}

/// `admin sandbox inbound`: stands in for the messaging provider's inbound
/// webhook. Finds the business the number or account is connected to and
/// durably enqueues one inbound job (due now); the dispatcher stores the
/// message and fans `chatapp.message.received` / `photoapp.message.received`
/// out. A repeated `--provider-message-id` is processed once.
pub fn sandbox_inbound(dbs: &Databases, m: &Inbound) -> Result<serde_json::Value> {
    anywhere(dbs, |db| enqueue_inbound(db, None, m))
}

/// `admin sandbox reaction | referral`: [`enqueue_photoapp_signal`] for
/// whichever business the account is connected to.
pub fn sandbox_photoapp_signal(dbs: &Databases, account: &str, from: &str, signal: &PhotoappSignal) -> Result<serde_json::Value> {
    anywhere(dbs, |db| enqueue_photoapp_signal(db, None, account, from, signal))
}

/// Runs `enqueue` on each database in turn until one has the number or
/// account connected (a sandbox message names no business).
pub fn anywhere(dbs: &Databases, enqueue: impl Fn(&Db) -> std::result::Result<serde_json::Value, InboundRefusal>) -> Result<serde_json::Value> {
    let mut not_connected = None;
    dbs.open_registered();
    for (_, db) in dbs.all() {
        match enqueue(&db) {
            Ok(v) => return Ok(v),
            Err(InboundRefusal::NotConnected(m)) => not_connected = Some(m),
            Err(InboundRefusal::Invalid(m)) => bail!(m),
            Err(InboundRefusal::Storage(e)) => return Err(e),
        }
    }
    bail!(not_connected.unwrap_or_else(|| "no database is open".into()))
}
