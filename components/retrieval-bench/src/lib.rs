//! Grounded retrieval alone, for `bench/retrieval.sh`: `handle` runs one
//! retrieval of the agent runtime (`grounding::retrieval`) exactly as a turn
//! runs it, chosen by the `kind` query parameter, against whatever database
//! the host hands it. The bench (`crates/runtime/src/engine/retrieval_bench.rs`)
//! loads this component in place of an area and times each call.
//!
//! `kind`: `words`, `meaning`, `fused` (`message`; the embedded message as a
//! JSON array of floats in the body), `lookup` (`source`, `field`, `value`),
//! or `baseline` (one agent row read by its primary key). The answer names
//! what was found, so the bench checks that every build finds the same.

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

use serde_json::json;
use switchboard_agent_runtime::grounding::{retrieval, Passage};
use switchboard_guest::db;
use switchboard_guest::req::query;
use switchboard_guest::{fail, ok, params, Failure, Request, Success};

fn ids(found: Vec<Passage>) -> serde_json::Value {
    json!({ "passages": found.iter().map(|p| p.id).collect::<Vec<_>>() })
}

pub fn handle(req: Request) -> Result<Success, Failure> {
    let biz = req.business_id.as_str();
    let arg = |name: &str| query(&req, name).unwrap_or_default();
    let agent = arg("agent");
    let vector = || -> Result<Vec<f32>, Failure> { serde_json::from_str(req.body.as_deref().unwrap_or("[]")).map_err(|e| fail::internal("bad_vector", e.to_string())) };
    match arg("kind") {
        "baseline" => {
            let name = db::query_one_as::<String>("SELECT name FROM agents WHERE id = ?1 AND business_id = ?2", &params![agent, biz])?;
            ok(&json!({ "name": name }))
        }
        "words" => ok(&ids(retrieval::by_words(biz, agent, arg("message"))?)),
        "meaning" => ok(&ids(retrieval::by_meaning(biz, agent, &vector()?)?)),
        "fused" => ok(&ids(retrieval::fused(biz, agent, arg("message"), &vector()?)?)),
        "lookup" => ok(&json!({ "rows": retrieval::lookup(biz, agent, arg("source"), arg("field"), arg("value"))? })),
        other => Err(fail::internal("bad_kind", format!("no retrieval kind {other:?}"))),
    }
}

switchboard_guest::area_component!(handle);
