//! Builds the OpenAPI 3.1 document from the operation table and the schema
//! files in gateway/openapi/schemas/. The same document drives validation.

use crate::operations::{BusinessIn, Condition, Operation, Response, OPERATIONS};
use serde_json::{json, Map, Value};

// SCHEMA_TEXTS: the schema files split by build.rs, one text per schema.
include!(concat!(env!("OUT_DIR"), "/schema_texts.rs"));

pub const API_VERSION: &str = "1.7.0";
pub const CONTRACT_VERSION: &str = "1.1";

/// One schema of `components.schemas`, as JSON text until it is needed.
pub struct SchemaSource {
    pub name: std::borrow::Cow<'static, str>,
    pub text: &'static str,
    /// The schema files' strings refuse NUL (see `forbid_nul_in_strings`);
    /// the envelope's own parts are used as written.
    pub forbid_nul: bool,
}

/// Every schema of every file, then the envelope's shared parts, in the
/// document's order. The files are split at build time (build.rs, which
/// also refuses a name defined twice): a schema's body is parsed when
/// first used, so an instance that answers one request parses only what it
/// needs.
pub fn schema_sources() -> Vec<SchemaSource> {
    let source = |name, text, forbid_nul| SchemaSource { name: std::borrow::Cow::Borrowed(name), text, forbid_nul };
    let mut all: Vec<SchemaSource> = SCHEMA_TEXTS.iter().map(|&(name, text)| source(name, text, true)).collect();
    all.push(source("Meta", META_SCHEMA, false));
    all.push(source("IdempotencyKey", IDEMPOTENCY_KEY_SCHEMA, false));
    all
}

const META_SCHEMA: &str = r#"{"type": "object", "required": ["requestId"], "additionalProperties": false,
    "properties": {"requestId": {"type": "string", "format": "uuid"}}}"#;
const IDEMPOTENCY_KEY_SCHEMA: &str = r#"{"type": "string", "minLength": 1, "maxLength": 512, "pattern": "^[\\x21-\\x7E]{1,512}$",
    "description": "1 to 512 visible ASCII characters (0x21 to 0x7E)."}"#;

/// Parses one schema as the document has it.
pub fn parse_schema(source: &SchemaSource) -> Result<Value, String> {
    let mut v: Value = serde_json::from_str(source.text).map_err(|e| format!("schema {}: {e}", source.name))?;
    if source.forbid_nul {
        forbid_nul_in_strings(&mut v);
    }
    Ok(v)
}

