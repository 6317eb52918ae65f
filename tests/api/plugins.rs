//! Plugins, first part (issue 18): `switchboard plugin template` writes a
//! plugin folder that loads, and `switchboard plugin check` accepts it and
//! refuses, with a reason naming the field or file, what would not load.

use crate::harness::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// Runs `switchboard plugin ARGS…`: (exit code, stdout JSON or Null, stderr).
fn plugin(args: &[&str]) -> (i32, Value, String) {
    let out = Command::new(BIN).arg("plugin").args(args).output().unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), json, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn template(dir: &Path, interface: &str, name: &str) -> std::path::PathBuf {
    let out = dir.join(name);
    let (code, made, err) = plugin(&["template", "--interface", interface, "--name", name, "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(made["files"], json!(["plugin.toml", "plugin.wasm"]));
    out
}

fn refused(dir: &Path, needle: &str) {
    let (code, out, err) = plugin(&["check", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "expected a refusal naming {needle:?}; got {out}");
    assert!(err.contains(needle), "the refusal should name {needle:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

fn edit(dir: &Path, from: &str, to: &str) {
    let path = dir.join("plugin.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{from:?} not in {text}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn a_template_plugin_checks_for_its_interface() {
    let tmp = DataDir::new();
    for (interface, world) in [("messenger", "messenger-provider"), ("carrier", "carrier-provider")] {
        let dir = template(&tmp.0, interface, &format!("acme-{interface}"));
        let (code, out, err) = plugin(&["check", dir.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        assert_eq!((out["ok"].clone(), out["interface"].clone(), out["world"].clone()), (json!(true), json!(interface), json!(world)));
        assert_eq!(out["name"], json!(format!("acme-{interface}")));
        assert_eq!(out["limits"], json!({"memoryMib": 64, "timeoutMs": 10000}));
        assert!(out["componentBytes"].as_u64().unwrap() > 1000);
    }
    // A template never overwrites a folder with something in it.
    let (code, _, err) = plugin(&["template", "--interface", "messenger", "--out", tmp.0.join("acme-messenger").to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("not empty"), "{err}");
    let (code, _, err) = plugin(&["template", "--interface", "messenger", "--name", "Bad Name", "--out", tmp.0.join("x").to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("`name`"), "{err}");
}

#[test]
fn what_would_not_load_is_refused_with_its_reason() {
    let tmp = DataDir::new();
    // A carrier adapter presented as a messenger implements another world.
    let dir = template(&tmp.0, "carrier", "wrong-world");
    edit(&dir, "interface = \"carrier\"", "interface = \"messenger\"");
    refused(&dir, "does not implement world `messenger-provider`");

    let dir = template(&tmp.0, "messenger", "bad-manifest");
    let good = std::fs::read_to_string(dir.join("plugin.toml")).unwrap();
    let cases: &[(&str, &str, &str)] = &[
        ("version = \"0.1.0\"", "version = \"one\"", "`version`"),
        ("interface = \"messenger\"", "interface = \"fax\"", "interface"),
        ("allowed_hosts = []", "allowed_hosts = [\"https://api.example.com/v1\"]", "`allowed_hosts`"),
        ("allowed_hosts = []", "allowed_hosts = [\"a1.example.com\", \"a2.example.com\", \"a3.example.com\", \"a4.example.com\", \"a5.example.com\", \"a6.example.com\", \"a7.example.com\", \"a8.example.com\", \"a9.example.com\"]", "at most 8"),
        ("allowed_hosts = []", "allowed_hosts = [\"10.0.0.1\"]", "`allowed_hosts`"),
        ("memory_mib = 64", "memory_mib = 4096", "`limits.memory_mib`"),
        ("timeout_ms = 10000", "timeout_ms = 0", "`limits.timeout_ms`"),
        ("version = \"0.1.0\"", "version = \"0.1.0\"\nfilesystem = true", "unknown field `filesystem`"),
        ("version = \"0.1.0\"", "version = \"0.1.0", "plugin.toml"),
    ];
    for (from, to, needle) in cases {
        std::fs::write(dir.join("plugin.toml"), &good).unwrap();
        edit(&dir, from, to);
        refused(&dir, needle);
    }
    std::fs::write(dir.join("plugin.toml"), &good).unwrap();
    std::fs::write(dir.join("plugin.wasm"), b"\0asm not really").unwrap();
    refused(&dir, "not a WebAssembly component");
    std::fs::remove_file(dir.join("plugin.wasm")).unwrap();
    refused(&dir, "plugin.wasm");
    refused(&tmp.0.join("no-such-plugin"), "plugin.toml");
}
