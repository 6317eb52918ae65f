//! Calling windows at scale (issue 40): however many members wait outside
//! their window, the dispatcher's sweep reaches every one of them, so
//! those inside theirs are called wherever they stand in admission order;
//! once nobody is left inside, the sweep waits for the next minute.

use super::C;
use crate::harness::*;
use serde_json::json;

#[test]
fn a_hundred_thousand_windowed_members_all_get_their_turn() {
    let c = C::new(3, 50_000_000, 60_000, 5);
    let agent = c.voice_agent(json!({}));
    // A window of two hours around the current UTC time.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let minute = ((now / 60) % 1440) as i64;
    let hhmm = |m: i64| format!("{:02}:{:02}", m.rem_euclid(1440) / 60, m.rem_euclid(1440) % 60);
    let window = json!({"start": hhmm(minute - 60), "end": hhmm(minute + 60)});
    // 99,990 Japanese mobiles (UTC+9: outside the window, they wait) and,
    // one in every 10,000 rows, ten Icelandic ones (UTC: inside it).
    let rows: Vec<(String, String)> =
        (0..100_000u64).map(|i| if i % 10_000 == 9_999 { (format!("+3545551{:03}", i / 10_000), format!("Iceland {i}")) } else { (format!("+8190{i:08}"), format!("Tokyo {i}")) }).collect();
    c.import(&rows);
    let d = c.create(json!({"channel": "voice", "agentId": agent, "categoryIds": [c.everyone], "callingWindow": window}));
    let campaign = d.assert_ok(201)["campaign"]["id"].as_str().unwrap().to_string();
    assert_eq!(d.data()["admission"]["accepted"], 100_000);
    c.act(&campaign, "start").assert_ok(200);
    let it = poll_within("the ten members inside their window to be called", std::time::Duration::from_secs(180), || {
        let it = c.current(&campaign);
        (it["counts"]["completed"] == 10).then_some(it)
    });
    assert_eq!((it["status"].as_str(), it["counts"]["pending"].as_i64()), (Some("running"), Some(99_990)), "the others wait: {}", it["counts"]);
    let called = c.db(&format!("SELECT COUNT(*), SUM(k.mobile LIKE '+354%') FROM calls l JOIN contacts k ON k.business_id = l.business_id AND k.id = l.contact_id WHERE l.campaign_id = '{campaign}'"));
    assert_eq!(called, "10|10", "only and all the Icelandic members were called");
    // Nobody else can be called before a window opens, on a minute: the
    // sweep waits for the next minute instead of reading 99,990 members
    // again every second (its next step is due seconds ahead, not at most
    // one second as while members are being called).
    poll("the sweep to wait for the next minute", || {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
        let due: i64 = c.db("SELECT IFNULL(MAX(due_at_ms), 0) FROM jobs WHERE kind = 'campaigns.dispatch' AND state = 'pending'").parse().unwrap();
        (due - now > 5_000).then_some(())
    });
}
