//! Pure rules of webhook subscriptions (no host calls; unit-tested on the
//! native target): event types per channel, the callback URL policy and the
//! signing secret format.

pub use switchboard_channel_connections::Channel;
use switchboard_guest::{fail, Failure};

/// Event types a chatapp subscription may receive (spec, create shape).
pub const CHATAPP_EVENTS: [&str; 5] = ["chatapp.message.received", "chatapp.message.sent", "chatapp.message.delivered", "chatapp.message.read", "chatapp.message.failed"];

/// Event types a photoapp subscription may receive (spec, create shape).
pub const PHOTOAPP_EVENTS: [&str; 9] = [
    "photoapp.message.received",
    "photoapp.message.sent",
    "photoapp.message.seen",
    "photoapp.message.reaction",
    "photoapp.message.referral",
    "photoapp.message.failed",
    "photoapp.comment.received",
    "photoapp.comment.replied",
    "photoapp.comment.failed",
];

/// The channels a subscription can be of.
pub const CHANNELS: [Channel; 2] = [Channel::Chatapp, Channel::Photoapp];

/// A subscription's channel by its stored name; None for any other.
pub fn subscription_channel(name: &str) -> Option<Channel> {
    CHANNELS.into_iter().find(|c| c.name() == name)
}

/// The channel an event type belongs to; None for an unknown type.
pub fn event_channel(event: &str) -> Option<Channel> {
    if CHATAPP_EVENTS.contains(&event) {
        Some(Channel::Chatapp)
    } else if PHOTOAPP_EVENTS.contains(&event) {
        Some(Channel::Photoapp)
    } else {
        None
    }
}

pub use switchboard_guest::fail::quote;

/// The events of a subscription of `channel`: at least one, no duplicates,
/// each a known event type of that channel. The failure names the offending
/// entry (`events[i]`) and event.
pub fn check_events(channel: Channel, events: &[String]) -> Result<(), Failure> {
    if events.is_empty() {
        return Err(fail::validation("events_required", "`events` must list at least one event type"));
    }
    for (i, e) in events.iter().enumerate() {
        match event_channel(e) {
            None => return Err(fail::validation("unknown_event_type", format!("`events[{i}]`: `{}` is not an event type of this API", quote(e, 64)))),
            Some(c) if c != channel => {
                return Err(fail::validation(
                    "event_channel_mismatch",
                    format!("`events[{i}]`: `{e}` is a {} event; a {} subscription can only receive {}.* events", c.name(), channel.name(), channel.name()),
                ))
            }
            Some(_) => {}
        }
        if events[..i].contains(e) {
            return Err(fail::validation("duplicate_event", format!("`events[{i}]`: `{e}` is listed more than once")));
        }
    }
    Ok(())
}

/// The callback URL policy at subscription time: an absolute `http` or
/// `https` URL with a host (DNS name, IPv4 or bracketed IPv6) and optional
/// port, printable ASCII only, no credentials (`user:pass@`) and no fragment.
/// Loopback and private targets are allowed (local development); delivery
/// will apply its own target policy when it is built. Returns the reason.
pub fn callback_url_problem(url: &str) -> Option<&'static str> {
    if url.len() > 2048 {
        return Some("must be at most 2048 characters");
    }
    if !url.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Some("must be printable ASCII without spaces (percent-encode other characters; use punycode for international host names)");
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Some("must be an absolute http or https URL");
    };
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return Some("must use the http or https scheme");
    }
    if url.contains('#') {
        return Some("must not contain a fragment (`#…`)");
    }
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    if authority.contains('@') {
        return Some("must not contain credentials (`user:password@`)");
    }
    let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
        let Some((v6, after)) = inner.split_once(']') else {
            return Some("has an unterminated IPv6 host (`[…]`)");
        };
        if v6.is_empty() || !v6.contains(':') || !v6.bytes().all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.') {
            return Some("has an invalid IPv6 host");
        }
        match after {
            "" => (None, None),
            p => match p.strip_prefix(':') {
                Some(p) => (None, Some(p)),
                None => return Some("has characters after the IPv6 host"),
            },
        }
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (Some(h), Some(p)),
            None => (Some(authority), None),
        }
    };
    if let Some(host) = host {
        if host.is_empty() {
            return Some("must name a host");
        }
        if host.len() > 253 {
            return Some("has a host name longer than 253 characters");
        }
        let host = host.strip_suffix('.').unwrap_or(host);
        let label_ok = |l: &str| !l.is_empty() && l.len() <= 63 && !l.starts_with('-') && !l.ends_with('-') && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !host.split('.').all(label_ok) {
            return Some("has an invalid host name");
        }
    }
    if let Some(p) = port {
        if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) || !(1..=65535).contains(&p.parse::<u32>().unwrap_or(0)) {
            return Some("has an invalid port (1 to 65535)");
        }
    }
    None
}

