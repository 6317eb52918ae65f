//! Who is admitted to an iteration: the candidates (explicit contacts, all
//! contacts of categories, the members of an earlier iteration with given
//! outcomes, or the contacts a summary run recommends following up), of which only those compatible with the iteration's
//! agent become members:
//!
//! - not communication-blocked;
//! - in one of the agent's `contactCategoryIds` when it has any;
//! - with a value for every contact field the agent declares as a variable.
//!
//! The members are written by one `INSERT … SELECT` in the request's
//! transaction (the snapshot: later edits of contacts, categories or the
//! agent never change who is in the iteration), so creating 100,000 members
//! holds no list of them in memory. Their ids are uuids sharing a fresh
//! uuid v7's first 80 bits, numbered in the audience's order after it, so
//! id order is admission order.

use switchboard_guest::db;
use switchboard_guest::{new_id, now, params, HResult};

/// Where the candidates come from.
pub enum Candidates<'a> {
    /// Explicit contact ids (their order is kept).
    Contacts(&'a [String]),
    /// Every contact in any of these categories (creation order).
    Categories(&'a [String]),
    /// The contacts of iteration `.0` whose outcome is one of `.1`.
    Outcomes(&'a str, &'a [String]),
    /// The contacts whose assessment in summary run `.0` recommends a follow-up.
    Recommended(&'a str),
}

/// How many were admitted, and how many were not, by reason.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    pub accepted: i64,
    pub not_found: i64,
    pub blocked: i64,
    pub out_of_scope: i64,
    pub variable_missing: i64,
}

impl Admission {
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "accepted": self.accepted,
            "skipped": {
                "notFound": self.not_found,
                "blocked": self.blocked,
                "outOfScope": self.out_of_scope,
                "variableMissing": self.variable_missing,
            },
        })
    }

    /// Why nobody was admitted, for a 409.
    pub fn why_empty(&self) -> String {
        format!(
            "no contact of the audience can be reached by this agent ({} not found in this business, {} communication-blocked, {} outside the agent's categories, {} without a value for a variable the agent declares)",
            self.not_found, self.blocked, self.out_of_scope, self.variable_missing
        )
    }
}

/// The candidates as `cand(contact_id, pos)` (parameters ?1 business, ?3 the list as JSON, ?4 the earlier iteration or the summary run).
fn candidates(c: &Candidates) -> &'static str {
    match c {
        Candidates::Contacts(_) => "SELECT lower(value) AS contact_id, MIN(CAST(key AS INTEGER)) AS pos FROM json_each(?3) GROUP BY lower(value)",
        Candidates::Categories(_) => "SELECT DISTINCT contact_id, contact_id AS pos FROM contact_categories WHERE business_id = ?1 AND category_id IN (SELECT lower(value) FROM json_each(?3))",
        Candidates::Outcomes(..) => "SELECT contact_id, id AS pos FROM campaign_members WHERE business_id = ?1 AND iteration_id = ?4 AND outcome IN (SELECT value FROM json_each(?3))",
        Candidates::Recommended(_) => "SELECT contact_id, contact_id AS pos FROM summary_assessments WHERE business_id = ?1 AND run_id = ?4 AND status = 'assessed' AND follow_up = 1",
    }
}

/// The candidates found in this business with the reason each is skipped
/// (NULL: admitted). Parameters: ?1 business, ?2 agent.
const CLASSIFIED: &str = "classified AS ( \
     SELECT c.id AS contact_id, c.name AS name, cand.pos AS pos, \
       CASE WHEN c.communication_blocked = 1 THEN 'blocked' \
            WHEN EXISTS (SELECT 1 FROM agent_categories a WHERE a.business_id = ?1 AND a.agent_id = ?2) \
             AND NOT EXISTS (SELECT 1 FROM agent_categories a JOIN contact_categories cc \
                             ON cc.business_id = a.business_id AND cc.category_id = a.category_id AND cc.contact_id = c.id \
                             WHERE a.business_id = ?1 AND a.agent_id = ?2) THEN 'out_of_scope' \
            WHEN EXISTS (SELECT 1 FROM agent_variables v JOIN data_sources s ON s.business_id = v.business_id AND s.id = v.data_source_id AND s.built_in = 1 \
                         WHERE v.business_id = ?1 AND v.agent_id = ?2 AND v.field_key NOT IN ('mobile', 'name') \
                           AND IFNULL(json_extract(c.fields_json, '$.' || v.field_key), '') = '') THEN 'variable_missing' \
       END AS skip \
     FROM cand JOIN contacts c ON c.business_id = ?1 AND c.id = cand.contact_id)";

/// The candidates' list as JSON (?3) and the earlier iteration or summary run (?4, "" when none).
fn inputs<'a>(c: &Candidates<'a>) -> (String, &'a str) {
    let list = match c {
        Candidates::Contacts(ids) | Candidates::Categories(ids) => serde_json::to_string(ids).expect("strings serialise"),
        Candidates::Outcomes(_, outcomes) => serde_json::to_string(outcomes).expect("strings serialise"),
        Candidates::Recommended(_) => "[]".to_string(),
    };
    let earlier = match c {
        Candidates::Outcomes(it, _) | Candidates::Recommended(it) => *it,
        _ => "",
    };
    (list, earlier)
}

