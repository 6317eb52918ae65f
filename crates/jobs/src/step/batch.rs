//! Steps of several claims at once: the claims of a kind the dispatcher
//! runs together (webhook deliveries) split into batches of one business,
//! each batch one dispatcher call and one write transaction, as
//! [`run_one`] runs a claim alone.

use super::*;

/// Most claims one dispatcher call runs together (`run_many`).
pub const BATCH_MAX: usize = 16;

/// Claims per batch below which a group is not split further (`batches`).
pub const BATCH_MIN_SPLIT: usize = 4;

/// Splits claims into what one step runs: the claims of a kind the
/// dispatcher runs several at a time (`batched`), of one business, in
/// batches of at most [`BATCH_MAX`], and as `split` says into up to
/// `parts` batches of at least `min` claims (by default [`BATCH_MIN_SPLIT`]:
/// so that the steps keep every core busy); every other claim alone.
pub fn batches(claims: Vec<Claim>, batched: &[String], split: BatchSplit) -> Vec<Vec<Claim>> {
    let mut out = Vec::new();
    let mut groups: Vec<Vec<Claim>> = Vec::new();
    for c in claims {
        if !batched.contains(&c.kind) {
            out.push(vec![c]);
            continue;
        }
        match groups.iter_mut().find(|g| g[0].kind == c.kind && g[0].business_id == c.business_id) {
            Some(g) => g.push(c),
            None => groups.push(vec![c]),
        }
    }
    for group in groups {
        let n = group.len();
        let count = n.div_ceil(BATCH_MAX).max(split.parts.min(n / split.min.max(1))).max(1);
        let mut shares: Vec<Vec<Claim>> = (0..count).map(|_| Vec::new()).collect();
        for (i, c) in group.into_iter().enumerate() {
            shares[i % count].push(c);
        }
        out.extend(shares);
    }
    out
}

/// Runs claimed jobs: one alone through [`run_one`], several (of one
/// batched kind and one business, see [`batches`]) through [`run_many`]
/// (the jobs lanes hand over are grouped again by kind and business, one
/// step each). Returns the next jobs of their lanes handed to this worker.
pub fn run_claims(db: &Db, components: &Components, node: &str, claims: &[Claim], handoff: bool, unsettled: &Unsettled, group: Option<&Group>) -> Vec<Claim> {
    let mut next = Vec::new();
    let mut rest: Vec<&Claim> = claims.iter().collect();
    while let Some(first) = rest.first().copied() {
        let (same, others): (Vec<&Claim>, Vec<&Claim>) = rest.into_iter().partition(|c| c.kind == first.kind && c.business_id == first.business_id);
        rest = others;
        match same.as_slice() {
            [one] => next.extend(run_one(db, components, node, one, handoff, unsettled, group)),
            many => next.extend(run_many(db, components, node, many, handoff, unsettled, group)),
        }
    }
    next
}

/// Runs the steps of several claims (calls-out jobs of one kind and one
/// business) in one dispatcher call and one write transaction, as
/// [`run_one`] runs one: their writes and fenced completions commit
/// together or not at all. A stale fence of any of them rolls back all of
/// them (the others' claims are handed back: their next run counts this
/// one as interrupted, as after a crash). Returns the next jobs of their
/// lanes handed to this worker (`handoff`).
pub fn run_many(db: &Db, components: &Components, node: &str, claims: &[&Claim], handoff: bool, unsettled: &Unsettled, group: Option<&Group>) -> Vec<Claim> {
    let me = group.map(Group::start);
    let first = claims[0];
    let span = tracing::info_span!("job_steps", kind = %first.kind, jobs = claims.len(), businessId = %first.business_id);
    let in_steps = span.enter();
    let started = crate::clock::now_ms();
    let steps: Vec<Step> = claims.iter().copied().map(|claim| Step { db, claim, node, started, network: true }).collect();
    let unsettle = |which: &mut dyn Iterator<Item = &Claim>| unsettled.lock().extend(which.map(|c| (c.id.clone(), c.fence)));
    let jobs: Vec<Job> = claims.iter().copied().map(job_of).collect();
    let Ok(own) = db.conn() else {
        unsettle(&mut claims.iter().copied());
        return Vec::new();
    };
    let (conn, lazy, result) = components.run_batch(own.detach(), &jobs, db.gate());
    let (conn, gate) = match lazy {
        Some((gate, own)) => {
            db.give_back(own);
            (conn, gate)
        }
        None => {
            db.give_back(conn);
            let Some((gate, writer)) = steps[0].write() else {
                unsettle(&mut claims.iter().copied());
                return Vec::new();
            };
            (writer, gate)
        }
    };
    let mut next = Vec::new();
    let mut labels = Vec::with_capacity(claims.len());
    // (keep, the claim whose stale fence settles it anyway)
    let (keep, stale) = match result {
        Ok(outcomes) => {
            let mut ended = (true, None);
            for (step, outcome) in steps.iter().zip(&outcomes) {
                let mut handed = None;
                let (kept, settled_anyway, label) = step.completed(&conn, outcome, handoff, &mut handed);
                if !kept {
                    ended = (false, settled_anyway.then_some(step.claim.id.as_str()));
                    break;
                }
                labels.push(label);
                next.extend(handed);
            }
            ended
        }
        Err(e) => {
            let failure = Failure::of(first, e);
            let kept = steps[0].undo(&conn) && steps.iter().all(|step| step.record_failure(&conn, &failure));
            labels = vec!["trapped"; claims.len()];
            (kept, None)
        }
    };
    let committed = finish(db, conn, gate, keep, steps[0].grouped(), me.as_ref());
    drop(in_steps);
    if keep && committed {
        for (claim, label) in claims.iter().copied().zip(labels) {
            let span = tracing::info_span!("job_step", jobId = %claim.id, kind = %claim.kind, attempt = claim.attempts, businessId = %claim.business_id, batch = claims.len());
            let _in_step = span.enter();
            crate::metrics::job_step(&claim.kind, label, started);
            crate::logging::job_step(label, crate::clock::now_ms() - started);
        }
        return next;
    }
    unsettle(&mut claims.iter().copied().filter(|c| Some(c.id.as_str()) != stale));
    Vec::new()
}
