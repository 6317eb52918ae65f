//! The shipper's unit tests: a transaction shipped as one chained, guarded
//! batch, its outcomes told apart, savepoints and reads kept out of its
//! log, and a carry's bounds.

use super::*;

#[test]
fn the_batch_chains_every_step_on_the_one_before() {
    let statements = vec![("INSERT INTO t VALUES (?1, ?2, ?3)".to_string(), vec![SqlValue::Integer(7), SqlValue::Real(0.1), SqlValue::Blob(vec![0, 255])]), ("SAVEPOINT a".to_string(), vec![])];
    let all = steps(41, &statements, true).unwrap();
    assert_eq!(all.len(), 5);
    assert_eq!(all[0]["sql"], "BEGIN IMMEDIATE");
    assert_eq!(all[1]["args"][0], json!({"type": "integer", "value": "41"}));
    assert_eq!(all[2]["args"][1], json!({"type": "float", "value": 0.1}));
    assert_eq!(all[2]["args"][2], json!({"type": "blob", "base64": "AP8"}));
    assert_eq!(all[4]["sql"], "COMMIT");
    let chunks = chunked(all);
    assert_eq!(chunks.len(), 1, "a small transaction is one request");
    let batch = chained(chunks.into_iter().next().unwrap());
    assert!(batch[0].get("condition").is_none());
    for (i, s) in batch.iter().enumerate().skip(1) {
        assert_eq!(s["condition"], json!({"type": "ok", "step": i - 1}));
    }
    assert!(steps(1, &[("INSERT INTO t VALUES (?1)".into(), vec![SqlValue::Real(f64::INFINITY)])], true).is_err());
    assert_eq!(steps(1, &statements, false).unwrap()[0]["sql"], GUARD, "a locked stream begins with the guard");
    // A large one is cut into requests in order, none above the bound
    // unless one statement alone is.
    let big: Vec<_> = (0..3000).map(|i| ("INSERT INTO t VALUES (?1)".to_string(), vec![SqlValue::Text(format!("{i:01000}"))])).collect();
    let chunks = chunked(steps(1, &big, true).unwrap());
    assert!(chunks.len() > 1);
    assert_eq!(chunks.iter().map(Vec::len).sum::<usize>(), 3003);
    assert!(chunks.iter().all(|c| c.iter().map(|s| s.to_string().len()).sum::<usize>() <= REQUEST_BYTES));
    assert_eq!(chunks.last().unwrap().last().unwrap()["sql"], "COMMIT");
}

#[test]
fn outcomes_tell_a_commit_a_conflict_and_a_refusal_apart() {
    let answer = |results: Json, errors: Json| json!({"results": [{"type": "ok", "response": {"type": "batch", "result": {"step_results": results, "step_errors": errors}}}]});
    let r = json!({"cols": [], "rows": [], "affected_row_count": 0});
    assert!(chunk_outcome(&answer(json!([r, r, r, r]), json!([null, null, null, null])), 0, 4).is_ok());
    let guard = json!({"message": "integer overflow"});
    assert!(matches!(chunk_outcome(&answer(json!([r, null, null, null]), json!([null, guard, null, null])), 0, 4), Err(ShipError::Conflict)));
    let unique = json!({"message": "SQLITE_CONSTRAINT: UNIQUE constraint failed"});
    assert!(matches!(chunk_outcome(&answer(json!([r, r, null, null]), json!([null, null, unique, null])), 0, 4), Err(ShipError::Refused(_))));
    // In a later request, its first step is no guard.
    assert!(matches!(chunk_outcome(&answer(json!([null, null]), json!([unique, null])), 7, 2), Err(ShipError::Refused(_))));
    let busy = json!({"message": "SQLITE_BUSY: database is locked"});
    assert!(matches!(chunk_outcome(&answer(json!([null, null, null, null]), json!([busy, null, null, null])), 0, 4), Err(ShipError::Unreachable(_))));
}

#[test]
fn savepoints_leave_only_what_they_kept() {
    let mut log = Vec::new();
    let mut sp = Savepoints::default();
    let mut run = |sql: &str, log: &mut Vec<(String, Vec<SqlValue>)>| {
        if !sp.compact(sql, log) {
            log.push((sql.to_string(), vec![]));
        }
    };
    // A request that succeeded: its writes, no savepoint.
    run("SAVEPOINT request", &mut log);
    run("INSERT a", &mut log);
    run("RELEASE request", &mut log);
    // A request rolled back to its savepoint: only what came after.
    run("SAVEPOINT request", &mut log);
    run("INSERT b", &mut log);
    run("SAVEPOINT inner", &mut log);
    run("INSERT c", &mut log);
    run("ROLLBACK TO request", &mut log);
    run("INSERT record", &mut log);
    run("RELEASE request", &mut log);
    // A rollback to an inner savepoint keeps the outer's statements.
    run("SAVEPOINT outer", &mut log);
    run("INSERT d", &mut log);
    run("SAVEPOINT execute_many", &mut log);
    run("INSERT e", &mut log);
    run("ROLLBACK TO execute_many", &mut log);
    run("RELEASE execute_many", &mut log);
    run("RELEASE outer", &mut log);
    // One it cannot read is recorded as it is.
    run("SAVEPOINT \"odd name\"", &mut log);
    let kept: Vec<&str> = log.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(kept, ["INSERT a", "INSERT record", "INSERT d", "SAVEPOINT \"odd name\""]);
}

#[test]
fn a_carry_keeps_at_most_its_batches_and_its_time() {
    let mut carry = Carry::begin();
    for _ in 1..CARRY_BATCHES {
        assert!(carry.may_keep() && carry.may_go_on());
        carry = carry.next();
    }
    assert!(!carry.may_keep(), "the last batch of a carry ends it");
    assert!(carry.may_go_on(), "a batch may still go on from it");
    let old = Carry { batches: 1, since: std::time::Instant::now() - CARRY_FOR };
    assert!(!old.may_go_on() && !old.may_keep(), "a carry older than CARRY_FOR ends");
}

#[test]
fn reads_are_not_recorded_and_savepoints_are() {
    assert!(!recorded("SELECT 1"));
    assert!(!recorded("  values (1)"));
    assert!(recorded("INSERT INTO t VALUES (1)"));
    assert!(recorded("WITH x AS (SELECT 1) UPDATE t SET a = 1"));
    assert!(recorded("SAVEPOINT request"));
    assert!(recorded("ROLLBACK TO request"));
    assert!(recorded("RELEASE request"));
}
