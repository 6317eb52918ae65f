//! Secret plugin settings at rest (issue 40): sealed under
//! `SWITCHBOARD_SETTINGS_KEY` in the database, opened only for a call into
//! the plugin, never shown back; refused without the key; rotated with
//! `admin provider reseal`.

use crate::harness::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};

const TESTBED: &str = env!("SWITCHBOARD_PLUGIN_TESTBED_WASM");
/// The testbed prefixes its provider message ids with `id-prefix`: made
/// secret here, the id proves the plugin got the opened value.
const MANIFEST: &str = "name = \"vault\"\nversion = \"1.0.0\"\ninterface = \"messenger\"\n\
    [settings.id-prefix]\nsecret = true\n[settings.api-token]\nsecret = true\nrequired = true\n";
const TOKEN: &str = "tok-at-rest-90817263";
const PREFIX: &str = "pfx-sealed-5521";
const NEW_KEY: &str = "a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0";

fn plugin_dir(data: &Path) -> String {
    let folder = data.join("plugins").join("vault");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("plugin.toml"), MANIFEST).unwrap();
    std::fs::write(folder.join("plugin.wasm"), std::fs::read(TESTBED).unwrap()).unwrap();
    data.join("plugins").to_str().unwrap().to_string()
}

/// `admin ARGS` with the given settings keys (none: no key at all).
fn admin_keyed(data: &Path, current: Option<&str>, previous: Option<&str>, args: &[&str]) -> std::process::Output {
    let mut c = Command::new(BIN);
    c.arg("admin").arg("--data-dir").arg(data).args(args).env_remove("SWITCHBOARD_SETTINGS_KEY").env_remove("SWITCHBOARD_SETTINGS_KEY_PREVIOUS");
    if let Some(k) = current {
        c.env("SWITCHBOARD_SETTINGS_KEY", k);
    }
    if let Some(k) = previous {
        c.env("SWITCHBOARD_SETTINGS_KEY_PREVIOUS", k);
    }
    c.output().unwrap()
}

fn choose_args<'a>(business: &'a str, dir: &'a str) -> Vec<&'a str> {
    let token = Box::leak(format!("api-token={TOKEN}").into_boxed_str());
    let prefix = Box::leak(format!("id-prefix={PREFIX}").into_boxed_str());
    vec!["provider", "use", "--business", business, "--interface", "messenger", "--plugin", "vault", "--plugin-dir", dir, "--setting", token, "--setting", prefix]
}

/// A business with a chatapp number; sends one message and returns its id.
fn send(s: &Server, t: &Tenant) -> String {
    let r = s.as_key(&t.key).fresh().post("/api/v1/messages", &json!({"businessId": t.business, "phoneNumberId": "pn-vault", "to": "+15550001234", "type": "text", "text": "hello"}));
    r.assert_ok(202)["messageId"].as_str().unwrap().to_string()
}

fn delivered(s: &Server, t: &Tenant, id: &str) -> Value {
    poll(&format!("message {id} read"), || {
        let d = s.as_key(&t.key).get(&format!("/api/v1/messages/{id}?businessId={}", t.business)).assert_ok(200).clone();
        (d["status"] == "read" && d["taskStatus"] == "done").then_some(d)
    })
}

/// Every byte of the data dir (database, WAL, logs).
fn data_dir_holds(dir: &Path, needle: &[u8]) -> bool {
    std::fs::read_dir(dir).unwrap().flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            return data_dir_holds(&p, needle);
        }
        std::fs::read(&p).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
    })
}

