//! Channels (operations 35-36): the channel list with its readiness, the
//! photoapp connection, and channel assignments of agents.

use super::*;

#[test]
fn channel_list_readiness_and_photoapp_connection() {
    // By default each business has a database of its own: a number
    // connected to one is still refused for the other.
    let c = setup();
    let r = c.get(&c.a, "/api/v1/channels");
    let d = r.assert_ok(200);
    assert_eq!(d["nextCursor"], Value::Null);
    let keys: Vec<&str> = d["channels"].as_array().unwrap().iter().map(|c| c["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["chatapp", "voice", "photoapp", "sms", "other"]);
    let ch = |d: &Value, k: &str| d["channels"].as_array().unwrap().iter().find(|c| c["key"] == k).unwrap().clone();
    let chatapp = ch(d, "chatapp");
    assert_eq!((chatapp["live"].clone(), chatapp["ready"].clone(), chatapp["assignmentMode"].clone()), (json!(true), json!(false), json!("per_phone_number")));
    assert_eq!(ch(d, "voice")["ready"], true);
    assert_eq!(ch(d, "voice")["assignmentMode"], "agent_only");
    assert_eq!(ch(d, "photoapp")["ready"], false);
    assert_eq!(ch(d, "photoapp")["assignmentMode"], "per_account");
    let sms = ch(d, "sms");
    assert_eq!((sms["live"].clone(), sms["ready"].clone(), sms["availability"].clone()), (json!(false), json!(false), json!("coming_later")));
    let other = ch(d, "other");
    assert_eq!((other["live"].clone(), other["availability"].clone(), other["assignmentMode"].clone()), (json!(false), json!("reserved"), json!("agent_only")));
    for k in ["chatapp", "voice", "photoapp", "sms", "other"] {
        assert!(ch(d, k)["label"].as_str().is_some_and(|l| !l.is_empty()));
    }

    // Never connected.
    let p = c.get(&c.a, "/api/v1/channels/photoapp");
    let pd = p.assert_ok(200);
    assert_eq!(pd["status"], "not_connected");
    assert_eq!(pd["connected"], false);

    // Provider onboarding through the admin command; its output has no token.
    let out = c.connect_chatapp(&c.a, "pn-a-1", "Main line");
    assert_eq!(out["status"], "connected");
    assert_eq!(out["phoneNumberId"], "pn-a-1");
    let out2 = c.connect_photoapp(&c.a, "ig-a-1", "shop_a");
    assert_eq!(out2["providerAccountId"], "ig-a-1");
    let tokens = c.tokens();
    assert_eq!(tokens.len(), 2);
    for t in &tokens {
        assert!(!out.to_string().contains(t.as_str()) && !out2.to_string().contains(t.as_str()));
    }
    // A number connected to business A cannot be connected to B; bad flags fail.
    let err = admin_fails(c.path(), &["channel", "connect", "--business", &c.b.business, "--channel", "chatapp", "--phone-number-id", "pn-a-1"]);
    assert!(err.contains("another business"), "{err}");
    admin_fails(c.path(), &["channel", "connect", "--business", &c.b.business, "--channel", "sms", "--phone-number-id", "x"]);
    admin_fails(c.path(), &["channel", "connect", "--business", &c.b.business, "--channel", "chatapp", "--phone-number-id", "bad id"]);
    admin_fails(c.path(), &["channel", "connect", "--business", &uuid::Uuid::new_v4().to_string(), "--channel", "chatapp", "--phone-number-id", "x"]);

    let d = c.get(&c.a, "/api/v1/channels").assert_ok(200).clone();
    let chatapp = ch(&d, "chatapp");
    assert_eq!(chatapp["ready"], true);
    assert_eq!(chatapp["connections"], json!([{"phoneNumberId": "pn-a-1", "providerAccountId": null, "label": "Main line", "aiAgentId": null}]));
    let photo = ch(&d, "photoapp");
    assert_eq!(photo["ready"], true);
    assert_eq!(photo["connections"][0]["providerAccountId"], "ig-a-1");

    let p = c.get(&c.a, "/api/v1/channels/photoapp");
    let pd = p.assert_ok(200);
    assert_eq!(pd["status"], "connected");
    assert_eq!(pd["connected"], true);
    assert_eq!(pd["providerAccountId"], "ig-a-1");
    assert_eq!(pd["username"], "shop_a");
    assert!(pd["connectedAt"].is_string());
    assert_eq!(pd["disconnectedAt"], Value::Null);

    // Tenancy: B sees none of A's connections.
    let bd = c.get(&c.b, "/api/v1/channels").assert_ok(200).clone();
    assert_eq!(ch(&bd, "chatapp")["ready"], false);
    assert_eq!(ch(&bd, "photoapp")["ready"], false);
    assert_eq!(c.get(&c.b, "/api/v1/channels/photoapp").assert_ok(200)["status"], "not_connected");
    // B disconnecting its (absent) account does not touch A's.
    assert_eq!(c.delete(&c.b, "/api/v1/channels/photoapp", json!({})).assert_ok(200)["status"], "not_connected");
    assert_eq!(c.get(&c.a, "/api/v1/channels/photoapp").assert_ok(200)["status"], "connected");

    // Disconnect revokes use: status, token and assets cleared; idempotent.
    let dis = c.delete(&c.a, "/api/v1/channels/photoapp", json!({}));
    let dd = dis.assert_ok(200);
    assert_eq!(dd["status"], "disconnected");
    assert_eq!(dd["connected"], false);
    assert_eq!(dd["username"], Value::Null);
    assert!(dd["disconnectedAt"].is_string());
    let again = c.delete(&c.a, "/api/v1/channels/photoapp", json!({}));
    assert_eq!(again.assert_ok(200)["status"], "disconnected");
    assert_eq!(c.get(&c.a, "/api/v1/channels/photoapp").assert_ok(200)["status"], "disconnected");
    let row = sql_rows(c.path(), "SELECT token_ref, provider_assets_json FROM channel_connections WHERE channel = 'photoapp'");
    assert_eq!(row, vec![vec!["NULL".to_string(), "NULL".to_string()]]);
    let d = c.get(&c.a, "/api/v1/channels").assert_ok(200).clone();
    assert_eq!(ch(&d, "photoapp")["ready"], false);

    // Reconnecting makes it connected again with a fresh token.
    c.connect_photoapp(&c.a, "ig-a-1", "shop_a");
    assert_eq!(c.get(&c.a, "/api/v1/channels/photoapp").assert_ok(200)["status"], "connected");
    let mut all = tokens;
    all.extend(c.tokens());
    c.assert_no_token_leaked(&all);

    // Scopes: the photoapp read needs photoapp:read too.
    let k = c.s.admin(&["key", "create", "--business", &c.a.business, "--scopes", "channels:read"]);
    let r = c.s.as_key(k["apiKey"].as_str().unwrap()).get(&format!("/api/v1/channels/photoapp?businessId={}", c.a.business));
    r.assert_failure(403, "authorization");
}

#[test]
fn channel_assignments() {
    let c = setup();
    c.connect_chatapp(&c.a, "pn-1", "Sales");
    c.connect_chatapp(&c.a, "pn-2", "Support");
    c.connect_chatapp(&c.b, "pn-b", "B line");
    c.connect_photoapp(&c.a, "ig-1", "shop");
    let agent = c.create_ok(&c.a, chat("Sales bot"))["agent"]["id"].as_str().unwrap().to_string();
    let other = c.create_ok(&c.a, chat("Support bot"))["agent"]["id"].as_str().unwrap().to_string();
    let voice_agent = c.create_ok(&c.a, voice("Caller"))["agent"]["id"].as_str().unwrap().to_string();
    let b_agent = c.create_ok(&c.b, chat("B bot"))["agent"]["id"].as_str().unwrap().to_string();

    // Read: the phone number plus the active agents of the channel.
    let r = c.get(&c.a, "/api/v1/channels/assignments?channel=chatapp&phoneNumberId=pn-1");
    let d = r.assert_ok(200);
    assert_eq!(d["phoneNumberId"], "pn-1");
    assert_eq!(d["aiAgentId"], Value::Null);
    assert_eq!(d["autoReplyEnabled"], false);
    let ids: Vec<&str> = d["assignableAgents"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [agent.as_str(), other.as_str()]);
    assert!(d["assignableAgents"][0]["referenceName"].as_str().is_some_and(reference_name_ok));
    // Without a phone number: the first connected one.
    assert_eq!(c.get(&c.a, "/api/v1/channels/assignments?channel=chatapp").assert_ok(200)["phoneNumberId"], "pn-1");
    // B's number is not A's.
    assert_code(&c.get(&c.a, "/api/v1/channels/assignments?channel=chatapp&phoneNumberId=pn-b"), 404, "not_found", "phone_number_not_connected");
    assert_invalid(&c.get(&c.a, "/api/v1/channels/assignments"), "channel");
    let v = c.get(&c.a, "/api/v1/channels/assignments?channel=voice");
    assert_eq!(v.assert_ok(200)["assignableAgents"][0]["id"], json!(voice_agent));

    // Update: assign an active chatapp agent of this business to a connected number.
    let put = |body: Value| c.patch(&c.a, "/api/v1/channels/assignments", body);
    let r = put(json!({"channel": "chatapp", "phoneNumberId": "pn-1", "aiAgentId": agent, "autoReplyEnabled": true}));
    let d = r.assert_ok(200);
    assert_eq!((d["phoneNumberId"].clone(), d["aiAgentId"].clone(), d["autoReplyEnabled"].clone(), d["humanHandoffActive"].clone()), (json!("pn-1"), json!(agent), json!(true), json!(false)));
    let read = c.get(&c.a, "/api/v1/channels/assignments?channel=chatapp&phoneNumberId=pn-1");
    assert_eq!(read.assert_ok(200)["aiAgentId"], json!(agent));
    let list = c.get(&c.a, "/api/v1/channels").assert_ok(200).clone();
    assert_eq!(list["channels"][0]["connections"][0]["aiAgentId"], json!(agent));
    assert_eq!(list["channels"][0]["connections"][1]["aiAgentId"], Value::Null);

    // Bad assignments.
    assert_code(&put(json!({"channel": "chatapp", "aiAgentId": agent})), 409, "conflict", "phone_number_id_required");
    assert_code(&put(json!({"channel": "chatapp", "phoneNumberId": "pn-9", "aiAgentId": agent})), 404, "not_found", "phone_number_not_connected");
    assert_code(&put(json!({"channel": "chatapp", "phoneNumberId": "pn-b", "aiAgentId": agent})), 404, "not_found", "phone_number_not_connected");
    assert_code(&put(json!({"channel": "chatapp", "phoneNumberId": "pn-1", "aiAgentId": voice_agent})), 400, "validation", "agent_channel_mismatch");
    assert_code(&put(json!({"channel": "chatapp", "phoneNumberId": "pn-1", "aiAgentId": b_agent})), 404, "not_found", "agent_not_found");
    // The document's shape per channel says which id belongs where.
    let r = put(json!({"channel": "chatapp", "phoneNumberId": "pn-1", "providerAccountId": "ig-1"}));
    assert_code(&r, 400, "validation", "invalid_request");
    assert_eq!(r.body["error"]["details"][0]["field"], "providerAccountId", "{}", r.text);
    for ch in ["sms", "voice", "other"] {
        let r = put(json!({"channel": ch, "phoneNumberId": "pn-1", "aiAgentId": agent}));
        assert_code(&r, 409, "configuration", "channel_assignment_not_supported");
    }
    assert_code(&put(json!({"channel": "sms"})), 409, "configuration", "channel_assignment_not_supported");
    assert_invalid(&put(json!({"channel": "chatapp", "phoneNumberId": "pn-1", "aiAgentId": "not-a-uuid"})), "aiAgentId");
    // None of those changed the assignment.
    assert_eq!(c.get(&c.a, "/api/v1/channels/assignments?channel=chatapp&phoneNumberId=pn-1").assert_ok(200)["aiAgentId"], json!(agent));

    // Null unassigns.
    let r = put(json!({"channel": "chatapp", "phoneNumberId": "pn-1", "aiAgentId": null}));
    assert_eq!(r.assert_ok(200)["aiAgentId"], Value::Null);

    // Create with an assignment applies it (autoReplyEnabled defaults to true).
    let r = c.create_ok(&c.a, {
        let mut b = chat("Night shift");
        b["assignment"] = json!({"phoneNumberId": "pn-2"});
        b
    });
    let night = r["agent"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        r["assignment"],
        json!({"channel": "chatapp", "phoneNumberId": "pn-2", "providerAccountId": null, "aiAgentId": night,
                                      "autoReplyEnabled": true, "humanHandoffActive": false})
    );
    assert_eq!(r["channelReadiness"], json!({"channel": "chatapp", "live": true, "ready": true}));
    assert_eq!(c.get(&c.a, "/api/v1/channels/assignments?channel=chatapp&phoneNumberId=pn-2").assert_ok(200)["aiAgentId"], json!(night));
    // A failed assignment creates no agent.
    let before = c.get(&c.a, "/api/v1/agents?limit=200").assert_ok(200)["agents"].as_array().unwrap().len();
    let mut b = chat("Nowhere");
    b["assignment"] = json!({"phoneNumberId": "pn-b"});
    assert_code(&c.create(&c.a, b), 404, "not_found", "phone_number_not_connected");
    let mut b = json!({"channel": "sms", "name": "Texter", "instructions": "x"});
    b["assignment"] = json!({"phoneNumberId": "pn-1"});
    assert_code(&c.create(&c.a, b), 409, "configuration", "channel_assignment_not_supported");
    assert_eq!(c.get(&c.a, "/api/v1/agents?limit=200").assert_ok(200)["agents"].as_array().unwrap().len(), before);
    // assignment: null is no assignment.
    let mut b = chat("Unassigned");
    b["assignment"] = Value::Null;
    assert_eq!(c.create_ok(&c.a, b)["assignment"], Value::Null);
    // A chatapp assignment in create also needs channels:write.
    let k = c.s.admin(&["key", "create", "--business", &c.a.business, "--scopes", "agents:write"]);
    let key = k["apiKey"].as_str().unwrap();
    let mut b = with_business(&c.a, chat("Scoped"));
    b["assignment"] = json!({"phoneNumberId": "pn-2"});
    c.s.as_key(key).fresh().post("/api/v1/agents", &b).assert_failure(403, "authorization");
    c.s.as_key(key).fresh().post("/api/v1/agents", &with_business(&c.a, chat("Scoped"))).assert_ok(201);

    // Archived agents are not assignable and lose their assignments.
    let r = c.delete(&c.a, "/api/v1/agents", json!({"agentId": night}));
    r.assert_ok(200);
    let d = c.get(&c.a, "/api/v1/channels/assignments?channel=chatapp&phoneNumberId=pn-2").assert_ok(200).clone();
    assert_eq!(d["aiAgentId"], Value::Null);
    assert!(d["assignableAgents"].as_array().unwrap().iter().all(|a| a["id"] != json!(night) && a["status"] == "active"));
    assert_code(&put(json!({"channel": "chatapp", "phoneNumberId": "pn-2", "aiAgentId": night})), 409, "conflict", "agent_archived");

    // Photoapp: assignment per connected account.
    let mut b = json!({"channel": "photoapp", "name": "DM bot", "instructions": "x"});
    b["assignment"] = json!({"providerAccountId": "ig-other"});
    assert_code(&c.create(&c.a, b.clone()), 404, "not_found", "photoapp_account_not_connected");
    b["assignment"] = json!({"providerAccountId": "ig-1", "autoReplyEnabled": false, "humanHandoffActive": true});
    let r = c.create_ok(&c.a, b);
    let dm = r["agent"]["id"].as_str().unwrap().to_string();
    assert_eq!(r["assignment"]["providerAccountId"], "ig-1");
    assert_eq!(r["assignment"]["phoneNumberId"], Value::Null);
    assert_eq!(r["assignment"]["humanHandoffActive"], true);
    let d = c.get(&c.a, "/api/v1/channels/assignments?channel=photoapp").assert_ok(200).clone();
    assert_eq!((d["providerAccountId"].clone(), d["aiAgentId"].clone()), (json!("ig-1"), json!(dm)));
    let r = put(json!({"channel": "photoapp", "phoneNumberId": "pn-1", "aiAgentId": dm}));
    assert_code(&r, 400, "validation", "invalid_request");
    assert_eq!(r.body["error"]["details"][0]["field"], "phoneNumberId", "{}", r.text);
    // Disconnecting revokes the account's use, including its assignment.
    c.delete(&c.a, "/api/v1/channels/photoapp", json!({})).assert_ok(200);
    let d = c.get(&c.a, "/api/v1/channels/assignments?channel=photoapp").assert_ok(200).clone();
    assert_eq!((d["providerAccountId"].clone(), d["aiAgentId"].clone()), (Value::Null, Value::Null));
    assert_code(&put(json!({"channel": "photoapp", "aiAgentId": dm})), 409, "conflict", "photoapp_account_not_connected");

    // B's view is its own.
    let d = c.get(&c.b, "/api/v1/channels/assignments?channel=chatapp").assert_ok(200).clone();
    assert_eq!(d["phoneNumberId"], "pn-b");
    let ids: Vec<&Value> = d["assignableAgents"].as_array().unwrap().iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, vec![&json!(b_agent)]);

    let tokens = c.tokens();
    c.assert_no_token_leaked(&tokens);
}
