//! An outbound message's delivery status (`messages.status`, the send
//! result's and the delivery events' `status`), as one enum: the delivery
//! job, the message read and the campaigns' member outcomes compare it,
//! never the strings.

use switchboard_channel_connections::Channel;

/// Where an outbound message is on its way to the recipient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageStatus {
    /// Stored; not yet handed to the provider.
    Queued,
    /// The provider took it (its id is stored).
    Submitted,
    /// The provider accepted it for the network.
    Accepted,
    Sent,
    Delivered,
    Read,
    Failed,
}

impl MessageStatus {
    pub const ALL: [MessageStatus; 7] = [Self::Queued, Self::Submitted, Self::Accepted, Self::Sent, Self::Delivered, Self::Read, Self::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Submitted => "submitted",
            Self::Accepted => "accepted",
            Self::Sent => "sent",
            Self::Delivered => "delivered",
            Self::Read => "read",
            Self::Failed => "failed",
        }
    }

    /// A stored or reported status; None for text we do not know (a
    /// provider's report of one is logged and ignored).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// With the provider and not final: the delivery job keeps tracking it.
    pub fn is_tracked(self) -> bool {
        matches!(self, Self::Submitted | Self::Accepted | Self::Sent | Self::Delivered)
    }

    /// The column that keeps when the message reached this status; None
    /// for `queued` (its time is the message's creation).
    pub fn timestamp_column(self) -> Option<&'static str> {
        Some(match self {
            Self::Queued => return None,
            Self::Submitted => "submitted_at",
            Self::Accepted => "accepted_at",
            Self::Sent => "sent_at",
            Self::Delivered => "delivered_at",
            Self::Read => "read_at",
            Self::Failed => "failed_at",
        })
    }

    /// The delivery event of this status on `channel`, if it has one:
    /// chatapp reports sent/delivered/read/failed; photoapp sent/seen/failed
    /// (its `read` is `photoapp.message.seen`; it has no delivered event).
    pub fn event_type(self, channel: Channel) -> Option<&'static str> {
        Some(match (channel, self) {
            (Channel::Chatapp, Self::Sent) => "chatapp.message.sent",
            (Channel::Chatapp, Self::Delivered) => "chatapp.message.delivered",
            (Channel::Chatapp, Self::Read) => "chatapp.message.read",
            (Channel::Chatapp, Self::Failed) => "chatapp.message.failed",
            (Channel::Photoapp, Self::Sent) => "photoapp.message.sent",
            (Channel::Photoapp, Self::Read) => "photoapp.message.seen",
            (Channel::Photoapp, Self::Failed) => "photoapp.message.failed",
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::MessageStatus::{self, *};
    use switchboard_channel_connections::Channel;

    #[test]
    fn statuses_read_back_and_every_reported_one_has_a_column() {
        for s in MessageStatus::ALL {
            assert_eq!(MessageStatus::parse(s.as_str()), Some(s));
            assert_eq!(s.timestamp_column().is_none(), s == Queued, "{s:?}");
        }
        assert_eq!(MessageStatus::parse("bounced"), None);
    }

    #[test]
    fn delivery_events_per_channel() {
        assert_eq!(Delivered.event_type(Channel::Chatapp), Some("chatapp.message.delivered"));
        assert_eq!(Read.event_type(Channel::Photoapp), Some("photoapp.message.seen"));
        assert_eq!(Delivered.event_type(Channel::Photoapp), None);
        assert_eq!(Accepted.event_type(Channel::Chatapp), None);
        assert_eq!(Sent.event_type(Channel::Voice), None);
    }
}
