use super::*;

fn temp_db() -> (Db, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("switchboard-db-test-{}", uuid::Uuid::new_v4()));
    (Db::open(&dir).expect("open"), dir)
}

/// Frames in the WAL after a PASSIVE pass.
fn wal_frames(db: &Db) -> i64 {
    let c = db.conn().expect("conn");
    match &query_rows(&c, "PRAGMA wal_checkpoint(PASSIVE)", vec![]).expect("checkpoint")[0][1] {
        SqlValue::Integer(n) => *n,
        other => panic!("frames: {other:?}"),
    }
}

fn write_pages(db: &Db, rows: usize) {
    let c = db.conn().expect("conn");
    execute(&c, "CREATE TABLE IF NOT EXISTS filler (id INTEGER PRIMARY KEY, blob BLOB)", vec![]).expect("table");
    execute(&c, "BEGIN IMMEDIATE", vec![]).expect("begin");
    for _ in 0..rows {
        execute(&c, "INSERT INTO filler (blob) VALUES (zeroblob(4000))", vec![]).expect("insert");
    }
    execute(&c, "COMMIT", vec![]).expect("commit");
}

#[test]
fn a_grown_wal_starts_over_and_a_reader_does_not_hold_the_restart_up() {
    let (db, dir) = temp_db();
    // A reader that pins the WAL: the restart cannot finish while it reads.
    let reader = db.fresh_conn().expect("reader");
    execute(&reader, "BEGIN", vec![]).expect("begin read");
    query_rows(&reader, "SELECT COUNT(*) FROM jobs", vec![]).expect("read");
    write_pages(&db, (WAL_RESTART_FRAMES + 1_000) as usize);
    let asked = std::time::Instant::now();
    db.checkpoint(false);
    assert!(asked.elapsed() < BUSY_TIMEOUT, "the restart does not wait for readers");
    // Writers are not held up by the attempt.
    assert!(db.write_gate(Duration::from_millis(10)).is_some());
    write_pages(&db, 10);
    assert!(wal_frames(&db) > WAL_RESTART_FRAMES, "the pinned WAL could not start over");
    // Once the reader is gone, the next checkpoint starts the WAL over,
    // and the next commit writes from its start.
    execute(&reader, "COMMIT", vec![]).expect("end read");
    db.checkpoint(false);
    write_pages(&db, 10);
    assert!(wal_frames(&db) < 100, "the WAL started over: {} frames", wal_frames(&db));
    drop(reader);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_reused_statement_starts_from_fresh_bindings() {
    let (db, dir) = temp_db();
    let c = db.conn().expect("conn");
    let sql = "SELECT ?1, ?2";
    let first = c.query_rows(sql, vec![SqlValue::Integer(1), SqlValue::Text("two".into())]).expect("first");
    assert_eq!(first, vec![vec![SqlValue::Integer(1), SqlValue::Text("two".into())]]);
    // The same text, cached, with one parameter short: the missing one is
    // NULL as in a fresh statement, not the previous run's "two".
    let second = c.query_rows(sql, vec![SqlValue::Integer(3)]).expect("second");
    assert_eq!(second, vec![vec![SqlValue::Integer(3), SqlValue::Null]]);
    drop(c);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_cached_statement_holds_no_snapshot_after_use() {
    let (db, dir) = temp_db();
    let reader = db.conn().expect("reader").detach();
    let writer = db.conn().expect("writer").detach();
    writer.execute("CREATE TABLE t (v INTEGER)", vec![]).expect("create");
    let count = |c: &Connection| c.query_rows("SELECT COUNT(*) FROM t", vec![]).expect("count")[0][0].clone();
    assert_eq!(count(&reader), SqlValue::Integer(0));
    // Were the reader's statement left mid-read, it would keep its
    // snapshot and miss this row.
    writer.execute("INSERT INTO t VALUES (1)", vec![]).expect("insert");
    assert_eq!(count(&reader), SqlValue::Integer(1));
    // A failed statement is reset too and can run again.
    assert!(writer.execute("INSERT INTO missing VALUES (1)", vec![]).is_err());
    writer.execute("INSERT INTO t VALUES (2)", vec![]).expect("insert after a failure");
    assert_eq!(count(&reader), SqlValue::Integer(2));
    drop((reader, writer, db));
    let _ = std::fs::remove_dir_all(dir);
}
