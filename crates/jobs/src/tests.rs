use super::*;

fn temp_db() -> (Db, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("switchboard-jobs-{}", uuid::Uuid::new_v4()));
    (Db::open(&dir).unwrap(), dir)
}

fn enqueue(db: &Db, id: &str) {
    let c = db.conn().unwrap();
    db::execute(&c, "INSERT INTO jobs (id, kind, business_id, payload, due_at_ms, created_at_ms) VALUES (?1, 'test', 'b', '{}', 0, 0)", db::params![id]).unwrap();
}

fn expire_leases(db: &Db) {
    let c = db.conn().unwrap();
    db::execute(&c, "UPDATE jobs SET lease_until_ms = 0 WHERE state = 'leased'", vec![]).unwrap();
}

#[test]
fn a_stale_fence_cannot_complete_a_reclaimed_job() {
    let (db, dir) = temp_db();
    enqueue(&db, "j1");
    let first = claim(&db, "node-a", 10).unwrap();
    assert_eq!(first.len(), 1);
    assert!(claim(&db, "node-b", 10).unwrap().is_empty(), "a live lease is not claimable");
    // node-a stalls; its lease expires and node-b reclaims with a new fence.
    expire_leases(&db);
    let second = claim(&db, "node-b", 10).unwrap();
    assert_eq!(second[0].fence, first[0].fence + 1);
    assert_eq!(second[0].attempts, 2);
    let c = db.conn().unwrap();
    assert!(!complete(&c, &first[0], &Next::Done).unwrap(), "the stale fence is refused");
    assert!(complete(&c, &second[0], &Next::Done).unwrap());
    assert!(claim(&db, "node-a", 10).unwrap().is_empty(), "done jobs never run again");
    drop(c);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_new_leader_releases_jobs_the_old_one_left_leased() {
    let (db, dir) = temp_db();
    let mut a = Runner::new(RunnerConfig::default());
    let mut b = Runner::new(RunnerConfig::default());
    assert!(a.lead(&db));
    enqueue(&db, "j1");
    let claimed = claim(&db, &a.node, 10).unwrap();
    assert_eq!(claimed.len(), 1);
    // a dies holding the job; once its leader lease expires b leads and
    // can run the job at once, without waiting for the job's own lease.
    let c = db.conn().unwrap();
    db::execute(&c, "UPDATE leases SET expires_at_ms = 0", vec![]).unwrap();
    assert!(b.lead(&db));
    let reclaimed = claim(&db, &b.node, 10).unwrap();
    assert_eq!(reclaimed.len(), 1);
    assert!(reclaimed[0].fence > claimed[0].fence);
    assert!(!complete(&c, &claimed[0], &Next::Done).unwrap(), "the dead leader's fence is stale");
    drop(c);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn only_one_node_leads() {
    let (db, dir) = temp_db();
    let mut a = Runner::new(RunnerConfig::default());
    let mut b = Runner::new(RunnerConfig::default());
    assert!(a.lead(&db));
    assert!(!b.lead(&db), "a live leader keeps the lease");
    // a stops renewing; once its lease expires b takes over.
    let c = db.conn().unwrap();
    db::execute(&c, "UPDATE leases SET expires_at_ms = 0", vec![]).unwrap();
    assert!(b.lead(&db));
    a.leader_until_ms = 0;
    assert!(!a.lead(&db));
    drop(c);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

fn enqueue_as(db: &Db, id: &str, business: &str, due: i64, calls_out: bool, lane: Option<&str>) {
    let c = db.conn().unwrap();
    db::execute(
        &c,
        "INSERT INTO jobs (id, kind, business_id, payload, due_at_ms, created_at_ms, calls_out, lane) VALUES (?1, 'test', ?2, '{}', ?3, 0, ?4, ?5)",
        db::params![id, business, due, calls_out, lane],
    )
    .unwrap();
}

fn ids(claims: &[Claim]) -> Vec<&str> {
    claims.iter().map(|c| c.id.as_str()).collect()
}

#[test]
fn a_lane_runs_one_step_at_a_time_oldest_first() {
    let (db, dir) = temp_db();
    enqueue_as(&db, "l1", "b", 1, true, Some("webhooks:s1"));
    enqueue_as(&db, "l2", "b", 2, true, Some("webhooks:s1"));
    enqueue_as(&db, "o1", "b", 3, true, Some("webhooks:s2"));
    let first = claim_fair(&db, "n", 0, 10, 100).unwrap();
    assert_eq!(ids(&first), vec!["l1", "o1"], "one per lane, the oldest");
    assert!(claim_fair(&db, "n", 0, 10, 100).unwrap().is_empty(), "a lane with a live step waits");
    let c = db.conn().unwrap();
    assert!(complete(&c, &first[0], &Next::Done).unwrap());
    assert_eq!(ids(&claim_fair(&db, "n", 0, 10, 100).unwrap()), vec!["l2"]);
    drop(c);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_deep_backlog_in_a_busy_lane_hides_no_other_lane_and_no_unlaned_job() {
    let (db, dir) = temp_db();
    for i in 0..3_000 {
        enqueue_as(&db, &format!("deep{i:05}"), "b", i, true, Some("webhooks:deep"));
    }
    let first = claim_fair(&db, "n", 0, 10, 100).unwrap();
    assert_eq!(ids(&first), vec!["deep00000"], "the lane's head alone");
    // Younger work behind the busy lane's whole backlog.
    enqueue_as(&db, "other", "b", 5_000, true, Some("webhooks:other"));
    enqueue_as(&db, "loose", "b", 5_001, true, None);
    enqueue_as(&db, "local", "b", 5_002, false, Some("campaign:i1"));
    let next = claim_fair(&db, "n", 10, 10, 100).unwrap();
    assert_eq!(ids(&next), vec!["local", "other", "loose"], "each found although 2,999 older jobs wait in a busy lane");
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_claim_that_never_ran_is_not_counted() {
    let (db, dir) = temp_db();
    enqueue_as(&db, "j", "b", 1, true, None);
    let claim = claim_fair(&db, "n", 0, 10, 100).unwrap().remove(0);
    assert_eq!(claim.attempts, 1);
    let c = db.conn().unwrap();
    let next = Next::Pending { due_at_ms: 0, payload: None, attempts: Count::Uncount, error: Some("no instance slot was free".into()) };
    assert!(complete(&c, &claim, &next).unwrap());
    let again = claim_fair(&db, "n", 0, 10, 100).unwrap().remove(0);
    assert_eq!(again.attempts, 1, "the next claim is still the first run of this payload");
    drop(c);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn finished_jobs_and_their_runs_go_after_the_retention_and_nothing_else_does() {
    let (db, dir) = temp_db();
    let now = crate::clock::now_ms();
    let old = now - FINISHED_RETENTION.as_millis() as i64 - 1;
    for (id, due) in [("done-old", old), ("dead-old", old), ("pending-old", old), ("leased-old", old), ("done-new", now)] {
        enqueue_as(&db, id, "b", due, false, None);
    }
    let c = db.conn().unwrap();
    for (id, state) in [("done-old", "done"), ("dead-old", "dead"), ("leased-old", "leased"), ("done-new", "done")] {
        db::execute(&c, "UPDATE jobs SET state = ?2 WHERE id = ?1", db::params![id, state]).unwrap();
        db::execute(&c, "INSERT INTO job_runs (job_id, fence, node, started_at_ms, ended_at_ms, outcome) VALUES (?1, 1, 'n', 0, 0, 'done')", db::params![id]).unwrap();
    }
    assert_eq!(purge_finished(&db, now), 2);
    let left = |table: &str, column: &str| -> Vec<String> { db::query_as(&c, &format!("SELECT {column} FROM {table} ORDER BY {column}"), db::params![]).unwrap() };
    assert_eq!(left("jobs", "id"), vec!["done-new", "leased-old", "pending-old"]);
    assert_eq!(left("job_runs", "job_id"), vec!["done-new", "leased-old"]);
    drop(c);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn businesses_take_turns_and_one_business_cannot_take_every_slot() {
    let (db, dir) = temp_db();
    for n in 0..6 {
        enqueue_as(&db, &format!("a{n}"), "busy", n, true, None);
    }
    enqueue_as(&db, "b0", "quiet", 100, true, None);
    enqueue_as(&db, "local", "busy", 0, false, None);
    // Four slots: the quiet business's only job is among them although
    // it is the newest, and the busy one gets at most its cap (3).
    let picked = claim_fair(&db, "n", 0, 4, 3).unwrap();
    assert_eq!(ids(&picked), vec!["a0", "b0", "a1", "a2"]);
    assert!(picked.iter().all(|c| c.calls_out));
    let more = claim_fair(&db, "n", 5, 4, 3).unwrap();
    assert_eq!(ids(&more), vec!["local"], "the busy business is at its cap; local steps are another class");
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_webhook_log_goes_after_its_retention_and_nothing_newer_does() {
    let (db, dir) = temp_db();
    let now = crate::clock::now_ms();
    let retention = Duration::from_secs(u64::from(WEBHOOK_LOG_RETENTION_DAYS) * 24 * 3600);
    let cutoff = now - retention.as_millis() as i64;
    // A uuid v7 of the millisecond `ms`, as the `ids` import makes them.
    let v7 = |ms: i64| uuid::Uuid::new_v7(uuid::Timestamp::from_unix(uuid::NoContext, (ms / 1000) as u64, ((ms % 1000) * 1_000_000) as u32)).to_string();
    // More old attempts than one batch, the last millisecond before the
    // cutoff, the cutoff's own millisecond, and a fresh one.
    let mut rows: Vec<(String, &str)> = (0..PURGE_BATCH + 100).map(|n| (v7(cutoff - 1_000 - n), "old")).collect();
    rows.push((v7(cutoff - 1), "last-old"));
    rows.push((v7(cutoff), "at-cutoff"));
    rows.push((v7(now), "new"));
    let c = db.conn().unwrap();
    c.execute_many(
        "INSERT INTO webhook_attempts (id, business_id, subscription_id, event_id, retry_number, attempted_at) VALUES (?1, 'b', 's', ?2, 0, 'x')",
        rows.iter().map(|(id, event)| db::params![id, *event]).collect(),
    )
    .unwrap();
    assert_eq!(purge_webhook_log(&db, now, retention), PURGE_BATCH as u64 + 101);
    let left: Vec<String> = db::query_as(&c, "SELECT event_id FROM webhook_attempts ORDER BY id", db::params![]).unwrap();
    assert_eq!(left, vec!["at-cutoff", "new"]);
    // A shorter retention takes what the longer one kept.
    assert_eq!(purge_webhook_log(&db, now, Duration::from_secs(3600)), 1);
    drop(c);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

fn marked(db: &Db, id: &str) -> bool {
    let c = db.conn().unwrap();
    db::query_one_as::<i64>(&c, "SELECT 1 FROM jobs WHERE id = ?1", db::params![id]).unwrap().is_some()
}

/// Two steps that call out share one commit: the first keeps its writes and
/// waits in the open transaction; the second lost its lease (a stale fence)
/// inside that group. The group commits the first's completion and nothing
/// of the second: its writes are undone, its job stays with the node that
/// reclaimed it.
#[test]
fn a_step_whose_lease_was_lost_inside_a_group_commit_commits_nothing_and_undoes_no_other() {
    let (db, dir) = temp_db();
    enqueue(&db, "kept");
    enqueue(&db, "lost");
    let claims = claim(&db, "node-a", 10).unwrap();
    let kept = claims.iter().find(|c| c.id == "kept").unwrap().clone();
    let lost = claims.iter().find(|c| c.id == "lost").unwrap().clone();
    // "lost" is reclaimed by another node: node-a's fence is stale.
    let c = db.conn().unwrap();
    db::execute(&c, "UPDATE jobs SET fence = fence + 1 WHERE id = 'lost'", vec![]).unwrap();
    drop(c);
    let group = Group { wait: Some(Duration::from_secs(20)), young: Some(Duration::from_secs(20)), ..Group::default() };
    // The second step is running while the first completes.
    let second = group.start();
    // A step's writes and completion, as `run_one` makes them: in its
    // savepoint of the group's transaction.
    let step = |claim: &Claim, marker: &str| {
        let mut gate = db.gate().try_lock_arc_for(Duration::from_secs(5)).unwrap();
        let conn = gate.begin_locking().unwrap();
        db::execute(&conn, "INSERT INTO jobs (id, kind, business_id, payload, due_at_ms, created_at_ms, state) VALUES (?1, 'marker', 'b', '{}', 0, 0, 'done')", db::params![marker]).unwrap();
        let keep = complete(&conn, claim, &Next::Done).unwrap();
        (gate, conn, keep)
    };
    let first = std::thread::scope(|s| {
        let waiting = s.spawn(|| {
            let first = group.start();
            let (gate, conn, keep) = step(&kept, "written-by-kept");
            assert!(keep);
            end_grouped(&db, conn, gate, keep, Some(&first))
        });
        // The first step waits in the open transaction, uncommitted.
        while group.held() == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!marked(&db, "written-by-kept"), "nothing is committed while the group is open");
        let (gate, conn, keep) = step(&lost, "written-by-lost");
        assert!(!keep, "the stale fence is refused");
        // The last step running commits the group.
        assert!(end_grouped(&db, conn, gate, keep, Some(&second)));
        waiting.join().unwrap()
    });
    assert!(first, "the first step's completion committed with the group");
    assert!(marked(&db, "written-by-kept"));
    assert!(!marked(&db, "written-by-lost"), "the step that lost its lease wrote nothing");
    let c = db.conn().unwrap();
    let states: Vec<(String, String)> = db::query_as(&c, "SELECT id, state FROM jobs WHERE id IN ('kept', 'lost') ORDER BY id", db::params![]).unwrap();
    assert_eq!(states.into_iter().map(|(_, state)| state).collect::<Vec<_>>(), ["done", "leased"]);
    drop(c);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

/// A group left open commits before anyone else takes the write gate (a
/// request batch, a claim): nothing waits on it, nothing writes under it.
#[test]
fn taking_the_write_gate_commits_an_open_group() {
    let (db, dir) = temp_db();
    enqueue(&db, "j1");
    let claimed = claim(&db, "node-a", 10).unwrap();
    let group = Group { wait: Some(Duration::from_secs(20)), young: Some(Duration::from_secs(20)), ..Group::default() };
    let _another_running = group.start();
    std::thread::scope(|s| {
        let waiting = s.spawn(|| {
            let me = group.start();
            let mut gate = db.gate().try_lock_arc_for(Duration::from_secs(5)).unwrap();
            let conn = gate.begin_locking().unwrap();
            let keep = complete(&conn, &claimed[0], &Next::Done).unwrap();
            end_grouped(&db, conn, gate, keep, Some(&me))
        });
        while group.held() == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let gate = db.write_gate(Duration::from_secs(5)).unwrap();
        assert!(waiting.join().unwrap(), "taking the gate committed the group");
        drop(gate);
    });
    let c = db.conn().unwrap();
    assert_eq!(db::query_as::<String>(&c, "SELECT state FROM jobs WHERE id = 'j1'", db::params![]).unwrap(), ["done"]);
    drop(c);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

fn claim_of(id: &str, kind: &str, business: &str) -> Claim {
    Claim { id: id.into(), kind: kind.into(), business_id: business.into(), payload: "{}".into(), attempts: 1, fence: 1, calls_out: true, lane: Some(id.into()) }
}

#[test]
fn batches_hold_one_batched_kind_of_one_business() {
    let batched = vec!["webhooks.deliver".to_string()];
    let mut claims: Vec<Claim> = (0..10).map(|i| claim_of(&format!("a{i}"), "webhooks.deliver", "a")).collect();
    claims.push(claim_of("b0", "webhooks.deliver", "b"));
    claims.push(claim_of("m0", "messaging.deliver", "a"));
    claims.push(claim_of("m1", "messaging.deliver", "a"));
    let out = batches(claims, &batched, BatchSplit { parts: 2, min: BATCH_MIN_SPLIT });
    let ids = |b: &Vec<Claim>| b.iter().map(|c| c.id.as_str()).collect::<Vec<_>>().join(",");
    let listed: Vec<String> = out.iter().map(ids).collect();
    // Kinds without a batch form run alone; one business's deliveries in
    // two batches (every core busy), another business's in its own.
    assert_eq!(listed, ["m0", "m1", "a0,a2,a4,a6,a8", "a1,a3,a5,a7,a9", "b0"]);
    // A few are not split: one step.
    let few: Vec<Claim> = (0..7).map(|i| claim_of(&format!("a{i}"), "webhooks.deliver", "a")).collect();
    assert_eq!(batches(few, &batched, BatchSplit { parts: 2, min: BATCH_MIN_SPLIT }).len(), 1);
    // Past BATCH_MAX a group takes more batches, none larger than it.
    let many: Vec<Claim> = (0..40).map(|i| claim_of(&format!("a{i}"), "webhooks.deliver", "a")).collect();
    let out = batches(many, &batched, BatchSplit { parts: 2, min: BATCH_MIN_SPLIT });
    assert_eq!(out.len(), 3);
    assert!(out.iter().all(|b| b.len() <= BATCH_MAX && b.iter().all(|c| c.business_id == "a")));
    assert_eq!(out.iter().map(Vec::len).sum::<usize>(), 40);
}
