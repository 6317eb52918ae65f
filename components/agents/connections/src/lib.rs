//! A business's channel connections (`channel_connections`), each statement
//! written once: chatapp phone numbers (`provider_id` = phoneNumberId,
//! `label`) and the photoapp professional account (`provider_id` = account
//! id, `label` = username; one per business). `switchboard admin channel
//! connect` connects ([`check`], then [`connect`]: provider onboarding,
//! outside the API); the agents area lists and disconnects; the areas that
//! send check [`is_connected`]. Every one runs inside its caller's
//! transaction.
//!
//! Never: bindings, HTTP, a failure envelope; never a `token_ref` read back
//! (the reference is written at connect and cleared at disconnect, and never
//! printed, logged or answered).
//!
//! Entry points: [`check`], [`connect`], [`disconnect_photoapp`],
//! [`is_connected`], [`chatapp_numbers`], [`photoapp_account`].

use switchboard_sql::{params, FromValue, Mismatch, Refusal, Refused, Sql, Value};

/// A channel of agents, assignments and connections (the `channel` column
/// of `agents`, `channel_assignments` and `channel_connections`). Chatapp
/// numbers and the photoapp account are connected by an operator
/// ([`check`]); voice needs no connection; sms and other deliver nothing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Channel {
    Chatapp,
    Voice,
    Photoapp,
    Sms,
    Other,
}

impl Channel {
    /// Every channel, in the order the channel list shows them.
    pub const ALL: [Channel; 5] = [Channel::Chatapp, Channel::Voice, Channel::Photoapp, Channel::Sms, Channel::Other];

