//! Embeds the SQL migrations (migrations/*.sql at the repository root), in
//! file-name order, as `MIGRATIONS`.

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../..").canonicalize().expect("the repository root");
    let dir = root.join("migrations");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = fs::read_dir(&dir).expect("migrations/ exists").map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "sql")).collect();
    files.sort();
    let mut code = String::from("/// (file name, SQL) in the order they apply.\npub static MIGRATIONS: &[(&str, &str)] = &[\n");
    for f in files {
        println!("cargo:rerun-if-changed={}", f.display());
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        code.push_str(&format!("    ({name:?}, include_str!({:?})),\n", f.display().to_string()));
    }
    code.push_str("];\n");
    fs::write(PathBuf::from(env::var("OUT_DIR").unwrap()).join("migrations.rs"), code).unwrap();
}