fn scope_text(op: &Operation) -> String {
    let mut s =
        if op.scopes.is_empty() { "Public: no API key needed.".to_string() } else { format!("Scopes: {} (all required).", op.scopes.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")) };
    for c in op.conditional_scopes {
        s.push_str(&format!(" Also `{}` when {}.", c.scope, describe(&c.when)));
    }
    s
}

fn describe(c: &Condition) -> String {
    match c {
        Condition::BodyFieldIs { field, value } => format!("`{field}` is `{value}`"),
        Condition::BodyFieldPresent { field } => format!("`{field}` is present"),
        Condition::QueryPresent { name } => format!("the `{name}` query parameter is present"),
        Condition::All(all) => all.iter().map(describe).collect::<Vec<_>>().join(" and "),
    }
}

fn operation_object(op: &Operation) -> Value {
    let mut params: Vec<Value> = Vec::new();
    for seg in op.path.split('/') {
        if let Some(name) = seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            params.push(json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "format": "uuid"}}));
        }
    }
    for q in op.query {
        let mut schema: Value = serde_json::from_str(q.schema).expect("query schema literal is JSON");
        forbid_nul_in_strings(&mut schema);
        params.push(json!({"name": q.name, "in": "query", "required": q.required, "schema": schema, "description": q.description}));
    }
    if op.method.is_mutation() && op.business_in != BusinessIn::Public {
        params.push(json!({
            "name": "Idempotency-Key", "in": "header", "required": op.idempotency_required,
            "description": if op.idempotency_required {
                "Required. An exact retry (same key and canonically identical body) replays the original response; the same key with another body is 409 idempotency_key_conflict."
            } else {
                "Optional. When sent, an exact retry replays the original response."
            },
            "schema": {"$ref": "#/components/schemas/IdempotencyKey"}
        }));
    }
    let mut responses = Map::new();
    for (i, status) in op.success_status.iter().enumerate() {
        let content = match op.response {
            Response::Json(name) => json!({"application/json": {"schema": {
            "type": "object", "additionalProperties": false, "required": ["ok", "data", "meta"],
            "properties": {
                "ok": {"const": true},
                "data": {"$ref": format!("#/components/schemas/{name}")},
                "meta": {"$ref": "#/components/schemas/Meta"}
            }}}}),
            Response::Raw(media) => json!({media: {"schema": {"type": "string"}}}),
        };
        let desc = if i == 0 { "Success" } else { "Success (an existing record was reused)" };
        responses.insert(status.to_string(), json!({"description": desc, "content": content}));
    }
    // Every operation can refuse a request (400 malformed or invalid, 401,
    // 403, 404, 409, 413, 415, 429 …): a 4XX range names that for tools
    // that read only explicit codes; `default` covers the rest (5xx).
    responses.insert("4XX".into(), json!({"$ref": "#/components/responses/Failure"}));
    responses.insert("default".into(), json!({"$ref": "#/components/responses/Failure"}));
    let mut o = json!({
        "operationId": op.id.as_str(),
        "summary": op.summary,
        "description": match op.raw_body() {
            None if op.number as usize > crate::operations::CONTRACT_OPERATIONS => format!(
                "Operation {} of ours, beyond the contract's {}. {} Request bodies up to {} MiB.",
                op.number,
                crate::operations::CONTRACT_OPERATIONS,
                scope_text(op),
                op.max_body_bytes() >> 20
            ),
            None => format!("Operation {} of the contract. {} Request bodies up to {} MiB.", op.number, scope_text(op), op.max_body_bytes() >> 20),
            Some(_) => format!(
                "Operation {} of the contract. {} Two request forms: a JSON body (`application/json`, base64 file, up to {} MiB), or the raw file \
                 as the body with any other Content-Type (e.g. `text/csv`) and the metadata `businessId`, `dataSourceId`, `fileName` and \
                 `format` as query parameters (all required then), streamed to storage (up to {} MiB by default; 413 beyond). \
                 A JSON file is sent raw as `application/octet-stream` with `format=json`, because `application/json` selects the JSON form. \
                 For Idempotency-Key, a raw retry is exact when its query metadata and body bytes are identical.",
                op.number,
                scope_text(op),
                op.max_body_bytes() >> 20,
                crate::operations::RAW_UPLOAD_MAX_BYTES >> 20
            ),
        },
        "tags": [if op.session_only() { "console" } else { op.tag() }],
        "parameters": params,
        "responses": responses,
        "x-operation-number": op.number,
        "x-required-scopes": op.scopes,
    });
    if op.scopes.is_empty() {
        o["security"] = json!([]);
    } else if op.session_only() {
        o["security"] = json!([{"consoleSession": op.scopes}]);
    } else {
        o["security"] = json!([{"bearerAuth": op.scopes}, {"consoleSession": op.scopes}]);
    }
    crate::links::add_refusals(op, &mut o);
    if let Some(req) = op.request {
        let mut content = Map::new();
        content.insert("application/json".into(), json!({"schema": {"$ref": format!("#/components/schemas/{req}")}}));
        if let Some(raw) = op.raw_body() {
            for (media, schema) in raw.media_types {
                content.insert(media.to_string(), json!({"schema": {"$ref": format!("#/components/schemas/{schema}")}}));
            }
        }
        o["requestBody"] = json!({"required": true, "content": content});
    }
    o
}

/// The pattern every free-text string gets: no NUL character (U+0000),
/// which storage cannot hold and the service refuses (`nul_character`), so
/// the document accepts no string the service refuses.
pub const NO_NUL_PATTERN: &str = "^[^\\x00]*$";

/// What the schema files write as `\S` (text with a visible character: the
/// service trims names, labels and messages and refuses blank ones), with
/// the NUL rule folded in, since a schema has one `pattern`. The blank
/// characters are listed one by one, not written `\s`, because `\s` means
/// different sets in ECMA-262 (what JSON Schema tools use: U+FEFF, not
/// U+0085), Python and Rust: listed, the set is Unicode's White_Space in
/// every engine, exactly what the service's `trim` and `char::is_whitespace`
/// remove (a unit test compares them over every character).
pub const NON_BLANK_PATTERN: &str = "^[^\\x00]*[^\\x00\\t\\n\\x0B\\f\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\x00]*$";

