//! Hands the API tests (tests/api) the paths of the test components the
//! runtime crate built beside the embedded ones, as `SWITCHBOARD_<NAME>_WASM`
//! (crates/runtime/build.rs builds them; its `links` metadata says where).

use std::env;

fn main() {
    let dir = env::var("DEP_SWITCHBOARD_COMPONENTS_GUEST_DIR").expect("the runtime crate's build script names the guest folder");
    let names = env::var("DEP_SWITCHBOARD_COMPONENTS_TEST_COMPONENTS").unwrap_or_default();
    for pkg in names.split(',').filter(|n| !n.is_empty()) {
        println!("cargo:rustc-env=SWITCHBOARD_{}_WASM={dir}/switchboard_{}.wasm", pkg.to_uppercase().replace('-', "_"), pkg.replace('-', "_"));
    }
}
