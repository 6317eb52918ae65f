//! THE list: one row per operation, the contract's 54 in its order, then
//! ours. Each row says its method and path, its id (an `OperationId`:
//! `components/operation-ids` lists every id under the area that answers
//! it), summary, scopes, whether an `Idempotency-Key` is required, where
//! the business id comes from, its query parameters, its request and
//! response schemas and its success statuses; then, only where it differs
//! from most operations, its other rules (`Rules`: body limit, raw form,
//! outbound URL fields, copy-once secrets, the id a create makes, its tag).

use super::{BusinessIn, Condition, ConditionalScope, Created, Method, Operation, OperationId, QueryParam, RawBody, Response, Rules};

const UUID: &str = r#"{"type":"string","format":"uuid"}"#;

const BUSINESS: QueryParam = QueryParam { name: "businessId", required: true, schema: UUID, description: "The business the API key belongs to." };
/// Every string of this form is a position a list can resume from
/// (`components/guest/src/cursor.rs` has the same pattern; a test below
/// keeps the two equal), so the document accepts no cursor the service
/// refuses.
pub(super) const CURSOR: QueryParam = QueryParam {
    name: "cursor",
    required: false,
    schema: r#"{"type":"string","pattern":"^(?:[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\\.[0-9]{1,9})?Z~)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"}"#,
    description: "The previous page's `nextCursor`, passed back unchanged.",
};
/// listContacts' cursor: the id, or the order that made it with its
/// position (`components/contacts/src/order.rs` has the same pattern;
/// tests/api/contacts/sort.rs keeps the two equal).
const CONTACT_CURSOR: QueryParam = QueryParam {
    name: "cursor",
    required: false,
    schema: r#"{"type":"string","pattern":"^(?:(?:-createdAt|-?(?:name|mobile)~(?:[A-Za-z0-9_-]{4})*(?:[A-Za-z0-9_-]{2,3})?)~)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"}"#,
    description: "The previous page's `nextCursor`, passed back unchanged with the same `sort`.",
};
const LIMIT: QueryParam = QueryParam { name: "limit", required: false, schema: r#"{"type":"integer","minimum":1,"maximum":200,"default":50}"#, description: "Page size, 1 to 200 (default 50)." };
const fn uuid_param(name: &'static str, required: bool, description: &'static str) -> QueryParam {
    QueryParam { name, required, schema: UUID, description }
}

const Q_BUSINESS: &[QueryParam] = &[BUSINESS];
/// The metadata of a raw upload (operation 21). Optional in the table
/// because a JSON body carries them in the body instead; the gateway
/// requires all four for a raw body (`RawBody::required_query`).
const Q_UPLOAD: &[QueryParam] = &[
    QueryParam {
        name: "businessId",
        required: false,
        schema: UUID,
        description: "Raw upload only (required with a non-JSON body; a JSON body carries it in the body): the business the API key belongs to.",
    },
    QueryParam { name: "dataSourceId", required: false, schema: UUID, description: "Raw upload only (required with a non-JSON body): the target structured Data Source." },
    QueryParam {
        name: "fileName",
        required: false,
        schema: r#"{"type":"string","minLength":1,"maxLength":255}"#,
        description: "Raw upload only (required with a non-JSON body): the original file name, 1 to 255 characters (URL-encoded).",
    },
    QueryParam {
        name: "format",
        required: false,
        schema: r#"{"type":"string","enum":["csv","tsv","json","xlsx","xlsm"]}"#,
        description: "Raw upload only (required with a non-JSON body): csv, tsv, json (array of objects), xlsx or xlsm (first worksheet).",
    },
];
/// The raw form of an upload (operation 21): any Content-Type other than
/// JSON sends the file itself, its metadata in the query (`Q_UPLOAD`).
const RAW_UPLOAD: RawBody = RawBody {
    media_types: &[
        ("application/octet-stream", "DataSourceUploadFile"),
        ("text/csv", "DataSourceUploadText"),
        ("text/tab-separated-values", "DataSourceUploadText"),
        ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "DataSourceUploadFile"),
        ("application/vnd.ms-excel.sheet.macroEnabled.12", "DataSourceUploadFile"),
    ],
    required_query: &["businessId", "dataSourceId", "fileName", "format"],
};
const Q_PAGE: &[QueryParam] = &[BUSINESS, CURSOR, LIMIT];
/// The call list's page and filters (operation 37).
const Q_CALLS: &[QueryParam] = &[
    BUSINESS,
    CURSOR,
    LIMIT,
    QueryParam {
        name: "status",
        required: false,
        schema: r#"{"type":"string","enum":["queued","ringing","answered","cancelling","completed","no_answer","busy","failed","cancelled"]}"#,
        description: "Only calls in this status.",
    },
    uuid_param("agentId", false, "Only calls of this agent."),
    uuid_param("contactId", false, "Only calls to this contact."),
    uuid_param("campaignId", false, "Only calls of this campaign."),
    QueryParam {
        name: "endedBy",
        required: false,
        schema: r#"{"type":"string","enum":["customer","agent","operator","system","provider","unknown"]}"#,
        description: "Only calls ended by this party.",
    },
    QueryParam {
        name: "endReason",
        required: false,
        schema: r#"{"type":"string","minLength":1,"maxLength":64,"pattern":"^[a-z0-9_]+$"}"#,
        description: "Only calls with this end reason, e.g. `customer_hung_up`.",
    },
];