/// `400 invalid_callback_url` unless `url` passes [`callback_url_problem`].
pub fn check_callback_url(url: &str) -> Result<(), Failure> {
    match callback_url_problem(url) {
        None => Ok(()),
        Some(why) => Err(fail::validation("invalid_callback_url", format!("`callbackUrl` {why}"))),
    }
}

/// A signing secret from 32 random bytes: `whsec_` + 64 lowercase hex digits.
pub fn secret_from(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(6 + bytes.len() * 2);
    s.push_str("whsec_");
    for b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

/// The last four characters of a secret (what lists show).
pub fn last4(secret: &str) -> String {
    secret[secret.len().saturating_sub(4)..].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_per_channel() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(check_events(Channel::Chatapp, &v(&["chatapp.message.received", "chatapp.message.read"])).is_ok());
        assert!(check_events(Channel::Photoapp, &v(&PHOTOAPP_EVENTS)).is_ok());
        assert_eq!(check_events(Channel::Chatapp, &[]).unwrap_err().code, "events_required");
        let e = check_events(Channel::Chatapp, &v(&["chatapp.message.sent", "photoapp.message.seen"])).unwrap_err();
        assert_eq!(e.code, "event_channel_mismatch");
        assert!(e.message.contains("events[1]") && e.message.contains("photoapp.message.seen"), "{}", e.message);
        assert_eq!(check_events(Channel::Photoapp, &v(&["chatapp.message.sent"])).unwrap_err().code, "event_channel_mismatch");
        assert_eq!(check_events(Channel::Chatapp, &v(&["chatapp.message.nope"])).unwrap_err().code, "unknown_event_type");
        assert_eq!(check_events(Channel::Chatapp, &v(&["chatapp.message.sent", "chatapp.message.sent"])).unwrap_err().code, "duplicate_event");
    }

    #[test]
    fn callback_urls() {
        for ok in [
            "https://hooks.example.com/switchboard",
            "http://127.0.0.1:8080/hook?x=1&y=2",
            "http://localhost:3000",
            "HTTPS://Example.COM./a/b",
            "http://[::1]:9000/hook",
            "http://10.0.0.5/hook",
            "https://my_service.internal/hook",
            "https://example.com/p@th",
        ] {
            assert_eq!(callback_url_problem(ok), None, "{ok}");
        }
        for bad in [
            "ftp://example.com/hook",
            "mailto:a@example.com",
            "example.com/hook",
            "https:///nohost",
            "https://",
            "https://user:pass@example.com/hook",
            "https://user@example.com/hook",
            "https://example.com/hook#frag",
            "https://example.com:0/",
            "https://example.com:99999/",
            "https://example.com:/",
            "https://exa mple.com/",
            "https://exämple.com/",
            "https://-bad.example.com/",
            "https://a..b/",
            "http://[::1/hook",
            "http://[zz]/hook",
        ] {
            assert!(callback_url_problem(bad).is_some(), "{bad}");
        }
        assert_eq!(check_callback_url("https://u:p@x.test/").unwrap_err().code, "invalid_callback_url");
    }

    #[test]
    fn secrets() {
        let s = secret_from(&[0xab; 32]);
        assert_eq!(s.len(), 70);
        assert!(s.starts_with("whsec_abab"));
        assert_eq!(last4(&s), "abab");
    }
}
