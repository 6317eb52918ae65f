//! An owner's everyday settings that the API has no operation for (before,
//! only the admin command line set them): the business's voice lines and
//! prices, the price of a campaign summary assessment, a credit top-up on a
//! sandbox server, and a sandbox chatapp number or photoapp account.
//!
//! Session-only and owner-only, with the CSRF and `Content-Type` rules of
//! every console route. The rules and statements are the areas' own rule
//! crates, the ones `admin voice configure`, `admin summaries configure`,
//! `admin credits add` and `admin channel connect` call
//! (`switchboard_admin::areas`), so each rule lives in one place; a refused
//! value becomes a validation failure naming the body's field.
//!
//! * `GET /console/api/voice`: the voice account, the summary price and
//!   whether this server takes credit top-ups.
//! * `PUT /console/api/voice`: `{lines, pricePerBlockMicrocredits,
//!   callerNumber, timeZone, callingWindow}`, each optional (absent keeps).
//! * `PUT /console/api/summary-prices`: `{pricePerContactMicrocredits,
//!   pricePerThousandCharactersMicrocredits}`, each optional.
//! * `POST /console/api/credits`: `{microcredits, note}`; only on a server
//!   started with `--sandbox-routes` (its credits pay for sandbox calls),
//!   else 403 `credit_top_up_unavailable`.
//! * `POST /console/api/channels`: `{channel, providerId, label}`; only while
//!   the business's messages go through the embedded sandbox, else 409
//!   `sandbox_messenger_required` (a real provider's number is onboarded
//!   with the provider). The provider token reference is never returned.

use super::{business_writer, unavailable, ConsoleRequest};
use crate::pipeline::App;
use crate::plugins::{choice, Interface};
use serde::Deserialize;
use serde_json::{json, Value};
use switchboard_admin::areas::{connections, summary_prices, voice_accounts, Refusal, Refused, Tx};
use switchboard_gateway::validate::Violation;
use switchboard_gateway::{Failure, SessionRecord};

pub const VOICE_PATH: &str = "/console/api/voice";
pub const SUMMARY_PRICES_PATH: &str = "/console/api/summary-prices";
pub const CREDITS_PATH: &str = "/console/api/credits";
pub const CHANNELS_PATH: &str = "/console/api/channels";

/// The paths answered here, each with the methods it takes.
const ROUTES: [(&str, &str); 4] = [(VOICE_PATH, "GET, PUT"), (SUMMARY_PRICES_PATH, "PUT"), (CREDITS_PATH, "POST"), (CHANNELS_PATH, "POST")];

/// The path as logged (every one is a fixed path), if it is one of ours.
pub fn path(p: &str) -> Option<&'static str> {
    ROUTES.iter().find(|(r, _)| *r == p).map(|(r, _)| *r)
}

/// The access log's operation name.
pub fn operation_name(method: &str, p: &str) -> Option<&'static str> {
    Some(match (method, path(p)?) {
        ("GET", VOICE_PATH) => "consoleVoiceSettings",
        ("PUT", VOICE_PATH) => "consoleConfigureVoice",
        ("PUT", SUMMARY_PRICES_PATH) => "consoleConfigureSummaryPrices",
        ("POST", CREDITS_PATH) => "consoleAddCredits",
        ("POST", CHANNELS_PATH) => "consoleConnectChannel",
        _ => "console",
    })
}

/// Answers one of [`ROUTES`]: the session (with its CSRF token for a
/// write), the owner role, a JSON body, then the route.
pub fn route(app: &App, r: &ConsoleRequest, at: &'static str) -> Result<Value, Failure> {
    let allowed = ROUTES.iter().find(|(p, _)| *p == at).map(|(_, m)| *m).unwrap_or("GET");
    if !allowed.split(", ").any(|m| m == r.method) {
        return Err(super::method_not_allowed(allowed));
    }
    let s = super::session(app, r)?;
    if s.role != "owner" {
        return Err(Failure::authorization("owner_role_required", "only an owner of the business can change its voice lines, prices, credits and channels"));
    }
    if r.method == "GET" {
        return settings(app, &s);
    }
    let body: Value = super::body(r)?;
    match at {
        VOICE_PATH => configure_voice(app, &s, body),
        SUMMARY_PRICES_PATH => configure_summary_prices(app, &s, body),
        CREDITS_PATH => add_credits(app, &s, body),
        _ => connect_channel(app, &s, body),
    }
}