#[test]
fn secret_settings_are_sealed_at_rest_opened_for_calls_and_never_shown() {
    let data = DataDir::new();
    let dir = plugin_dir(&data.0);
    let log = data.0.join("server.log");
    let s = Server::start_logged(&data.0, &["--plugin-dir", &dir], &log);
    plugins_loaded(&log, 1);
    let t = tenant(&data.0, "all");
    admin(&data.0, &["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", "pn-vault"]);

    let chosen = admin(&data.0, &choose_args(&t.business, &dir));
    assert_eq!(chosen["settings"], json!({"api-token": "(set)", "id-prefix": "(set)"}));
    let shown = admin(&data.0, &["provider", "show", "--business", &t.business, "--plugin-dir", &dir]);
    assert_eq!(shown["providers"][0]["settings"], json!({"api-token": "(set)", "id-prefix": "(set)"}));
    // Without the plugin folder nothing tells which settings are secret: the
    // sealed ones are still not shown.
    let bare = admin(&data.0, &["provider", "show", "--business", &t.business]);
    assert!(!bare.to_string().contains(TOKEN) && !bare.to_string().contains(PREFIX), "{bare}");

    // The plugin gets the opened values: its provider id carries the prefix.
    let id = send(&s, &t);
    let d = delivered(&s, &t, &id);
    assert_eq!(d["providerMessageId"], json!(format!("{PREFIX}.{id}")));
    assert!(!d.to_string().contains(TOKEN));

    // At rest: sealed values only, bound to a key id; the token is in no
    // file of the data dir (database, WAL, the server's log).
    let stored = sql(&data.0, "SELECT settings_json || ' ' || secret_settings_json FROM provider_choices");
    assert!(stored.contains("\"api-token\":\"v1:") && stored.contains("\"id-prefix\":\"v1:"), "{stored}");
    assert!(!stored.contains(TOKEN) && !stored.contains(PREFIX), "{stored}");
    assert!(!data_dir_holds(&data.0, TOKEN.as_bytes()), "the token is stored or logged in clear");
    assert!(!std::fs::read_to_string(&log).unwrap().contains(TOKEN));
}

#[test]
fn without_the_key_secrets_are_refused_and_sealed_ones_do_not_open_and_a_rotation_reseals() {
    let data = DataDir::new();
    let dir = plugin_dir(&data.0);
    let t = tenant(&data.0, "all");
    admin(&data.0, &["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", "pn-vault"]);

    // No key: refused before anything is written.
    let out = admin_keyed(&data.0, None, None, &choose_args(&t.business, &dir));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("SWITCHBOARD_SETTINGS_KEY") && err.contains("the setting `api-token` is secret"), "{err}");
    assert!(!err.contains(TOKEN));
    assert_eq!(sql(&data.0, "SELECT COUNT(*) FROM provider_choices").trim(), "0");
    // A malformed key stops the command with the variable's name.
    let out = admin_keyed(&data.0, Some("not-hex"), None, &["provider", "show", "--business", &t.business]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("SWITCHBOARD_SETTINGS_KEY: must be 64 hex digits"));

    // Sealed with the harness's key; a server without it cannot open them:
    // the plugin's calls fail (retried) with the reason in the log.
    admin(&data.0, &choose_args(&t.business, &dir));
    let log = data.0.join("keyless.log");
    let mut s = Server::start_logged(&data.0, &["--plugin-dir", &dir, NO_SETTINGS_KEY], &log);
    send(&s, &t);
    let text = log_containing(&log, "plugin settings of business");
    assert!(text.contains("do not open") && text.contains("SWITCHBOARD_SETTINGS_KEY"), "{text}");
    assert!(!text.contains(TOKEN));
    s.terminate();
    drop(s);

    // Rotation: the new key, the old one as previous; reseal rewrites the row.
    let before = sql(&data.0, "SELECT secret_settings_json FROM provider_choices");
    let out = admin_keyed(&data.0, Some(NEW_KEY), None, &["provider", "reseal"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("does not have"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = admin_keyed(&data.0, Some(NEW_KEY), Some(SETTINGS_KEY), &["provider", "reseal"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap()["resealed"], 1);
    let after = sql(&data.0, "SELECT secret_settings_json FROM provider_choices");
    assert_ne!(before, after);

    // A server with only the new key opens them.
    let mut command = Command::new(BIN);
    command.env("SWITCHBOARD_SETTINGS_KEY", NEW_KEY);
    let s = Server::spawn_command(command, &data.0, &["--plugin-dir", &dir, NO_SETTINGS_KEY], Stdio::null());
    let id = send(&s, &t);
    let d = delivered(&s, &t, &id);
    assert_eq!(d["providerMessageId"], json!(format!("{PREFIX}.{id}")));
}
