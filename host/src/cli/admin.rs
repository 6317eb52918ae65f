//! `switchboard admin …`: the arguments of every admin command (what each
//! does is admin_cli.rs, which calls the admin crate).

use super::*;

#[derive(Args)]
pub(crate) struct AdminArgs {
    /// The data dir to work on.
    #[arg(long, env = "SWITCHBOARD_DATA_DIR", value_name = "DIR", default_value = "./data", global = true)]
    pub(crate) data_dir: PathBuf,
    /// Create the data dir if it does not exist (otherwise a missing one is refused).
    #[arg(long, global = true)]
    pub(crate) create: bool,
    #[command(flatten)]
    pub(crate) primary: PrimaryArgs,
    #[command(subcommand)]
    pub(crate) command: AdminCommand,
}

#[derive(Subcommand)]
pub(crate) enum AdminCommand {
    /// Businesses (tenants).
    #[command(subcommand)]
    Business(BusinessCommand),
    /// The databases businesses are spread over (main, and those added).
    #[command(subcommand)]
    Database(DatabaseCommand),
    /// API keys: shown once, stored hashed, scoped, revocable.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Console users (one business each; role owner, agent or viewer).
    #[command(subcommand)]
    User(UserCommand),
    /// Provider onboarding: connect a chatapp number or a photoapp account.
    #[command(subcommand)]
    Channel(ChannelCommand),
    /// Voice lines, price and caller line of a business.
    #[command(subcommand)]
    Voice(VoiceCommand),
    /// A business's microcredit balance and its ledger.
    #[command(subcommand)]
    Credits(CreditsCommand),
    /// The price of AI assessments in campaign summary runs.
    #[command(subcommand)]
    Summaries(SummariesCommand),
    /// Stand in for a provider (development and tests).
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Which adapter serves a business's messages or calls: the embedded
    /// sandbox (the default) or a plugin of the plugin folder.
    #[command(subcommand)]
    Provider(ProviderCommand),
    /// Copy every database of the data dir into one file while a server
    /// runs on it: each database at one commit, taken again if a business
    /// moved meanwhile (beside a libSQL server: the primary's data, pulled
    /// now). Checked before it is written.
    Backup {
        /// The backup file to write (replaced when it exists, once the new one is whole).
        #[arg(long, value_name = "FILE")]
        to: PathBuf,
    },
    /// Lay a backup out as the data dir --data-dir, which must not exist or
    /// be empty (a backup of a libSQL server deployment becomes a local
    /// data dir). Each file is checked first.
    Restore {
        /// The backup file (`admin backup --to`).
        #[arg(long, value_name = "FILE")]
        from: PathBuf,
    },
    /// Check every database of the data dir: SQLite's integrity check, and
    /// that each libSQL vector index has one entry per row. Prints what it
    /// found; exits 1 when a database has a problem.
    Check,
}