/// A body of `T` (unknown fields refused), or a validation failure that
/// names the field serde could not read.
fn parse<T: for<'de> Deserialize<'de>>(body: Value) -> Result<T, Failure> {
    serde_json::from_value(body).map_err(|e| Failure::validation("invalid_body", format!("the request body is not what this route takes: {e}")))
}

/// A rule crate's refusal as the body's field: `body_field` maps the rule's
/// field name to the name the body uses.
fn refused(r: Refused, body_field: impl Fn(&'static str) -> &'static str) -> Failure {
    let field = body_field(r.field);
    let message = format!("`{field}` {}", r.why);
    Failure::from_violations(vec![Violation { field: field.into(), rule: "invalid", message }], "request body")
}

/// What `GET /console/api/voice` answers.
fn settings(app: &App, s: &SessionRecord) -> Result<Value, Failure> {
    let db = app.db_for(&s.business_id)?;
    let c = db.conn().map_err(unavailable)?;
    let tx = Tx(&c);
    let a = voice_accounts::account::read(&tx, &s.business_id).map_err(unavailable)?;
    let window = a.window.map(|(start, end)| format!("{:02}:{:02}-{:02}:{:02}", start / 60, start % 60, end / 60, end % 60));
    let (per_contact, per_thousand) = summary_prices::read(&tx, &s.business_id).map_err(unavailable)?;
    let (available, reserved) = voice_accounts::credits::balance(&tx, &s.business_id).map_err(unavailable)?;
    Ok(json!({
        "voice": {
            "lines": a.lines,
            "pricePerBlockMicrocredits": a.price_per_block,
            "blockSeconds": voice_accounts::BLOCK_MS / 1000,
            "callerNumber": a.caller_number,
            "timeZone": a.time_zone,
            "callingWindow": window,
        },
        "summaryPrices": {"pricePerContactMicrocredits": per_contact, "pricePerThousandCharactersMicrocredits": per_thousand},
        "credits": {"availableMicrocredits": available, "reservedMicrocredits": reserved, "topUpAllowed": app.sandbox_routes},
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct VoiceChange {
    lines: Option<i64>,
    price_per_block_microcredits: Option<i64>,
    caller_number: Option<String>,
    time_zone: Option<String>,
    calling_window: Option<String>,
}

fn configure_voice(app: &App, s: &SessionRecord, body: Value) -> Result<Value, Failure> {
    let v: VoiceChange = parse(body)?;
    let wanted = voice_accounts::account::Settings {
        lines: v.lines,
        price_per_block: v.price_per_block_microcredits,
        caller_number: v.caller_number.as_deref(),
        time_zone: v.time_zone.as_deref(),
        calling_window: v.calling_window.as_deref(),
    };
    let checked = voice_accounts::account::check(&wanted).map_err(|r| {
        refused(r, |f| match f {
            "pricePerBlock" => "pricePerBlockMicrocredits",
            other => other,
        })
    })?;
    {
        let (_gate, db) = business_writer(app, &s.business_id)?;
        let c = db.conn().map_err(unavailable)?;
        crate::db::in_transaction(&c, || voice_accounts::account::configure(&Tx(&c), &s.business_id, &checked)).map_err(unavailable)?;
    }
    tracing::info!(businessId = %s.business_id, "console voice account changed");
    settings(app, s)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PriceChange {
    price_per_contact_microcredits: Option<i64>,
    price_per_thousand_characters_microcredits: Option<i64>,
}

fn configure_summary_prices(app: &App, s: &SessionRecord, body: Value) -> Result<Value, Failure> {
    let p: PriceChange = parse(body)?;
    let change = summary_prices::check(p.price_per_contact_microcredits, p.price_per_thousand_characters_microcredits).map_err(|r| {
        refused(r, |f| match f {
            "pricePerContact" => "pricePerContactMicrocredits",
            "pricePerThousandCharacters" => "pricePerThousandCharactersMicrocredits",
            other => other,
        })
    })?;
    {
        let (_gate, db) = business_writer(app, &s.business_id)?;
        let c = db.conn().map_err(unavailable)?;
        crate::db::in_transaction(&c, || summary_prices::configure(&Tx(&c), &s.business_id, &change)).map_err(unavailable)?;
    }
    settings(app, s)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TopUp {
    microcredits: i64,
    note: Option<String>,
}

fn add_credits(app: &App, s: &SessionRecord, body: Value) -> Result<Value, Failure> {
    if !app.sandbox_routes {
        return Err(Failure::authorization("credit_top_up_unavailable", "this server takes no credit top-ups from the console; the operator adds credits (switchboard admin credits add)"));
    }
    let t: TopUp = parse(body)?;
    let grant = voice_accounts::credits::check_grant(t.microcredits, t.note.as_deref()).map_err(|r| refused(r, |f| f))?;
    {
        let (_gate, db) = business_writer(app, &s.business_id)?;
        let c = db.conn().map_err(unavailable)?;
        crate::db::in_transaction(&c, || voice_accounts::credits::grant(&Tx(&c), &s.business_id, &grant)).map_err(unavailable)?;
    }
    tracing::info!(businessId = %s.business_id, microcredits = t.microcredits, "console credits added");
    settings(app, s)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Connect {
    channel: String,
    provider_id: String,
    label: Option<String>,
}

fn connect_channel(app: &App, s: &SessionRecord, body: Value) -> Result<Value, Failure> {
    let w: Connect = parse(body)?;
    let checked = connections::check(&w.channel, &w.provider_id, w.label.as_deref()).map_err(|r| refused(r, |f| f))?;
    if let Some(r) = switchboard_admin::connected_in_another_database(&app.dbs, &s.business_id, checked.channel.name(), &checked.provider_id).map_err(unavailable)? {
        return Err(refused(r, |f| f));
    }
    let mut random = [0u8; 32];
    rand::fill(&mut random);
    let (_gate, db) = business_writer(app, &s.business_id)?;
    let c = db.conn().map_err(unavailable)?;
    let messenger = Interface::named("messenger").ok_or_else(|| Failure::internal("the messenger interface is not built in"))?;
    if choice::read(&c, &s.business_id, messenger).map_err(unavailable)?.is_some() {
        return Err(Failure::conflict(
            "sandbox_messenger_required",
            "this business's messages go through a plugin: connect its numbers with that provider; the console connects numbers and accounts of the embedded sandbox only",
        ));
    }
    let id = crate::db::in_transaction(&c, || {
        connections::connect(&Tx(&c), &s.business_id, &checked, &random).map_err(|r| match r {
            Refusal::Refused(r) => anyhow::Error::new(Refusing(r)),
            Refusal::Store(e) => e,
        })
    })
    .map_err(|e| match e.downcast::<Refusing>() {
        Ok(Refusing(r)) => refused(r, |f| f),
        Err(e) => unavailable(e),
    })?;
    tracing::info!(businessId = %s.business_id, channel = checked.channel.name(), "console sandbox connection connected");
    let mut out = json!({"connectionId": id, "channel": checked.channel.name(), "status": "connected", "label": checked.label});
    out[if checked.channel == connections::Channel::Chatapp { "phoneNumberId" } else { "providerAccountId" }] = json!(checked.provider_id);
    Ok(out)
}

/// A refusal carried out of the transaction (which rolls back on any error).
#[derive(Debug)]
struct Refusing(Refused);

impl std::fmt::Display for Refusing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.0.field, self.0.why)
    }
}

impl std::error::Error for Refusing {}