/// The inbox's list (operation 61): its page and filters.
const Q_CONVERSATIONS: &[QueryParam] = &[
    BUSINESS,
    CURSOR,
    LIMIT,
    QueryParam { name: "channel", required: false, schema: r#"{"type":"string","enum":["chatapp","photoapp"]}"#, description: "Only conversations of this channel." },
    uuid_param("agentId", false, "Only conversations of the numbers and accounts this agent is assigned to."),
    QueryParam {
        name: "status",
        required: false,
        schema: r#"{"type":"string","enum":["agent","human","automation","unassigned"]}"#,
        description: "Only conversations in this status (who answers now; see ConversationStatus).",
    },
    QueryParam {
        name: "unread",
        required: false,
        schema: r#"{"type":"string","enum":["true","false"]}"#,
        description: "true: only conversations with unread messages or comments (for a console session, unread by its user); false: only those without.",
    },
    QueryParam { name: "state", required: false, schema: r#"{"type":"string","enum":["open","resolved"]}"#, description: "Only open or only resolved conversations." },
    QueryParam {
        name: "assignee",
        required: false,
        schema: r#"{"type":"string","pattern":"^(?:me|none|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"}"#,
        description: "Only conversations assigned to this person: `me` (the console session's user; with an API key, which is nobody, none), `none` (nobody), or a user id of listTeamMembers.",
    },
    QueryParam {
        name: "q",
        required: false,
        schema: r#"{"type":"string","minLength":1,"maxLength":100}"#,
        description: "Search, case-insensitive: the contact's name or mobile, the photoapp handle, or the text of any message or comment.",
    },
];

/// The daily figures (operations 67-69): how many days, ending today (UTC).
const Q_STATS: &[QueryParam] = &[
    BUSINESS,
    QueryParam {
        name: "days",
        required: false,
        schema: r#"{"type":"integer","minimum":1,"maximum":90,"default":14}"#,
        description: "How many days, 1 to 90 (default 14): today (UTC) and the days before it.",
    },
];

use BusinessIn::{Body, Public, Query};
use Method::*;

/// One row: the operation's id (`OperationId`, whose area answers it),
/// its method, path and the rest; then, only where the operation differs
/// from most, its [`Rules`] fields (`max_body_bytes: …, creates: …`).
macro_rules! op {
    (@row $n:expr, $m:ident, $path:expr, $id:ident, $summary:expr, scopes: [$($s:expr),*], cond: $cond:expr,
     idem: $idem:expr, $bin:ident, query: $q:expr, req: $req:expr, resp: $resp:expr, status: $st:expr $(, $rule:ident: $val:expr)* $(,)?) => {
        Operation {
            number: $n, method: $m, path: $path, id: OperationId::$id, summary: $summary,
            scopes: &[$($s),*], conditional_scopes: $cond, idempotency_required: $idem,
            component: OperationId::$id.component(), business_in: $bin, query: $q, request: $req, response: $resp,
            success_status: &$st, rules: Rules { $($rule: $val,)* ..Rules::DEFAULT },
        }
    };
    // A console-session route (see `CONSOLE_API_PREFIX`).
    (console $n:expr, $m:ident, $path:expr, $($rest:tt)*) => {
        op!(@row $n, $m, concat!("/console/api", $path), $($rest)*)
    };
    ($n:expr, $m:ident, $path:expr, $($rest:tt)*) => {
        op!(@row $n, $m, concat!("/api/v1", $path), $($rest)*)
    };
}

/// Where a create's answer carries the id it made, and the name other
/// operations take it by.
const fn creates(pointer: &'static str, name: &'static str) -> Option<Created> {
    Some(Created { pointer, name })
}

const NONE: &[ConditionalScope] = &[];
use Response::{Json, Raw};

pub static OPERATIONS: &[Operation] = &[
    op!(1, Get, "/contracts/whatsapp-automation", GetAutomationContract, "Read the public chatapp automation contract",
        scopes: [], cond: NONE, idem: false, Public, query: &[], req: None, resp: Json("AutomationContract"), status: [200],
        // Answered by the gateway itself; documented with the webhooks it describes.
        tag: Some("webhooks")),
    op!(2, Get, "/webhook-subscriptions", ListWebhookSubscriptions, "List webhook subscriptions",
        scopes: ["webhooks:write"], cond: NONE, idem: false, Query, query: Q_PAGE, req: None, resp: Json("WebhookSubscriptionList"), status: [200]),
    op!(3, Post, "/webhook-subscriptions", CreateWebhookSubscription, "Create a webhook subscription",
        scopes: ["webhooks:write", "channels:write"], cond: NONE, idem: false, Body, query: &[], req: Some("WebhookSubscriptionCreate"), resp: Json("WebhookSubscriptionWithSecret"), status: [201],
        outbound_url_fields: &["callbackUrl"], secret_fields: &["signingSecret"], creates: creates("/data/subscription/id", "subscriptionId")),
    op!(4, Patch, "/webhook-subscriptions/{subscriptionId}", UpdateWebhookSubscription, "Update a webhook subscription",
        scopes: ["webhooks:write"], cond: NONE, idem: false, Body, query: &[], req: Some("WebhookSubscriptionUpdate"), resp: Json("WebhookSubscriptionResult"), status: [200],
        outbound_url_fields: &["callbackUrl"]),
    op!(5, Delete, "/webhook-subscriptions/{subscriptionId}", RevokeWebhookSubscription, "Revoke a webhook subscription permanently",
        scopes: ["webhooks:write"], cond: NONE, idem: false, Query, query: Q_BUSINESS, req: None, resp: Json("WebhookSubscriptionResult"), status: [200]),
    op!(6, Post, "/webhook-subscriptions/{subscriptionId}/rotate-secret", RotateWebhookSigningSecret, "Rotate a subscription's signing secret",
        scopes: ["webhooks:write"], cond: NONE, idem: false, Body, query: &[], req: Some("BusinessMutation"), resp: Json("WebhookSubscriptionWithSecret"), status: [200],
        secret_fields: &["signingSecret"]),
    op!(7, Post, "/media", UploadMedia, "Upload image media for chatapp messages",
        scopes: ["chatapp:media"], cond: NONE, idem: true, Body, query: &[], req: Some("MediaUpload"), resp: Json("MediaUploaded"), status: [201],
        creates: creates("/data/mediaId", "mediaId")),
    op!(8, Post, "/messages", SendMessage, "Queue a chatapp or photoapp message",
        scopes: ["communications:write"], cond: &[
            ConditionalScope { when: Condition::BodyFieldIs { field: "type", value: "image" }, scope: "chatapp:media" },
            ConditionalScope { when: Condition::BodyFieldIs { field: "channel", value: "photoapp" }, scope: "photoapp:write" },
        ], idem: true, Body, query: &[], req: Some("MessageSend"), resp: Json("MessageQueued"), status: [202],
        creates: creates("/data/messageId", "messageId")),
    op!(9, Get, "/messages/{messageId}", GetMessage, "Read a message's delivery state",
        scopes: ["communications:read"], cond: NONE, idem: false, Query, query: Q_BUSINESS, req: None, resp: Json("MessageDeliveryState"), status: [200]),
    op!(10, Get, "/channels", ListChannels, "List channels with readiness and assignment mode",
        scopes: ["channels:read"], cond: NONE, idem: false, Query, query: Q_BUSINESS, req: None, resp: Json("ChannelList"), status: [200]),
    op!(11, Get, "/channels/photoapp", GetPhotoappConnection, "Read the photoapp connection",
        scopes: ["channels:read", "photoapp:read"], cond: NONE, idem: false, Query, query: Q_BUSINESS, req: None, resp: Json("PhotoappConnection"), status: [200]),
    op!(12, Delete, "/channels/photoapp", DisconnectPhotoapp, "Disconnect the photoapp account",
        scopes: ["channels:write", "photoapp:write"], cond: NONE, idem: false, Body, query: &[], req: Some("BusinessMutation"), resp: Json("PhotoappConnection"), status: [200]),
    op!(13, Get, "/agents", ListAgents, "List agents",
        scopes: ["agents:read"], cond: NONE, idem: false, Query, query: Q_PAGE, req: None, resp: Json("AgentList"), status: [200]),
    op!(14, Post, "/agents", CreateAgent, "Create an agent",
        scopes: ["agents:write"], cond: &[
            ConditionalScope { when: Condition::All(&[Condition::BodyFieldIs { field: "channel", value: "chatapp" }, Condition::BodyFieldPresent { field: "assignment" }]), scope: "channels:write" },
        ], idem: true, Body, query: &[], req: Some("AgentCreate"), resp: Json("AgentCreated"), status: [201],
        creates: creates("/data/agent/id", "agentId")),
    op!(15, Patch, "/agents", UpdateAgent, "Update an agent",
        scopes: ["agents:write"], cond: NONE, idem: true, Body, query: &[], req: Some("AgentUpdate"), resp: Json("AgentResult"), status: [200]),
    op!(16, Delete, "/agents", ArchiveAgent, "Archive an agent",
        scopes: ["agents:write"], cond: NONE, idem: true, Body, query: &[], req: Some("BusinessAgentMutation"), resp: Json("AgentResult"), status: [200]),
    op!(17, Get, "/data-sources", ListDataSources, "List data sources",
        scopes: ["data_sources:read"], cond: NONE, idem: false, Query, query: Q_PAGE, req: None, resp: Json("DataSourceList"), status: [200]),
    op!(18, Post, "/data-sources", CreateDataSource, "Create a data source",
        scopes: ["data_sources:write"], cond: NONE, idem: true, Body, query: &[], req: Some("DataSourceCreate"), resp: Json("DataSourceResult"), status: [201],
        creates: creates("/data/dataSource/id", "dataSourceId")),
    op!(19, Patch, "/data-sources", UpdateDataSource, "Update a data source",
        scopes: ["data_sources:write"], cond: NONE, idem: true, Body, query: &[], req: Some("DataSourceUpdate"), resp: Json("DataSourceResult"), status: [200]),
    op!(20, Delete, "/data-sources", ArchiveDataSource, "Archive a data source",
        scopes: ["data_sources:write"], cond: NONE, idem: true, Body, query: &[], req: Some("DataSourceMutation"), resp: Json("DataSourceResult"), status: [200]),
    op!(21, Post, "/data-sources/upload", UploadDataSourceAsset, "Upload a CSV, TSV, JSON, XLSX or XLSM asset for ingestion",
        scopes: ["data_sources:write"], cond: NONE, idem: true, Body, query: Q_UPLOAD, req: Some("DataSourceUpload"), resp: Json("IngestionAccepted"), status: [202],
        // Assets (CSV, XLSX …) arrive as base64 in JSON, or raw.
        max_body_bytes: 64 << 20, raw_body: Some(&RAW_UPLOAD), creates: creates("/data/ingestionId", "ingestionId")),
    op!(22, Get, "/data-sources/ingestions", InspectIngestion, "Inspect an ingestion",
        scopes: ["data_sources:read"], cond: NONE, idem: false, Query,
        query: &[BUSINESS, uuid_param("ingestionId", true, "The ingestion returned by upload.")], req: None, resp: Json("IngestionInspection"), status: [200]),
    op!(23, Patch, "/data-sources/ingestions", ResolveIngestion, "Resolve reviewed columns and activate the version",
        scopes: ["data_sources:write"], cond: NONE, idem: true, Body, query: &[], req: Some("IngestionResolve"), resp: Json("IngestionInspection"), status: [200]),
    op!(24, Get, "/contacts", ListContacts, "List contacts",
        scopes: ["contacts:read"], cond: NONE, idem: false, Query,
        query: &[BUSINESS, CONTACT_CURSOR, LIMIT,
            QueryParam { name: "sort", required: false, schema: r#"{"type":"string","enum":["createdAt","-createdAt","name","-name","mobile","-mobile"],"default":"createdAt"}"#, description: "Ours: the order, ties broken by contact id. `createdAt` (the default): oldest first; `name`: A to Z in either case (other letters by code point); `mobile`: by the E.164 text; a leading `-` reverses. A `nextCursor` continues the order it was made in: given with another `sort` it is refused (400 `cursor_sort_mismatch`)." },
            QueryParam { name: "includeTotal", required: false, schema: r#"{"type":"string","enum":["true","false"],"default":"false"}"#, description: "Ours: true answers `total`, how many contacts match the filters (the same on every page; what updateContacts' and deleteContacts' `matching.count` expect)." },
            QueryParam { name: "search", required: false, schema: r#"{"type":"string","minLength":1,"maxLength":64,"pattern":"^[ .()-]*(?:\\+?[ .()-]*[0-9][0-9 .()-]*)?$","x-patternMessage":"must be the digits of a mobile number (a leading + URL-encoded as %2B for numbers starting with them, digits alone for numbers containing them; spaces, dots, dashes and parentheses may separate them); to find contacts by name, use the `name` parameter"}"#, description: "Matches mobile numbers: `+digits` those starting with them, plain digits those containing them; spaces, dots, dashes and parentheses are ignored. URL-encode the leading plus (%2B)." },
            QueryParam { name: "name", required: false, schema: r#"{"type":"string","minLength":1,"maxLength":100}"#, description: "Ours: only contacts whose name contains this text (A to Z in either case; other letters as written). Blank is no filter; with `search` or `categoryId`, contacts matching all of them." },
            uuid_param("categoryId", false, "Only contacts of this category.")],
        req: None, resp: Json("ContactList"), status: [200]),
    op!(25, Post, "/contacts", CreateContact, "Create a contact",
        scopes: ["contacts:write"], cond: NONE, idem: true, Body, query: &[], req: Some("ContactCreate"), resp: Json("ContactResult"), status: [201],
        creates: creates("/data/contact/id", "contactId")),
    op!(26, Delete, "/contacts", DeleteContacts, "Delete selected contacts, every contact of a category, or every contact matching the list's filters",
        scopes: ["contacts:write"], cond: NONE, idem: true, Body, query: &[], req: Some("ContactsDelete"), resp: Json("ContactsDeleted"), status: [200]),
    op!(27, Post, "/contacts/imports", ImportContacts, "Import contacts from CSV into categories",
        scopes: ["contacts:write"], cond: NONE, idem: true, Body, query: &[], req: Some("ContactImport"), resp: Json("ContactImportResult"), status: [200]),
    op!(28, Get, "/contacts/categories", ListCategories, "List categories with contact counts",
        scopes: ["contacts:read"], cond: NONE, idem: false, Query, query: Q_PAGE, req: None, resp: Json("CategoryList"), status: [200]),
    op!(29, Post, "/contacts/categories", CreateCategory, "Create a category (an existing name is reused)",
        scopes: ["contacts:write"], cond: NONE, idem: true, Body, query: &[], req: Some("CategoryCreate"), resp: Json("CategoryResult"), status: [201, 200],
        creates: creates("/data/category/id", "categoryId")),
    op!(30, Delete, "/contacts/categories", DeleteCategory, "Delete a category, confirming its exact name",
        scopes: ["contacts:write"], cond: NONE, idem: true, Body, query: &[], req: Some("CategoryDelete"), resp: Json("CategoryDeleted"), status: [200]),
    op!(31, Get, "/contacts/{contactId}", GetContact, "Read a contact",
        scopes: ["contacts:read"], cond: &[
            ConditionalScope { when: Condition::QueryPresent { name: "campaignId" }, scope: "communications:read" },
        ], idem: false, Query,
        query: &[BUSINESS, uuid_param("campaignId", false, "Include this campaign's shared contact summary (needs communications:read).")],
        req: None, resp: Json("ContactDetail"), status: [200]),
    op!(32, Patch, "/contacts/{contactId}", UpdateContact, "Update a contact",
        scopes: ["contacts:write"], cond: NONE, idem: true, Body, query: &[], req: Some("ContactUpdate"), resp: Json("ContactResult"), status: [200]),
    op!(33, Get, "/contacts/{contactId}/timeline", GetContactTimeline, "Read a contact's cross-channel timeline, newest first",
        scopes: ["communications:read"], cond: NONE, idem: false, Query,
        query: &[BUSINESS, CURSOR, LIMIT, uuid_param("campaignId", false, "Only entries of this campaign.")],
        req: None, resp: Json("Timeline"), status: [200]),
    op!(34, Post, "/channel-participants/{participantId}/link-contact", LinkParticipantContact, "Link a channel participant to a mobile-first contact",
        scopes: ["contacts:write"], cond: NONE, idem: true, Body, query: &[], req: Some("ParticipantLink"), resp: Json("ParticipantLinked"), status: [200]),
    op!(35, Get, "/channels/assignments", GetChannelAssignment, "Read a channel assignment",
        scopes: ["channels:read"], cond: NONE, idem: false, Query,
        query: &[BUSINESS,
            QueryParam { name: "channel", required: true, schema: r#"{"type":"string","enum":["chatapp","sms","voice","photoapp","other"]}"#, description: "The channel, e.g. chatapp." },
            QueryParam { name: "phoneNumberId", required: false, schema: r#"{"type":"string","minLength":1,"maxLength":128}"#, description: "The connected phone number (chatapp)." }],
        req: None, resp: Json("ChannelAssignmentRead"), status: [200]),
    op!(36, Patch, "/channels/assignments", UpdateChannelAssignment, "Assign an agent to a channel",
        scopes: ["channels:write"], cond: NONE, idem: false, Body, query: &[], req: Some("ChannelAssignment"), resp: Json("ChannelAssignmentRead"), status: [200]),
    op!(37, Get, "/voice/calls", ListCalls, "List calls, newest first",
        scopes: ["voice:read"], cond: NONE, idem: false, Query, query: Q_CALLS, req: None, resp: Json("CallList"), status: [200]),
    op!(38, Post, "/voice/calls", StartCall, "Start an outbound AI voice call",
        scopes: ["voice:write"], cond: NONE, idem: true, Body, query: &[], req: Some("VoiceCallStart"), resp: Json("CallStartResult"), status: [202],
        creates: creates("/data/callId", "callId")),
    op!(39, Post, "/voice/calls/batch", StartCallBatch, "Start calls to up to 20 contacts",
        scopes: ["voice:write"], cond: NONE, idem: true, Body, query: &[], req: Some("VoiceBatchStart"), resp: Json("CallBatchResult"), status: [202]),
    op!(40, Get, "/voice/calls/resolve", ResolveCallContext, "Resolve an agent's allowlisted contact variables and destination",
        scopes: ["voice:read", "contacts:read"], cond: NONE, idem: false, Query,
        query: &[BUSINESS, uuid_param("agentId", true, "The voice agent."), uuid_param("contactId", false, "The contact to resolve."),
            QueryParam { name: "toNumber", required: false, schema: r#"{"type":"string","pattern":"^\\+[1-9][0-9]{7,14}$"}"#, description: "A direct E.164 target." }],
        req: None, resp: Json("ResolvedContext"), status: [200]),
    op!(41, Get, "/voice/calls/{callId}", GetCall, "Read a call report",
        scopes: ["voice:read"], cond: NONE, idem: false, Query, query: Q_BUSINESS, req: None, resp: Json("CallDetail"), status: [200]),
    op!(42, Get, "/voice/calls/{callId}/transcript", DownloadTranscript, "Download a call transcript",
        scopes: ["voice:read"], cond: NONE, idem: false, Query, query: Q_BUSINESS, req: None, resp: Raw("text/plain; charset=utf-8"), status: [200]),
    op!(43, Delete, "/voice/calls/{callId}", CancelCall, "Cancel a call",
        scopes: ["voice:write"], cond: NONE, idem: true, Query, query: Q_BUSINESS, req: None, resp: Json("CallCancellation"), status: [200]),
    op!(44, Get, "/campaigns", ListCampaigns, "List campaigns",
        scopes: ["campaigns:read"], cond: NONE, idem: false, Query, query: Q_PAGE, req: None, resp: Json("CampaignList"), status: [200]),
    op!(45, Post, "/campaigns", CreateCampaign, "Create a campaign with its first iteration",
        scopes: ["campaigns:write"], cond: NONE, idem: true, Body, query: &[], req: Some("CampaignCreate"), resp: Json("CampaignCreated"), status: [201],
        creates: creates("/data/campaign/id", "campaignId")),
    op!(46, Get, "/campaigns/{campaignId}", GetCampaign, "Read a campaign",
        scopes: ["campaigns:read"], cond: NONE, idem: false, Query, query: Q_BUSINESS, req: None, resp: Json("CampaignResult"), status: [200]),
    op!(47, Patch, "/campaigns/{campaignId}", UpdateCampaign, "Start, pause or cancel the current iteration",
        scopes: ["campaigns:write"], cond: NONE, idem: true, Body, query: &[], req: Some("CampaignUpdate"), resp: Json("CampaignResult"), status: [200]),
    op!(48, Get, "/campaigns/{campaignId}/iterations", ListIterations, "List a campaign's iterations",
        scopes: ["campaigns:read"], cond: NONE, idem: false, Query, query: Q_PAGE, req: None, resp: Json("IterationList"), status: [200]),
    op!(49, Post, "/campaigns/{campaignId}/iterations", CreateIteration, "Create a follow-up iteration",
        scopes: ["campaigns:write"], cond: NONE, idem: true, Body, query: &[], req: Some("IterationCreate"), resp: Json("IterationCreated"), status: [201]),
    op!(50, Get, "/campaigns/{campaignId}/memberships", ListMemberships, "List iteration memberships",
        scopes: ["campaigns:read", "contacts:read"], cond: NONE, idem: false, Query,
        query: &[BUSINESS, CURSOR, LIMIT, uuid_param("iterationId", false, "Only this iteration (default: every iteration, in sequence)."),
            QueryParam { name: "outcome", required: false, schema: r#"{"type":"string","enum":["pending","in_progress","completed","no_answer","busy","failed","cancelled","sent","delivered","read","replied","skipped"]}"#, description: "Only members with this outcome." }],
        req: None, resp: Json("MembershipList"), status: [200]),
    op!(51, Get, "/campaigns/{campaignId}/activities", ListActivities, "List attributed activities, newest first",
        scopes: ["campaigns:read", "communications:read"], cond: NONE, idem: false, Query,
        query: &[BUSINESS, CURSOR, LIMIT, uuid_param("contactId", false, "Only this contact."), uuid_param("iterationId", false, "Only this iteration."),
            QueryParam { name: "channel", required: false, schema: r#"{"type":"string","enum":["voice","chatapp","sms"]}"#, description: "Only this channel." },
            QueryParam { name: "status", required: false, schema: r#"{"type":"string","minLength":1,"maxLength":32}"#, description: "Only activities in this status." }],
        req: None, resp: Json("ActivityList"), status: [200]),
    op!(52, Get, "/campaigns/{campaignId}/summary-runs", ListSummaryRuns, "List AI summary runs",
        scopes: ["campaigns:read", "communications:read"], cond: NONE, idem: false, Query, query: Q_PAGE, req: None, resp: Json("SummaryRunList"), status: [200]),
    op!(53, Post, "/campaigns/{campaignId}/summary-runs", CreateSummaryRun, "Estimate or confirm an AI summary run",
        scopes: ["campaigns:write", "communications:read"], cond: NONE, idem: true, Body, query: &[], req: Some("SummaryRunCreate"), resp: Json("SummaryRunResult"), status: [201, 200]),
    op!(54, Get, "/campaigns/{campaignId}/exports", ExportCampaign, "Export one conclusion per contact as CSV",
        scopes: ["campaigns:read", "communications:read", "contacts:read"], cond: NONE, idem: false, Query,
        query: &[BUSINESS, uuid_param("summaryRunId", true, "A completed or partial summary run.")], req: None, resp: Raw("text/csv; charset=utf-8"), status: [200]),
    // Ours, beyond the contract's 54 (see CONTRACT_OPERATIONS).
    op!(55, Get, "/webhook-subscriptions/{subscriptionId}/deliveries", ListWebhookDeliveries, "List a subscription's delivery attempts, newest first",
        scopes: ["webhooks:read"], cond: NONE, idem: false, Query,
        query: &[BUSINESS, CURSOR, LIMIT, QueryParam { name: "eventId", required: false, schema: r#"{"type":"string","minLength":1,"maxLength":200}"#, description: "Only the attempts of this event." }],
        req: None, resp: Json("WebhookDeliveryList"), status: [200]),
    op!(56, Post, "/webhook-subscriptions/{subscriptionId}/redeliver", RedeliverWebhookEvent, "Send one logged event to the subscription again",
        scopes: ["webhooks:write"], cond: NONE, idem: false, Body, query: &[], req: Some("WebhookRedeliver"), resp: Json("WebhookRedelivery"), status: [202]),
    // Console-only agent testing (the contract: "Console-only agent testing
    // uses logged-in session routes, not API-key routes").
    op!(console 57, Get, "/agents/{agentId}/test", GetAgentTest, "Read your test conversation with an agent (console sessions only)",
        scopes: ["agents:read"], cond: NONE, idem: false, Query, query: &[BUSINESS], req: None, resp: Json("AgentTestConversation"), status: [200]),
    op!(console 58, Post, "/agents/{agentId}/test/messages", SendAgentTestMessage, "Say something to an agent under test; its reply follows (console sessions only)",
        scopes: ["agents:write"], cond: NONE, idem: false, Body, query: &[], req: Some("AgentTestMessage"), resp: Json("AgentTestConversation"), status: [202]),
    op!(console 59, Delete, "/agents/{agentId}/test", ResetAgentTest, "Start your test conversation with an agent again (console sessions only)",
        scopes: ["agents:write"], cond: NONE, idem: false, Query, query: &[BUSINESS], req: None, resp: Json("AgentTestConversation"), status: [200]),
    // Ours: what calls and summary runs are paid from (before, only the
    // admin command line showed it).
    op!(60, Get, "/credits", GetCredits, "Read the microcredit balance and its ledger, newest first",
        scopes: ["credits:read"], cond: NONE, idem: false, Query, query: Q_PAGE, req: None, resp: Json("CreditAccount"), status: [200]),
    // Ours: the inbox (the console's Inbox page reads and answers through these).
    op!(61, Get, "/conversations", ListConversations, "List conversations, newest activity first, with unread counts and the last message",
        scopes: ["communications:read"], cond: NONE, idem: false, Query, query: Q_CONVERSATIONS, req: None, resp: Json("ConversationList"), status: [200]),
    op!(62, Get, "/conversations/{conversationId}", GetConversation, "Read a conversation",
        scopes: ["communications:read"], cond: NONE, idem: false, Query, query: Q_BUSINESS, req: None, resp: Json("ConversationResult"), status: [200]),
    op!(63, Get, "/conversations/{conversationId}/thread", GetConversationThread, "Read a conversation's messages and comments with their delivery states, newest first",
        scopes: ["communications:read"], cond: NONE, idem: false, Query, query: Q_PAGE, req: None, resp: Json("ConversationThread"), status: [200]),
    op!(64, Post, "/conversations/{conversationId}/read", MarkConversationRead, "Mark a conversation read up to what the reader has seen",
        scopes: ["communications:write"], cond: NONE, idem: false, Body, query: &[], req: Some("ConversationRead"), resp: Json("ConversationResult"), status: [200]),
    op!(65, Patch, "/conversations/{conversationId}", UpdateConversation, "Assign a conversation, resolve or reopen it, or take it over from the agent and hand it back",
        scopes: ["communications:write"], cond: NONE, idem: false, Body, query: &[], req: Some("ConversationUpdate"), resp: Json("ConversationResult"), status: [200]),
    // Ours: daily figures (the console's overview and charts).
    op!(67, Get, "/stats/messages", GetMessageStats, "Count messages per day (UTC) and outbound messages by delivery status",
        scopes: ["communications:read"], cond: NONE, idem: false, Query, query: Q_STATS, req: None, resp: Json("MessageStats"), status: [200]),
    op!(68, Get, "/stats/calls", GetCallStats, "Count calls per day (UTC) and calls by status",
        scopes: ["voice:read"], cond: NONE, idem: false, Query, query: Q_STATS, req: None, resp: Json("CallStats"), status: [200]),
    op!(69, Get, "/stats/credits", GetCreditStats, "Credits granted and charged per day (UTC), and the balance at each day's end",
        scopes: ["credits:read"], cond: NONE, idem: false, Query, query: Q_STATS, req: None, resp: Json("CreditStats"), status: [200]),
    // Ours: who a campaign would admit, before it is created.
    op!(70, Post, "/campaigns/admission-preview", PreviewCampaignAdmission, "Count who a first iteration of this agent and audience would admit, writing nothing",
        scopes: ["campaigns:read", "contacts:read"], cond: NONE, idem: false, Body, query: &[], req: Some("CampaignAdmissionPreview"), resp: Json("CampaignAdmissionPreviewResult"), status: [200]),
    // Ours: a photoapp comment answered privately (Instagram's rule: once, within 7 days).
    op!(75, Post, "/photoapp/private-replies", SendPhotoappPrivateReply, "Answer a public comment privately (a direct message to the commenter), once, within 7 days of it",
        scopes: ["communications:write", "photoapp:write"], cond: NONE, idem: true, Body, query: &[], req: Some("PhotoappPrivateReply"), resp: Json("MessageQueued"), status: [202]),
    // Ours: the team inbox (issue 50): who a conversation can be assigned
    // to, internal notes, and the business's saved replies.
    op!(76, Get, "/team-members", ListTeamMembers, "List the business's people who can log in to the console, with their roles",
        scopes: ["communications:read"], cond: NONE, idem: false, Query, query: Q_BUSINESS, req: None, resp: Json("TeamMemberList"), status: [200]),
    op!(77, Post, "/conversations/{conversationId}/notes", CreateConversationNote, "Write an internal note in a conversation (never sent to the contact)",
        scopes: ["communications:write"], cond: NONE, idem: true, Body, query: &[], req: Some("ConversationNoteCreate"), resp: Json("ConversationNoteResult"), status: [201]),
    op!(78, Get, "/saved-replies", ListSavedReplies, "List the business's saved replies, by title",
        scopes: ["communications:read"], cond: NONE, idem: false, Query, query: Q_BUSINESS, req: None, resp: Json("SavedReplyList"), status: [200]),
    op!(79, Post, "/saved-replies", CreateSavedReply, "Save a reply for the inbox's reply box",
        scopes: ["communications:write"], cond: NONE, idem: true, Body, query: &[], req: Some("SavedReplyCreate"), resp: Json("SavedReplyResult"), status: [201]),
    op!(80, Patch, "/saved-replies/{savedReplyId}", UpdateSavedReply, "Change a saved reply's title or text",
        scopes: ["communications:write"], cond: NONE, idem: false, Body, query: &[], req: Some("SavedReplyUpdate"), resp: Json("SavedReplyResult"), status: [200]),
    op!(81, Delete, "/saved-replies/{savedReplyId}", DeleteSavedReply, "Delete a saved reply",
        scopes: ["communications:write"], cond: NONE, idem: false, Query, query: Q_BUSINESS, req: None, resp: Json("SavedReplyDeleted"), status: [200]),
    // Ours: a campaign iteration's recipients with their calls, openings and
    // replies (the console's campaign page). Numbered 90 so the rows of
    // issue 50's team inbox, worked on at the same time, fit between 75
    // and it.
    op!(90, Get, "/campaigns/{campaignId}/recipients", ListRecipients, "List an iteration's recipients with each one's outcome, call or opening, and reply",
        scopes: ["campaigns:read", "contacts:read", "communications:read"], cond: NONE, idem: false, Query,
        query: &[BUSINESS, CURSOR, LIMIT, uuid_param("iterationId", false, "This iteration (default: the current one)."),
            QueryParam { name: "outcome", required: false, schema: r#"{"type":"string","enum":["pending","in_progress","completed","no_answer","busy","failed","cancelled","sent","delivered","read","replied","skipped"]}"#, description: "Only recipients with this outcome." }],
        req: None, resp: Json("RecipientList"), status: [200]),
    // Ours: a change to many contacts at once, listed or matching the
    // list's filters (the console's bulk actions and "select all").
    op!(91, Patch, "/contacts", UpdateContacts, "Add many contacts to categories, or block or unblock them: listed ones or every one matching the list's filters",
        scopes: ["contacts:write"], cond: NONE, idem: true, Body, query: &[], req: Some("ContactsUpdate"), resp: Json("ContactsUpdated"), status: [200]),
    // Ours: the business's settings of no one resource (issue 50): the
    // country the console's phone inputs take a number without "+" in.
    op!(92, Get, "/business-settings", GetBusinessSettings, "Read the business's settings: its default phone country and that country's calling code",
        scopes: ["contacts:read"], cond: NONE, idem: false, Query, query: Q_BUSINESS, req: None, resp: Json("BusinessSettingsResult"), status: [200]),
    op!(93, Patch, "/business-settings", UpdateBusinessSettings, "Set the business's default phone country (ISO 3166-1 alpha-2), or none",
        scopes: ["contacts:write"], cond: NONE, idem: false, Body, query: &[], req: Some("BusinessSettingsUpdate"), resp: Json("BusinessSettingsResult"), status: [200]),
];
