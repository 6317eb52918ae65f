//! What the OpenAPI document says beside the schemas: the `links` from each
//! create to the operations that take the id it made (so a client, and the
//! fuzzer's stateful phase, follow real ids), and the rules JSON Schema
//! cannot state, listed per operation with their codes.

use crate::operations::{Created, Operation, OperationId, OPERATIONS};
use serde_json::{json, Map, Value};

/// A refusal the schema cannot express: a rule between a query parameter
/// and another, between two fields' values, or of the service's state.
pub struct Refusal {
    pub operation: OperationId,
    pub status: u16,
    pub code: &'static str,
    pub rule: &'static str,
}

/// Every refusal of a schema-valid request that is not a matter of what
/// exists (404) or of the business's state in general (409 conflicts the
/// component names). Each operation's description lists its own, 400s also
/// in its documented 400 response (`x-error-codes`); the fuzz hooks
/// (tests/fuzz/hooks.py) generate data that keeps these rules.
pub const REFUSALS: &[Refusal] = &[
    Refusal {
        operation: OperationId::GetChannelAssignment,
        status: 400,
        code: "phone_number_id_not_allowed",
        rule: "The query parameter `phoneNumberId` applies to `channel=chatapp` only; with another channel it is refused, not ignored.",
    },
    Refusal {
        operation: OperationId::ListContacts,
        status: 400,
        code: "cursor_sort_mismatch",
        rule: "A `cursor` continues the order it was made in: give it with the same `sort` as the page that answered it (query parameters have no rule across each other; the cursor names its order before its first `~`, none for `createdAt`).",
    },
    Refusal {
        operation: OperationId::ResolveCallContext,
        status: 400,
        code: "call_target_required",
        rule: "Exactly one of the query parameters `contactId` and `toNumber` (query parameters have no `oneOf`; the call start body states the same rule in its schema).",
    },
    Refusal {
        operation: OperationId::CreateCampaign,
        status: 400,
        code: "invalid_calling_window",
        rule: "`iteration.callingWindow.start` and `end` differ (a window past midnight, such as 22:00-06:00, is allowed; an empty one is refused, not read as \"any time\").",
    },
    Refusal {
        operation: OperationId::CreateIteration,
        status: 400,
        code: "invalid_calling_window",
        rule: "`callingWindow.start` and `end` differ (a window past midnight, such as 22:00-06:00, is allowed; an empty one is refused, not read as \"any time\").",
    },
    Refusal { operation: OperationId::UploadDataSourceAsset, status: 400, code: "empty_file", rule: "The file has at least one byte: a raw body is never empty (OpenAPI gives a binary body no length)." },
    Refusal {
        operation: OperationId::StartCall,
        status: 409,
        code: "test_variable_not_declared",
        rule: "Each `testVariables` key is an alias the agent declares: the agent's state decides, so the refusal is a conflict (409, category conflict).",
    },
    Refusal {
        operation: OperationId::SendAgentTestMessage,
        status: 409,
        code: "test_variable_not_declared",
        rule: "Each `testVariables` key is an alias the agent declares: the agent's state decides, so the refusal is a conflict (409, category conflict).",
    },
];

/// Adds each operation's refusals beyond the schema to its description,
/// as `x-rules-beyond-schema`, and the 400 ones as its documented 400
/// response with their codes in `x-error-codes`.
pub fn add_refusals(op: &Operation, o: &mut Value) {
    let mine: Vec<&Refusal> = REFUSALS.iter().filter(|r| r.operation == op.id).collect();
    if mine.is_empty() {
        return;
    }
    let text: Vec<String> = mine.iter().map(|r| format!("{} `{}`: {}", r.status, r.code, r.rule)).collect();
    let description = o["description"].as_str().unwrap_or_default().to_string();
    o["description"] = json!(format!("{description} Rules beyond the schema: {}", text.join(" ")));
    o["x-rules-beyond-schema"] = mine.iter().map(|r| json!({"status": r.status, "code": r.code, "rule": r.rule})).collect();
    let bad: Vec<&Refusal> = mine.into_iter().filter(|r| r.status == 400).collect();
    if !bad.is_empty() {
        o["responses"]["400"] = json!({
            "description": format!("Invalid request: a schema violation (`invalid_request`, with `error.details`), or a rule beyond the schema: {}", bad.iter().map(|r| format!("`{}`", r.code)).collect::<Vec<_>>().join(", ")),
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FailureEnvelope"}}},
            "x-error-codes": bad.iter().map(|r| r.code).collect::<Vec<_>>(),
        });
    }
}

