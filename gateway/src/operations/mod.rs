//! The operation table: one row per operation of the API contract. Routing,
//! scopes, idempotency, validation and the OpenAPI paths all read this table,
//! so they cannot drift apart.

mod table;

use std::fmt;
/// Who answers an operation (an area's component, or the gateway itself)
/// and every operation's id: one list, `components/operation-ids`, that
/// the table, the host, the edge and the areas share.
pub use switchboard_operation_ids::{Component, OperationId, UnknownOperation};
pub use table::OPERATIONS;

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
    pub id: OperationId,
    pub summary: &'static str,
    pub scopes: &'static [&'static str],
    pub conditional_scopes: &'static [ConditionalScope],
    /// `Idempotency-Key` must be sent. Other mutations may send one.
    pub idempotency_required: bool,
    /// Who answers it: `id.component()`, the area the id is listed under.
    pub component: Component,
    pub business_in: BusinessIn,
    pub query: &'static [QueryParam],
    /// Request body schema name in `components.schemas`.
    pub request: Option<&'static str>,
    pub response: Response,
    /// Success statuses, the usual one first (createCategory answers 200 when
    /// it reuses an existing name).
    pub success_status: &'static [u16],
    /// Where it differs from most operations (each field's default is
    /// the common case; a row names only the ones it changes).
    pub rules: Rules,
}

/// The rules most operations share, set in a table row only where its
/// operation differs.
#[derive(Clone, Copy, Debug)]
pub struct Rules {
    /// The largest request body it accepts (413 beyond it).
    pub max_body_bytes: usize,
    /// Its raw-body variant, when it has one.
    pub raw_body: Option<&'static RawBody>,
    /// Top-level body fields naming a URL the service will call out to.
    /// Under the public-only outbound policy (the default, unless `serve
    /// --webhook-allow-private`) the host judges them before the write.
    pub outbound_url_fields: &'static [&'static str],
    /// Fields of `data` that carry a copy-once secret. They are never
    /// stored with an idempotency record, so a replay cannot show them
    /// again.
    pub secret_fields: &'static [&'static str],
    /// A create: the id its answer carries, which the document links to
    /// the operations that take it (`links.rs`).
    pub creates: Option<Created>,
    /// The document's tag, where it is not the component's name.
    pub tag: Option<&'static str>,
}

impl Rules {
    pub const DEFAULT: Rules = Rules { max_body_bytes: DEFAULT_MAX_BODY_BYTES, raw_body: None, outbound_url_fields: &[], secret_fields: &[], creates: None, tag: None };
}

/// The id a create makes: where its success envelope carries it (a JSON
/// pointer) and the name of the path or query parameter, or body field,
/// that other operations take it by.
#[derive(Clone, Copy, Debug)]
pub struct Created {
    pub pointer: &'static str,
    pub name: &'static str,
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
        self.rules.max_body_bytes
    }

    /// The raw-body variant, for operations that have one.
    pub fn raw_body(&self) -> Option<&'static RawBody> {
        self.rules.raw_body
    }

    /// Top-level body fields naming a URL the service will call out to
    /// ([`Rules::outbound_url_fields`]).
    pub fn outbound_url_fields(&self) -> &'static [&'static str] {
        self.rules.outbound_url_fields
    }

    /// Whether the owning component parses the body in a prepare step before
    /// the write transaction (WIT `handler.prepare`): the operations whose
    /// body is large and whose parse would otherwise hold the write gate.
    /// The area lists them in its `Prepared` (`components/operation-ids`),
    /// which its `prepare` matches.
    pub fn prepared_before_write(&self) -> bool {
        self.id.prepared_before_write()
    }

    /// Fields of `data` that carry a copy-once secret ([`Rules::secret_fields`]).
    pub fn secret_fields(&self) -> &'static [&'static str] {
        self.rules.secret_fields
    }

    /// Its tag in the document: the component's name, unless the row says
    /// otherwise.
    pub fn tag(&self) -> &'static str {
        self.rules.tag.unwrap_or(self.component.name())
    }
}

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

/// The table row of an operation.
pub fn by_id(id: OperationId) -> &'static Operation {
    OPERATIONS.iter().find(|o| o.id == id).expect("every operation has its row (a test walks them)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_all_54_operations_in_order_then_ours() {
        for (i, op) in OPERATIONS[..CONTRACT_OPERATIONS].iter().enumerate() {
            assert_eq!(op.number as usize, i + 1, "{}", op.id);
        }
        // Ours follow in increasing order. A number is the operation's name
        // in the docs (x-operation-number), so it is never reused: gaps are
        // allowed where ranges were handed out to work done in parallel.
        let mut last = CONTRACT_OPERATIONS as u8;
        for op in &OPERATIONS[CONTRACT_OPERATIONS..] {
            assert!(op.number > last, "{} is numbered {} after {}", op.id, op.number, last);
            last = op.number;
        }
        // Every operation id has exactly one row, answered by the area it
        // is listed under.
        for &id in OperationId::ALL {
            assert_eq!(OPERATIONS.iter().filter(|o| o.id == id).count(), 1, "{id} has one row");
        }
        assert_eq!(OPERATIONS.len(), OperationId::ALL.len(), "no row without an id");
        for op in OPERATIONS {
            assert_eq!(op.component, op.id.component(), "{}", op.id);
        }
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
        let schema: serde_json::Value = serde_json::from_str(table::CURSOR.schema).unwrap();
        let source = include_str!("../../../components/guest/src/cursor.rs");
        let start = source.find("pub const PATTERN: &str = \"").unwrap() + "pub const PATTERN: &str = \"".len();
        let literal = &source[start..start + source[start..].find("\";").unwrap()];
        assert_eq!(schema["pattern"].as_str().unwrap(), literal.replace("\\\\", "\\"));
    }

    #[test]
    fn literal_segments_win_over_params() {
        match route("GET", "/api/v1/contacts/categories") {
            RouteMatch::Found(op, p) => {
                assert_eq!(op.id, OperationId::ListCategories);
                assert!(p.is_empty());
            }
            _ => panic!("no match"),
        }
        match route("GET", "/api/v1/contacts/0190c0de-0000-7000-8000-000000000000") {
            RouteMatch::Found(op, p) => {
                assert_eq!(op.id, OperationId::GetContact);
                assert_eq!(p[0].0, "contactId");
            }
            _ => panic!("no match"),
        }
        match route("GET", "/api/v1/voice/calls/resolve") {
            RouteMatch::Found(op, _) => assert_eq!(op.id, OperationId::ResolveCallContext),
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
            RouteMatch::Found(op, p) => assert_eq!((op.id, p[0].1.as_str()), (OperationId::GetContact, "a/b")),
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
        assert!(by_id(OperationId::UploadDataSourceAsset).raw_body().is_some());
        assert!(by_id(OperationId::UploadMedia).raw_body().is_none());
    }
}
