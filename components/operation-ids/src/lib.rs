//! Every operation's id, written once, by the area that answers it.
//!
//! [`OperationId`] is what the gateway's operation table
//! (`gateway/src/operations/table.rs`: method, path, scopes and every
//! other rule of a row) names each row by, and what the host and the edge
//! match on. Each area has a module here with its own enum, `Operation`,
//! that its `handle` parses the request's operation name into once and
//! matches exhaustively, and `Prepared`, the operations whose body it
//! parses in a prepare step before the write transaction (its `prepare`
//! matches that one): an operation added to an area without an arm in its
//! `handle` is a compile error, not a 501 at run time.
//!
//! The name crosses the WIT boundary as the string the document calls the
//! operationId (`request.operation`); [`OperationId::as_str`] and the
//! `FromStr` impls are the two directions. No dependencies and no host
//! calls, so the gateway (native and edge), the guest library and every
//! area link it.
//!
//! To add an operation: one line in its area below, then its row in the
//! table and its arm in the area's `handle` (ARCHITECTURE.md, "Add an
//! operation").

use std::fmt;
use std::str::FromStr;

/// A name that is no operation (of the area asked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownOperation(pub String);

impl fmt::Display for UnknownOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is no operation here", self.0)
    }
}

impl std::error::Error for UnknownOperation {}

/// Declares the areas and their operations: [`Component`], [`OperationId`]
/// and a module per area with its `Operation` and `Prepared` enums.
macro_rules! operations {
    ($(
        $(#[$doc:meta])*
        $module:ident: $area:ident $name:literal {
            handle { $($op:ident = $op_name:literal,)* }
            prepare { $($prep:ident,)* }
        }
    )*) => {
        /// Who answers an operation: a resource area (a WebAssembly
        /// component), or the request path itself ([`Component::Gateway`]).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Component {
            $($(#[$doc])* $area,)*
        }

        impl Component {
            pub const ALL: &'static [Component] = &[$(Component::$area,)*];

            /// The component's name (its folder in `components/`, the
            /// runtime's key for it, its tag in the document).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Component::$area => $name,)*
                }
            }
        }

        /// An operation, as the table and the document name it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum OperationId {
            $($($op,)*)*
        }

        impl OperationId {
            /// Every operation, area by area.
            pub const ALL: &'static [OperationId] = &[$($(OperationId::$op,)*)*];

            /// Its operationId: `listContacts`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($(OperationId::$op => $op_name,)*)*
                }
            }

            /// The area that answers it.
            pub const fn component(self) -> Component {
                match self {
                    $($(OperationId::$op => Component::$area,)*)*
                }
            }

            /// Whether its area parses the body in a prepare step before
            /// the write transaction (WIT `handler.prepare`): a body large
            /// enough that parsing it must not hold the write gate.
            pub const fn prepared_before_write(self) -> bool {
                match self {
                    $($(OperationId::$prep => true,)*)*
                    _ => false,
                }
            }
        }

        impl FromStr for OperationId {
            type Err = UnknownOperation;
            fn from_str(s: &str) -> Result<OperationId, UnknownOperation> {
                match s {
                    $($($op_name => Ok(OperationId::$op),)*)*
                    _ => Err(UnknownOperation(s.to_string())),
                }
            }
        }

        $(
            $(#[$doc])*
            pub mod $module {
                use super::{OperationId, UnknownOperation};
                use std::str::FromStr;

                /// Every operation of the area: its `handle` matches this.
                #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
                pub enum Operation {
                    $($op,)*
                }

                impl Operation {
                    pub const ALL: &'static [Operation] = &[$(Operation::$op,)*];

                    pub const fn id(self) -> OperationId {
                        match self {
                            $(Operation::$op => OperationId::$op,)*
                        }
                    }

                    pub const fn as_str(self) -> &'static str {
                        self.id().as_str()
                    }
                }

                impl FromStr for Operation {
                    type Err = UnknownOperation;
                    fn from_str(s: &str) -> Result<Operation, UnknownOperation> {
                        match s {
                            $($op_name => Ok(Operation::$op),)*
                            _ => Err(UnknownOperation(s.to_string())),
                        }
                    }
                }

                impl From<Operation> for OperationId {
                    fn from(op: Operation) -> OperationId {
                        op.id()
                    }
                }

                impl TryFrom<OperationId> for Operation {
                    type Error = UnknownOperation;
                    fn try_from(id: OperationId) -> Result<Operation, UnknownOperation> {
                        match id {
                            $(OperationId::$op => Ok(Operation::$op),)*
                            _ => Err(UnknownOperation(id.as_str().to_string())),
                        }
                    }
                }

                /// The area's operations with a prepare step (its `prepare`
                /// matches this).
                #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
                pub enum Prepared {
                    $($prep,)*
                }

                impl Prepared {
                    pub const ALL: &'static [Prepared] = &[$(Prepared::$prep,)*];

                    /// The operation it prepares (an id of another area
                    /// is a compile error).
                    pub const fn operation(self) -> Operation {
                        match self {
                            $(Prepared::$prep => Operation::$prep,)*
                        }
                    }
                }

                impl FromStr for Prepared {
                    type Err = UnknownOperation;
                    fn from_str(s: &str) -> Result<Prepared, UnknownOperation> {
                        Prepared::ALL.iter().copied().find(|p| p.operation().as_str() == s).ok_or_else(|| UnknownOperation(s.to_string()))
                    }
                }
            }
        )*
    };
}