/// The `links` of each create's success responses (the creates are the
/// table rows with `Rules::creates`): to every operation
/// (console-only ones aside) that takes the created id as a path or query
/// parameter of that name, or as a body field of that name in every shape
/// of its body (a field of only some shapes would make the others invalid).
pub fn add_links(paths: &mut Map<String, Value>, schemas: &Map<String, Value>) {
    for src in OPERATIONS {
        let Some(Created { pointer, name }) = src.rules.creates else { continue };
        let expr = format!("$response.body#{pointer}");
        let mut links = Map::new();
        for target in OPERATIONS.iter().filter(|t| t.id != src.id && !t.session_only()) {
            if let Some(link) = link_to(target, name, &expr, schemas) {
                links.insert(target.id.to_string(), link);
            }
        }
        if links.is_empty() {
            continue;
        }
        let responses = &mut paths[src.path][src.method.as_str().to_ascii_lowercase()]["responses"];
        for status in src.success_status {
            responses[status.to_string()]["links"] = Value::Object(links.clone());
        }
    }
}

fn link_to(target: &Operation, name: &str, expr: &str, schemas: &Map<String, Value>) -> Option<Value> {
    let description = format!("The created id as `{name}` of {}.", target.id);
    if target.path.contains(&format!("{{{name}}}")) {
        return Some(json!({"operationId": target.id.as_str(), "parameters": {format!("path.{name}"): expr}, "description": description}));
    }
    if target.query.iter().any(|q| q.name == name) && target.raw_body().is_none() {
        return Some(json!({"operationId": target.id.as_str(), "parameters": {format!("query.{name}"): expr}, "description": description}));
    }
    // A raw upload's body is bytes: a JSON field cannot be merged into it.
    let body = schemas.get(target.request?)?;
    (target.raw_body().is_none() && in_every_shape(body, name, schemas)).then(|| json!({"operationId": target.id.as_str(), "requestBody": {name: expr}, "description": description}))
}

fn in_every_shape(schema: &Value, name: &str, schemas: &Map<String, Value>) -> bool {
    let resolve = |s: &Value| -> Option<Value> {
        match s.get("$ref").and_then(Value::as_str) {
            Some(r) => schemas.get(r.strip_prefix("#/components/schemas/")?).cloned(),
            None => Some(s.clone()),
        }
    };
    let Some(s) = resolve(schema) else { return false };
    match s.get("oneOf").and_then(Value::as_array) {
        Some(branches) => !branches.is_empty() && branches.iter().all(|b| in_every_shape(b, name, schemas)),
        None => s.get("properties").and_then(|p| p.get(name)).is_some(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn creates_link_to_the_operations_that_take_their_ids() {
        let g = crate::Gateway::new().unwrap();
        let doc = g.document();
        let links = |path: &str, method: &str, status: &str| doc["paths"][path][method]["responses"][status]["links"].clone();
        let contact = links("/api/v1/contacts", "post", "201");
        assert_eq!(contact["getContact"]["parameters"]["path.contactId"], "$response.body#/data/contact/id");
        assert_eq!(contact["resolveCallContext"]["parameters"]["query.contactId"], "$response.body#/data/contact/id");
        // contactId is in one shape of the call start body only.
        assert!(contact.get("startCall").is_none());
        let agent = links("/api/v1/agents", "post", "201");
        assert_eq!(agent["updateAgent"]["requestBody"]["agentId"], "$response.body#/data/agent/id");
        assert_eq!(agent["startCall"]["requestBody"]["agentId"], "$response.body#/data/agent/id");
        assert!(agent.get("getAgentTest").is_none(), "console-only operations are not linked");
        let campaign = links("/api/v1/campaigns", "post", "201");
        assert!(campaign.get("getCampaign").is_some() && campaign.get("createIteration").is_some());
        // Both success statuses of a create that may reuse a record.
        assert!(links("/api/v1/contacts/categories", "post", "200").get("deleteCategory").is_some());
        assert!(links("/api/v1/voice/calls", "post", "202").get("cancelCall").is_some());
    }

    #[test]
    fn rules_beyond_the_schema_are_documented_per_operation() {
        let g = crate::Gateway::new().unwrap();
        let doc = g.document();
        for r in super::REFUSALS {
            let op = doc["paths"]
                .as_object()
                .unwrap()
                .values()
                .flat_map(|p| p.as_object().unwrap().values())
                .find(|o| o["operationId"] == r.operation.as_str())
                .unwrap_or_else(|| panic!("{}", r.operation));
            assert!(op["description"].as_str().unwrap().contains(r.code), "{}", r.operation);
            if r.status == 400 {
                assert!(op["responses"]["400"]["x-error-codes"].as_array().unwrap().iter().any(|c| c == r.code), "{}", r.operation);
            }
        }
    }
}
