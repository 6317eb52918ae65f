//! Grounded retrieval alone (issue 38): `bench/retrieval.sh` runs this
//! ignored test in release mode. For each size it seeds a database (kept
//! under `target/retrieval-bench/<rows>`, so later runs start at once) with
//! one business and one agent grounded on two sources: a structured
//! catalogue of `rows` rows (each a full-text passage, its `sku` a lookup
//! key) and an unstructured source of `min(rows, 100,000)` passages, each
//! with a 64-dimension vector in `knowledge_vectors` (the ANN index of
//! `knowledge.rs`). Then it loads the `retrieval-bench` component in place
//! of an area and times calls of `grounding::retrieval`, the kinds taking
//! turns in a shuffled order: `baseline` (one agent row by its primary key),
//! `words` (FTS5), `meaning` (the vectors), `lookup` (`lookup_values`) and
//! `fused` (words and meaning, as a turn's instructions get them). Each call
//! is a fresh instance, as in a turn, so the baseline holds that cost too.
//! It prints p50 and p99 of each and a digest of each kind's answers, so
//! two builds can be shown to find the same.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::db::SqlValue;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::db::{self, Db};
use crate::engine::{types, CallError, Components};
use crate::knowledge::Embeddings;

const BIZ: &str = "0190aaaa-0000-7000-8000-000000000001";
const AGENT: &str = "0190aaaa-0000-7000-8000-000000000002";
const CATALOGUE: &str = "0190aaaa-0000-7000-8000-000000000003";
const NOTES: &str = "0190aaaa-0000-7000-8000-000000000004";
const VERSION: &str = "0190aaaa-0000-7000-8000-000000000005";

const DIMENSIONS: usize = 64;
const WORDS: [&str; 24] = [
    "alpha", "bravo", "cobalt", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kestrel", "lumen", "meadow", "nickel", "onyx", "prairie", "quartz", "raven", "saffron", "tundra",
    "umber", "violet", "willow", "zephyr",
];
const CITIES: [&str; 8] = ["Lisbon", "Oslo", "Quito", "Perth", "Dakar", "Hanoi", "Lima", "Riga"];
const KINDS: [&str; 5] = ["baseline", "words", "meaning", "lookup", "fused"];

/// The scope token of `components/guest/src/knowledge.rs` (`scope_token`).
fn scope(source: &str, version: &str) -> String {
    let v = if version.is_empty() { "c".to_string() } else { version.replace('-', "") };
    format!("s{}v{v}", source.replace('-', ""))
}

/// Hashed words, normalised: texts that share words point the same way.
fn vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIMENSIONS];
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let mut h = DefaultHasher::new();
        word.to_lowercase().hash(&mut h);
        v[(h.finish() % DIMENSIONS as u64) as usize] += 1.0;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.iter().map(|x| x / norm).collect()
}

fn blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn name(i: usize) -> String {
    format!("{} {} {i}", WORDS[i % 12], WORDS[(i / 12) % 12])
}

/// A paragraph of the unstructured source.
fn note(i: usize) -> String {
    format!(
        "The {} {} tour leaves {} at {}:00 with {} guides; bring {} boots and a {} map. Ref {i}.",
        WORDS[i % 24],
        WORDS[(i / 24) % 24],
        CITIES[(i / 7) % 8],
        6 + i % 12,
        WORDS[(i / 576) % 24],
        WORDS[(i * 7) % 24],
        WORDS[(i * 13 + 5) % 24]
    )
}

fn text(s: &str) -> SqlValue {
    SqlValue::Text(s.to_string())
}

