//! The operation table: one row per operation of the API contract. Routing,
//! scopes, idempotency, validation and the OpenAPI paths all read this table,
//! so they cannot drift apart.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Patch,
    Delete,
}

impl Method {
    pub fn parse(s: &str) -> Option<Method> {
        match s {
            "GET" => Some(Method::Get),
            "POST" => Some(Method::Post),
            "PATCH" => Some(Method::Patch),
            "DELETE" => Some(Method::Delete),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }
    /// Mutations run inside one write transaction in the host.
    pub fn is_mutation(self) -> bool {
        self != Method::Get
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The resource area (WebAssembly component) that owns an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Component {
    Webhooks,
    Messaging,
    Agents,
    DataSources,
    Contacts,
    Voice,
    Campaigns,
}

impl Component {
    pub fn name(self) -> &'static str {
        match self {
            Component::Webhooks => "webhooks",
            Component::Messaging => "messaging",
            Component::Agents => "agents",
            Component::DataSources => "data-sources",
            Component::Contacts => "contacts",
            Component::Voice => "voice",
            Component::Campaigns => "campaigns",
        }
    }
}

/// Where the request carries `businessId`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusinessIn {
    /// Public operation: no business, no key.
    Public,
    Query,
    Body,
}

/// A scope required only when the request has a certain shape.
#[derive(Clone, Copy, Debug)]
pub struct ConditionalScope {
    pub when: Condition,
    pub scope: &'static str,
}

#[derive(Clone, Copy, Debug)]
pub enum Condition {
    /// The body's top-level `field` equals the string `value`.
    BodyFieldIs { field: &'static str, value: &'static str },
    /// The body's top-level `field` is present and not null.
    BodyFieldPresent { field: &'static str },
    /// The query string carries the parameter.
    QueryPresent { name: &'static str },
    /// Both conditions hold.
    All(&'static [Condition]),
}

impl Condition {
    pub fn holds(&self, body: Option<&serde_json::Value>, query: &[(String, String)]) -> bool {
        match self {
            Condition::BodyFieldIs { field, value } => body.and_then(|b| b.get(*field)).and_then(|v| v.as_str()).is_some_and(|s| s == *value),
            Condition::BodyFieldPresent { field } => body.and_then(|b| b.get(*field)).is_some_and(|v| !v.is_null()),
            Condition::QueryPresent { name } => query.iter().any(|(k, _)| k == name),
            Condition::All(all) => all.iter().all(|c| c.holds(body, query)),
        }
    }
}

/// A declared query parameter; `schema` is inline JSON Schema text.
#[derive(Clone, Copy, Debug)]
pub struct QueryParam {
    pub name: &'static str,
    pub required: bool,
    pub schema: &'static str,
    pub description: &'static str,
}

/// What a successful response carries.
#[derive(Clone, Copy, Debug)]
pub enum Response {
    /// The success envelope around the named `data` schema.
    Json(&'static str),
    /// A raw body of this media type (downloads, exports).
    Raw(&'static str),
}

#[derive(Clone, Copy, Debug)]
pub struct Operation {
    /// The row number in the contract's endpoint table.
    pub number: u8,
    pub method: Method,
    /// Path template below the server root, e.g. `/api/v1/contacts/{contactId}`.
    pub path: &'static str,
    pub id: &'static str,
    pub summary: &'static str,
    pub scopes: &'static [&'static str],
    pub conditional_scopes: &'static [ConditionalScope],
    /// `Idempotency-Key` must be sent. Other mutations may send one.
    pub idempotency_required: bool,
    pub component: Component,
    pub business_in: BusinessIn,
    pub query: &'static [QueryParam],
    /// Request body schema name in `components.schemas`.
    pub request: Option<&'static str>,
    pub response: Response,
    /// Success statuses, the usual one first (createCategory answers 200 when
    /// it reuses an existing name).
    pub success_status: &'static [u16],
}

/// Request body limit of most operations: room for a base64 image upload.
pub const DEFAULT_MAX_BODY_BYTES: usize = 10 << 20;

/// Default limit of a raw (streamed) upload body. Memory does not bound it:
/// the host stages the body in 256 KiB rows and never holds it whole. What
/// it bounds is disk and time: the request's transaction copies the staged
/// bytes into ingestion_chunks (the WAL briefly holds about twice the file)
/// while holding the write gate: 3.4 s for 480 MB on the benchmark machine.
pub const RAW_UPLOAD_MAX_BYTES: usize = 512 << 20;

/// The raw-body variant of an operation that also takes a JSON body: any
/// Content-Type other than `application/json` selects it, the metadata
/// travels in the query (`query`, every one required then) and the body is
/// the file itself, streamed by the host into staging.
#[derive(Clone, Copy, Debug)]
pub struct RawBody {
    /// The media types the document lists (others are accepted as well),
    /// each with the name of its schema in `components.schemas`.
    pub media_types: &'static [(&'static str, &'static str)],
    /// Query parameters every raw request must carry (declared in the
    /// operation's `query`, optional there because JSON bodies do not).
    pub required_query: &'static [&'static str],
}

pub const RAW_UPLOAD: RawBody = RawBody {
    media_types: &[
        ("application/octet-stream", "DataSourceUploadFile"),
        ("text/csv", "DataSourceUploadText"),
        ("text/tab-separated-values", "DataSourceUploadText"),
        ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "DataSourceUploadFile"),
        ("application/vnd.ms-excel.sheet.macroEnabled.12", "DataSourceUploadFile"),
    ],
    required_query: &["businessId", "dataSourceId", "fileName", "format"],
};

/// True when a Content-Type header names JSON (`application/json`, any
/// parameters, any case). A missing header counts as JSON, so clients that
/// never sent one keep the JSON variant.
pub fn is_json_content_type(content_type: Option<&str>) -> bool {
    match content_type {
        None => true,
        Some(ct) => ct.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/json"),
    }
}

impl Operation {
    /// A console-session route: only a logged-in browser session may call it.
    pub fn session_only(&self) -> bool {
        self.path.starts_with(CONSOLE_API_PREFIX)
    }

    /// The largest request body this operation accepts (413 beyond it).
    pub fn max_body_bytes(&self) -> usize {
        match self.id {
            // Data source assets (CSV, XLSX …) arrive as base64 in JSON.
            "uploadDataSourceAsset" => 64 << 20,
            _ => DEFAULT_MAX_BODY_BYTES,
        }
    }

    /// The raw-body variant, for operations that have one.
    pub fn raw_body(&self) -> Option<&'static RawBody> {
        match self.id {
            "uploadDataSourceAsset" => Some(&RAW_UPLOAD),
            _ => None,
        }
    }

    /// Top-level body fields naming a URL the service will call out to. Under
    /// a public-only outbound policy the host judges them before the write.
    pub fn outbound_url_fields(&self) -> &'static [&'static str] {
        match self.id {
            "createWebhookSubscription" | "updateWebhookSubscription" => &["callbackUrl"],
            _ => &[],
        }
    }