    /// Its name in the API and in storage.
    pub fn name(self) -> &'static str {
        match self {
            Channel::Chatapp => "chatapp",
            Channel::Voice => "voice",
            Channel::Photoapp => "photoapp",
            Channel::Sms => "sms",
            Channel::Other => "other",
        }
    }

    /// The channel of a name, if it is one.
    pub fn parse(name: &str) -> Option<Channel> {
        Channel::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// A stored channel reads as the enum (`row.read::<Channel>()`); a name
/// that is no channel is a row mismatch (it cannot be stored: the columns
/// are checked).
impl FromValue for Channel {
    const WANTED: &'static str = "channel name";
    fn from_value(v: Value) -> Option<Self> {
        match v {
            Value::Text(s) => Channel::parse(&s),
            _ => None,
        }
    }
}

/// Bound as its name (`params![channel]`).
impl From<Channel> for Value {
    fn from(c: Channel) -> Self {
        Value::Text(c.name().to_string())
    }
}

impl std::fmt::Display for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A connection that passed [`check`].
pub struct Checked {
    pub channel: Channel,
    pub provider_id: String,
    /// Trimmed; None when empty.
    pub label: Option<String>,
}

/// The channel is chatapp or photoapp; the provider's id 1 to 128 letters,
/// digits or `. _ : -`; the label (trimmed) at most 120 characters.
pub fn check(channel: &str, provider_id: &str, label: Option<&str>) -> Result<Checked, Refused> {
    let channel = match Channel::parse(channel) {
        Some(c @ (Channel::Chatapp | Channel::Photoapp)) => c,
        _ => return Err(Refused::new("channel", "must be chatapp or photoapp")),
    };
    if provider_id.is_empty() || provider_id.len() > 128 || !provider_id.bytes().all(|c| c.is_ascii_alphanumeric() || b"._:-".contains(&c)) {
        return Err(Refused::new("providerId", "must be 1 to 128 letters, digits or . _ : -"));
    }
    let label = label.map(str::trim).filter(|l| !l.is_empty());
    if label.is_some_and(|l| l.chars().count() > 120) {
        return Err(Refused::new("label", "must be at most 120 characters"));
    }
    Ok(Checked { channel, provider_id: provider_id.to_string(), label: label.map(str::to_string) })
}

/// Connects the number or account with a fresh provider token reference
/// made of `random` (connecting another photoapp account disconnects the
/// previous one); the connection's id. A number or account connected to
/// another business is refused (`providerId`).
pub fn connect<S: Sql>(s: &S, biz: &str, c: &Checked, random: &[u8; 32]) -> Result<String, Refusal<S::Error>>
where
    S::Error: From<Mismatch>,
{
    let (channel, provider_id) = (c.channel.name(), c.provider_id.as_str());
    let elsewhere = s
        .query_one("SELECT business_id FROM channel_connections WHERE channel = ?1 AND provider_id = ?2 AND status = 'connected' AND business_id <> ?3", &params![channel, provider_id, biz])
        .map_err(Refusal::Store)?;
    if elsewhere.is_some() {
        return Err(Refusal::Refused(Refused::new("providerId", format!("{provider_id} is connected to another business; disconnect it there first"))));
    }
    let token_ref = format!("sbpt_{}", hex::encode(random));
    write(s, biz, c, &token_ref).map_err(Refusal::Store)
}

fn write<S: Sql>(s: &S, biz: &str, c: &Checked, token_ref: &str) -> Result<String, S::Error>
where
    S::Error: From<Mismatch>,
{
    let (channel, provider_id) = (c.channel.name(), c.provider_id.as_str());
    let (id, now) = (s.new_id(), s.now());
    if c.channel == Channel::Photoapp {
        // One photoapp account per business.
        disconnect_photoapp_except(s, biz, Some(provider_id), &now)?;
    }
    s.execute(
        "INSERT INTO channel_connections (id, business_id, channel, provider_id, label, status, token_ref, provider_assets_json, \
         connected_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, 'connected', ?6, '{}', ?7, ?7) \
         ON CONFLICT (business_id, channel, provider_id) DO UPDATE SET label = COALESCE(excluded.label, channel_connections.label), status = 'connected', \
         token_ref = excluded.token_ref, provider_assets_json = excluded.provider_assets_json, \
         connected_at = CASE WHEN channel_connections.status = 'connected' THEN channel_connections.connected_at ELSE excluded.connected_at END, \
         updated_at = excluded.updated_at",
        &params![id, biz, channel, provider_id, c.label.clone(), token_ref, now],
    )?;
    Ok(s.query_one_as::<String>("SELECT id FROM channel_connections WHERE business_id = ?1 AND channel = ?2 AND provider_id = ?3", &params![biz, channel, provider_id])?.unwrap_or_default())
}

/// Disconnects the business's photoapp account (idempotent): the token
/// reference and the provider's assets (username, cached assets) are
/// cleared and the account's assignment removed.
pub fn disconnect_photoapp<S: Sql>(s: &S, biz: &str) -> Result<(), S::Error> {
    disconnect_photoapp_except(s, biz, None, &s.now())
}

/// [`disconnect_photoapp`] of every connected account but `keep`.
fn disconnect_photoapp_except<S: Sql>(s: &S, biz: &str, keep: Option<&str>, now: &str) -> Result<(), S::Error> {
    s.execute(
        "DELETE FROM channel_assignments WHERE business_id = ?1 AND channel = 'photoapp' AND provider_id IN \
         (SELECT provider_id FROM channel_connections WHERE business_id = ?1 AND channel = 'photoapp' AND status = 'connected' AND provider_id IS NOT ?2)",
        &params![biz, keep],
    )?;
    s.execute(
        "UPDATE channel_connections SET status = 'disconnected', token_ref = NULL, provider_assets_json = NULL, label = NULL, \
         disconnected_at = ?3, updated_at = ?3 \
         WHERE business_id = ?1 AND channel = 'photoapp' AND status = 'connected' AND provider_id IS NOT ?2",
        &params![biz, keep, now],
    )?;
    Ok(())
}

/// True when `provider_id` is a connected number or account of `channel`
/// (`chatapp`, `photoapp`) of the business.
pub fn is_connected<S: Sql>(s: &S, biz: &str, channel: &str, provider_id: &str) -> Result<bool, S::Error> {
    Ok(s.query_one("SELECT 1 FROM channel_connections WHERE business_id = ?1 AND channel = ?2 AND provider_id = ?3 AND status = 'connected'", &params![biz, channel, provider_id])?.is_some())
}

/// The business's connected chatapp numbers: (phoneNumberId, label), oldest
/// connection first.
pub fn chatapp_numbers<S: Sql>(s: &S, biz: &str) -> Result<Vec<(String, Option<String>)>, S::Error>
where
    S::Error: From<Mismatch>,
{
    s.query_as("SELECT provider_id, label FROM channel_connections WHERE business_id = ?1 AND channel = 'chatapp' AND status = 'connected' ORDER BY connected_at, id", &params![biz])
}

/// The business's connected photoapp account: (providerAccountId, username).
pub fn photoapp_account<S: Sql>(s: &S, biz: &str) -> Result<Option<(String, Option<String>)>, S::Error>
where
    S::Error: From<Mismatch>,
{
    s.query_one_as(
        "SELECT provider_id, label FROM channel_connections WHERE business_id = ?1 AND channel = 'photoapp' AND status = 'connected' ORDER BY connected_at DESC, id DESC LIMIT 1",
        &params![biz],
    )
}

/// The business's latest photoapp connection, connected or not.
pub struct PhotoappConnection {
    pub account: String,
    pub username: Option<String>,
    /// `connected` or `disconnected`.
    pub status: String,
    pub connected_at: String,
    pub disconnected_at: Option<String>,
}

/// The connected photoapp connection, else the latest disconnected one.
pub fn latest_photoapp<S: Sql>(s: &S, biz: &str) -> Result<Option<PhotoappConnection>, S::Error>
where
    S::Error: From<Mismatch>,
{
    Ok(s.query_one_as::<(String, Option<String>, String, String, Option<String>)>(
        "SELECT provider_id, label, status, connected_at, disconnected_at FROM channel_connections \
         WHERE business_id = ?1 AND channel = 'photoapp' \
         ORDER BY status = 'connected' DESC, COALESCE(disconnected_at, connected_at) DESC, id DESC LIMIT 1",
        &params![biz],
    )?
    .map(|(account, username, status, connected_at, disconnected_at)| PhotoappConnection { account, username, status, connected_at, disconnected_at }))
}

/// The business `provider_id` of `channel` is connected to, if any.
pub fn owner<S: Sql>(s: &S, channel: &str, provider_id: &str) -> Result<Option<String>, S::Error>
where
    S::Error: From<Mismatch>,
{
    s.query_one_as("SELECT business_id FROM channel_connections WHERE channel = ?1 AND provider_id = ?2 AND status = 'connected'", &params![channel, provider_id])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_checked_before_they_are_written() {
        let c = check("chatapp", "pn-a-1", Some("  Main line ")).unwrap();
        assert_eq!((c.channel, c.provider_id.as_str(), c.label.as_deref()), (Channel::Chatapp, "pn-a-1", Some("Main line")));
        assert_eq!(check("photoapp", "ig.1:a_b-c", Some("   ")).unwrap().label, None, "a blank label is none");
        assert_eq!(check("sms", "x", None).err().unwrap().field, "channel");
        assert_eq!(check("voice", "x", None).err().unwrap().field, "channel", "voice needs no connection");
        for bad in ["", "bad id", "ü", &"x".repeat(129)] {
            assert_eq!(check("chatapp", bad, None).err().unwrap().field, "providerId", "{bad:?}");
        }
        assert_eq!(check("chatapp", "pn", Some(&"é".repeat(121))).err().unwrap().field, "label");
        assert!(check("chatapp", "pn", Some(&"é".repeat(120))).is_ok());
    }

    #[test]
    fn channels_read_back_as_their_names() {
        for c in Channel::ALL {
            assert_eq!(Channel::parse(c.name()), Some(c));
            assert_eq!(c.to_string(), c.name());
        }
        assert_eq!(Channel::parse("Chatapp"), None, "names are exact");
        assert_eq!(Channel::parse(""), None);
    }
}
