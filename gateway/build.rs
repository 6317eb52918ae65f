//! Splits the schema files (gateway/openapi/schemas/) into one JSON text
//! per schema at build time, in the document's order, so an instance that
//! answers one request (an edge node) parses only the schemas it touches
//! and never scans the files. A name defined twice fails the build.

use std::collections::HashSet;
use std::fmt::Write;

/// The schema files, merged into `components.schemas` in this order.
const FILES: &[&str] = &["common", "webhooks", "messaging", "agents", "data-sources", "contacts", "voice", "campaigns", "console", "inbox", "stats", "settings"];

fn main() {
    let mut out = String::from("/// Every schema of the schema files, in the document's order: (name, JSON text).\npub(crate) const SCHEMA_TEXTS: &[(&str, &str)] = &[\n");
    let mut seen = HashSet::new();
    for file in FILES {
        let path = format!("openapi/schemas/{file}.json");
        println!("cargo:rerun-if-changed={path}");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        let serde_json::Value::Object(schemas) = parsed else { panic!("{path} is not an object") };
        for (name, schema) in schemas {
            assert!(seen.insert(name.clone()), "schema {name} is defined twice (again in {file}.json)");
            writeln!(out, "    ({name:?}, {:?}),", schema.to_string()).expect("writing to a String");
        }
    }
    out.push_str("];\n");
    let dest = std::path::Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("schema_texts.rs");
    std::fs::write(dest, out).expect("writing the schema index");
}
