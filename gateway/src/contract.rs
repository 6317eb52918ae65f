//! Operation 1, the public automation contract: static, so the host and the edge answer
//! it from the OpenAPI document without entering a component.

use crate::errors::success_envelope;
use crate::openapi::CONTRACT_VERSION;
use crate::{Gateway, Operation};
use switchboard_operation_ids::gateway::Operation as Own;

impl Gateway {
    /// The success envelope of an operation the request path answers
    /// itself (the `gateway` area of `components/operation-ids`), in the
    /// host and at the edge alike; None for one a component answers.
    pub fn own_answer(&self, op: &Operation, request_id: &str) -> Option<String> {
        let own = Own::try_from(op.id).ok()?;
        let data = match own {
            Own::GetAutomationContract => contract_json(self),
        };
        Some(success_envelope(&data, request_id))
    }
}

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
