//! Plugins (issue 18). `switchboard plugin template` writes a
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
    // Each interface's template is its embedded default (the sandbox AI for `ai`).
    for (interface, world) in [("messenger", "messenger-provider"), ("carrier", "carrier-provider"), ("ai", "ai-provider")] {
        let dir = template(&tmp.0, interface, &format!("acme-{interface}"));
        let (code, out, err) = plugin(&["check", dir.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        assert_eq!((out["ok"].clone(), out["interface"].clone(), out["world"].clone()), (json!(true), json!(interface), json!(world)));
        assert_eq!(out["name"], json!(format!("acme-{interface}")));
        assert_eq!(out["limits"], json!({"memoryMib": 64, "timeoutMs": 10000, "fuelMillions": 1000}));
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

// ---- serve --plugin-dir: loading, the per-business choice, the sandbox ----

/// The misbehaving messenger plugin (components/plugin-testbed).
const TESTBED: &str = env!("SWITCHBOARD_PLUGIN_TESTBED_WASM");

/// Writes a plugin folder `dir/name` with `wasm` and a manifest of `extra` TOML lines.
fn plugin_folder(dir: &Path, name: &str, wasm: &[u8], extra: &str) -> std::path::PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    let manifest = format!("name = \"{name}\"\nversion = \"1.0.0\"\ninterface = \"messenger\"\n{extra}\n");
    std::fs::write(folder.join("plugin.toml"), manifest).unwrap();
    std::fs::write(folder.join("plugin.wasm"), wasm).unwrap();
    folder
}

const TESTBED_SETTINGS: &str = "[settings.id-prefix]\n[settings.api-token]\nsecret = true\nrequired = true\n[settings.slow-ms]\n";

/// A business with a chatapp number and a key.
struct Biz {
    t: Tenant,
    number: String,
}

fn biz(dir: &Path, number: &str) -> Biz {
    let t = tenant(dir, "all");
    admin(dir, &["channel", "connect", "--business", &t.business, "--channel", "chatapp", "--phone-number-id", number]);
    Biz { t, number: number.into() }
}

fn send(s: &Server, b: &Biz, to: &str) -> String {
    let r = s.as_key(&b.t.key).fresh().post("/api/v1/messages", &json!({"businessId": b.t.business, "phoneNumberId": b.number, "to": to, "type": "text", "text": "hello"}));
    r.assert_ok(202)["messageId"].as_str().unwrap().to_string()
}

fn message(s: &Server, b: &Biz, id: &str) -> Value {
    s.as_key(&b.t.key).get(&format!("/api/v1/messages/{id}?businessId={}", b.t.business)).assert_ok(200).clone()
}

/// Polls until the message has `status` and its delivery task is done.
fn settled(s: &Server, b: &Biz, id: &str, status: &str) -> Value {
    poll(&format!("message {id} {status}"), || {
        let d = message(s, b, id);
        (d["status"] == status && d["taskStatus"] == "done").then_some(d)
    })
}

/// `admin provider use` of a messenger plugin: its answer, or its refusal.
fn choose(data: &Path, b: &Biz, plugin: &str, plugin_dir: &str, settings: &[&str]) -> Result<Value, String> {
    let mut args = vec!["provider", "use", "--business", &b.t.business, "--interface", "messenger", "--plugin", plugin, "--plugin-dir", plugin_dir];
    for s in settings {
        args.extend(["--setting", s]);
    }
    let out = Command::new(BIN).arg("admin").arg("--data-dir").arg(data).env("SWITCHBOARD_SETTINGS_KEY", SETTINGS_KEY).args(&args).output().unwrap();
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// `switchboard admin ARGS` that must fail: its stderr.
fn admin_refused(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(BIN).arg("admin").arg("--data-dir").arg(dir).args(args).output().unwrap();
    assert!(!out.status.success(), "admin {args:?} should fail: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn serve_loads_a_plugin_folder_and_each_business_chooses_its_adapter() {
    let data = DataDir::new();
    let plugins = data.0.join("plugins");
    let testbed = std::fs::read(TESTBED).unwrap();
    plugin_folder(&plugins, "acme", &testbed, TESTBED_SETTINGS);
    plugin_folder(&plugins, "broken", b"\0asm not a component", "");
    plugin_folder(&plugins, "greedy", &testbed, "[limits]\nmemory_mib = 4096");
    let log = data.0.join("server.log");
    let s = Server::start_logged(&data.0, &["--plugin-dir", plugins.to_str().unwrap()], &log);
    plugins_loaded(&log, 1);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(logged(&log, "plugin loaded", &[("name", "acme"), ("version", "1.0.0"), ("interface", "messenger")]), "{text}");
    let broken = log_event(&log, "plugin refused", |v| v["folder"].as_str().is_some_and(|f| f.ends_with("broken"))).unwrap_or_else(|| panic!("{text}"));
    assert!(broken["error"].as_str().unwrap().contains("not a WebAssembly component"), "{broken}");
    assert!(text.contains("greedy") && text.contains("`limits.memory_mib` must be 1 to 256"), "{text}");

    let a = biz(&data.0, "pn-plugin-a");
    let b = biz(&data.0, "pn-plugin-b");
    let dir = plugins.to_str().unwrap();
    // The choice is checked against the manifest.
    let err = choose(&data.0, &a, "acme", dir, &[]).unwrap_err();
    assert!(err.contains("requires the setting `api-token`"), "{err}");
    let err = choose(&data.0, &a, "acme", dir, &["api-token=x", "colour=blue"]).unwrap_err();
    assert!(err.contains("declares no such setting") && err.contains("api-token"), "{err}");
    let err = admin_refused(&data.0, &["provider", "use", "--business", &a.t.business, "--interface", "carrier", "--plugin", "acme", "--plugin-dir", dir]);
    assert!(err.contains("is a messenger plugin, not a carrier plugin"), "{err}");
    let err = choose(&data.0, &a, "nope", dir, &[]).unwrap_err();
    assert!(err.contains("nope"), "{err}");

    let secret = "tok-very-secret-4711";
    let chosen = choose(&data.0, &a, "acme", dir, &[&format!("api-token={secret}"), "id-prefix=acme-a"]).unwrap();
    assert_eq!(chosen["plugin"], "acme");
    assert_eq!(chosen["settings"], json!({"api-token": "(set)", "id-prefix": "acme-a"}));
    let shown = admin(&data.0, &["provider", "show", "--business", &a.t.business, "--plugin-dir", dir]);
    assert_eq!(shown["providers"][0]["settings"]["api-token"], "(set)");
    assert_eq!(shown["providers"][1]["adapter"], "sandbox", "the carrier stays the sandbox");
    assert!(!shown.to_string().contains(secret));

    // A's messages go through the plugin (with A's settings), B's through the sandbox.
    let ma = send(&s, &a, "+15550001234");
    let mb = send(&s, &b, "+15550001234");
    let da = settled(&s, &a, &ma, "read");
    assert_eq!(da["providerMessageId"], json!(format!("acme-a.{ma}")));
    let db = settled(&s, &b, &mb, "read");
    assert!(db["providerMessageId"].as_str().unwrap().starts_with("sbx."), "{db}");
    // Back to the sandbox: the next message of A.
    let reset = admin(&data.0, &["provider", "reset", "--business", &a.t.business, "--interface", "messenger"]);
    assert_eq!(reset["adapter"], "sandbox");
    let ma2 = send(&s, &a, "+15550001234");
    assert!(settled(&s, &a, &ma2, "read")["providerMessageId"].as_str().unwrap().starts_with("sbx."));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(secret), "a secret setting reached the log");
}

#[test]
fn a_runaway_plugin_costs_only_its_own_call() {
    let data = DataDir::new();
    let plugins = data.0.join("plugins");
    let testbed = std::fs::read(TESTBED).unwrap();
    // A tight loop burns its fuel; a plugin waiting on host calls (which
    // cost no fuel) hits its time limit.
    plugin_folder(&plugins, "slow", &testbed, &format!("{TESTBED_SETTINGS}[limits]\ntimeout_ms = 1500\nmemory_mib = 32"));
    let log = data.0.join("server.log");
    let s = Server::start_logged(&data.0, &["--plugin-dir", plugins.to_str().unwrap()], &log);
    plugins_loaded(&log, 1);
    let dir = plugins.to_str().unwrap();
    let a = biz(&data.0, "pn-runaway-a");
    let b = biz(&data.0, "pn-bystander-b");
    choose(&data.0, &a, "slow", dir, &["api-token=t", "slow-ms=60000"]).unwrap();

    let looping = send(&s, &a, "+15550009001");
    let bomb = send(&s, &a, "+15550009002");
    let trap = send(&s, &a, "+15550009003");
    let garbage = send(&s, &a, "+15550009004");
    let stray = send(&s, &a, "+15550009005");
    let waiting = send(&s, &a, "+15550009006");
    // Another business's traffic flows while A's plugin runs away.
    let bystanders: Vec<String> = (0..5).map(|i| send(&s, &b, &format!("+1555000120{i}"))).collect();
    for m in &bystanders {
        settled(&s, &b, m, "read");
    }

    let failure = |biz: &Biz, id: &str| {
        let d = settled(&s, biz, id, "failed");
        (d["failure"]["code"].as_str().unwrap().to_string(), d["failure"]["message"].as_str().unwrap().to_string())
    };
    let (code, why) = failure(&a, &looping);
    assert_eq!(code, "plugin_out_of_fuel", "{why}");
    assert!(why.contains("plugin:slow"), "{why}");
    let (code, why) = failure(&a, &waiting);
    assert_eq!(code, "plugin_timeout", "{why}");
    assert!(why.contains("1500 ms"), "{why}");
    let (code, why) = failure(&a, &bomb);
    assert_eq!(code, "plugin_memory_limit", "{why}");
    assert!(why.contains("32 MiB"), "{why}");
    let (code, why) = failure(&a, &garbage);
    assert_eq!(code, "plugin_bad_answer", "{why}");
    let (code, why) = failure(&a, &stray);
    assert_eq!(code, "host_refused");
    assert!(why.contains("not-in-the-manifest.example.com") && why.contains("allowed_hosts"), "{why}");
    // A trap may be transient: the message waits and its job is retried.
    let job = poll("the trapped message's retry", || {
        let row = sql(&data.0, &format!("SELECT attempts || '|' || IFNULL(last_error, '') FROM jobs WHERE lane = 'message:{trap}' AND state = 'pending'"));
        let (attempts, error) = row.trim().split_once('|')?;
        (attempts.parse::<u32>().ok()? >= 2).then(|| error.to_string())
    });
    assert!(job.contains("plugin_trapped"), "{job}");
    assert_eq!(message(&s, &a, &trap)["status"], "queued");
    // After all of it the plugin still answers the next call.
    let fine = send(&s, &a, "+15550001234");
    assert_eq!(settled(&s, &a, &fine, "read")["providerMessageId"], json!(format!("tb.{fine}")));
}

#[test]
fn sighup_reloads_plugins_and_calls_in_flight_finish_on_their_version() {
    let data = DataDir::new();
    let plugins = data.0.join("plugins");
    let folder = plugin_folder(&plugins, "acme", &std::fs::read(TESTBED).unwrap(), TESTBED_SETTINGS);
    let log = data.0.join("server.log");
    let s = Server::start_logged(&data.0, &["--plugin-dir", plugins.to_str().unwrap()], &log);
    plugins_loaded(&log, 1);
    let a = biz(&data.0, "pn-reload-a");
    choose(&data.0, &a, "acme", plugins.to_str().unwrap(), &["api-token=t", "slow-ms=2500"]).unwrap();
    let hup = || assert!(Command::new("kill").args(["-HUP", &s.child.id().to_string()]).status().unwrap().success());

    // A call is in flight in version 1 (2.5 s of work) when version 2 (the
    // sandbox adapter, from a template) replaces it.
    let in_flight = send(&s, &a, "+15550009006");
    poll("the slow call to start", || (sql(&data.0, &format!("SELECT state FROM jobs WHERE lane = 'message:{in_flight}'")).trim() == "leased").then_some(()));
    let v2 = data.0.join("v2");
    let out = Command::new(BIN).args(["plugin", "template", "--interface", "messenger", "--name", "acme", "--out", v2.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success());
    std::fs::copy(v2.join("plugin.wasm"), folder.join("plugin.wasm")).unwrap();
    std::fs::write(folder.join("plugin.toml"), format!("name = \"acme\"\nversion = \"2.0.0\"\ninterface = \"messenger\"\n{TESTBED_SETTINGS}")).unwrap();
    hup();
    assert!(logged(&log, "plugin loaded", &[("name", "acme"), ("version", "2.0.0")]), "{}", std::fs::read_to_string(&log).unwrap());
    assert_eq!(message(&s, &a, &in_flight)["status"], "queued", "the slow call is still running");
    // It finishes on version 1; the next message goes to version 2.
    assert_eq!(settled(&s, &a, &in_flight, "read")["providerMessageId"], json!(format!("tb.{in_flight}")));
    let after = send(&s, &a, "+15550001234");
    assert!(settled(&s, &a, &after, "read")["providerMessageId"].as_str().unwrap().starts_with("sbx."));

    // A broken update is refused and the working version stays; a new
    // folder loads.
    std::fs::write(folder.join("plugin.wasm"), b"\0asm broken").unwrap();
    plugin_folder(&plugins, "other", &std::fs::read(TESTBED).unwrap(), "");
    hup();
    plugins_loaded(&log, 2);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(logged(&log, "plugin kept: the folder's new contents were refused", &[("name", "acme"), ("version", "2.0.0")]), "{text}");
    assert!(logged(&log, "plugin loaded", &[("name", "other")]), "{text}");
    let still = send(&s, &a, "+15550001234");
    assert!(settled(&s, &a, &still, "read")["providerMessageId"].as_str().unwrap().starts_with("sbx."));
}

// ---- The plugin kit: kit/wit and kit/template ----

/// Copies `from` into `to`, leaving out build output.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == "target" || name == "dist" {
            continue;
        }
        let path = e.path();
        if path.is_dir() {
            copy_tree(&path, &to.join(&name));
        } else {
            std::fs::copy(&path, to.join(&name)).unwrap();
        }
    }
}

#[test]
fn the_kit_template_builds_with_one_command_into_a_plugin_that_serves_a_business() {
    let data = DataDir::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    // A newcomer copies the kit (the WIT package and the template) anywhere.
    let kit = data.0.join("kit");
    copy_tree(&repo.join("kit"), &kit);
    let rx = Receiver::start();
    let manifest = kit.join("template/plugin.toml");
    let text = std::fs::read_to_string(&manifest).unwrap().replace("allowed_hosts = []", &format!("allowed_hosts = [\"localhost:{}\"]", rx.port));
    std::fs::write(&manifest, text).unwrap();
    let out = Command::new(kit.join("template/build.sh")).env("CARGO_TARGET_DIR", repo.join("target/kit-template")).env("SWITCHBOARD", BIN).output().unwrap();
    assert!(out.status.success(), "build.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    let checked: Value = serde_json::from_slice(out.stdout.split(|b| *b == b'\n').rfind(|l| l.starts_with(b"{")).unwrap()).unwrap();
    assert_eq!((checked["ok"].clone(), checked["name"].clone()), (json!(true), json!("my-plugin")));

    let dist = kit.join("template/dist");
    let log = data.0.join("server.log");
    let s = Server::start_logged(&data.0, &["--plugin-dir", dist.to_str().unwrap()], &log);
    plugins_loaded(&log, 1);
    assert!(logged(&log, "plugin loaded", &[("name", "my-plugin")]));
    let a = biz(&data.0, "pn-kit-a");
    let endpoint = format!("endpoint=http://localhost:{}/send", rx.port);
    choose(&data.0, &a, "my-plugin", dist.to_str().unwrap(), &[&endpoint, "api-token=kit-token-1"]).unwrap();
    let m = send(&s, &a, "+15550001234");
    assert_eq!(settled(&s, &a, &m, "read")["providerMessageId"], json!(format!("my.{m}")));
    let got = rx.wait_for(1);
    assert_eq!(got[0].header("authorization"), "Bearer kit-token-1");
    assert_eq!(got[0].json()["id"], json!(m));
}

#[test]
fn a_business_chooses_a_carrier_plugin_and_its_calls_wait_until_it_is_loaded() {
    let data = DataDir::new();
    // The plugin is written where the admin command checks it, but the
    // server's folder does not have it yet.
    let staged = data.0.join("staged");
    let plugins = data.0.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let out = Command::new(BIN).args(["plugin", "template", "--interface", "carrier", "--name", "acme-voice", "--out", staged.join("acme-voice").to_str().unwrap()]).output().unwrap();
    assert!(out.status.success());
    let log = data.0.join("server.log");
    let s = Server::start_logged(&data.0, &["--plugin-dir", plugins.to_str().unwrap(), "--carrier-setting", "step-delay-ms=5"], &log);
    plugins_loaded(&log, 0);
    let caller = |name: &str| {
        let t = tenant(&data.0, "all");
        admin(&data.0, &["voice", "configure", "--business", &t.business, "--lines", "1"]);
        admin(&data.0, &["credits", "add", "--business", &t.business, "--microcredits", "5000000"]);
        let agent = s
            .as_key(&t.key)
            .fresh()
            .post("/api/v1/agents", &json!({"businessId": t.business, "channel": "voice", "name": name, "instructions": "Confirm the appointment.", "voiceSettings": {"firstGreeting": "Hello."}}));
        let agent = agent.assert_ok(201)["agent"]["id"].as_str().unwrap().to_string();
        (t, agent)
    };
    let (a, agent_a) = caller("A");
    let (b, agent_b) = caller("B");
    let out = Command::new(BIN)
        .args([
            "admin",
            "--data-dir",
            data.0.to_str().unwrap(),
            "provider",
            "use",
            "--business",
            &a.business,
            "--interface",
            "carrier",
            "--plugin",
            "acme-voice",
            "--plugin-dir",
            staged.to_str().unwrap(),
            "--setting",
            "step-delay-ms=5",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let call = |t: &Tenant, agent: &str| {
        let r = s.as_key(&t.key).fresh().post("/api/v1/voice/calls", &json!({"businessId": t.business, "agentId": agent, "toNumber": "+15550001234"}));
        r.assert_ok(202)["callId"].as_str().unwrap().to_string()
    };
    let status = |t: &Tenant, id: &str| s.as_key(&t.key).get(&format!("/api/v1/voice/calls/{id}?businessId={}", t.business)).assert_ok(200)["call"]["status"].as_str().unwrap().to_string();
    let ca = call(&a, &agent_a);
    let cb = call(&b, &agent_b);
    // A's call waits for its plugin (placements are retried 1 s, 2 s, 4 s
    // apart); B's (the embedded carrier) runs.
    let text = log_containing(&log, "failed (plugin_not_loaded); retrying");
    assert!(text.contains("failed (plugin_not_loaded); retrying"), "{text}");
    assert_eq!(status(&a, &ca), "queued");
    // Loaded on SIGHUP, the plugin places A's call.
    copy_tree(&staged.join("acme-voice"), &plugins.join("acme-voice"));
    assert!(Command::new("kill").args(["-HUP", &s.child.id().to_string()]).status().unwrap().success());
    assert!(logged(&log, "plugin loaded", &[("name", "acme-voice")]));
    poll("B's call to complete", || (status(&b, &cb) == "completed").then_some(()));
    poll("A's call to complete through the plugin", || (status(&a, &ca) == "completed").then_some(()));
}

/// The AI plugin of the tests (components/plugin-ai-testbed).
const AI_TESTBED: &str = env!("SWITCHBOARD_PLUGIN_AI_TESTBED_WASM");

#[test]
fn a_business_chooses_an_ai_plugin_for_its_agents_replies() {
    let data = DataDir::new();
    let plugins = data.0.join("plugins");
    let folder = plugins.join("acme-ai");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(AI_TESTBED, folder.join("plugin.wasm")).unwrap();
    std::fs::write(folder.join("plugin.toml"), "name = \"acme-ai\"\nversion = \"1.0.0\"\ninterface = \"ai\"\n[settings.persona]\nrequired = true\n").unwrap();
    let (code, checked, err) = plugin(&["check", folder.to_str().unwrap()]);
    assert_eq!((code, checked["world"].clone()), (0, json!("ai-provider")), "{err}");

    let log = data.0.join("server.log");
    let s = Server::start_logged(&data.0, &["--plugin-dir", plugins.to_str().unwrap()], &log);
    plugins_loaded(&log, 1);
    let replier = |number: &str| {
        let b = biz(&data.0, number);
        let agent = s.as_key(&b.t.key).fresh().post("/api/v1/agents", &json!({"businessId": b.t.business, "channel": "chatapp", "name": "Desk", "instructions": "Help."}));
        let agent = agent.assert_ok(201)["agent"]["id"].as_str().unwrap().to_string();
        let body = json!({"businessId": b.t.business, "channel": "chatapp", "phoneNumberId": number, "aiAgentId": agent, "autoReplyEnabled": true, "humanHandoffActive": false});
        s.as_key(&b.t.key).patch("/api/v1/channels/assignments", &body).assert_ok(200);
        b
    };
    let a = replier("pn-ai-a");
    let b = replier("pn-ai-b");
    let out = Command::new(BIN)
        .args([
            "admin",
            "--data-dir",
            data.0.to_str().unwrap(),
            "provider",
            "use",
            "--business",
            &a.t.business,
            "--interface",
            "ai",
            "--plugin",
            "acme-ai",
            "--plugin-dir",
            plugins.to_str().unwrap(),
            "--setting",
            "persona=Acme bot",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reply_to = |b: &Biz, text: &str| {
        admin(&data.0, &["sandbox", "inbound", "--phone-number-id", &b.number, "--from", "+15550004242", "--text", text]);
        poll("the agent's reply", || {
            let r = sql(&data.0, &format!("SELECT text FROM messages WHERE business_id = '{}' AND direction = 'outbound' ORDER BY created_at DESC, id DESC LIMIT 1", b.t.business));
            (!r.trim().is_empty()).then(|| r.trim().to_string())
        })
    };
    // A's agent answers through the plugin, with A's setting; B's through the server's AI.
    assert_eq!(reply_to(&a, "When do you open?"), "Acme bot: you said \"When do you open?\"");
    assert_eq!(reply_to(&b, "When do you open?"), "Thanks for your message: \"When do you open?\". An agent will follow up.");
}
