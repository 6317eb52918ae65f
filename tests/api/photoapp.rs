//! Photoapp direct messages (issue 4 point 3, photoapp half): a photoapp
//! user who writes to the business's connected account starts a
//! conversation (a participant without a contact); only then may the
//! business answer that user, text only. Inbound and delivery events reach
//! the account's subscriptions, signed; linking the participant to a
//! mobile-first contact (operation 34) writes its history into the contact's
//! timeline, and later messages follow.

use crate::harness::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const ACCOUNT: &str = "acct-photo-1";
const INBOUND: &str = "/sandbox/v1/photoapp/inbound";

fn send(s: &Server, key: &str, biz: &str, to: &str) -> Resp {
    s.as_key(key).fresh().post("/api/v1/messages", &json!({"businessId": biz, "channel": "photoapp", "photoappAccountId": ACCOUNT, "to": to, "type": "text", "text": "Thanks for writing!"}))
}

fn inbound(s: &Server, key: &str, from: &str, text: &str) {
    let r = s.as_key(key).post(INBOUND, &json!({"photoappAccountId": ACCOUNT, "from": from, "text": text, "name": "ada.l"}));
    wait_done(&s.data_dir, r.assert_ok(202)["jobId"].as_str().unwrap());
}

#[test]
fn a_user_who_wrote_first_can_be_answered_and_linked() {
    let dir = DataDir::new();
    let s = Server::start_with(&dir.0, &["--sandbox-routes", "--messenger-setting", "step-delay-ms=1"]);
    let t = tenant(&dir.0, "all");
    let biz = t.business.as_str();
    s.admin(&["channel", "connect", "--business", biz, "--channel", "photoapp", "--account-id", ACCOUNT, "--username", "shop"]);
    let rx = Receiver::start();
    let events = ["photoapp.message.received", "photoapp.message.sent", "photoapp.message.seen", "photoapp.message.failed"];
    let sub = s
        .as_key(&t.key)
        .fresh()
        .post("/api/v1/webhook-subscriptions", &json!({"businessId": biz, "channel": "photoapp", "providerAccountId": ACCOUNT, "callbackUrl": rx.url(), "events": events, "externalAutomation": true}));
    let secret = sub.assert_ok(201)["signingSecret"].as_str().unwrap().to_string();

    // Nobody has written yet.
    assert_eq!(send(&s, &t.key, biz, "u-42").assert_failure(409, "conflict").code(), "photoapp_conversation_required");

    // u-42 writes: a participant conversation without a contact, and the event.
    inbound(&s, &t.key, "u-42", "Is the blue one in stock?");
    let got = rx.wait_for(1);
    assert!(verify(&got[0], &secret));
    let e = got[0].json();
    assert_eq!(e["eventType"], "photoapp.message.received");
    assert_eq!(e["providerAccountId"], ACCOUNT);
    assert_eq!(e["customer"], json!({"photoappUserId": "u-42", "username": "ada.l", "contactId": null}));
    assert_eq!(e["message"], json!({"type": "text", "text": "Is the blue one in stock?"}));
    assert_eq!(e["retryNumber"], 0);
    let conversation = e["conversationId"].as_str().unwrap().to_string();
    assert_eq!(e["participantId"], json!(conversation));

    // Now the business may answer u-42 (and still no one else).
    assert_eq!(send(&s, &t.key, biz, "u-99").assert_failure(409, "conflict").code(), "photoapp_conversation_required");
    let id = send(&s, &t.key, biz, "u-42").assert_ok(202)["messageId"].as_str().unwrap().to_string();
    let started = Instant::now();
    let d = loop {
        let d = s.as_key(&t.key).get(&format!("/api/v1/messages/{id}?businessId={biz}")).assert_ok(200).clone();
        if d["status"] == "read" && d["taskStatus"] == "done" {
            break d;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "never read: {d}");
        std::thread::sleep(Duration::from_millis(30));
    };
    assert_eq!((d["recipient"].as_str(), d["phoneNumberId"].clone()), (Some("u-42"), Value::Null));
    assert_eq!(d["conversationId"], json!(conversation));

    // Its delivery events: sent, then seen (photoapp has no delivered event).
    rx.wait_for(3);
    std::thread::sleep(Duration::from_millis(200));
    let got: Vec<Value> = rx.got().iter().inspect(|d| assert!(verify(d, &secret))).map(|d| d.json()).collect();
    let mine: Vec<&Value> = got.iter().filter(|e| e["messageId"] == json!(id)).collect();
    let kinds: Vec<&str> = mine.iter().map(|e| e["eventType"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["photoapp.message.sent", "photoapp.message.seen"], "{got:?}");
    assert_eq!(mine[1]["recipient"], json!({"photoappUserId": "u-42"}));
    assert_eq!(mine[1]["delivery"]["status"], "read");
    assert!(mine[1].get("phoneNumberId").is_none());

    // Linking the participant to a mobile-first contact writes its history
    // (one inbound, one outbound) into the contact's timeline.
    let link = s
        .as_key(&t.key)
        .fresh()
        .post(&format!("/api/v1/channel-participants/{conversation}/link-contact"), &json!({"businessId": biz, "channel": "photoapp", "mobile": "+15550007777", "name": "Ada"}));
    let l = link.assert_ok(200).clone();
    assert_eq!(l["linkedEntries"], 2, "{l}");
    let contact = l["contactId"].as_str().unwrap().to_string();
    let timeline = |n: usize| {
        let entries = s.as_key(&t.key).get(&format!("/api/v1/contacts/{contact}/timeline?businessId={biz}")).assert_ok(200)["entries"].clone();
        let entries = entries.as_array().unwrap().clone();
        assert_eq!(entries.len(), n, "{entries:?}");
        assert!(entries.iter().all(|e| e["channel"] == "photoapp"), "{entries:?}");
    };
    timeline(2);
    // Linking again changes nothing.
    let again = s.as_key(&t.key).fresh().post(&format!("/api/v1/channel-participants/{conversation}/link-contact"), &json!({"businessId": biz, "channel": "photoapp", "mobile": "+15550007777"}));
    assert_eq!(again.assert_ok(200)["linkedEntries"], 0);
    // Later messages of the linked participant join the timeline, and the event names the contact.
    inbound(&s, &t.key, "u-42", "Great, I'll take it");
    timeline(3);
    let got = rx.wait_for(got.len() + 1);
    assert_eq!(got.last().unwrap().json()["customer"]["contactId"], json!(contact));
    // A blocked contact is not answered.
    let blocked = s.as_key(&t.key).fresh().patch(&format!("/api/v1/contacts/{contact}"), &json!({"businessId": biz, "communicationBlocked": true}));
    blocked.assert_ok(200);
    assert_eq!(send(&s, &t.key, biz, "u-42").assert_failure(409, "conflict").code(), "contact_blocked");
    // An answer the provider cannot deliver (a user id ending 0000): photoapp.message.failed, signed.
    inbound(&s, &t.key, "u-0000", "Hello?");
    let id = send(&s, &t.key, biz, "u-0000").assert_ok(202)["messageId"].as_str().unwrap().to_string();
    let failed = poll("photoapp.message.failed", || rx.got().into_iter().find(|d| d.json()["messageId"] == json!(id) && d.json()["eventType"] == "photoapp.message.failed"));
    assert!(verify(&failed, &secret));
    assert_eq!(failed.json()["delivery"]["failure"]["code"], "recipient_unreachable", "{}", failed.json());
}

#[test]
fn bad_photoapp_inbound_is_refused() {
    let dir = DataDir::new();
    let s = Server::start_with(&dir.0, &["--sandbox-routes"]);
    let t = tenant(&dir.0, "all");
    let chat_only = admin(&dir.0, &["key", "create", "--business", &t.business, "--scopes", "chatapp:write"])["apiKey"].as_str().unwrap().to_string();
    s.admin(&["channel", "connect", "--business", &t.business, "--channel", "photoapp", "--account-id", ACCOUNT]);
    let post = |key: &str, body: Value| s.as_key(key).post(INBOUND, &body);
    let ok = json!({"photoappAccountId": ACCOUNT, "from": "u-1", "text": "hi"});
    assert_eq!(post(&chat_only, ok.clone()).assert_failure(403, "authorization").code(), "missing_scope");
    let bad_user = json!({"photoappAccountId": ACCOUNT, "from": "u 1; drop", "text": "hi"});
    post(&t.key, bad_user).assert_failure(400, "validation");
    let with_number = json!({"photoappAccountId": ACCOUNT, "phoneNumberId": "pn-1", "from": "u-1", "text": "hi"});
    post(&t.key, with_number).assert_failure(400, "validation");
    let unknown = json!({"photoappAccountId": "acct-nope", "from": "u-1", "text": "hi"});
    assert_eq!(post(&t.key, unknown).assert_failure(404, "not_found").code(), "photoapp_account_not_connected");
    assert_eq!(sql(&dir.0, "SELECT COUNT(*) FROM jobs WHERE kind = 'messaging.photoapp-inbound'").trim(), "0");
    post(&t.key, ok).assert_ok(202);
}

/// A sandbox signal route, waited until its job ran; the job id.
fn signal(s: &Server, key: &str, path: &str, body: Value) -> String {
    let r = s.as_key(key).post(path, &body);
    let job = r.assert_ok(202)["jobId"].as_str().unwrap().to_string();
    wait_done(&s.data_dir, &job);
    job
}

#[test]
fn reactions_referrals_and_comments_reach_the_accounts_subscribers_only() {
    let dir = DataDir::new();
    let s = Server::start_with(&dir.0, &["--sandbox-routes", "--messenger-setting", "step-delay-ms=1"]);
    let t = tenant(&dir.0, "all");
    let other = tenant(&dir.0, "all");
    let biz = t.business.as_str();
    s.admin(&["channel", "connect", "--business", biz, "--channel", "photoapp", "--account-id", ACCOUNT, "--username", "shop"]);
    s.admin(&["channel", "connect", "--business", &other.business, "--channel", "photoapp", "--account-id", "acct-other", "--username", "other"]);
    let rx = Receiver::start();
    let events = ["photoapp.message.reaction", "photoapp.message.referral", "photoapp.comment.received"];
    let sub = s
        .as_key(&t.key)
        .fresh()
        .post("/api/v1/webhook-subscriptions", &json!({"businessId": biz, "channel": "photoapp", "providerAccountId": ACCOUNT, "callbackUrl": rx.url(), "events": events, "externalAutomation": true}));
    let secret = sub.assert_ok(201)["signingSecret"].as_str().unwrap().to_string();
    let theirs = Receiver::start();
    s.as_key(&other.key)
        .fresh()
        .post(
            "/api/v1/webhook-subscriptions",
            &json!({"businessId": other.business, "channel": "photoapp", "providerAccountId": "acct-other", "callbackUrl": theirs.url(), "events": events, "externalAutomation": true}),
        )
        .assert_ok(201);
    let conforms = crate::campaigns::check;

    // A referral from an ad starts the user's conversation.
    signal(&s, &t.key, "/sandbox/v1/photoapp/referrals", json!({"photoappAccountId": ACCOUNT, "from": "u-7", "source": "ad", "adId": "ad-1"}));
    let got = rx.wait_for(1);
    assert!(verify(&got[0], &secret));
    let e = got[0].json();
    conforms("PhotoappReferralEvent", &e);
    assert_eq!((e["eventType"].as_str(), e["referral"].clone()), (Some("photoapp.message.referral"), json!({"source": "ad", "adId": "ad-1", "postId": null})));
    assert_eq!(e["customer"]["photoappUserId"], "u-7");
    let conversation = e["conversationId"].as_str().unwrap().to_string();

    // The user writes, the business answers; the user reacts to the answer, then takes it back.
    inbound(&s, &t.key, "u-7", "Saw your ad!");
    let answer = send(&s, &t.key, biz, "u-7").assert_ok(202)["messageId"].as_str().unwrap().to_string();
    signal(&s, &t.key, "/sandbox/v1/photoapp/reactions", json!({"photoappAccountId": ACCOUNT, "from": "u-7", "reaction": "❤️", "messageId": answer}));
    assert_eq!(sql(&dir.0, &format!("SELECT reaction FROM messages WHERE id = '{answer}'")).trim(), "❤️");
    signal(&s, &t.key, "/sandbox/v1/photoapp/reactions", json!({"photoappAccountId": ACCOUNT, "from": "u-7", "reaction": "❤️", "removed": true}));
    assert_eq!(sql(&dir.0, &format!("SELECT IFNULL(reaction, 'none') FROM messages WHERE id = '{answer}'")).trim(), "none");
    // A reaction to a message the conversation does not have is ignored: no event.
    signal(&s, &t.key, "/sandbox/v1/photoapp/reactions", json!({"photoappAccountId": ACCOUNT, "from": "u-7", "reaction": "👍", "messageId": "nope"}));
    let got = rx.wait_for(3);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(rx.got().len(), 3, "the stray reaction made no event");
    let reactions: Vec<Value> = got[1..].iter().inspect(|d| assert!(verify(d, &secret))).map(|d| d.json()).collect();
    for r in &reactions {
        conforms("PhotoappReactionEvent", r);
        assert_eq!((r["eventType"].as_str(), r["messageId"].as_str(), r["conversationId"].as_str()), (Some("photoapp.message.reaction"), Some(answer.as_str()), Some(conversation.as_str())));
    }
    let actions: Vec<&Value> = reactions.iter().map(|r| &r["reaction"]).collect();
    assert_eq!(actions, [&json!({"emoji": "❤️", "action": "added"}), &json!({"emoji": "❤️", "action": "removed"})]);
    assert!(theirs.got().is_empty(), "another business's subscription receives none of these");

    // Bad input and another business's account are refused before anything is enqueued.
    let k = s.as_key(&t.key);
    k.post("/sandbox/v1/photoapp/reactions", &json!({"photoappAccountId": ACCOUNT, "from": "u-7", "reaction": ""})).assert_failure(400, "validation");
    k.post("/sandbox/v1/photoapp/reactions", &json!({"photoappAccountId": ACCOUNT, "from": "u-7", "reaction": "👍", "occurredAt": "yesterday"})).assert_failure(400, "validation");
    k.post("/sandbox/v1/photoapp/referrals", &json!({"photoappAccountId": ACCOUNT, "from": "u-7", "source": "Billboard!"})).assert_failure(400, "validation");
    k.post("/sandbox/v1/photoapp/referrals", &json!({"photoappAccountId": ACCOUNT, "from": "u-7", "source": "ad", "extra": 1})).assert_failure(400, "validation");
    let r = k.post("/sandbox/v1/photoapp/referrals", &json!({"photoappAccountId": "acct-other", "from": "u-7", "source": "ad"}));
    assert_eq!(r.assert_failure(404, "not_found").code(), "photoapp_account_not_connected");
    // The admin commands enqueue the same jobs.
    let job = s.admin(&["sandbox", "referral", "--account-id", ACCOUNT, "--from", "u-8", "--source", "post", "--post-id", "p-9"]);
    wait_done(&dir.0, job["jobId"].as_str().unwrap());
    let e = rx.wait_for(4)[3].json();
    assert_eq!(e["referral"], json!({"source": "post", "adId": null, "postId": "p-9"}));

    // A public comment: the commenter becomes a participant, the event carries the comment; a redelivery is processed once.
    let comment = json!({"photoappAccountId": ACCOUNT, "from": "u-9", "text": "Do you ship to Oslo?", "name": "ola.n", "postId": "p-9", "commentId": "c-1"});
    signal(&s, &t.key, "/sandbox/v1/photoapp/comments", comment.clone());
    signal(&s, &t.key, "/sandbox/v1/photoapp/comments", comment);
    let job = s.admin(&["sandbox", "comment", "--account-id", ACCOUNT, "--from", "u-9", "--text", "And to Bergen?"]);
    assert!(job["commentId"].as_str().unwrap().starts_with("sbx-c."));
    wait_done(&dir.0, job["jobId"].as_str().unwrap());
    let got = rx.wait_for(6);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(rx.got().len(), 6, "the redelivered comment made no second event");
    let e = got[4].json();
    assert!(verify(&got[4], &secret));
    conforms("PhotoappCommentReceivedEvent", &e);
    assert_eq!((e["eventType"].as_str(), e["eventId"].as_str()), (Some("photoapp.comment.received"), Some("c-1")));
    assert_eq!(e["comment"], json!({"commentId": "c-1", "postId": "p-9", "text": "Do you ship to Oslo?"}));
    assert_eq!(e["customer"], json!({"photoappUserId": "u-9", "username": "ola.n", "contactId": null}));
    assert_eq!(got[5].json()["comment"]["text"], "And to Bergen?");
    assert_eq!(got[5].json()["conversationId"], e["conversationId"], "one participant per commenter");
    k.post("/sandbox/v1/photoapp/comments", &json!({"photoappAccountId": ACCOUNT, "from": "u-9", "text": " "})).assert_failure(400, "validation");
    assert!(theirs.got().is_empty());

    // Linking the commenter writes its comments into the contact's timeline; later ones follow.
    let link = s.as_key(&t.key).fresh().post(
        &format!("/api/v1/channel-participants/{}/link-contact", e["conversationId"].as_str().unwrap()),
        &json!({"businessId": biz, "channel": "photoapp", "mobile": "+15550008888", "name": "Ola"}),
    );
    let l = link.assert_ok(200).clone();
    assert_eq!(l["linkedEntries"], 2, "{l}");
    let contact = l["contactId"].as_str().unwrap().to_string();
    signal(&s, &t.key, "/sandbox/v1/photoapp/comments", json!({"photoappAccountId": ACCOUNT, "from": "u-9", "text": "Thanks!", "commentId": "c-3"}));
    let entries = s.as_key(&t.key).get(&format!("/api/v1/contacts/{contact}/timeline?businessId={biz}")).assert_ok(200)["entries"].clone();
    let texts: Vec<&str> = entries.as_array().unwrap().iter().map(|e| e["summary"]["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["Thanks!", "And to Bergen?", "Do you ship to Oslo?"], "newest first: {entries}");
    assert!(entries.as_array().unwrap().iter().all(|e| e["summary"]["type"] == "comment" && e["channel"] == "photoapp" && e["direction"] == "inbound"));

    // Event time decides, not arrival: a removal dated before the stored
    // reaction changes nothing and tells no one; a newer one clears it.
    let n = rx.wait_for(7).len();
    let at = |s: u32| format!("2999-01-01T00:00:0{s}Z");
    let react = |body: Value| signal(&s, &t.key, "/sandbox/v1/photoapp/reactions", body);
    react(json!({"photoappAccountId": ACCOUNT, "from": "u-7", "reaction": "👍", "messageId": answer, "occurredAt": at(2)}));
    let added = rx.wait_for(n + 1);
    assert_eq!(added[n].json()["occurredAt"], "2999-01-01T00:00:02.000Z", "the event carries the reaction's own time");
    react(json!({"photoappAccountId": ACCOUNT, "from": "u-7", "reaction": "👍", "messageId": answer, "removed": true, "occurredAt": "2999-01-01T01:00:01+01:00"}));
    assert_eq!(sql(&dir.0, &format!("SELECT IFNULL(reaction, 'none') FROM messages WHERE id = '{answer}'")).trim(), "👍", "a late removal never undoes a newer add");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(rx.got().len(), n + 1, "the stale removal made no event");
    react(json!({"photoappAccountId": ACCOUNT, "from": "u-7", "reaction": "👍", "messageId": answer, "removed": true, "occurredAt": at(3)}));
    assert_eq!(sql(&dir.0, &format!("SELECT IFNULL(reaction, 'none') FROM messages WHERE id = '{answer}'")).trim(), "none");
    assert_eq!(rx.wait_for(n + 2)[n + 1].json()["reaction"], json!({"emoji": "👍", "action": "removed"}));
}

/// The comment-reply events a receiver got: (eventType, comment text, reply or failure).
fn outcomes(rx: &Receiver) -> Vec<(String, String, Value)> {
    rx.got()
        .iter()
        .map(|d| d.json())
        .filter(|e| e["eventType"] != "photoapp.comment.received")
        .map(|e| (e["eventType"].as_str().unwrap().to_string(), e["comment"]["text"].as_str().unwrap().to_string(), if e["reply"].is_null() { e["failure"].clone() } else { e["reply"].clone() }))
        .collect()
}

#[test]
fn the_agent_answers_each_comment_once_unless_an_integrator_owns_the_comments() {
    let dir = DataDir::new();
    let mut s = Server::start_with(&dir.0, &["--sandbox-routes", "--messenger-setting", "step-delay-ms=1"]);
    let t = tenant(&dir.0, "all");
    let biz = t.business.clone();
    s.admin(&["channel", "connect", "--business", &biz, "--channel", "photoapp", "--account-id", ACCOUNT, "--username", "shop"]);
    let agent = s.as_key(&t.key).fresh().post("/api/v1/agents", &json!({"businessId": biz, "channel": "photoapp", "name": "Shop", "instructions": "Sell shoes."}));
    let agent = agent.assert_ok(201)["agent"]["id"].as_str().unwrap().to_string();
    s.as_key(&t.key)
        .patch("/api/v1/channels/assignments", &json!({"businessId": biz, "channel": "photoapp", "providerAccountId": ACCOUNT, "aiAgentId": agent, "autoReplyEnabled": true}))
        .assert_ok(200);
    // A subscription to the outcomes only watches: the agent still answers.
    let rx = Receiver::start();
    let watch = s.as_key(&t.key).fresh().post(
        "/api/v1/webhook-subscriptions",
        &json!({"businessId": biz, "channel": "photoapp", "providerAccountId": ACCOUNT, "callbackUrl": rx.url(), "events": ["photoapp.comment.replied", "photoapp.comment.failed"], "externalAutomation": true}),
    );
    let secret = watch.assert_ok(201)["signingSecret"].as_str().unwrap().to_string();
    let comment = |s: &Server, from: &str, text: &str, id: &str| {
        signal(s, &t.key, "/sandbox/v1/photoapp/comments", json!({"photoappAccountId": ACCOUNT, "from": from, "text": text, "commentId": id}));
    };
    let status = |id: &str| sql(&dir.0, &format!("SELECT status FROM photoapp_comments WHERE provider_comment_id = '{id}'")).trim().to_string();
    comment(&s, "u-42", "Do you ship to Oslo?", "c-1");
    comment(&s, "u-2222", "Nice shoes", "c-2"); // the sandbox refuses replies to …2222
    comment(&s, "u-42", "Do you ship to Oslo?", "c-1"); // redelivered: one comment, one reply
    let got = rx.wait_for(2);
    assert!(got.iter().all(|d| verify(d, &secret)));
    std::thread::sleep(Duration::from_millis(300));
    let mut o = outcomes(&rx);
    o.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(o.len(), 2, "{o:?}");
    assert_eq!((o[0].0.as_str(), o[0].1.as_str()), ("photoapp.comment.replied", "Do you ship to Oslo?"));
    assert!(o[0].2["text"].as_str().unwrap().contains("Do you ship to Oslo?"), "the offline agent's reply quotes the comment: {}", o[0].2);
    assert_eq!(o[0].2["providerReplyId"], json!(format!("sbx-r.{}", sql(&dir.0, "SELECT id FROM photoapp_comments WHERE provider_comment_id = 'c-1'").trim())));
    assert_eq!((o[1].0.as_str(), o[1].2["code"].as_str()), ("photoapp.comment.failed", Some("comment_reply_refused")));
    crate::campaigns::check("PhotoappCommentRepliedEvent", &got.iter().map(|d| d.json()).find(|e| e["eventType"] == "photoapp.comment.replied").unwrap());
    crate::campaigns::check("PhotoappCommentFailedEvent", &got.iter().map(|d| d.json()).find(|e| e["eventType"] == "photoapp.comment.failed").unwrap());
    assert_eq!((status("c-1"), status("c-2")), ("replied".to_string(), "failed".to_string()));

    // kill -9 while a reply waits on a provider that is down (…3333, retried): after the restart it is answered at most once.
    comment(&s, "u-3333", "Still there?", "c-3");
    std::thread::sleep(Duration::from_millis(500));
    s.child.kill().unwrap();
    s.child.wait().unwrap();
    s = Server::start_with(&dir.0, &["--sandbox-routes", "--messenger-setting", "step-delay-ms=1"]);
    let ended = poll("the comment behind the outage to end", || {
        let st = status("c-3");
        (st == "failed" || st == "replied").then_some(st)
    });
    assert_eq!(ended, "failed", "the provider stays down for …3333");
    std::thread::sleep(Duration::from_millis(300));
    let o = outcomes(&rx);
    assert_eq!(o.iter().filter(|e| e.1 == "Still there?").count(), 1, "one outcome for the comment: {o:?}");

    // An integrator that receives the comments owns them: the agent is silent, the comment stays `received`.
    let owner = Receiver::start();
    s.as_key(&t.key)
        .fresh()
        .post(
            "/api/v1/webhook-subscriptions",
            &json!({"businessId": biz, "channel": "photoapp", "providerAccountId": ACCOUNT, "callbackUrl": owner.url(), "events": ["photoapp.comment.received"], "externalAutomation": true}),
        )
        .assert_ok(201);
    comment(&s, "u-77", "Who answers this?", "c-4");
    owner.wait_for(1);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(status("c-4"), "received");
    assert!(outcomes(&rx).iter().all(|e| e.1 != "Who answers this?"));
}

/// Operation 75 for a comment of ACCOUNT.
fn private_reply(s: &Server, key: &str, biz: &str, comment: &str, text: &str) -> Resp {
    s.as_key(key).fresh().post("/api/v1/photoapp/private-replies", &json!({"businessId": biz, "photoappAccountId": ACCOUNT, "commentId": comment, "text": text}))
}

#[test]
fn a_comment_takes_one_private_reply_within_seven_days_and_replies_join_the_timeline() {
    let dir = DataDir::new();
    let s = Server::start_with(&dir.0, &["--sandbox-routes", "--messenger-setting", "step-delay-ms=1"]);
    let t = tenant(&dir.0, "all");
    let biz = t.business.clone();
    s.admin(&["channel", "connect", "--business", &biz, "--channel", "photoapp", "--account-id", ACCOUNT, "--username", "shop"]);
    // The agent answers comments publicly; the subscription only watches the outcomes.
    let agent = s.as_key(&t.key).fresh().post("/api/v1/agents", &json!({"businessId": biz, "channel": "photoapp", "name": "Shop", "instructions": "Sell shoes."}));
    let agent = agent.assert_ok(201)["agent"]["id"].as_str().unwrap().to_string();
    s.as_key(&t.key)
        .patch("/api/v1/channels/assignments", &json!({"businessId": biz, "channel": "photoapp", "providerAccountId": ACCOUNT, "aiAgentId": agent, "autoReplyEnabled": true}))
        .assert_ok(200);
    let rx = Receiver::start();
    s.as_key(&t.key)
        .fresh()
        .post(
            "/api/v1/webhook-subscriptions",
            &json!({"businessId": biz, "channel": "photoapp", "providerAccountId": ACCOUNT, "callbackUrl": rx.url(), "events": ["photoapp.comment.replied", "photoapp.message.sent"], "externalAutomation": true}),
        )
        .assert_ok(201);
    let comment = |id: &str, text: &str, occurred_at: Option<&str>| {
        let mut body = json!({"photoappAccountId": ACCOUNT, "from": "u-9", "text": text, "commentId": id, "name": "ola.n"});
        if let Some(at) = occurred_at {
            body["occurredAt"] = json!(at);
        }
        signal(&s, &t.key, "/sandbox/v1/photoapp/comments", body);
    };
    let replied = |n: usize| poll(&format!("{n} public replies"), || Some(rx.got().iter().filter(|d| d.json()["eventType"] == "photoapp.comment.replied").count()).filter(|c| *c >= n));

    // A fresh comment is answered privately: a photoapp message to the commenter.
    comment("c-1", "Do you ship to Oslo?", None);
    replied(1);
    let key = "private-reply-c-1";
    let body = json!({"businessId": biz, "photoappAccountId": ACCOUNT, "commentId": "c-1", "text": "Yes! Sent you the rates."});
    let first = s.as_key(&t.key).idem(key).post("/api/v1/photoapp/private-replies", &body);
    let message = first.assert_ok(202)["messageId"].as_str().unwrap().to_string();
    assert_eq!(first.data()["queued"], true);
    let d = poll("the private reply read", || Some(s.as_key(&t.key).get(&format!("/api/v1/messages/{message}?businessId={biz}")).assert_ok(200).clone()).filter(|d| d["status"] == "read"));
    assert_eq!((d["recipient"].as_str(), d["type"].as_str()), (Some("u-9"), Some("text")));
    let sent = poll("its sent event", || rx.got().into_iter().map(|d| d.json()).find(|e| e["eventType"] == "photoapp.message.sent" && e["messageId"] == json!(message)));
    assert_eq!(sent["recipient"], json!({"photoappUserId": "u-9"}));
    assert_eq!(sql(&dir.0, &format!("SELECT reply_to_comment FROM messages WHERE id = '{message}'")).trim(), "c-1", "the delivery names the comment");

    // One per comment: the same request again answers the same; a new one is refused.
    let again = s.as_key(&t.key).idem(key).post("/api/v1/photoapp/private-replies", &body);
    assert_eq!(again.assert_ok(202)["messageId"], json!(message));
    let second = private_reply(&s, &t.key, &biz, "c-1", "And the rates again");
    assert_eq!(second.assert_failure(409, "conflict").code(), "private_reply_already_sent");
    // Past the 7 days of the comment's own time (not its arrival): refused.
    comment("c-old", "Still selling?", Some("2020-01-01T10:00:00Z"));
    replied(2);
    let late = private_reply(&s, &t.key, &biz, "c-old", "We are!");
    assert_eq!(late.assert_failure(409, "conflict").code(), "private_reply_window_closed");
    assert!(late.message().contains("2020-01-01T10:00:00.000Z"), "{}", late.message());
    // Bad input, another account, an unknown comment: clear failures, nothing queued.
    assert_eq!(private_reply(&s, &t.key, &biz, "c-nope", "Hi").assert_failure(404, "not_found").code(), "comment_not_found");
    let bad_time = json!({"photoappAccountId": ACCOUNT, "from": "u-9", "text": "Hi", "occurredAt": "last week"});
    s.as_key(&t.key).post("/sandbox/v1/photoapp/comments", &bad_time).assert_failure(400, "validation");
    private_reply(&s, &t.key, &biz, "c-1", "   ").assert_failure(400, "validation");
    private_reply(&s, &t.key, &biz, "c-1", &"x".repeat(1001)).assert_failure(400, "validation");
    let other = s.as_key(&t.key).fresh().post("/api/v1/photoapp/private-replies", &json!({"businessId": biz, "photoappAccountId": "acct-nope", "commentId": "c-1", "text": "Hi"}));
    assert_eq!(other.assert_failure(404, "not_found").code(), "photoapp_account_not_connected");
    let no_scope = tenant(&dir.0, "communications:write");
    let refused = s.as_key(&no_scope.key).fresh().post("/api/v1/photoapp/private-replies", &json!({"businessId": no_scope.business, "photoappAccountId": ACCOUNT, "commentId": "c-1", "text": "Hi"}));
    refused.assert_failure(403, "authorization");
    assert_eq!(sql(&dir.0, "SELECT COUNT(*) FROM messages WHERE direction = 'outbound'").trim(), "1");

    // Linking the commenter writes its comments, the public replies and the private reply into the timeline.
    let conversation = sql(&dir.0, "SELECT conversation_id FROM photoapp_comments WHERE provider_comment_id = 'c-1'").trim().to_string();
    let link = s
        .as_key(&t.key)
        .fresh()
        .post(&format!("/api/v1/channel-participants/{conversation}/link-contact"), &json!({"businessId": biz, "channel": "photoapp", "mobile": "+15550006666", "name": "Ola"}));
    let l = link.assert_ok(200).clone();
    assert_eq!(l["linkedEntries"], 5, "two comments, two public replies, one private reply: {l}");
    let contact = l["contactId"].as_str().unwrap().to_string();
    let timeline = || {
        let entries = s.as_key(&t.key).get(&format!("/api/v1/contacts/{contact}/timeline?businessId={biz}")).assert_ok(200)["entries"].clone();
        entries.as_array().unwrap().iter().map(|e| (e["direction"].as_str().unwrap().to_string(), e["summary"].clone())).collect::<Vec<_>>()
    };
    let kinds = |entries: &[(String, Value)]| {
        let mut k: Vec<String> = entries.iter().map(|(d, s)| format!("{d} {}", s["type"].as_str().unwrap())).collect();
        k.sort();
        k
    };
    let entries = timeline();
    assert_eq!(kinds(&entries), ["inbound comment", "inbound comment", "outbound comment_reply", "outbound comment_reply", "outbound text"], "{entries:?}");
    let c1 = entries.iter().find(|(_, s)| s["type"] == "comment" && s["providerCommentId"] == "c-1").unwrap().1["commentId"].clone();
    let private = entries.iter().find(|(_, s)| s["type"] == "text").unwrap();
    assert_eq!((private.1["messageId"].clone(), private.1["privateReplyTo"].clone(), private.1["text"].clone()), (json!(message), c1.clone(), json!("Yes! Sent you the rates.")));
    let public = entries.iter().find(|(_, s)| s["type"] == "comment_reply" && s["commentId"] == c1).unwrap();
    assert!(public.1["text"].as_str().unwrap().contains("Do you ship to Oslo?"), "the offline agent's reply: {public:?}");

    // Later ones join it as they happen.
    comment("c-3", "Thanks!", None);
    replied(3);
    private_reply(&s, &t.key, &biz, "c-3", "Welcome!").assert_ok(202);
    let entries = timeline();
    assert_eq!(entries.len(), 8, "{entries:?}");
    let c3 = entries.iter().find(|(_, s)| s["type"] == "comment" && s["providerCommentId"] == "c-3").unwrap().1["commentId"].clone();
    assert!(entries.iter().any(|(d, s)| d == "outbound" && s["type"] == "comment_reply" && s["commentId"] == c3));
    assert!(entries.iter().any(|(d, s)| d == "outbound" && s["type"] == "text" && s["privateReplyTo"] == c3 && s["text"] == "Welcome!"));
}