/// Seeds `dir` with `rows` catalogue rows and their notes (see the module).
fn seed(dir: &Path, rows: usize) {
    let started = Instant::now();
    let db = Db::open(dir).unwrap();
    let e = Embeddings { url: String::new(), model: "bench".into(), dimensions: DIMENSIONS as u32, ask_dimensions: false, api_key: None };
    crate::knowledge::prepare(&db, Some(&e)).unwrap();
    let c = db.conn().unwrap();
    let run = |sql: &str, params: Vec<SqlValue>| db::execute(&c, sql, params).unwrap();
    run("DELETE FROM jobs", vec![]);
    run("INSERT INTO businesses (id, name, created_at) VALUES (?1, 'Bench', '')", vec![text(BIZ)]);
    run(
        "INSERT INTO agents (id, business_id, channel, name, instructions, reference_name, created_at, updated_at) VALUES (?1, ?2, 'chatapp', 'Desk', 'Answer.', 'bench-desk-0001', '', '')",
        vec![text(AGENT), text(BIZ)],
    );
    for (id, name, class, kind, version) in [(CATALOGUE, "Catalogue", "structured", "table", Some(VERSION)), (NOTES, "Notes", "unstructured", "text", None)] {
        run(
            "INSERT INTO data_sources (id, business_id, name, class, kind, built_in, status, active_version_id, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, 0, 'active', ?6, '', '')",
            vec![text(id), text(BIZ), text(name), text(class), text(kind), version.map_or(SqlValue::Null, text)],
        );
        run("INSERT INTO agent_data_sources (business_id, agent_id, data_source_id, position) VALUES (?1, ?2, ?3, 0)", vec![text(BIZ), text(AGENT), text(id)]);
    }
    for (position, (name, lookup)) in [("sku", true), ("name", false), ("price", false), ("city", false)].into_iter().enumerate() {
        run(
            "INSERT INTO ingestion_columns (business_id, version_id, position, name, field_key, lookup) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
            vec![text(BIZ), text(VERSION), SqlValue::Integer(position as i64), text(name), SqlValue::Integer(lookup as i64)],
        );
    }
    let notes = rows.min(100_000);
    let (catalogue_scope, notes_scope) = (scope(CATALOGUE, VERSION), scope(NOTES, ""));
    const BATCH: usize = 20_000;
    for start in (0..notes).step_by(BATCH) {
        let end = (start + BATCH).min(notes);
        let (mut passages, mut vectors) = (Vec::new(), Vec::new());
        for i in start..end {
            let t = note(i);
            let rowid = SqlValue::Integer(i as i64 + 1);
            vectors.push(vec![rowid.clone(), text(BIZ), text(NOTES), text(&notes_scope), SqlValue::Blob(blob(&vector(&t)))]);
            passages.push(vec![rowid, text(&t), text(&notes_scope), text(BIZ), text(NOTES), SqlValue::Integer(i as i64)]);
        }
        run("BEGIN", vec![]);
        c.execute_many("INSERT INTO knowledge_fts (rowid, text, scope, business_id, data_source_id, version_id, item) VALUES (?1, ?2, ?3, ?4, ?5, '', ?6)", passages).unwrap();
        c.execute_many("INSERT INTO knowledge_vectors (fts_rowid, business_id, data_source_id, version_id, scope, embedding) VALUES (?1, ?2, ?3, '', ?4, vector32(?5))", vectors).unwrap();
        run("COMMIT", vec![]);
        eprintln!("  {end} notes with vectors ({:.0} s)", started.elapsed().as_secs_f64());
    }
    for start in (0..rows).step_by(BATCH) {
        let end = (start + BATCH).min(rows);
        let (mut passages, mut originals, mut keys) = (Vec::new(), Vec::new(), Vec::new());
        for i in start..end {
            let (sku, price, city) = (format!("SKU{i:06}"), format!("{}.5", i % 997), CITIES[i % 8]);
            let n = SqlValue::Integer(i as i64 + 1);
            passages.push(vec![text(&format!("sku: {sku}; name: {}; price: {price}; city: {city}", name(i))), text(&catalogue_scope), text(BIZ), text(CATALOGUE), text(VERSION), n.clone()]);
            originals.push(vec![text(BIZ), text(VERSION), n.clone(), text(&serde_json::json!([sku, name(i), price, city]).to_string())]);
            keys.push(vec![text(BIZ), text(VERSION), text(&sku.to_lowercase()), n]);
        }
        run("BEGIN", vec![]);
        c.execute_many("INSERT INTO knowledge_fts (text, scope, business_id, data_source_id, version_id, item) VALUES (?1, ?2, ?3, ?4, ?5, ?6)", passages).unwrap();
        c.execute_many("INSERT INTO ingestion_rows (business_id, version_id, row_number, original) VALUES (?1, ?2, ?3, ?4)", originals).unwrap();
        c.execute_many("INSERT INTO lookup_values (business_id, version_id, field_key, value, row_number) VALUES (?1, ?2, 'sku', ?3, ?4)", keys).unwrap();
        run("COMMIT", vec![]);
        if end.is_multiple_of(200_000) || end == rows {
            eprintln!("  {end} catalogue rows ({:.0} s)", started.elapsed().as_secs_f64());
        }
    }
    run("ANALYZE", vec![]);
    drop(c);
    db.checkpoint(true);
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)].as_secs_f64() * 1000.0
}

/// One call of the component; its `data`, or a panic naming the failure.
fn call(components: &Components, conn: &mut Option<crate::db::Connection>, query: Vec<(String, String)>, body: Option<String>) -> String {
    let req = types::Request { operation: "retrieve".into(), business_id: BIZ.into(), path_params: vec![], query, body, caller: None, request_id: "bench".into(), stream_cursor: None, prepared: None };
    let (back, result) = components.call("agents", conn.take().unwrap(), &req, Duration::from_secs(30));
    *conn = Some(back);
    match result {
        Ok(Ok(s)) => s.data_json,
        Ok(Err(f)) => panic!("{}: {}", f.code, f.message),
        Err(CallError::Trap(t)) => panic!("trap: {t}"),
        Err(_) => panic!("the call hit a limit"),
    }
}

fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
#[ignore]
fn retrieval_alone() {
    let wasm = std::env::var("SWITCHBOARD_RETRIEVAL_WASM").map(PathBuf::from).expect("SWITCHBOARD_RETRIEVAL_WASM: the retrieval-bench component (bench/retrieval.sh builds it)");
    let sizes: Vec<usize> = std::env::var("SWITCHBOARD_RETRIEVAL_SIZES").unwrap_or("10000,100000,1000000".into()).split(',').map(|s| s.trim().parse().unwrap()).collect();
    let calls: usize = std::env::var("SWITCHBOARD_RETRIEVAL_CALLS").map_or(200, |s| s.parse().unwrap());
    // A profile of one kind: `SWITCHBOARD_RETRIEVAL_KINDS=meaning` (the baseline always runs).
    let only = std::env::var("SWITCHBOARD_RETRIEVAL_KINDS").unwrap_or_default();
    let runs = |kind: &str| kind == "baseline" || only.is_empty() || only.split(',').any(|k| k == kind);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/retrieval-bench");
    let scratch = std::env::temp_dir().join(format!("switchboard-retrieval-{}", uuid::Uuid::new_v4()));
    let plugins = crate::plugins::Registry::start(None, &scratch, true).unwrap();
    let components = Components::load(&scratch.join("cache"), &[("agents".into(), wasm)], crate::engine::Setup::with_plugins(plugins)).unwrap();
    println!("retrieval alone: {calls} calls per kind, p50 / p99 in ms (ratio of the p50 to the baseline's)");
    for rows in sizes {
        let dir = root.join(rows.to_string());
        if !dir.join("seeded").exists() {
            let _ = std::fs::remove_dir_all(&dir);
            eprintln!("seeding {rows} rows into {}", dir.display());
            seed(&dir, rows);
            std::fs::write(dir.join("seeded"), "").unwrap();
        }
        let db = Db::open(&dir).unwrap();
        let mut conn = Some(db.conn().unwrap().detach());
        let mut rng = StdRng::seed_from_u64(38);
        let mut took: Vec<Vec<Duration>> = vec![Vec::new(); KINDS.len()];
        // One digest a kind: `meaning` (and so `fused`) may differ from
        // run to run, since libSQL starts each ANN search at a random node.
        let mut digests: Vec<DefaultHasher> = vec![DefaultHasher::new(); KINDS.len()];
        let mut empty = [0usize; KINDS.len()];
        for round in 0..calls + 10 {
            let mut order: Vec<usize> = (0..KINDS.len()).filter(|&k| runs(KINDS[k])).collect();
            order.shuffle(&mut rng);
            let i = rng.random_range(0..rows);
            let message = format!("Do you have {} in {}?", name(i).rsplit_once(' ').unwrap().0, CITIES[rng.random_range(0..8)]);
            let embedded = serde_json::to_string(&vector(&message)).unwrap();
            let sku = format!("SKU{:06}", rng.random_range(0..rows));
            for k in order {
                let kind = KINDS[k];
                let query = match kind {
                    "lookup" => q(&[("kind", kind), ("agent", AGENT), ("source", "Catalogue"), ("field", "sku"), ("value", &sku)]),
                    _ => q(&[("kind", kind), ("agent", AGENT), ("message", &message)]),
                };
                let body = matches!(kind, "meaning" | "fused").then(|| embedded.clone());
                let t = Instant::now();
                let answer = call(&components, &mut conn, query, body);
                let elapsed = t.elapsed();
                // The first rounds warm the caches and are not counted.
                if round >= 10 {
                    took[k].push(elapsed);
                    answer.hash(&mut digests[k]);
                    if answer.contains("[]") || answer.contains("No rows match") {
                        empty[k] += 1;
                    }
                }
            }
        }
        let base = {
            let mut b = took[0].clone();
            b.sort();
            pct(&b, 0.5)
        };
        println!("{rows} catalogue rows, {} notes:", rows.min(100_000));
        for (k, kind) in KINDS.iter().enumerate().filter(|(_, kind)| runs(kind)) {
            let mut t = took[k].clone();
            t.sort();
            let (p50, p99) = (pct(&t, 0.5), pct(&t, 0.99));
            println!("  {kind:9} p50 {p50:8.3}  p99 {p99:8.3}  ({:6.1}x)  {} of {} found nothing, answers {:016x}", p50 / base, empty[k], t.len(), digests[k].finish());
        }
        drop(conn);
    }
    let _ = std::fs::remove_dir_all(&scratch);
}