operations! {
    /// Answered by the request path itself, in the host and at the edge
    /// (the gateway's `Gateway::own_answer`): no component runs.
    gateway: Gateway "gateway" {
        handle {
            GetAutomationContract = "getAutomationContract",
        }
        prepare {}
    }
    /// Webhook subscriptions, their delivery log and redelivery.
    webhooks: Webhooks "webhooks" {
        handle {
            ListWebhookSubscriptions = "listWebhookSubscriptions",
            CreateWebhookSubscription = "createWebhookSubscription",
            UpdateWebhookSubscription = "updateWebhookSubscription",
            RevokeWebhookSubscription = "revokeWebhookSubscription",
            RotateWebhookSigningSecret = "rotateWebhookSigningSecret",
            ListWebhookDeliveries = "listWebhookDeliveries",
            RedeliverWebhookEvent = "redeliverWebhookEvent",
        }
        prepare {}
    }
    /// Media, messages, the console's agent testing, the inbox, saved
    /// replies and the daily message figures.
    messaging: Messaging "messaging" {
        handle {
            UploadMedia = "uploadMedia",
            SendMessage = "sendMessage",
            GetMessage = "getMessage",
            GetAgentTest = "getAgentTest",
            SendAgentTestMessage = "sendAgentTestMessage",
            ResetAgentTest = "resetAgentTest",
            ListConversations = "listConversations",
            GetConversation = "getConversation",
            GetConversationThread = "getConversationThread",
            MarkConversationRead = "markConversationRead",
            UpdateConversation = "updateConversation",
            GetMessageStats = "getMessageStats",
            SendPhotoappPrivateReply = "sendPhotoappPrivateReply",
            ListTeamMembers = "listTeamMembers",
            CreateConversationNote = "createConversationNote",
            ListSavedReplies = "listSavedReplies",
            CreateSavedReply = "createSavedReply",
            UpdateSavedReply = "updateSavedReply",
            DeleteSavedReply = "deleteSavedReply",
        }
        prepare {}
    }
    /// Agents, channels, the photoapp connection and channel assignments.
    agents: Agents "agents" {
        handle {
            ListChannels = "listChannels",
            GetPhotoappConnection = "getPhotoappConnection",
            DisconnectPhotoapp = "disconnectPhotoapp",
            ListAgents = "listAgents",
            CreateAgent = "createAgent",
            UpdateAgent = "updateAgent",
            ArchiveAgent = "archiveAgent",
            GetChannelAssignment = "getChannelAssignment",
            UpdateChannelAssignment = "updateChannelAssignment",
        }
        prepare {}
    }
    /// Data sources, their uploads and ingestions.
    data_sources: DataSources "data-sources" {
        handle {
            ListDataSources = "listDataSources",
            CreateDataSource = "createDataSource",
            UpdateDataSource = "updateDataSource",
            ArchiveDataSource = "archiveDataSource",
            UploadDataSourceAsset = "uploadDataSourceAsset",
            InspectIngestion = "inspectIngestion",
            ResolveIngestion = "resolveIngestion",
        }
        prepare {
            UploadDataSourceAsset,
        }
    }
    /// Contacts, categories, imports, the timeline and participant links.
    contacts: Contacts "contacts" {
        handle {
            ListContacts = "listContacts",
            CreateContact = "createContact",
            DeleteContacts = "deleteContacts",
            UpdateContacts = "updateContacts",
            ImportContacts = "importContacts",
            ListCategories = "listCategories",
            CreateCategory = "createCategory",
            DeleteCategory = "deleteCategory",
            GetContact = "getContact",
            UpdateContact = "updateContact",
            GetContactTimeline = "getContactTimeline",
            LinkParticipantContact = "linkParticipantContact",
        }
        prepare {
            ImportContacts,
        }
    }
    /// Calls, their transcripts, credits and the daily call and credit
    /// figures.
    voice: Voice "voice" {
        handle {
            ListCalls = "listCalls",
            StartCall = "startCall",
            StartCallBatch = "startCallBatch",
            ResolveCallContext = "resolveCallContext",
            GetCall = "getCall",
            DownloadTranscript = "downloadTranscript",
            CancelCall = "cancelCall",
            GetCredits = "getCredits",
            GetCallStats = "getCallStats",
            GetCreditStats = "getCreditStats",
            GetBusinessSettings = "getBusinessSettings",
            UpdateBusinessSettings = "updateBusinessSettings",
        }
        prepare {}
    }
    /// Campaigns, iterations, memberships, recipients, summary runs and
    /// exports.
    campaigns: Campaigns "campaigns" {
        handle {
            ListCampaigns = "listCampaigns",
            CreateCampaign = "createCampaign",
            PreviewCampaignAdmission = "previewCampaignAdmission",
            GetCampaign = "getCampaign",
            UpdateCampaign = "updateCampaign",
            ListIterations = "listIterations",
            CreateIteration = "createIteration",
            ListMemberships = "listMemberships",
            ListActivities = "listActivities",
            ListRecipients = "listRecipients",
            ListSummaryRuns = "listSummaryRuns",
            CreateSummaryRun = "createSummaryRun",
            ExportCampaign = "exportCampaign",
        }
        prepare {}
    }
}

impl OperationId {
    /// The operation named `name`, if there is one.
    pub fn parse(name: &str) -> Option<OperationId> {
        name.parse().ok()
    }
}

impl fmt::Display for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<OperationId> for &'static str {
    fn from(id: OperationId) -> &'static str {
        id.as_str()
    }
}

impl From<OperationId> for String {
    fn from(id: OperationId) -> String {
        id.as_str().to_string()
    }
}

impl fmt::Display for Component {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests;
