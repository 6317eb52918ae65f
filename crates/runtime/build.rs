//! Builds the guest components for wasm32-wasip2 and embeds them, so `cargo
//! build` / `cargo test` is the only build step (the storage crate embeds
//! the SQL migrations). The folder of the built .wasm files and the names of
//! the test components go to the crates that depend on this one as `links`
//! metadata (host/build.rs hands them to the API tests).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Components embedded in the binary (cargo package `switchboard-<name>`),
/// besides every provider interface's default adapter, which is found by
/// its folder's name: `components/sandbox-<interface>` (see [`sandboxes`]).
const COMPONENTS: &[&str] = &["contacts", "dispatcher", "agents", "data-sources", "webhooks", "messaging", "voice", "campaigns"];
/// Built alongside but never embedded: the misbehaving component of the
/// fault tests, the test plugins, the cloud-messenger plugin and the two
/// halves of the edge build (composed by the tests with `wac plug`), whose
/// paths reach the tests as `SWITCHBOARD_<NAME>_WASM`.
const TEST_COMPONENTS: &[&str] = &["testbed", "plugin-testbed", "plugin-ai-testbed", "cloud-messenger", "twilio-carrier", "edge", "edge-store"];

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../..").canonicalize().expect("the repository root");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    build_components(&root, &out);
}

fn build_components(root: &Path, out: &Path) {
    let guests = root.join("components");
    let wit = root.join("wit");
    // The provider package (wit/deps/provider links to it).
    let kit = root.join("kit/wit");
    // The gateway crate is linked by the edge build.
    let gateway = root.join("gateway");
    for p in [&guests, &wit, &kit, &gateway] {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    // Cargo only watches the listed paths shallowly for directories, so list
    // every source file of the guests too.
    for dir in [&guests, &wit, &kit, &gateway] {
        watch(dir);
    }
    let embedded: Vec<String> = COMPONENTS.iter().map(|c| c.to_string()).chain(sandboxes(&guests)).collect();
    let target_dir = out.join("guest-target");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.arg("build").arg("--release").arg("--target").arg("wasm32-wasip2").arg("--manifest-path").arg(guests.join("Cargo.toml")).arg("--target-dir").arg(&target_dir);
    for pkg in embedded.iter().map(String::as_str).chain(TEST_COMPONENTS.iter().copied()) {
        cmd.arg("-p").arg(format!("switchboard-{pkg}"));
    }
    // The outer cargo's build-script variables confuse the inner build.
    for (k, _) in env::vars() {
        if k.starts_with("CARGO_CFG_")
            || k.starts_with("CARGO_FEATURE_")
            || k.starts_with("CARGO_ENCODED_RUSTFLAGS")
            || k.starts_with("CARGO_MAKEFLAGS")
            || matches!(
                k.as_str(),
                "RUSTFLAGS" | "TARGET" | "HOST" | "PROFILE" | "OPT_LEVEL" | "DEBUG" | "RUSTC_LINKER" | "RUSTC_WRAPPER" | "RUSTC_WORKSPACE_WRAPPER" | "NUM_JOBS" | "OUT_DIR" | "CARGO_TARGET_DIR"
            )
        {
            cmd.env_remove(&k);
        }
    }
    let status = cmd.status().expect("run cargo for the guest components");
    if !status.success() {
        panic!("building the guest components failed (is the wasm32-wasip2 target installed? `rustup target add wasm32-wasip2`)");
    }
    let wasm_of = |pkg: &str| {
        let wasm = target_dir.join("wasm32-wasip2/release").join(format!("switchboard_{}.wasm", pkg.replace('-', "_")));
        assert!(wasm.exists(), "missing {}", wasm.display());
        wasm
    };
    for pkg in TEST_COMPONENTS {
        wasm_of(pkg);
    }
    println!("cargo:guest_dir={}", target_dir.join("wasm32-wasip2/release").display());
    println!("cargo:test_components={}", TEST_COMPONENTS.join(","));
    let mut code = String::from("/// (component name, wasm bytes) embedded at build time.\npub static COMPONENTS: &[(&str, &[u8])] = &[\n");
    for pkg in &embedded {
        let wasm = wasm_of(pkg);
        code.push_str(&format!("    ({pkg:?}, include_bytes!({:?})),\n", wasm.display().to_string()));
    }
    code.push_str("];\n");
    fs::write(out.join("components.rs"), code).unwrap();
}

/// The provider interfaces' default adapters: every `components/sandbox-*`
/// folder with a manifest (a workspace member by the same pattern), so a new
/// provider's sandbox is embedded without a line here.
fn sandboxes(guests: &Path) -> Vec<String> {
    let mut found: Vec<String> = fs::read_dir(guests)
        .expect("the components folder")
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .filter_map(|e| e.file_name().to_str().filter(|n| n.starts_with("sandbox-")).map(String::from))
        .collect();
    found.sort();
    found
}

fn watch(dir: &Path) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name();
        if name == "target" || name.to_string_lossy().starts_with('.') {
            continue;
        }
        if p.is_dir() {
            watch(&p);
        } else {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
}
