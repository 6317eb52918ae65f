//! Operation 1, the public automation contract: static, so the host and the edge answer
//! it from the OpenAPI document without entering a component.

use crate::openapi::CONTRACT_VERSION;
use crate::Gateway;

pub fn contract_json(gateway: &Gateway) -> String {
    let events = gateway.document()["components"]["schemas"]["EventType"]["enum"].clone();
    serde_json::json!({
        "contractVersion": CONTRACT_VERSION,
        "eventTypes": events,
        "signatureAlgorithm": "hmac-sha256",
        "signatureHeaders": {
            "timestamp": "X-Service-Timestamp",
            "signature": "X-Service-Signature",
            "eventId": "X-Service-Event-Id",
            "contractVersion": "X-Service-Contract-Version"
        }
    })
    .to_string()
}