/// Gives every string schema without a `pattern`, `enum` or `const` the
/// [`NO_NUL_PATTERN`], and every `\S` one the [`NON_BLANK_PATTERN`],
/// throughout `v` (component schemas, parameters).
pub fn forbid_nul_in_strings(v: &mut Value) {
    match v {
        Value::Object(o) => {
            let is_string = match o.get("type") {
                Some(Value::String(t)) => t == "string",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
                _ => false,
            };
            if is_string && o.get("pattern").is_some_and(|p| p == "\\S") {
                o.insert("pattern".into(), Value::String(NON_BLANK_PATTERN.into()));
            } else if is_string && !o.contains_key("pattern") && !o.contains_key("enum") && !o.contains_key("const") {
                o.insert("pattern".into(), Value::String(NO_NUL_PATTERN.into()));
            }
            for child in o.values_mut() {
                forbid_nul_in_strings(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(forbid_nul_in_strings),
        _ => {}
    }
}

/// The whole document around `schemas` (every schema of
/// [`schema_sources`], parsed: `Validator::all_schemas`).
pub fn document_with(schemas: Map<String, Value>) -> Value {
    let mut paths = Map::new();
    for op in OPERATIONS {
        let entry = paths.entry(op.path.to_string()).or_insert_with(|| json!({}));
        entry[op.method.as_str().to_ascii_lowercase()] = operation_object(op);
    }
    crate::links::add_links(&mut paths, &schemas);
    let scopes: Map<String, Value> = crate::auth::SCOPES.iter().map(|s| (s.to_string(), json!(s))).collect();
    json!({
        "webhooks": webhooks(),
        "openapi": "3.1.0",
        "info": {
            "title": "Switchboard API",
            "version": API_VERSION,
            "description": "One API for chatapp and photoapp messages, outbound AI voice calls and multi-step campaigns, with contacts, data sources, agents and signed webhooks. Every failure uses the failure envelope; `error.details` lists field-level validation problems.",
            "x-contract-version": CONTRACT_VERSION,
            // The workspace's license (Cargo.toml), an SPDX identifier.
            "license": {"name": env!("CARGO_PKG_LICENSE"), "identifier": env!("CARGO_PKG_LICENSE")}
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearerAuth": {
                "type": "http", "scheme": "bearer",
                "description": "An API key created with `switchboard admin key create`. Keys are scoped; each operation lists its scopes in `security`.",
                "x-scopes": scopes
            }, "consoleSession": {
                "type": "apiKey", "in": "cookie", "name": "sb_session",
                "description": "A logged-in console session (POST /console/api/session sets the cookie: HttpOnly, SameSite=Strict). The same operations take it in place of an API key, with the scopes of the user's role (owner: every scope; agent, a support agent: the read scopes and communications:write, chatapp:write, chatapp:media and photoapp:write; viewer: the read scopes); a state-changing request must also send the session's CSRF token as `X-CSRF-Token` (GET /console/api/session returns it). Operations tagged `console` take only a session and refuse API keys (401 session_required)."
            }},
            "responses": {"Failure": {
                "description": "The failure envelope. 429 rate_limit (`rate_limited`): the API key's or the business's requests per second are used up; retry after `Retry-After` seconds. 503 capacity (`overloaded`): the service is at its bound of requests in flight; retry after `Retry-After`.",
                "headers": {
                    "Retry-After": {"description": "Seconds to wait before retrying (429, and 503 when it is worth retrying soon).", "schema": {"type": "integer", "minimum": 0}},
                    "RateLimit-Limit": {"description": "Requests the tighter of the caller's buckets (API key, business) holds when full (IETF RateLimit header fields draft). Also on successful answers.", "schema": {"type": "integer", "minimum": 0}},
                    "RateLimit-Remaining": {"description": "Requests left in that bucket now.", "schema": {"type": "integer", "minimum": 0}},
                    "RateLimit-Reset": {"description": "Seconds until that bucket is full again.", "schema": {"type": "integer", "minimum": 0}}
                },
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FailureEnvelope"}}}
            }}
        }
    })
}

/// The events the service POSTs to subscribers (OpenAPI 3.1 `webhooks`),
/// each with its payload schema.
fn webhooks() -> Value {
    let events: &[(&str, &str, &str)] = &[
        ("chatapp.message.received", "ChatappMessageReceivedEvent", "An inbound chatapp message."),
        ("chatapp.message.sent", "ChatappDeliveryEvent", "A message queued via POST /messages was sent."),
        ("chatapp.message.delivered", "ChatappDeliveryEvent", "A message reached the recipient's device."),
        ("chatapp.message.read", "ChatappDeliveryEvent", "The recipient read the message."),
        ("chatapp.message.failed", "ChatappDeliveryEvent", "The message failed; `delivery.failure` says why."),
        ("photoapp.message.received", "PhotoappMessageReceivedEvent", "A photoapp user's direct message; from now on the business may answer that user."),
        ("photoapp.message.sent", "PhotoappDeliveryEvent", "A photoapp answer was sent."),
        ("photoapp.message.seen", "PhotoappDeliveryEvent", "The photoapp user saw the answer (delivery status `read`)."),
        ("photoapp.message.failed", "PhotoappDeliveryEvent", "The photoapp answer failed."),
        ("photoapp.message.reaction", "PhotoappReactionEvent", "A photoapp user reacted to a message, or took the reaction back."),
        ("photoapp.message.referral", "PhotoappReferralEvent", "A photoapp user arrived from an ad or a post."),
        ("photoapp.comment.received", "PhotoappCommentReceivedEvent", "A public comment on one of the account's posts."),
        ("photoapp.comment.replied", "PhotoappCommentRepliedEvent", "The account's agent replied publicly under a comment."),
        ("photoapp.comment.failed", "PhotoappCommentFailedEvent", "The agent's reply to a comment could not be published."),
    ];
    // The headers every delivery carries (components/webhooks' deliver step).
    let header = |name: &str, schema: Value, description: &str| json!({"name": name, "in": "header", "required": true, "schema": schema, "description": description});
    let headers = json!([
        header(
            "X-Service-Signature",
            json!({"type": "string", "pattern": "^[0-9a-f]{64}$"}),
            "Lowercase hex HMAC-SHA256 of `X-Service-Timestamp`, a dot and the raw body, keyed with the subscription's signing secret; compare in constant time."
        ),
        header("X-Service-Timestamp", json!({"type": "string", "pattern": "^[0-9]+$"}), "Seconds since the Unix epoch when this attempt was signed; refuse stale ones to stop replays."),
        header("X-Service-Event-Id", json!({"type": "string", "minLength": 1}), "The payload's `eventId`; deduplicate on it before side effects."),
        header("X-Service-Contract-Version", json!({"const": CONTRACT_VERSION}), "The payload contract version."),
        header("Idempotency-Key", json!({"type": "string", "minLength": 1}), "One value per attempt, never sent twice."),
        // The same delivery signed as the Standard Webhooks specification
        // defines, for its verification libraries (docs/webhooks.md).
        header("webhook-id", json!({"type": "string", "minLength": 1}), "Standard Webhooks: the payload's `eventId`, the same in every retry and redelivery."),
        header("webhook-timestamp", json!({"type": "string", "pattern": "^[0-9]+$"}), "Standard Webhooks: the value of `X-Service-Timestamp`."),
        header(
            "webhook-signature",
            json!({"type": "string", "pattern": "^v1,[A-Za-z0-9+/]{43}=$"}),
            "Standard Webhooks: `v1,` and the base64 HMAC-SHA256 of `webhook-id`, a dot, `webhook-timestamp`, a dot and the raw body, keyed with the base64 decoding of the signing secret after its `whsec_` prefix; a Standard Webhooks library verifies it given the secret as it is."
        ),
    ]);
    let mut out = Map::new();
    for (event, schema, summary) in events {
        // chatapp.message.received -> chatappMessageReceivedWebhook (the
        // event names are lowercase ASCII words).
        let words = event.split('.').enumerate();
        let operation_id: String = words.map(|(i, w)| if i == 0 { w.to_string() } else { w[..1].to_ascii_uppercase() + &w[1..] }).collect::<String>() + "Webhook";
        out.insert(event.to_string(), json!({"post": {
            "operationId": operation_id,
            "summary": summary,
            "description": "Signed POST to the subscription's callbackUrl: `X-Service-Signature` is the hex HMAC-SHA256 of `X-Service-Timestamp`, a dot and the raw body, keyed with the subscription's signing secret; `X-Service-Event-Id` and `X-Service-Contract-Version` are set, and `Idempotency-Key` (one value per attempt, never sent twice); `webhook-id`, `webhook-timestamp` and `webhook-signature` sign it again as the Standard Webhooks specification defines. Any non-2xx answer is retried with the same eventId and a rising retryNumber; an attempt interrupted by a crash counts, so retryNumber never repeats.",
            "parameters": headers,
            // Sent by the service, not called by a client: no API key or
            // session. The receiver authenticates it by its signature.
            "security": [],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}},
            "responses": {"2XX": {"description": "Accepted durably by the receiver."}}
        }}));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn document_builds_and_every_named_schema_exists() {
        // Gateway::new checks every operation's schema names and $refs and
        // compiles every pattern.
        let g = crate::Gateway::new().expect("document builds");
        let doc = g.document();
        assert_eq!(doc["info"]["version"], super::API_VERSION);
        let n: usize = doc["paths"].as_object().unwrap().values().map(|p| p.as_object().unwrap().len()).sum();
        assert_eq!(n, crate::operations::OPERATIONS.len());
        let events = doc["components"]["schemas"]["EventType"]["enum"].as_array().unwrap();
        assert_eq!(events.len(), 14);
        // Every documented webhook is a subscribable event type.
        for name in doc["webhooks"].as_object().unwrap().keys() {
            assert!(events.iter().any(|e| e == name.as_str()), "{name}");
        }
    }

    #[test]
    fn every_operation_declares_its_security_and_its_refusals() {
        let g = crate::Gateway::new().unwrap();
        let doc = g.document();
        let schemes = doc["components"]["securitySchemes"].as_object().unwrap();
        let mut ids = std::collections::HashSet::new();
        let paths = doc["paths"].as_object().unwrap().values();
        for op in paths.chain(doc["webhooks"].as_object().unwrap().values()).flat_map(|item| item.as_object().unwrap().values()) {
            let id = op["operationId"].as_str().expect("operationId");
            assert!(ids.insert(id.to_string()), "{id} twice");
            // An explicit list, empty for the public operations and webhooks.
            for requirement in op["security"].as_array().unwrap_or_else(|| panic!("{id} has no security")) {
                for scheme in requirement.as_object().unwrap().keys() {
                    assert!(schemes.contains_key(scheme), "{id}: {scheme}");
                }
            }
            assert!(op["description"].as_str().is_some_and(|d| !d.is_empty()), "{id}");
        }
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                assert_eq!(op["responses"]["4XX"]["$ref"], "#/components/responses/Failure", "{method} {path}");
            }
        }
        let public = &doc["paths"]["/api/v1/contracts/whatsapp-automation"]["get"];
        assert_eq!(public["security"], serde_json::json!([]));
        let webhook = &doc["webhooks"]["chatapp.message.received"]["post"];
        assert_eq!(webhook["operationId"], "chatappMessageReceivedWebhook");
        assert_eq!(webhook["security"], serde_json::json!([]));
        let headers: Vec<&str> = webhook["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert!(headers.contains(&"X-Service-Signature") && headers.contains(&"Idempotency-Key"), "{headers:?}");
        assert!(["webhook-id", "webhook-timestamp", "webhook-signature"].iter().all(|h| headers.contains(h)), "{headers:?}");
        // Raw uploads name a media type every generator handles.
        let upload = &doc["paths"]["/api/v1/data-sources/upload"]["post"]["requestBody"]["content"];
        assert_eq!(upload["application/octet-stream"]["schema"]["$ref"], "#/components/schemas/DataSourceUploadFile");
        assert_eq!(doc["info"]["license"]["identifier"], "Apache-2.0");
    }

    #[test]
    fn blank_and_nul_text_is_outside_the_document() {
        let g = crate::Gateway::new().unwrap();
        let name = &g.document()["components"]["schemas"]["AgentCreateVoice"]["properties"]["name"];
        assert_eq!(name["pattern"], super::NON_BLANK_PATTERN);
        let re = regex::Regex::new(super::NON_BLANK_PATTERN).unwrap();
        for ok in ["Desk", " a ", "\u{1c}", "\u{feff}"] {
            assert!(re.is_match(ok), "{ok:?}");
        }
        for refused in ["", "   ", "\u{a0}", "\t\n", "a\u{0}b", "\u{85}", "\u{2028}\u{3000}"] {
            assert!(!re.is_match(refused), "{refused:?}");
        }
    }
}
