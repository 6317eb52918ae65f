//! Our JSON Schema validator (gateway/src/validate) beside the jsonschema
//! crate, on the document's own request schemas, in one run: each figure
//! is nanoseconds per body and the ratio jsonschema / ours (below 1 means
//! jsonschema is faster). jsonschema is compiled once over the whole
//! document; both report every violation (jsonschema's rendered as text,
//! as an answer would need them).

use serde_json::{json, Value};
use std::hint::black_box;
use std::time::Instant;
use switchboard_gateway::{openapi, validate::Validator};

const ROUNDS: u32 = 200_000;

fn per_body(mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..ROUNDS {
        f();
    }
    t.elapsed().as_nanos() as f64 / f64::from(ROUNDS)
}

fn main() {
    let ours = Validator::from_sources(openapi::schema_sources());
    ours.check_all(&[]).expect("the document's schemas");
    let document = json!({"components": {"schemas": ours.all_schemas()}});
    let id = "0190c0de-0000-7000-8000-000000000000";
    let cases: Vec<(&str, &str, Value)> = vec![
        ("a valid contact", "ContactCreate", json!({"businessId": id, "name": "Ada", "mobile": "+447700900123", "categoryIds": [id]})),
        ("an invalid contact", "ContactCreate", json!({"businessId": "nope", "name": "", "mobile": "0044", "categoryIds": [], "zz": 1})),
        ("an invalid agent (oneOf)", "AgentCreate", json!({"businessId": id, "name": "Support", "channel": "chatapp", "opening": "Hello"})),
    ];
    println!("{:28} {:>10} {:>12} {:>7}", "body", "ours ns", "jsonschema", "ratio");
    for (what, name, body) in &cases {
        let schema = ours.schema(name).expect("a request schema");
        let mut root = document.clone();
        root["$ref"] = json!(format!("#/components/schemas/{name}"));
        let theirs = jsonschema::options().should_validate_formats(true).build(&root).expect("jsonschema compiles the document");
        assert_eq!(ours.validate(schema, body).is_ok(), theirs.is_valid(body), "{what}: both agree");
        let a = per_body(|| {
            black_box(ours.validate(schema, black_box(body)).is_ok());
        });
        let b = per_body(|| {
            black_box(theirs.iter_errors(black_box(body)).map(|e| e.to_string()).collect::<Vec<_>>());
        });
        println!("{what:28} {a:>10.0} {b:>12.0} {:>7.2}", b / a);
    }
}
