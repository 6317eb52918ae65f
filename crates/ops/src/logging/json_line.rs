//! The JSON line of an event, byte for byte the line of
//! `tracing_subscriber::fmt().json()` with this service's settings
//! (timestamp, level, the event's fields flattened, the current span as
//! `span`; no target, no span list, no thread), without its cost: the stock
//! formatter keeps a span's fields as JSON text and parses that text back
//! into a `serde_json::Value` for every line written inside the span (a
//! map, a string per key and value), about 5% of a contact read's CPU. The
//! text is already the JSON object it would print (`JsonFields` writes it
//! from a sorted map, and parsing keeps that order), so it is copied as is
//! and the span's name appended. The unit tests compare both formatters'
//! lines.

use serde::ser::{SerializeMap, Serializer as _};
use std::fmt;
use tracing::{Event, Subscriber};
use tracing_serde::AsSerde;
use tracing_subscriber::fmt::format::{JsonFields, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// The event formatter (see the module).
pub struct JsonLine<T = SystemTime> {
    timer: T,
}

impl JsonLine {
    pub fn new() -> JsonLine {
        JsonLine { timer: SystemTime }
    }
}

impl<T> JsonLine<T> {
    #[cfg(test)]
    pub fn with_timer(timer: T) -> JsonLine<T> {
        JsonLine { timer }
    }
}

/// `io::Write` over a `fmt::Write`, for serde_json's serializer.
struct Adaptor<'a, 'w>(&'a mut Writer<'w>);

impl std::io::Write for Adaptor<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // serde_json writes whole UTF-8 sequences (it escapes str slices).
        let s = std::str::from_utf8(buf).map_err(std::io::Error::other)?;
        self.0.write_str(s).map_err(std::io::Error::other)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The current span's stored fields, printed as the stock formatter prints
/// them: the object's entries, then `name`.
struct Span<'a> {
    fields: &'a str,
    name: &'static str,
}

impl serde::Serialize for Span<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        match serde_json::from_str::<serde_json::Value>(self.fields) {
            Ok(serde_json::Value::Object(fields)) => {
                for (k, v) in fields {
                    map.serialize_entry(&k, &v)?;
                }
            }
            // Never written by JsonFields; shown as the stock formatter does.
            Ok(value) => {
                map.serialize_entry("field", &value)?;
                map.serialize_entry("field_error", "field was no a valid object")?;
            }
            Err(e) => map.serialize_entry("field_error", &e.to_string())?,
        }
        map.serialize_entry("name", self.name)?;
        map.end()
    }
}

/// `{"a":1,"b":2}` and the name: the object's text up to its closing brace,
/// `,"name":…}`. None when the text is not one flat JSON object's (then it
/// is parsed, as the stock formatter always does).
fn span_text(fields: &str, name: &str, out: &mut Writer<'_>) -> Option<fmt::Result> {
    let inner = fields.strip_prefix('{')?.strip_suffix('}')?;
    // A span name is an identifier; one that would need escapes is parsed.
    if name.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        return None;
    }
    let sep = if inner.is_empty() { "" } else { "," };
    Some(write!(out, "{{{inner}{sep}\"name\":\"{name}\"}}"))
}

impl<S, T> FormatEvent<S, JsonFields> for JsonLine<T>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    T: FormatTime,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, JsonFields>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let mut timestamp = String::new();
        self.timer.format_time(&mut Writer::new(&mut timestamp))?;
        let meta = event.metadata();
        let span = event.parent().and_then(|id| ctx.span(id)).or_else(|| ctx.lookup_current());
        {
            let mut serializer = serde_json::Serializer::new(Adaptor(&mut writer));
            let mut map = serializer.serialize_map(None).map_err(|_| fmt::Error)?;
            map.serialize_entry("timestamp", &timestamp).map_err(|_| fmt::Error)?;
            map.serialize_entry("level", &meta.level().as_serde()).map_err(|_| fmt::Error)?;
            let mut visitor = tracing_serde::SerdeMapVisitor::new(map);
            event.record(&mut visitor);
            let map = visitor.take_serializer().map_err(|_| fmt::Error)?;
            if span.is_none() {
                map.end().map_err(|_| fmt::Error)?;
                return writeln!(writer);
            }
            // Left open (serde_json writes nothing when a map is dropped):
            // the span goes in as text and the line is closed below.
        }
        let Some(span) = span else { return Ok(()) };
        let name = span.metadata().name();
        let ext = span.extensions();
        let fields = ext.get::<FormattedFields<JsonFields>>().map_or("", |f| f.fields.as_str());
        writer.write_str(",\"span\":")?;
        match span_text(fields, name, &mut writer) {
            Some(written) => written?,
            None => writer.write_str(&serde_json::to_string(&Span { fields, name }).map_err(|_| fmt::Error)?)?,
        }
        writeln!(writer, "}}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::fmt::MakeWriter;

    struct Fixed;
    impl FormatTime for Fixed {
        fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
            w.write_str("2026-11-26T09:00:00.000001Z")
        }
    }

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    impl<'a> MakeWriter<'a> for Buffer {
        type Writer = Buffer;
        fn make_writer(&'a self) -> Buffer {
            self.clone()
        }
    }

    /// The events this service writes: outside a span, inside a request's
    /// span before and after a field is recorded on it, inside a job
    /// step's, in a span with no fields, with text that needs escaping.
    fn events() {
        tracing::info!("started \"quoted\" \n line");
        let request = tracing::info_span!("request", requestId = %"r-1", operation = "getContact", businessId = tracing::field::Empty);
        request.in_scope(|| {
            tracing::warn!("before the business is known");
            tracing::Span::current().record("businessId", "b\u{e9}\"1");
            tracing::info!(requestId = "r-1", method = "GET", path = "/api/v1/contacts/{contactId}", operation = "getContact", status = 200u16, durationUs = 41u64, "request");
        });
        tracing::info_span!("job_step", jobId = "j", kind = "messaging.inbound", attempt = 1i64, businessId = "b").in_scope(|| {
            tracing::info!(outcome = "done", durationMs = 3i64, "job step");
        });
        tracing::info_span!("empty").in_scope(|| tracing::error!(ratio = 0.25f64, ok = true, "x"));
    }

    fn lines_of(ours: bool) -> String {
        let buffer = Buffer::default();
        let builder = tracing_subscriber::fmt().json().flatten_event(true).with_current_span(true).with_span_list(false).with_target(false).with_timer(Fixed).with_writer(buffer.clone());
        if ours {
            tracing::subscriber::with_default(builder.event_format(JsonLine::with_timer(Fixed)).finish(), events);
        } else {
            tracing::subscriber::with_default(builder.finish(), events);
        }
        let bytes = buffer.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn lines_are_the_stock_json_formatters_byte_for_byte() {
        let (stock, ours) = (lines_of(false), lines_of(true));
        assert_eq!(stock.lines().count(), 5, "{stock}");
        assert!(stock.contains(r#""span":{"businessId":"bé\"1","operation":"getContact","requestId":"r-1","name":"request"}"#), "{stock}");
        assert_eq!(ours, stock);
    }

    #[test]
    fn a_span_text_that_is_not_an_object_is_parsed() {
        let mut out = String::new();
        assert!(span_text("", "request", &mut Writer::new(&mut out)).is_none());
        assert!(span_text("{}", "request", &mut Writer::new(&mut out)).is_some());
        assert_eq!(out, r#"{"name":"request"}"#);
    }
}