#[derive(Subcommand)]
pub(crate) enum ProviderCommand {
    /// Serve the business's interface with a plugin (checked against its
    /// manifest: every required setting given, none it does not declare).
    /// Takes effect at the next call, in every running server.
    Use {
        #[arg(long, value_name = "ID")]
        business: String,
        #[arg(long, value_parser = interface())]
        interface: plugins::Interface,
        /// The plugin's name (its folder under --plugin-dir).
        #[arg(long, value_name = "NAME")]
        plugin: String,
        /// The plugin folder the server loads.
        #[arg(long, env = "SWITCHBOARD_PLUGIN_DIR", value_name = "DIR")]
        plugin_dir: PathBuf,
        /// A setting of the plugin for this business; repeatable. Secret ones are never shown again.
        #[arg(long, value_name = "NAME=VALUE", value_parser = name_value)]
        setting: Vec<(String, String)>,
    },
    /// Back to the embedded sandbox adapter.
    Reset {
        #[arg(long, value_name = "ID")]
        business: String,
        #[arg(long, value_parser = interface())]
        interface: plugins::Interface,
    },
    /// The business's adapter of every interface (secret settings as `(set)`).
    Show {
        #[arg(long, value_name = "ID")]
        business: String,
        /// The plugin folder, to tell which settings are not secret and may be shown.
        #[arg(long, env = "SWITCHBOARD_PLUGIN_DIR", value_name = "DIR")]
        plugin_dir: Option<PathBuf>,
    },
    /// Seal every stored secret setting under SWITCHBOARD_SETTINGS_KEY (after
    /// a rotation: the old key in SWITCHBOARD_SETTINGS_KEY_PREVIOUS).
    Reseal {
        /// The plugin folder: secrets stored before sealing, named by their
        /// manifests, are sealed too.
        #[arg(long, env = "SWITCHBOARD_PLUGIN_DIR", value_name = "DIR")]
        plugin_dir: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
pub(crate) enum VoiceCommand {
    /// Set what is given, keep the rest (defaults: 1 line, 25000 microcredits per started 20-second block).
    Configure {
        #[arg(long, value_name = "ID")]
        business: String,
        /// Purchased lines: carrier calls at once.
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        lines: Option<i64>,
        /// Price of a started 20-second block of connected time, in microcredits.
        #[arg(long, value_name = "MICROCREDITS", allow_negative_numbers = true)]
        price_per_block: Option<i64>,
        /// The business's caller line (E.164).
        #[arg(long, value_name = "E164")]
        caller_number: Option<String>,
        /// The business's default time zone (IANA name, e.g. Europe/Paris) for contacts without a `timeZone` field.
        #[arg(long, value_name = "ZONE")]
        time_zone: Option<String>,
        /// The default calling window of campaign iterations without their own, local to each contact (e.g. 09:00-20:00).
        #[arg(long, value_name = "HH:MM-HH:MM")]
        calling_window: Option<String>,
    },
}

#[derive(Subcommand)]
pub(crate) enum SummariesCommand {
    /// Set what is given, keep the rest (defaults: 2000 microcredits per contact plus 500 per started 1,000 characters of its material).
    Configure {
        #[arg(long, value_name = "ID")]
        business: String,
        /// Price of one contact's assessment, in microcredits.
        #[arg(long, value_name = "MICROCREDITS", allow_negative_numbers = true)]
        price_per_contact: Option<i64>,
        /// Price of every started 1,000 characters of a contact's material, in microcredits.
        #[arg(long, value_name = "MICROCREDITS", allow_negative_numbers = true)]
        price_per_thousand_characters: Option<i64>,
    },
}

#[derive(Subcommand)]
pub(crate) enum CreditsCommand {
    /// Add microcredits to the balance; prints the new balance.
    Add {
        #[arg(long, value_name = "ID")]
        business: String,
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        microcredits: i64,
        /// Why (kept in the ledger).
        #[arg(long)]
        note: Option<String>,
    },
    /// The balance, what calls in flight reserve, and the newest ledger entries.
    Show {
        #[arg(long, value_name = "ID")]
        business: String,
        #[arg(long, value_name = "N", default_value = "20")]
        limit: u32,
    },
}

#[derive(Subcommand)]
pub(crate) enum BusinessCommand {
    /// Create a business with its built-in Contacts data source.
    Create {
        #[arg(long)]
        name: String,
        /// The database its rows live in (`admin database list`); by default, beside a local main, a new database of its own, else the one with the fewest businesses.
        #[arg(long, value_name = "NAME")]
        database: Option<String>,
    },
    /// List the businesses of the data dir, oldest first.
    List,
    /// Move a business to another database while its clients keep writing: its writes answer 503 business_moving (retryable) while its rows are copied, then go to the new database. Run it again after a crash to finish the move.
    Move {
        #[arg(long, value_name = "ID")]
        business: String,
        /// The database it moves to (`admin database list`).
        #[arg(long, value_name = "NAME")]
        to: String,
    },
}

#[derive(Subcommand)]
pub(crate) enum DatabaseCommand {
    /// Register a database for businesses to live in: a libSQL server's URL (or one of its namespaces) beside a --primary-url main, or `local` (a file of its own in the data dir) beside a local main. It is opened and migrated before it is registered.
    Add {
        #[arg(long, value_name = "NAME")]
        name: String,
        #[arg(long, value_name = "URL|local")]
        url: String,
    },
    /// Print every database as JSON: its name, URL and number of businesses (main first).
    List,
}

#[derive(Subcommand)]
pub(crate) enum KeyCommand {
    /// Create a key; the key itself is printed once.
    Create {
        #[arg(long, value_name = "ID")]
        business: String,
        /// Comma-separated scopes, or `all`.
        #[arg(long, value_name = "LIST|all")]
        scopes: String,
    },
    /// List a business's keys (last four characters only).
    List {
        #[arg(long, value_name = "ID")]
        business: String,
    },
    /// Revoke a key for good.
    Revoke {
        #[arg(long, value_name = "ID")]
        key_id: String,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum RoleArg {
    /// Every scope; creates and revokes API keys.
    Owner,
    /// A support agent: reads everything, answers conversations (replies,
    /// takes over, assigns, notes, resolves); configures nothing.
    Agent,
    /// The read scopes only.
    Viewer,
}

#[derive(Subcommand)]
pub(crate) enum UserCommand {
    /// Create a console user. Prints a one-time setup link (valid 24 hours)
    /// unless --password-stdin reads the password from standard input.
    Create {
        #[arg(long, value_name = "ID")]
        business: String,
        #[arg(long, value_name = "ADDRESS")]
        email: String,
        #[arg(long, value_enum, default_value = "owner")]
        role: RoleArg,
        /// Read the password (first line, at least 10 characters) from standard input.
        #[arg(long)]
        password_stdin: bool,
        /// Where the console is reached, for the setup link [default: the URL the
        /// server on this data dir serves at (its --public-url, else http://LISTEN),
        /// else http://127.0.0.1:8080].
        #[arg(long, env = "SWITCHBOARD_PUBLIC_URL", value_name = "URL")]
        console_url: Option<String>,
    },
    /// List a business's console users.
    List {
        #[arg(long, value_name = "ID")]
        business: String,
    },
    /// Stop a user from logging in and end every session of theirs.
    Disable {
        #[arg(long, value_name = "ID")]
        user_id: String,
    },
    /// End every session of a user (they log in again).
    RevokeSessions {
        #[arg(long, value_name = "ID")]
        user_id: String,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ChannelArg {
    Chatapp,
    Photoapp,
}

#[derive(Subcommand)]
pub(crate) enum ChannelCommand {
    /// Connect a chatapp phone number (--phone-number-id) or the photoapp account (--account-id).
    Connect {
        #[arg(long, value_name = "ID")]
        business: String,
        #[arg(long, value_enum)]
        channel: ChannelArg,
        /// The chatapp phone number id (with --channel chatapp).
        #[arg(long, value_name = "PNID", required_if_eq("channel", "chatapp"), conflicts_with = "account_id")]
        phone_number_id: Option<String>,
        /// The photoapp professional account id (with --channel photoapp).
        #[arg(long, value_name = "ACCT", required_if_eq("channel", "photoapp"))]
        account_id: Option<String>,
        /// A label of the chatapp number.
        #[arg(long, conflicts_with = "account_id")]
        label: Option<String>,
        /// The photoapp account's username.
        #[arg(long, conflicts_with = "phone_number_id")]
        username: Option<String>,
    },
}

#[derive(Subcommand)]
pub(crate) enum SandboxCommand {
    /// Enqueue an inbound message as the provider's webhook would.
    Inbound {
        #[arg(long, value_enum, default_value = "chatapp")]
        channel: ChannelArg,
        /// The receiving chatapp phone number id (chatapp).
        #[arg(long, value_name = "PNID", required_if_eq("channel", "chatapp"), conflicts_with = "account_id")]
        phone_number_id: Option<String>,
        /// The receiving photoapp account id (photoapp).
        #[arg(long, value_name = "ACCT", required_if_eq("channel", "photoapp"))]
        account_id: Option<String>,
        /// The sender: +E164 (chatapp) or a photoapp user id.
        #[arg(long)]
        from: String,
        #[arg(long)]
        text: String,
        /// The sender's name (chatapp) or handle (photoapp).
        #[arg(long)]
        name: Option<String>,
        #[arg(long, value_name = "ID")]
        provider_message_id: Option<String>,
    },
    /// Enqueue a photoapp user's reaction to a message (or its removal).
    Reaction {
        #[arg(long, value_name = "ACCT")]
        account_id: String,
        /// The photoapp user id.
        #[arg(long)]
        from: String,
        /// The emoji (or the provider's reaction name).
        #[arg(long)]
        reaction: String,
        /// The message reacted to: our id or the provider's (default: the user's latest message from us).
        #[arg(long, value_name = "ID")]
        message_id: Option<String>,
        /// The reaction was taken back.
        #[arg(long)]
        removed: bool,
        /// When the user reacted (RFC 3339; default: now). One older than the stored reaction changes nothing.
        #[arg(long, value_name = "TIME")]
        occurred_at: Option<String>,
    },
    /// Enqueue a public comment on one of a photoapp account's posts.
    Comment {
        #[arg(long, value_name = "ACCT")]
        account_id: String,
        /// The commenter's photoapp user id.
        #[arg(long)]
        from: String,
        #[arg(long)]
        text: String,
        /// The commenter's handle.
        #[arg(long)]
        name: Option<String>,
        #[arg(long, value_name = "ID")]
        post_id: Option<String>,
        /// The provider's comment id (a repeated one is processed once).
        #[arg(long, value_name = "ID")]
        comment_id: Option<String>,
        /// When it was written (RFC 3339; default: now). Its private reply may be sent within 7 days of it.
        #[arg(long, value_name = "TIME")]
        occurred_at: Option<String>,
    },
    /// Enqueue a photoapp user's arrival from an ad or a post.
    Referral {
        #[arg(long, value_name = "ACCT")]
        account_id: String,
        #[arg(long)]
        from: String,
        /// Where the user came from: `ad`, `post`, …
        #[arg(long)]
        source: String,
        #[arg(long, value_name = "ID")]
        ad_id: Option<String>,
        #[arg(long, value_name = "ID")]
        post_id: Option<String>,
    },
}
