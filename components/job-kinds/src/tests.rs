//! Stored rows must keep running: these pin every kind's name, a sample
//! payload's exact JSON and its options, and read back the rows written
//! before this crate existed (the host's hand-built JSON, older cursors).

use serde_json::json;

use crate::campaigns::*;
use crate::data_sources::*;
use crate::messaging::*;
use crate::voice::*;
use crate::webhooks::*;
use crate::{JobKind, JobOptions};

/// `job` is stored as (`kind`, `payload`), runs with `options`, and reads back as itself.
fn pinned<J: JobKind + PartialEq + std::fmt::Debug>(job: J, kind: &str, payload: &str, options: JobOptions) {
    assert_eq!(job.to_row(), (kind.to_string(), payload.to_string()), "the stored row of {kind}");
    assert_eq!(job.kind(), kind);
    assert_eq!(job.options(), options, "the options of {kind}");
    assert_eq!(J::from_row(kind, payload).unwrap(), job, "{kind} reads back");
}

fn options(calls_out: bool, lane: Option<&str>) -> JobOptions {
    JobOptions { calls_out, lane: lane.map(str::to_string), delay_ms: 0 }
}

fn message(id: &str) -> MessageRef {
    MessageRef { message_id: id.into() }
}

#[test]
fn messaging_kinds() {
    let inbound = Inbound { phone_number_id: "pn1".into(), from: "+14155550123".into(), name: None, text: "hi".into(), provider_message_id: "wamid.1".into() };
    pinned(MessagingJob::Inbound(inbound), "messaging.inbound", r#"{"phoneNumberId":"pn1","from":"+14155550123","name":null,"text":"hi","providerMessageId":"wamid.1"}"#, options(false, None));
    let inbound = PhotoappInbound { account_id: "acc".into(), from: "u.1".into(), name: Some("ann".into()), text: "hi".into(), provider_message_id: "m1".into() };
    pinned(MessagingJob::PhotoappInbound(inbound), "messaging.photoapp-inbound", r#"{"accountId":"acc","from":"u.1","name":"ann","text":"hi","providerMessageId":"m1"}"#, options(false, None));
    let reaction = Reaction { account_id: "acc".into(), from: "u.1".into(), reaction: "love".into(), message_id: Some("m1".into()), removed: true, occurred_at: None };
    pinned(
        MessagingJob::PhotoappReaction(reaction.clone()),
        "messaging.photoapp-reaction",
        r#"{"accountId":"acc","from":"u.1","reaction":"love","messageId":"m1","removed":true}"#,
        options(false, None),
    );
    let dated = Reaction { occurred_at: Some("2026-11-26T10:00:00.000Z".into()), ..reaction };
    pinned(
        MessagingJob::PhotoappReaction(dated),
        "messaging.photoapp-reaction",
        r#"{"accountId":"acc","from":"u.1","reaction":"love","messageId":"m1","removed":true,"occurredAt":"2026-11-26T10:00:00.000Z"}"#,
        options(false, None),
    );
    let referral = Referral { account_id: "acc".into(), from: "u.1".into(), source: "ad".into(), ad_id: Some("ad9".into()), post_id: None };
    pinned(MessagingJob::PhotoappReferral(referral), "messaging.photoapp-referral", r#"{"accountId":"acc","from":"u.1","source":"ad","adId":"ad9","postId":null}"#, options(false, None));
    let comment = Comment { account_id: "acc".into(), from: "u.1".into(), name: None, text: "nice".into(), post_id: Some("p1".into()), comment_id: "c1".into(), occurred_at: None };
    pinned(
        MessagingJob::PhotoappComment(comment.clone()),
        "messaging.photoapp-comment",
        r#"{"accountId":"acc","from":"u.1","name":null,"text":"nice","postId":"p1","commentId":"c1"}"#,
        options(false, None),
    );
    let dated = Comment { occurred_at: Some("2026-11-20T10:00:00.000Z".into()), ..comment };
    pinned(
        MessagingJob::PhotoappComment(dated),
        "messaging.photoapp-comment",
        r#"{"accountId":"acc","from":"u.1","name":null,"text":"nice","postId":"p1","commentId":"c1","occurredAt":"2026-11-20T10:00:00.000Z"}"#,
        options(false, None),
    );
    pinned(MessagingJob::PhotoappCommentReply(CommentRef { comment_id: "c1".into() }), "messaging.photoapp-comment-reply", r#"{"commentId":"c1"}"#, options(true, None));
    pinned(MessagingJob::Autoreply(message("m1")), "messaging.autoreply", r#"{"messageId":"m1"}"#, options(true, None));
    pinned(MessagingJob::AgentTestReply(TestTurnRef { turn_id: "t1".into() }), "messaging.agent-test-reply", r#"{"turnId":"t1"}"#, options(true, None));
    pinned(MessagingJob::Deliver(message("m1")), "messaging.deliver", r#"{"messageId":"m1"}"#, options(true, Some("message:m1")));
}

#[test]
fn data_sources_kinds() {
    pinned(
        DataSourcesJob::Ingest(Ingest::start("v1")),
        "data-sources.ingest",
        r#"{"versionId":"v1","phase":null,"stream":0,"fmt":null,"size":0,"offset":0,"row":0,"started":false,"badElements":0,"resolved":false,"activate":true}"#,
        options(false, None),
    );
    let mut cursor = Ingest::reinterpret("v1", false);
    cursor.sheet_dates = vec![(2, SheetDate { kind: SheetDateKind::DateTime, base1904: true }), (3, SheetDate::default())];
    pinned(
        DataSourcesJob::Ingest(cursor),
        "data-sources.ingest",
        r#"{"versionId":"v1","phase":"interpret","stream":0,"fmt":null,"size":0,"offset":0,"row":0,"started":false,"badElements":0,"resolved":true,"activate":false,"sheetDates":[[2,{"kind":"dateTime","base1904":true}],[3,{"kind":"date","base1904":false}]]}"#,
        options(false, None),
    );
    let typed = Ingest { phase: Some("parse".into()), row: 5000, typed_as: vec!["integer".into(), "text".into()], ..Ingest::start("v1") };
    pinned(
        DataSourcesJob::Ingest(typed.clone()),
        "data-sources.ingest",
        r#"{"versionId":"v1","phase":"parse","stream":0,"fmt":null,"size":0,"offset":0,"row":5000,"started":false,"badElements":0,"resolved":false,"activate":true,"typedAs":["integer","text"]}"#,
        options(false, None),
    );
    pinned(
        DataSourcesJob::Ingest(Ingest { untyped: true, ..typed }),
        "data-sources.ingest",
        r#"{"versionId":"v1","phase":"parse","stream":0,"fmt":null,"size":0,"offset":0,"row":5000,"started":false,"badElements":0,"resolved":false,"activate":true,"typedAs":["integer","text"],"untyped":true}"#,
        options(false, None),
    );
    pinned(DataSourcesJob::Embed(Embed { source_id: "s1".into(), after: 40 }), "data-sources.embed", r#"{"sourceId":"s1","after":40}"#, options(true, Some("embed:s1")));
}

#[test]
fn voice_campaigns_and_webhooks_kinds() {
    pinned(VoiceJob::Call(CallRef { call_id: "call1".into() }), "voice.call", r#"{"callId":"call1"}"#, options(true, None));
    pinned(
        CampaignsJob::Dispatch(IterationRef { iteration_id: "i1".into(), quiet: 2, window_cursor: None }),
        "campaigns.dispatch",
        r#"{"iterationId":"i1","quiet":2}"#,
        options(false, Some("campaign:i1")),
    );
    pinned(
        CampaignsJob::Dispatch(IterationRef { iteration_id: "i1".into(), quiet: 0, window_cursor: Some("m9".into()) }),
        "campaigns.dispatch",
        r#"{"iterationId":"i1","quiet":0,"windowCursor":"m9"}"#,
        options(false, Some("campaign:i1")),
    );
    pinned(CampaignsJob::Summarize(RunRef { run_id: "r1".into() }), "campaigns.summarize", r#"{"runId":"r1"}"#, options(true, Some("summary:r1")));
    let delivery = Delivery { subscription_id: "sub1".into(), event_id: "e1".into(), attempt: 1, payload: json!({"eventType": "x.y", "eventId": "e1"}), first_attempt: 0 };
    pinned(
        WebhooksJob::Deliver(delivery.clone()),
        "webhooks.deliver",
        r#"{"subscriptionId":"sub1","eventId":"e1","attempt":1,"payload":{"eventType":"x.y","eventId":"e1"}}"#,
        options(true, Some("webhooks:sub1")),
    );
    pinned(
        WebhooksJob::Deliver(Delivery { first_attempt: 3, ..delivery }),
        "webhooks.deliver",
        r#"{"subscriptionId":"sub1","eventId":"e1","attempt":1,"payload":{"eventType":"x.y","eventId":"e1"},"firstAttempt":3}"#,
        options(true, Some("webhooks:sub1")),
    );
}

/// Rows written before the kinds were declared here, in the shapes the host
/// built by hand (other key orders, optional fields left out), still read.
#[test]
fn rows_stored_before_read_back() {
    let inbound = MessagingJob::from_row("messaging.inbound", r#"{"from":"+14155550123","name":null,"text":"hi","providerMessageId":"sbx.1","phoneNumberId":"pn1"}"#).unwrap();
    assert_eq!(inbound, MessagingJob::Inbound(Inbound { phone_number_id: "pn1".into(), from: "+14155550123".into(), name: None, text: "hi".into(), provider_message_id: "sbx.1".into() }));
    let reaction = MessagingJob::from_row("messaging.photoapp-reaction", r#"{"reaction":"love","messageId":null,"removed":false,"accountId":"acc","from":"u.1"}"#).unwrap();
    assert_eq!(reaction, MessagingJob::PhotoappReaction(Reaction { account_id: "acc".into(), from: "u.1".into(), reaction: "love".into(), message_id: None, removed: false, occurred_at: None }));
    let referral = MessagingJob::from_row("messaging.photoapp-referral", r#"{"source":"post","accountId":"acc","from":"u.1"}"#).unwrap();
    assert_eq!(referral, MessagingJob::PhotoappReferral(Referral { account_id: "acc".into(), from: "u.1".into(), source: "post".into(), ad_id: None, post_id: None }));
    // The embeddings backfill wrote no cursor.
    assert_eq!(DataSourcesJob::from_row("data-sources.embed", r#"{"sourceId":"s1"}"#).unwrap(), DataSourcesJob::Embed(Embed::start("s1")));
    // A dispatch job queued before `quiet` existed.
    assert_eq!(CampaignsJob::from_row("campaigns.dispatch", r#"{"iterationId":"i1"}"#).unwrap(), CampaignsJob::Dispatch(IterationRef { iteration_id: "i1".into(), quiet: 0, window_cursor: None }));
    // A cursor without the fields added later starts them at their defaults.
    let DataSourcesJob::Ingest(cursor) = DataSourcesJob::from_row("data-sources.ingest", r#"{"versionId":"v1"}"#).unwrap() else { panic!("an ingest cursor") };
    assert_eq!(cursor, Ingest::start("v1"));
}

#[test]
fn a_row_of_another_kind_or_payload_is_refused() {
    assert!(MessagingJob::from_row("messaging.deliver", r#"{"other":1}"#).is_err());
    assert!(MessagingJob::from_row("messaging.deliver", "not json").is_err());
    assert!(MessagingJob::from_row("voice.call", r#"{"callId":"c"}"#).is_err());
    assert!(VoiceJob::from_row("voice.hangup", "{}").is_err());
}

#[test]
fn all_kinds_names_every_kind_of_every_area() {
    let kinds = crate::all_kinds();
    for kind in [
        "messaging.deliver",
        "messaging.inbound",
        "messaging.photoapp-inbound",
        "messaging.photoapp-reaction",
        "messaging.photoapp-referral",
        "messaging.photoapp-comment",
        "messaging.photoapp-comment-reply",
        "messaging.autoreply",
        "messaging.agent-test-reply",
        "data-sources.ingest",
        "data-sources.embed",
        "webhooks.deliver",
        "voice.call",
        "campaigns.dispatch",
        "campaigns.summarize",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} in {kinds:?}");
    }
    assert!(kinds.iter().all(|k| k.contains('.') && !k.contains(' ')), "{kinds:?}");
}