/// Who of the candidates the agent would admit, and who not by reason,
/// writing nothing: what [`admit`] admits, and the campaign admission
/// preview (ours 70).
pub fn count(biz: &str, agent_id: &str, candidates_from: &Candidates) -> HResult<Admission> {
    let (list, earlier) = inputs(candidates_from);
    let mut params = params![biz, agent_id, list];
    // A statement is given no parameter it does not name.
    if !earlier.is_empty() {
        params.push(earlier.into());
    }
    let with = format!("WITH cand(contact_id, pos) AS ({}), {CLASSIFIED}", candidates(candidates_from));
    let mut a = Admission::default();
    for (reason, n) in db::query_as::<(String, i64)>(&format!("{with} SELECT IFNULL(skip, 'accepted'), COUNT(*) FROM classified GROUP BY 1"), &params)? {
        match reason.as_str() {
            "accepted" => a.accepted = n,
            "blocked" => a.blocked = n,
            "out_of_scope" => a.out_of_scope = n,
            _ => a.variable_missing = n,
        }
    }
    if let Candidates::Contacts(ids) = candidates_from {
        let distinct: std::collections::HashSet<String> = ids.iter().map(|i| i.to_ascii_lowercase()).collect();
        a.not_found = distinct.len() as i64 - (a.accepted + a.blocked + a.out_of_scope + a.variable_missing);
    }
    Ok(a)
}

/// The first `limit` candidates the agent would leave out, in the
/// audience's order, each with its reason (`blocked`, `outOfScope`,
/// `variableMissing` with the declared fields it has no value for, or
/// `notFound` for a listed id that is no contact of this business): what
/// the campaign admission preview (ours 70) names, beside its counts.
pub fn skipped(biz: &str, agent_id: &str, candidates_from: &Candidates, limit: i64) -> HResult<Vec<serde_json::Value>> {
    let (list, earlier) = inputs(candidates_from);
    let mut params = params![biz, agent_id, list];
    if !earlier.is_empty() {
        params.push(earlier.into());
    }
    let with = format!("WITH cand(contact_id, pos) AS ({}), {CLASSIFIED}", candidates(candidates_from));
    let limit_param = params.len() + 1;
    params.push(limit.into());
    let rows = db::query_as::<(String, Option<String>, Option<String>, String, Option<String>)>(
        &format!(
            "{with} SELECT k.contact_id, k.name, c.mobile, k.skip, \
               (SELECT json_group_array(v.field_key) FROM agent_variables v JOIN data_sources s ON s.business_id = v.business_id AND s.id = v.data_source_id AND s.built_in = 1 \
                WHERE k.skip = 'variable_missing' AND v.business_id = ?1 AND v.agent_id = ?2 AND v.field_key NOT IN ('mobile', 'name') \
                  AND IFNULL(json_extract(c.fields_json, '$.' || v.field_key), '') = '') \
             FROM classified k JOIN contacts c ON c.business_id = ?1 AND c.id = k.contact_id \
             WHERE k.skip IS NOT NULL ORDER BY k.pos LIMIT ?{limit_param}"
        ),
        &params,
    )?;
    let mut out: Vec<serde_json::Value> = rows
        .into_iter()
        .map(|(contact, name, mobile, skip, missing)| {
            let reason = match skip.as_str() {
                "blocked" => "blocked",
                "out_of_scope" => "outOfScope",
                _ => "variableMissing",
            };
            let missing: Vec<String> = missing.and_then(|m| serde_json::from_str(&m).ok()).unwrap_or_default();
            serde_json::json!({"contactId": contact, "name": name, "mobile": mobile, "reason": reason, "missingFields": missing})
        })
        .collect();
    // Listed ids that are no contact of this business (explicit lists only).
    if let Candidates::Contacts(ids) = candidates_from {
        let room = (limit as usize).saturating_sub(out.len());
        if room > 0 {
            let wanted: Vec<String> = ids.iter().map(|i| i.to_ascii_lowercase()).collect();
            let probe = params![biz, serde_json::to_string(&wanted).expect("strings serialise")];
            let found: std::collections::HashSet<String> =
                db::query_as::<String>("SELECT c.id FROM contacts c WHERE c.business_id = ?1 AND c.id IN (SELECT value FROM json_each(?2))", &probe)?.into_iter().collect();
            let mut seen = std::collections::HashSet::new();
            for id in wanted.into_iter().filter(|i| !found.contains(i) && seen.insert(i.clone())).take(room) {
                out.push(serde_json::json!({"contactId": id, "name": null, "mobile": null, "reason": "notFound", "missingFields": []}));
            }
        }
    }
    Ok(out)
}

/// Admits the compatible candidates into `iteration_id` of `campaign_id`
/// (inside the caller's transaction).
pub fn admit(biz: &str, campaign_id: &str, iteration_id: &str, agent_id: &str, candidates_from: &Candidates) -> HResult<Admission> {
    let a = count(biz, agent_id, candidates_from)?;
    if a.accepted > 0 {
        let (list, earlier) = inputs(candidates_from);
        let params = params![biz, agent_id, list, earlier, iteration_id, new_id(), campaign_id, now()];
        let with = format!("WITH cand(contact_id, pos) AS ({}), {CLASSIFIED}", candidates(candidates_from));
        db::execute(
            &format!(
                "INSERT INTO campaign_members (business_id, iteration_id, id, campaign_id, contact_id, contact_name, created_at, updated_at) \
                 {with} SELECT ?1, ?5, substr(?6, 1, 24) || printf('%012x', ROW_NUMBER() OVER (ORDER BY pos)), ?7, contact_id, name, ?8, ?8 \
                 FROM classified WHERE skip IS NULL"
            ),
            &params,
        )?;
    }
    Ok(a)
}