    /// Fields of `data` that carry a copy-once secret. They are never stored
    /// with an idempotency record, so a replay cannot show them again.
    pub fn secret_fields(&self) -> &'static [&'static str] {
        match self.id {
            "createWebhookSubscription" | "rotateWebhookSigningSecret" => &["signingSecret"],
            _ => &[],
        }
    }
}

const UUID: &str = r#"{"type":"string","format":"uuid"}"#;

const BUSINESS: QueryParam = QueryParam { name: "businessId", required: true, schema: UUID, description: "The business the API key belongs to." };
/// Every string of this form is a position a list can resume from
/// (`components/guest/src/cursor.rs` has the same pattern; a test below
/// keeps the two equal), so the document accepts no cursor the service
/// refuses.
const CURSOR: QueryParam = QueryParam {
    name: "cursor",
    required: false,
    schema: r#"{"type":"string","pattern":"^(?:[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\\.[0-9]{1,9})?Z~)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"}"#,
    description: "The previous page's `nextCursor`, passed back unchanged.",
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

use BusinessIn::{Body, Public, Query};
use Component::*;
use Method::*;

macro_rules! op {
    // A console-session route (see `CONSOLE_API_PREFIX`).
    (console $n:expr, $m:ident, $path:expr, $id:expr, $summary:expr, scopes: [$($s:expr),*], cond: $cond:expr,
     idem: $idem:expr, $comp:ident, $bin:ident, query: $q:expr, req: $req:expr, resp: $resp:expr, status: $st:expr) => {
        Operation {
            number: $n, method: $m, path: concat!("/console/api", $path), id: $id, summary: $summary,
            scopes: &[$($s),*], conditional_scopes: $cond, idempotency_required: $idem,
            component: $comp, business_in: $bin, query: $q, request: $req, response: $resp,
            success_status: &$st,
        }
    };
    ($n:expr, $m:ident, $path:expr, $id:expr, $summary:expr, scopes: [$($s:expr),*], cond: $cond:expr,
     idem: $idem:expr, $comp:ident, $bin:ident, query: $q:expr, req: $req:expr, resp: $resp:expr, status: $st:expr) => {
        Operation {
            number: $n, method: $m, path: concat!("/api/v1", $path), id: $id, summary: $summary,
            scopes: &[$($s),*], conditional_scopes: $cond, idempotency_required: $idem,
            component: $comp, business_in: $bin, query: $q, request: $req, response: $resp,
            success_status: &$st,
        }
    };
}

const NONE: &[ConditionalScope] = &[];
use Response::{Json, Raw};

pub static OPERATIONS: &[Operation] = &[
    op!(1, Get, "/contracts/whatsapp-automation", "getAutomationContract", "Read the public chatapp automation contract",
        scopes: [], cond: NONE, idem: false, Webhooks, Public, query: &[], req: None, resp: Json("AutomationContract"), status: [200]),
    op!(2, Get, "/webhook-subscriptions", "listWebhookSubscriptions", "List webhook subscriptions",
        scopes: ["webhooks:write"], cond: NONE, idem: false, Webhooks, Query, query: Q_PAGE, req: None, resp: Json("WebhookSubscriptionList"), status: [200]),
    op!(3, Post, "/webhook-subscriptions", "createWebhookSubscription", "Create a webhook subscription",
        scopes: ["webhooks:write", "channels:write"], cond: NONE, idem: false, Webhooks, Body, query: &[], req: Some("WebhookSubscriptionCreate"), resp: Json("WebhookSubscriptionWithSecret"), status: [201]),
    op!(4, Patch, "/webhook-subscriptions/{subscriptionId}", "updateWebhookSubscription", "Update a webhook subscription",
        scopes: ["webhooks:write"], cond: NONE, idem: false, Webhooks, Body, query: &[], req: Some("WebhookSubscriptionUpdate"), resp: Json("WebhookSubscriptionResult"), status: [200]),
    op!(5, Delete, "/webhook-subscriptions/{subscriptionId}", "revokeWebhookSubscription", "Revoke a webhook subscription permanently",
        scopes: ["webhooks:write"], cond: NONE, idem: false, Webhooks, Query, query: Q_BUSINESS, req: None, resp: Json("WebhookSubscriptionResult"), status: [200]),
    op!(6, Post, "/webhook-subscriptions/{subscriptionId}/rotate-secret", "rotateWebhookSigningSecret", "Rotate a subscription's signing secret",
        scopes: ["webhooks:write"], cond: NONE, idem: false, Webhooks, Body, query: &[], req: Some("BusinessMutation"), resp: Json("WebhookSubscriptionWithSecret"), status: [200]),
    op!(7, Post, "/media", "uploadMedia", "Upload image media for chatapp messages",
        scopes: ["chatapp:media"], cond: NONE, idem: true, Messaging, Body, query: &[], req: Some("MediaUpload"), resp: Json("MediaUploaded"), status: [201]),
    op!(8, Post, "/messages", "sendMessage", "Queue a chatapp or photoapp message",
        scopes: ["communications:write"], cond: &[
            ConditionalScope { when: Condition::BodyFieldIs { field: "type", value: "image" }, scope: "chatapp:media" },
            ConditionalScope { when: Condition::BodyFieldIs { field: "channel", value: "photoapp" }, scope: "photoapp:write" },
        ], idem: true, Messaging, Body, query: &[], req: Some("MessageSend"), resp: Json("MessageQueued"), status: [202]),
    op!(9, Get, "/messages/{messageId}", "getMessage", "Read a message's delivery state",
        scopes: ["communications:read"], cond: NONE, idem: false, Messaging, Query, query: Q_BUSINESS, req: None, resp: Json("MessageDeliveryState"), status: [200]),
    op!(10, Get, "/channels", "listChannels", "List channels with readiness and assignment mode",
        scopes: ["channels:read"], cond: NONE, idem: false, Agents, Query, query: Q_BUSINESS, req: None, resp: Json("ChannelList"), status: [200]),
    op!(11, Get, "/channels/photoapp", "getPhotoappConnection", "Read the photoapp connection",
        scopes: ["channels:read", "photoapp:read"], cond: NONE, idem: false, Agents, Query, query: Q_BUSINESS, req: None, resp: Json("PhotoappConnection"), status: [200]),
    op!(12, Delete, "/channels/photoapp", "disconnectPhotoapp", "Disconnect the photoapp account",
        scopes: ["channels:write", "photoapp:write"], cond: NONE, idem: false, Agents, Body, query: &[], req: Some("BusinessMutation"), resp: Json("PhotoappConnection"), status: [200]),
    op!(13, Get, "/agents", "listAgents", "List agents",
        scopes: ["agents:read"], cond: NONE, idem: false, Agents, Query, query: Q_PAGE, req: None, resp: Json("AgentList"), status: [200]),
    op!(14, Post, "/agents", "createAgent", "Create an agent",
        scopes: ["agents:write"], cond: &[
            ConditionalScope { when: Condition::All(&[Condition::BodyFieldIs { field: "channel", value: "chatapp" }, Condition::BodyFieldPresent { field: "assignment" }]), scope: "channels:write" },
        ], idem: true, Agents, Body, query: &[], req: Some("AgentCreate"), resp: Json("AgentCreated"), status: [201]),
    op!(15, Patch, "/agents", "updateAgent", "Update an agent",
        scopes: ["agents:write"], cond: NONE, idem: true, Agents, Body, query: &[], req: Some("AgentUpdate"), resp: Json("AgentResult"), status: [200]),
    op!(16, Delete, "/agents", "archiveAgent", "Archive an agent",
        scopes: ["agents:write"], cond: NONE, idem: true, Agents, Body, query: &[], req: Some("BusinessAgentMutation"), resp: Json("AgentResult"), status: [200]),
    op!(17, Get, "/data-sources", "listDataSources", "List data sources",
        scopes: ["data_sources:read"], cond: NONE, idem: false, DataSources, Query, query: Q_PAGE, req: None, resp: Json("DataSourceList"), status: [200]),
    op!(18, Post, "/data-sources", "createDataSource", "Create a data source",
        scopes: ["data_sources:write"], cond: NONE, idem: true, DataSources, Body, query: &[], req: Some("DataSourceCreate"), resp: Json("DataSourceResult"), status: [201]),
    op!(19, Patch, "/data-sources", "updateDataSource", "Update a data source",
        scopes: ["data_sources:write"], cond: NONE, idem: true, DataSources, Body, query: &[], req: Some("DataSourceUpdate"), resp: Json("DataSourceResult"), status: [200]),
    op!(20, Delete, "/data-sources", "archiveDataSource", "Archive a data source",
        scopes: ["data_sources:write"], cond: NONE, idem: true, DataSources, Body, query: &[], req: Some("DataSourceMutation"), resp: Json("DataSourceResult"), status: [200]),
    op!(21, Post, "/data-sources/upload", "uploadDataSourceAsset", "Upload a CSV, TSV, JSON, XLSX or XLSM asset for ingestion",
        scopes: ["data_sources:write"], cond: NONE, idem: true, DataSources, Body, query: Q_UPLOAD, req: Some("DataSourceUpload"), resp: Json("IngestionAccepted"), status: [202]),
    op!(22, Get, "/data-sources/ingestions", "inspectIngestion", "Inspect an ingestion",
        scopes: ["data_sources:read"], cond: NONE, idem: false, DataSources, Query,
        query: &[BUSINESS, uuid_param("ingestionId", true, "The ingestion returned by upload.")], req: None, resp: Json("IngestionInspection"), status: [200]),
    op!(23, Patch, "/data-sources/ingestions", "resolveIngestion", "Resolve reviewed columns and activate the version",
        scopes: ["data_sources:write"], cond: NONE, idem: true, DataSources, Body, query: &[], req: Some("IngestionResolve"), resp: Json("IngestionInspection"), status: [200]),
    op!(24, Get, "/contacts", "listContacts", "List contacts",
        scopes: ["contacts:read"], cond: NONE, idem: false, Contacts, Query,
        query: &[BUSINESS, CURSOR, LIMIT,
            QueryParam { name: "search", required: false, schema: r#"{"type":"string","minLength":1,"maxLength":64,"pattern":"^[ .()-]*(?:\\+?[ .()-]*[0-9][0-9 .()-]*)?$"}"#, description: "Matches mobile numbers: `+digits` those starting with them, plain digits those containing them; spaces, dots, dashes and parentheses are ignored. URL-encode the leading plus (%2B)." },
            uuid_param("categoryId", false, "Only contacts of this category.")],
        req: None, resp: Json("ContactList"), status: [200]),
    op!(25, Post, "/contacts", "createContact", "Create a contact",
        scopes: ["contacts:write"], cond: NONE, idem: true, Contacts, Body, query: &[], req: Some("ContactCreate"), resp: Json("ContactResult"), status: [201]),
    op!(26, Delete, "/contacts", "deleteContacts", "Delete selected contacts or every contact of a category",
        scopes: ["contacts:write"], cond: NONE, idem: true, Contacts, Body, query: &[], req: Some("ContactsDelete"), resp: Json("ContactsDeleted"), status: [200]),
    op!(27, Post, "/contacts/imports", "importContacts", "Import contacts from CSV into categories",
        scopes: ["contacts:write"], cond: NONE, idem: true, Contacts, Body, query: &[], req: Some("ContactImport"), resp: Json("ContactImportResult"), status: [200]),
    op!(28, Get, "/contacts/categories", "listCategories", "List categories with contact counts",
        scopes: ["contacts:read"], cond: NONE, idem: false, Contacts, Query, query: Q_PAGE, req: None, resp: Json("CategoryList"), status: [200]),
    op!(29, Post, "/contacts/categories", "createCategory", "Create a category (an existing name is reused)",
        scopes: ["contacts:write"], cond: NONE, idem: true, Contacts, Body, query: &[], req: Some("CategoryCreate"), resp: Json("CategoryResult"), status: [201, 200]),
    op!(30, Delete, "/contacts/categories", "deleteCategory", "Delete a category, confirming its exact name",
        scopes: ["contacts:write"], cond: NONE, idem: true, Contacts, Body, query: &[], req: Some("CategoryDelete"), resp: Json("CategoryDeleted"), status: [200]),
    op!(31, Get, "/contacts/{contactId}", "getContact", "Read a contact",
        scopes: ["contacts:read"], cond: &[
            ConditionalScope { when: Condition::QueryPresent { name: "campaignId" }, scope: "communications:read" },
        ], idem: false, Contacts, Query,
        query: &[BUSINESS, uuid_param("campaignId", false, "Include this campaign's shared contact summary (needs communications:read).")],
        req: None, resp: Json("ContactDetail"), status: [200]),
    op!(32, Patch, "/contacts/{contactId}", "updateContact", "Update a contact",
        scopes: ["contacts:write"], cond: NONE, idem: true, Contacts, Body, query: &[], req: Some("ContactUpdate"), resp: Json("ContactResult"), status: [200]),
    op!(33, Get, "/contacts/{contactId}/timeline", "getContactTimeline", "Read a contact's cross-channel timeline, newest first",
        scopes: ["communications:read"], cond: NONE, idem: false, Contacts, Query,
        query: &[BUSINESS, CURSOR, LIMIT, uuid_param("campaignId", false, "Only entries of this campaign.")],
        req: None, resp: Json("Timeline"), status: [200]),
    op!(34, Post, "/channel-participants/{participantId}/link-contact", "linkParticipantContact", "Link a channel participant to a mobile-first contact",
        scopes: ["contacts:write"], cond: NONE, idem: true, Contacts, Body, query: &[], req: Some("ParticipantLink"), resp: Json("ParticipantLinked"), status: [200]),
    op!(35, Get, "/channels/assignments", "getChannelAssignment", "Read a channel assignment",
        scopes: ["channels:read"], cond: NONE, idem: false, Agents, Query,
        query: &[BUSINESS,
            QueryParam { name: "channel", required: true, schema: r#"{"type":"string","enum":["chatapp","sms","voice","photoapp","other"]}"#, description: "The channel, e.g. chatapp." },
            QueryParam { name: "phoneNumberId", required: false, schema: r#"{"type":"string","minLength":1,"maxLength":128}"#, description: "The connected phone number (chatapp)." }],
        req: None, resp: Json("ChannelAssignmentRead"), status: [200]),
    op!(36, Patch, "/channels/assignments", "updateChannelAssignment", "Assign an agent to a channel",
        scopes: ["channels:write"], cond: NONE, idem: false, Agents, Body, query: &[], req: Some("ChannelAssignment"), resp: Json("ChannelAssignmentRead"), status: [200]),
    op!(37, Get, "/voice/calls", "listCalls", "List calls, newest first",
        scopes: ["voice:read"], cond: NONE, idem: false, Voice, Query, query: Q_CALLS, req: None, resp: Json("CallList"), status: [200]),
    op!(38, Post, "/voice/calls", "startCall", "Start an outbound AI voice call",
        scopes: ["voice:write"], cond: NONE, idem: true, Voice, Body, query: &[], req: Some("VoiceCallStart"), resp: Json("CallStartResult"), status: [202]),
    op!(39, Post, "/voice/calls/batch", "startCallBatch", "Start calls to up to 20 contacts",
        scopes: ["voice:write"], cond: NONE, idem: true, Voice, Body, query: &[], req: Some("VoiceBatchStart"), resp: Json("CallBatchResult"), status: [202]),
    op!(40, Get, "/voice/calls/resolve", "resolveCallContext", "Resolve an agent's allowlisted contact variables and destination",
        scopes: ["voice:read", "contacts:read"], cond: NONE, idem: false, Voice, Query,
        query: &[BUSINESS, uuid_param("agentId", true, "The voice agent."), uuid_param("contactId", false, "The contact to resolve."),
            QueryParam { name: "toNumber", required: false, schema: r#"{"type":"string","pattern":"^\\+[1-9][0-9]{7,14}$"}"#, description: "A direct E.164 target." }],
        req: None, resp: Json("ResolvedContext"), status: [200]),
    op!(41, Get, "/voice/calls/{callId}", "getCall", "Read a call report",
        scopes: ["voice:read"], cond: NONE, idem: false, Voice, Query, query: Q_BUSINESS, req: None, resp: Json("CallDetail"), status: [200]),
    op!(42, Get, "/voice/calls/{callId}/transcript", "downloadTranscript", "Download a call transcript",
        scopes: ["voice:read"], cond: NONE, idem: false, Voice, Query, query: Q_BUSINESS, req: None, resp: Raw("text/plain; charset=utf-8"), status: [200]),
    op!(43, Delete, "/voice/calls/{callId}", "cancelCall", "Cancel a call",
        scopes: ["voice:write"], cond: NONE, idem: true, Voice, Query, query: Q_BUSINESS, req: None, resp: Json("CallCancellation"), status: [200]),
    op!(44, Get, "/campaigns", "listCampaigns", "List campaigns",
        scopes: ["campaigns:read"], cond: NONE, idem: false, Campaigns, Query, query: Q_PAGE, req: None, resp: Json("CampaignList"), status: [200]),
    op!(45, Post, "/campaigns", "createCampaign", "Create a campaign with its first iteration",
        scopes: ["campaigns:write"], cond: NONE, idem: true, Campaigns, Body, query: &[], req: Some("CampaignCreate"), resp: Json("CampaignCreated"), status: [201]),
    op!(46, Get, "/campaigns/{campaignId}", "getCampaign", "Read a campaign",
        scopes: ["campaigns:read"], cond: NONE, idem: false, Campaigns, Query, query: Q_BUSINESS, req: None, resp: Json("CampaignResult"), status: [200]),
    op!(47, Patch, "/campaigns/{campaignId}", "updateCampaign", "Start, pause or cancel the current iteration",
        scopes: ["campaigns:write"], cond: NONE, idem: true, Campaigns, Body, query: &[], req: Some("CampaignUpdate"), resp: Json("CampaignResult"), status: [200]),
    op!(48, Get, "/campaigns/{campaignId}/iterations", "listIterations", "List a campaign's iterations",
        scopes: ["campaigns:read"], cond: NONE, idem: false, Campaigns, Query, query: Q_PAGE, req: None, resp: Json("IterationList"), status: [200]),
    op!(49, Post, "/campaigns/{campaignId}/iterations", "createIteration", "Create a follow-up iteration",
        scopes: ["campaigns:write"], cond: NONE, idem: true, Campaigns, Body, query: &[], req: Some("IterationCreate"), resp: Json("IterationCreated"), status: [201]),
    op!(50, Get, "/campaigns/{campaignId}/memberships", "listMemberships", "List iteration memberships",
        scopes: ["campaigns:read", "contacts:read"], cond: NONE, idem: false, Campaigns, Query,
        query: &[BUSINESS, CURSOR, LIMIT, uuid_param("iterationId", false, "Only this iteration (default: every iteration, in sequence)."),
            QueryParam { name: "outcome", required: false, schema: r#"{"type":"string","enum":["pending","in_progress","completed","no_answer","busy","failed","cancelled","sent","delivered","read","replied","skipped"]}"#, description: "Only members with this outcome." }],
        req: None, resp: Json("MembershipList"), status: [200]),
    op!(51, Get, "/campaigns/{campaignId}/activities", "listActivities", "List attributed activities, newest first",
        scopes: ["campaigns:read", "communications:read"], cond: NONE, idem: false, Campaigns, Query,
        query: &[BUSINESS, CURSOR, LIMIT, uuid_param("contactId", false, "Only this contact."), uuid_param("iterationId", false, "Only this iteration."),
            QueryParam { name: "channel", required: false, schema: r#"{"type":"string","enum":["voice","chatapp","sms"]}"#, description: "Only this channel." },
            QueryParam { name: "status", required: false, schema: r#"{"type":"string","minLength":1,"maxLength":32}"#, description: "Only activities in this status." }],
        req: None, resp: Json("ActivityList"), status: [200]),
    op!(52, Get, "/campaigns/{campaignId}/summary-runs", "listSummaryRuns", "List AI summary runs",
        scopes: ["campaigns:read", "communications:read"], cond: NONE, idem: false, Campaigns, Query, query: Q_PAGE, req: None, resp: Json("SummaryRunList"), status: [200]),
    op!(53, Post, "/campaigns/{campaignId}/summary-runs", "createSummaryRun", "Estimate or confirm an AI summary run",
        scopes: ["campaigns:write", "communications:read"], cond: NONE, idem: true, Campaigns, Body, query: &[], req: Some("SummaryRunCreate"), resp: Json("SummaryRunResult"), status: [201, 200]),
    op!(54, Get, "/campaigns/{campaignId}/exports", "exportCampaign", "Export one conclusion per contact as CSV",
        scopes: ["campaigns:read", "communications:read", "contacts:read"], cond: NONE, idem: false, Campaigns, Query,
        query: &[BUSINESS, uuid_param("summaryRunId", true, "A completed or partial summary run.")], req: None, resp: Raw("text/csv; charset=utf-8"), status: [200]),
    // Ours, beyond the contract's 54 (see CONTRACT_OPERATIONS).
    op!(55, Get, "/webhook-subscriptions/{subscriptionId}/deliveries", "listWebhookDeliveries", "List a subscription's delivery attempts, newest first",
        scopes: ["webhooks:read"], cond: NONE, idem: false, Webhooks, Query,
        query: &[BUSINESS, CURSOR, LIMIT, QueryParam { name: "eventId", required: false, schema: r#"{"type":"string","minLength":1,"maxLength":200}"#, description: "Only the attempts of this event." }],
        req: None, resp: Json("WebhookDeliveryList"), status: [200]),
    op!(56, Post, "/webhook-subscriptions/{subscriptionId}/redeliver", "redeliverWebhookEvent", "Send one logged event to the subscription again",
        scopes: ["webhooks:write"], cond: NONE, idem: false, Webhooks, Body, query: &[], req: Some("WebhookRedeliver"), resp: Json("WebhookRedelivery"), status: [202]),
    // Console-only agent testing (the contract: "Console-only agent testing
    // uses logged-in session routes, not API-key routes").
    op!(console 57, Get, "/agents/{agentId}/test", "getAgentTest", "Read your test conversation with an agent (console sessions only)",
        scopes: ["agents:read"], cond: NONE, idem: false, Messaging, Query, query: &[BUSINESS], req: None, resp: Json("AgentTestConversation"), status: [200]),
    op!(console 58, Post, "/agents/{agentId}/test/messages", "sendAgentTestMessage", "Say something to an agent under test; its reply follows (console sessions only)",
        scopes: ["agents:write"], cond: NONE, idem: false, Messaging, Body, query: &[], req: Some("AgentTestMessage"), resp: Json("AgentTestConversation"), status: [202]),
    op!(console 59, Delete, "/agents/{agentId}/test", "resetAgentTest", "Start your test conversation with an agent again (console sessions only)",
        scopes: ["agents:write"], cond: NONE, idem: false, Messaging, Query, query: &[BUSINESS], req: None, resp: Json("AgentTestConversation"), status: [200]),
    // Ours: what calls and summary runs are paid from (before, only the
    // admin command line showed it).
    op!(60, Get, "/credits", "getCredits", "Read the microcredit balance and its ledger, newest first",
        scopes: ["credits:read"], cond: NONE, idem: false, Voice, Query, query: Q_PAGE, req: None, resp: Json("CreditAccount"), status: [200]),
];

/// Where the console's session-only routes live: refused to API keys, and
/// API-key routes never live here.
pub const CONSOLE_API_PREFIX: &str = "/console/api/";

/// The contract's operations are the first rows (1-54); the rows after
/// them are operations of ours the contract does not list.
pub const CONTRACT_OPERATIONS: usize = 54;

/// The result of matching a method and path against the table.
pub enum RouteMatch {
    Found(&'static Operation, Vec<(String, String)>),
    /// The path exists but not with this method; carries the allowed methods.
    MethodNotAllowed(Vec<Method>),
    NotFound,
}

/// Matches a request path (no query string) against the table. The most
/// literal template that matches the path decides (`/contacts/categories`
/// is not a contact id), whatever the method; a method it does not have is
/// a 405 that lists the methods it has.
pub fn route(method: &str, path: &str) -> RouteMatch {
    let path = path.trim_end_matches('/');
    let Ok(found) = ROUTER.at(path) else { return RouteMatch::NotFound };
    let ops: &Vec<&'static Operation> = found.value;
    let Some(op) = Method::parse(method).and_then(|m| ops.iter().find(|o| o.method == m)) else {
        return RouteMatch::MethodNotAllowed(ops.iter().map(|o| o.method).collect());
    };
    let mut params = Vec::with_capacity(found.params.len());
    for (name, raw) in found.params.iter() {
        // An empty segment or a broken `%XX` escape is no id of ours.
        let Some(value) = percent_decode(raw).filter(|v| !v.is_empty()) else { return RouteMatch::NotFound };
        params.push((name.to_string(), value));
    }
    RouteMatch::Found(op, params)
}

/// The operation table as a router (built once): each template maps to the
/// operations that share it, one per method. `matchit` prefers a literal
/// segment over a `{param}` one.
static ROUTER: std::sync::LazyLock<matchit::Router<Vec<&'static Operation>>> = std::sync::LazyLock::new(|| {
    let mut by_path: Vec<(&'static str, Vec<&'static Operation>)> = Vec::new();
    for op in OPERATIONS {
        match by_path.iter_mut().find(|(p, _)| *p == op.path) {
            Some((_, ops)) => ops.push(op),
            None => by_path.push((op.path, vec![op])),
        }
    }
    let mut router = matchit::Router::new();
    for (path, ops) in by_path {
        router.insert(path, ops).unwrap_or_else(|e| panic!("operation path {path} does not fit the router: {e}"));
    }
    router
});

/// Decodes `%XX` escapes (and `+` stays `+`: it is not a space in paths or,
/// by our rule, in query values, so an unencoded leading plus still works).
/// None when an escape is broken or the bytes are not UTF-8: the
/// `percent-encoding` crate keeps a broken escape as typed, the API refuses it.
pub fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let whole = |i: usize| b.get(i + 1).is_some_and(u8::is_ascii_hexdigit) && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
    if !b.iter().enumerate().all(|(i, c)| *c != b'%' || whole(i)) {
        return None;
    }
    percent_encoding::percent_decode_str(s).decode_utf8().ok().map(std::borrow::Cow::into_owned)
}

/// Splits and decodes a query string as `application/x-www-form-urlencoded`
/// (what browsers and HTTP clients send, read by `form_urlencoded`): `+` is a
/// space, `%2B` a plus. Returns None when an escape is broken or a part is
/// not UTF-8 (form_urlencoded would keep the one and replace the other; the
/// whole query is checked first: parts end at ASCII bytes, so it is UTF-8
/// exactly when every part is).
pub fn parse_query(q: &str) -> Option<Vec<(String, String)>> {
    percent_decode(&q.replace('+', " "))?;
    Some(form_urlencoded::parse(q.as_bytes()).into_owned().collect())
}

pub fn by_id(id: &str) -> Option<&'static Operation> {
    OPERATIONS.iter().find(|o| o.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_all_54_operations_in_order_then_ours() {
        assert_eq!(OPERATIONS.len(), CONTRACT_OPERATIONS + 6);
        for (i, op) in OPERATIONS.iter().enumerate() {
            assert_eq!(op.number as usize, i + 1, "{}", op.id);
        }
        let mut ids: Vec<_> = OPERATIONS.iter().map(|o| o.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), OPERATIONS.len(), "operationIds are unique");
        // Session-only routes and API-key routes never share a prefix.
        for op in OPERATIONS {
            assert!(op.path.starts_with("/api/v1/") != op.session_only(), "{}", op.id);
        }
    }

    #[test]
    fn a_query_plus_is_a_space_and_an_encoded_plus_a_plus() {
        assert_eq!(parse_query("search=+1555&q=%2B44+7700").unwrap(), vec![("search".into(), " 1555".into()), ("q".into(), "+44 7700".into())]);
        assert_eq!(parse_query("a=%zz"), None);
        assert_eq!(parse_query("a=%C3"), None, "not UTF-8");
        assert_eq!(parse_query("&a=%C3%A9&&b&"), Some(vec![("a".into(), "é".into()), ("b".into(), String::new())]));
        assert_eq!(percent_decode("50%"), None);
        assert_eq!(percent_decode("a+b%2Fc").as_deref(), Some("a+b/c"));
    }

    #[test]
    fn the_cursor_pattern_is_the_guests() {
        let schema: serde_json::Value = serde_json::from_str(CURSOR.schema).unwrap();
        let source = include_str!("../../components/guest/src/cursor.rs");
        let start = source.find("pub const PATTERN: &str = \"").unwrap() + "pub const PATTERN: &str = \"".len();
        let literal = &source[start..start + source[start..].find("\";").unwrap()];
        assert_eq!(schema["pattern"].as_str().unwrap(), literal.replace("\\\\", "\\"));
    }

    #[test]
    fn literal_segments_win_over_params() {
        match route("GET", "/api/v1/contacts/categories") {
            RouteMatch::Found(op, p) => {
                assert_eq!(op.id, "listCategories");
                assert!(p.is_empty());
            }
            _ => panic!("no match"),
        }
        match route("GET", "/api/v1/contacts/0190c0de-0000-7000-8000-000000000000") {
            RouteMatch::Found(op, p) => {
                assert_eq!(op.id, "getContact");
                assert_eq!(p[0].0, "contactId");
            }
            _ => panic!("no match"),
        }
        match route("GET", "/api/v1/voice/calls/resolve") {
            RouteMatch::Found(op, _) => assert_eq!(op.id, "resolveCallContext"),
            _ => panic!("no match"),
        }
    }

    #[test]
    fn wrong_method_and_unknown_path() {
        assert!(matches!(route("PUT", "/api/v1/contacts"), RouteMatch::MethodNotAllowed(_)));
        assert!(matches!(route("PATCH", "/api/v1/contacts/categories"), RouteMatch::MethodNotAllowed(_)));
        assert!(matches!(route("GET", "/api/v1/nope"), RouteMatch::NotFound));
    }

    #[test]
    fn a_literal_path_allows_only_its_own_methods() {
        // Not the methods of `/contacts/{contactId}`, which the path would
        // also fit.
        match route("OPTIONS", "/api/v1/contacts/imports") {
            RouteMatch::MethodNotAllowed(m) => assert_eq!(m, vec![Method::Post]),
            _ => panic!("expected 405"),
        }
        match route("PATCH", "/api/v1/contacts/categories") {
            RouteMatch::MethodNotAllowed(m) => assert_eq!(m, vec![Method::Get, Method::Post, Method::Delete]),
            _ => panic!("expected 405"),
        }
        assert!(matches!(route("GET", "/api/v1/contacts/%zz"), RouteMatch::NotFound), "a broken escape is no id");
        match route("GET", "/api/v1/contacts/a%2Fb/") {
            RouteMatch::Found(op, p) => assert_eq!((op.id, p[0].1.as_str()), ("getContact", "a/b")),
            _ => panic!("an escaped slash stays inside its segment"),
        }
    }

    #[test]
    fn only_application_json_selects_the_json_form() {
        for json in [None, Some("application/json"), Some("Application/JSON; charset=utf-8"), Some(" application/json ")] {
            assert!(is_json_content_type(json), "{json:?}");
        }
        for raw in [Some("text/csv"), Some("application/octet-stream"), Some("application/problem+json"), Some("")] {
            assert!(!is_json_content_type(raw), "{raw:?}");
        }
        assert!(by_id("uploadDataSourceAsset").unwrap().raw_body().is_some());
        assert!(by_id("uploadMedia").unwrap().raw_body().is_none());
    }
}
