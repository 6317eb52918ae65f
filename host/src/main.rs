//! `switchboard`: the native host. `serve` runs the API; `admin` manages
//! businesses and keys on a data dir. The command line is `clap`'s: every
//! flag of `serve` also reads a `SWITCHBOARD_*` environment variable, and
//! every setting is checked here, before anything starts.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod bench_native;
mod console;
mod download;
mod pipeline;
mod provider_events;
mod raw_upload;
mod readers;
mod recordings;
mod sandbox;
mod server;
mod staging;
mod wire;
mod write_node;

// The host's capabilities, each a crate of its own (crates/), under the
// names the modules here use.
use switchboard_admin::{self as admin, usage};
use switchboard_jobs as jobs;
use switchboard_ops::{clock, limits, logging, metrics};
use switchboard_runtime::{engine, knowledge, outbound, plugins};
use switchboard_storage::{db, freshness, ship};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Parser)]
// A flag given twice takes the last value (scripts append overrides);
// repeatable flags (`--component-override`) still collect every value.
#[command(name = "switchboard", version, about = "One API for chat-app and photo-app messages, AI voice calls and campaigns.", args_override_self = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the API on a data dir (created on first start).
    Serve(Box<ServeArgs>),
    /// Manage businesses, keys and channels on a data dir, with or without a running server.
    Admin(AdminArgs),
    /// Check a provider plugin, or write a working one to start from.
    #[command(subcommand)]
    Plugin(PluginCommand),
}

#[derive(Subcommand)]
enum PluginCommand {
    /// Check a plugin folder (plugin.toml and plugin.wasm) without starting
    /// the server: the manifest's rules, then the component compiles and
    /// implements its interface's world. Prints what it found; exits 1 with
    /// the reason otherwise.
    Check {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// Write a plugin folder that loads as it is (the embedded sandbox
    /// adapter of the interface) with a manifest to edit.
    Template {
        #[arg(long, value_enum)]
        interface: plugins::Interface,
        #[arg(long, default_value = "my-plugin")]
        name: String,
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

/// A positive number of milliseconds.
fn millis(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("must be at least 1 millisecond".into()),
        Ok(n) => Ok(n),
        Err(_) => Err("must be a whole number of milliseconds".into()),
    }
}

/// `NAME=VALUE` (a component override, a messenger setting).
fn name_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((n, v)) if !n.trim().is_empty() && !v.trim().is_empty() => Ok((n.trim().to_string(), v.trim().to_string())),
        _ => Err("takes NAME=VALUE".into()),
    }
}

/// A retry schedule: delays in milliseconds (a newtype, so clap takes the
/// whole list as one value).
#[derive(Clone)]
struct Delays(Vec<u64>);

/// A comma-separated, non-empty list of delays in milliseconds.
fn delays(s: &str) -> Result<Delays, String> {
    let list: Vec<u64> = s
        .split(',')
        .map(|d| d.trim().parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|_| "takes comma-separated whole milliseconds, e.g. 10000,30000,120000".to_string())?;
    if list.is_empty() {
        return Err("needs at least one delay".into());
    }
    Ok(Delays(list))
}

#[derive(Clone, Copy, ValueEnum)]
enum DurabilityArg {
    /// A commit survives a crash of the process.
    Normal,
    /// A commit also survives a power loss (the WAL is synced at every commit).
    Full,
}

#[derive(Args)]
struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "SWITCHBOARD_LISTEN", value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// The libSQL database `switchboard.db` and `cache/` of precompiled components.
    #[arg(long, env = "SWITCHBOARD_DATA_DIR", value_name = "DIR", default_value = "./data")]
    data_dir: PathBuf,
    /// Deadline of one component call; past it the request fails with 503 and nothing is written.
    #[arg(long, env = "SWITCHBOARD_REQUEST_TIMEOUT_MS", value_name = "MS", default_value = "30000", value_parser = millis)]
    request_timeout_ms: u64,
    /// How long a stop (SIGTERM, SIGINT) waits for requests in flight and for steps calling out.
    #[arg(long, env = "SWITCHBOARD_SHUTDOWN_TIMEOUT_MS", value_name = "MS", default_value = "30000", value_parser = millis)]
    shutdown_timeout_ms: u64,
    /// Serve the native baseline route that bench/ measures against.
    #[arg(long, env = "SWITCHBOARD_BENCH_BASELINE")]
    bench_baseline: bool,
    /// Replace an embedded component with a wasm file (development, fault tests); repeatable.
    #[arg(long, env = "SWITCHBOARD_COMPONENT_OVERRIDE", value_name = "NAME=WASM", value_parser = name_value, value_delimiter = ',')]
    component_override: Vec<(String, String)>,
    /// Refuse webhook targets that are not public addresses (set it in production).
    #[arg(long, env = "SWITCHBOARD_WEBHOOK_PUBLIC_ONLY")]
    webhook_public_only: bool,
    /// Serve the sandbox routes that inject inbound messages like a provider would.
    #[arg(long, env = "SWITCHBOARD_SANDBOX_ROUTES")]
    sandbox_routes: bool,
    /// Timeout of one webhook POST.
    #[arg(long, env = "SWITCHBOARD_WEBHOOK_TIMEOUT_MS", value_name = "MS", default_value = "10000", value_parser = millis)]
    webhook_timeout_ms: u64,
    /// Delays before webhook retry 1, 2, … [default: 10 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h, 12 h, 24 h]
    #[arg(long, env = "SWITCHBOARD_WEBHOOK_RETRY_DELAYS_MS", value_name = "MS,MS,...", value_parser = delays)]
    webhook_retry_delays_ms: Option<Delays>,
    /// An OpenAI-compatible chat-completions endpoint for agent replies (key in SWITCHBOARD_AI_API_KEY).
    #[arg(long, env = "SWITCHBOARD_AI_ENDPOINT", value_name = "URL", requires = "ai_model", value_parser = http_url)]
    ai_endpoint: Option<String>,
    /// The model named to --ai-endpoint.
    #[arg(long, env = "SWITCHBOARD_AI_MODEL", value_name = "NAME", requires = "ai_endpoint")]
    ai_model: Option<String>,
    /// An embeddings model of the same provider (same key): agents then also find passages by meaning (libSQL vector search).
    #[arg(long, env = "SWITCHBOARD_AI_EMBEDDINGS_MODEL", value_name = "NAME", requires = "ai_endpoint")]
    ai_embeddings_model: Option<String>,
    /// The embeddings URL [default: --ai-endpoint with `chat/completions` replaced by `embeddings`]
    #[arg(long, env = "SWITCHBOARD_AI_EMBEDDINGS_ENDPOINT", value_name = "URL", requires = "ai_embeddings_model", value_parser = http_url)]
    ai_embeddings_endpoint: Option<String>,
    /// The length of the model's vectors; when given it is also asked of the model [default: 1536]
    #[arg(long, env = "SWITCHBOARD_AI_EMBEDDINGS_DIMENSIONS", value_name = "N", requires = "ai_embeddings_model", value_parser = clap::value_parser!(u32).range(1..=8192))]
    ai_embeddings_dimensions: Option<u32>,
    /// A setting of the messaging provider component (also SWITCHBOARD_MESSENGER_<NAME>); repeatable.
    #[arg(long, value_name = "NAME=VALUE", value_parser = name_value)]
    messenger_setting: Vec<(String, String)>,
    /// The base URL clients reach this service at, for the signed recording links of call reports [default: http://LISTEN]
    #[arg(long, env = "SWITCHBOARD_PUBLIC_URL", value_name = "URL", value_parser = http_url)]
    public_url: Option<String>,
    /// How long a signed recording link stays valid.
    #[arg(long, env = "SWITCHBOARD_RECORDING_LINK_TTL_MS", value_name = "MS", default_value_t = switchboard_runtime::recording_links::DEFAULT_TTL_MS, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    recording_link_ttl_ms: u64,
    /// The length of a minute in campaign retry delays (`retryDelayMinutes`); shorten it only for tests and demos.
    #[arg(long, env = "SWITCHBOARD_CAMPAIGN_MINUTE_MS", value_name = "MS", default_value = "60000", value_parser = clap::value_parser!(u64).range(1..=60_000))]
    campaign_minute_ms: u64,
    /// A setting of the voice carrier component (also SWITCHBOARD_CARRIER_<NAME>); repeatable.
    #[arg(long, value_name = "NAME=VALUE", value_parser = name_value)]
    carrier_setting: Vec<(String, String)>,
    /// Limit of a raw (streamed) data source upload body in bytes.
    #[arg(long, env = "SWITCHBOARD_MAX_UPLOAD_BYTES", value_name = "N", default_value_t = switchboard_gateway::operations::RAW_UPLOAD_MAX_BYTES as u64, value_parser = clap::value_parser!(u64).range(1..))]
    max_upload_bytes: u64,
    /// Staged raw uploads with no progress for this long are removed.
    #[arg(long, env = "SWITCHBOARD_UPLOAD_SWEEP_AFTER_MS", value_name = "MS", default_value = "3600000")]
    upload_sweep_after_ms: u64,
    /// Background steps that call out running at once (one business gets at most half).
    #[arg(long, env = "SWITCHBOARD_JOB_CONCURRENCY", value_name = "N", default_value = "16", value_parser = clap::value_parser!(u16).range(1..=256))]
    job_concurrency: u16,
    /// API requests per second per API key (bursts of twice that); 0 turns it off.
    #[arg(long, env = "SWITCHBOARD_RATE_LIMIT_KEY", value_name = "N", default_value = "100")]
    rate_limit_key: u32,
    /// API requests per second per business, all its keys together (bursts of twice that); 0 turns it off.
    #[arg(long, env = "SWITCHBOARD_RATE_LIMIT_BUSINESS", value_name = "N", default_value = "200")]
    rate_limit_business: u32,
    /// API requests in the service at once; beyond it, 503 overloaded at once. 0 turns it off.
    #[arg(long, env = "SWITCHBOARD_MAX_IN_FLIGHT", value_name = "N", default_value = "1024")]
    max_in_flight: usize,
    /// Serve GET /metrics on this address instead of the public listener.
    #[arg(long, env = "SWITCHBOARD_METRICS_LISTEN", value_name = "ADDR")]
    metrics_listen: Option<SocketAddr>,
    /// What an answered change survives.
    #[arg(long, env = "SWITCHBOARD_DURABILITY", value_enum, default_value = "normal")]
    durability: DurabilityArg,
    /// A folder of provider plugins (one folder each: plugin.toml, plugin.wasm), loaded at start and again on SIGHUP.
    #[arg(long, env = "SWITCHBOARD_PLUGIN_DIR", value_name = "DIR")]
    plugin_dir: Option<PathBuf>,
    /// A node beside the primary that runs this node's writes: every mutation is forwarded to it whole (one round trip of this node's link instead of one per statement); reads stay local. Needs --primary-url; this node then runs no background jobs.
    #[arg(long, env = "SWITCHBOARD_WRITE_NODE", value_name = "URL", value_parser = node_url, requires = "primary_url")]
    write_node: Option<String>,
    #[command(flatten)]
    primary: PrimaryArgs,
}

/// Where the database lives: the data dir's file, or a libSQL server
/// primary (`serve` and `admin` alike).
#[derive(Args, Clone)]
struct PrimaryArgs {
    /// A libSQL server (sqld) primary: keep an embedded replica under the data dir, read from it, send every write to the primary (token in SWITCHBOARD_PRIMARY_AUTH_TOKEN).
    #[arg(long, env = "SWITCHBOARD_PRIMARY_URL", value_name = "URL", value_parser = primary_url, global = true)]
    primary_url: Option<String>,
    /// How often the replica pulls the primary's changes: how late this node may see another node's writes.
    #[arg(long, env = "SWITCHBOARD_SYNC_INTERVAL_MS", value_name = "MS", default_value = "1000", value_parser = clap::value_parser!(u64).range(10..=60_000), global = true)]
    sync_interval_ms: u64,
}

impl PrimaryArgs {
    fn storage(&self, role: &'static str) -> db::Storage {
        match &self.primary_url {
            None => db::Storage::Local,
            Some(url) => db::Storage::Replica(db::Primary {
                url: url.clone(),
                auth_token: std::env::var("SWITCHBOARD_PRIMARY_AUTH_TOKEN").unwrap_or_default(),
                sync_interval: Duration::from_millis(self.sync_interval_ms),
                role,
                // Writes shipped in one round trip (ship.rs) unless turned off.
                ship_writes: std::env::var("SWITCHBOARD_SHIP_WRITES").map_or(true, |v| v != "0"),
            }),
        }
    }
}

/// A server's root URL: http:// or https://, a host, path `/`, no query
/// and no password (a token goes elsewhere); without its trailing `/`.
fn root_url(s: &str) -> Option<String> {
    match url::Url::parse(s) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() && u.path() == "/" && u.query().is_none() && u.password().is_none() => Some(s.trim_end_matches('/').to_string()),
        _ => None,
    }
}

/// A primary's URL.
fn primary_url(s: &str) -> Result<String, String> {
    root_url(s).ok_or_else(|| "must be the primary's http:// or https:// URL, e.g. https://db.example.net or http://10.0.0.5:8080 (its token goes in SWITCHBOARD_PRIMARY_AUTH_TOKEN)".into())
}

/// Another node's base URL (`--write-node`).
fn node_url(s: &str) -> Result<String, String> {
    root_url(s).ok_or_else(|| "must be the write node's http:// or https:// base URL, e.g. http://10.0.0.6:8080".into())
}

/// An absolute http(s) URL.
fn http_url(s: &str) -> Result<String, String> {
    match url::Url::parse(s) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(s.to_string()),
        _ => Err("must be an absolute http:// or https:// URL".into()),
    }
}

#[derive(Args)]
struct AdminArgs {
    /// The data dir to work on.
    #[arg(long, env = "SWITCHBOARD_DATA_DIR", value_name = "DIR", default_value = "./data", global = true)]
    data_dir: PathBuf,
    /// Create the data dir if it does not exist (otherwise a missing one is refused).
    #[arg(long, global = true)]
    create: bool,
    #[command(flatten)]
    primary: PrimaryArgs,
    #[command(subcommand)]
    command: AdminCommand,
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Businesses (tenants).
    #[command(subcommand)]
    Business(BusinessCommand),
    /// API keys: shown once, stored hashed, scoped, revocable.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Console users (one business each; role owner or viewer).
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
}

#[derive(Subcommand)]
enum ProviderCommand {
    /// Serve the business's interface with a plugin (checked against its
    /// manifest: every required setting given, none it does not declare).
    /// Takes effect at the next call, in every running server.
    Use {
        #[arg(long, value_name = "ID")]
        business: String,
        #[arg(long, value_enum)]
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
        #[arg(long, value_enum)]
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
}

#[derive(Subcommand)]
enum VoiceCommand {
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
enum SummariesCommand {
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
enum CreditsCommand {
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
enum BusinessCommand {
    /// Create a business with its built-in Contacts data source.
    Create {
        #[arg(long)]
        name: String,
    },
    /// List the businesses of the data dir, oldest first.
    List,
}

#[derive(Subcommand)]
enum KeyCommand {
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
enum RoleArg {
    /// Every scope; creates and revokes API keys.
    Owner,
    /// The read scopes only.
    Viewer,
}

#[derive(Subcommand)]
enum UserCommand {
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
        /// Where the console is reached, for the setup link.
        #[arg(long, env = "SWITCHBOARD_PUBLIC_URL", value_name = "URL", default_value = "http://127.0.0.1:8080")]
        console_url: String,
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
enum ChannelArg {
    Chatapp,
    Photoapp,
}

#[derive(Subcommand)]
enum ChannelCommand {
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
enum SandboxCommand {
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

fn main() {
    let log = logging::init();
    // clap prints usage errors and exits with 2, help and version with 0.
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        drop(log);
        // Not eprintln!: a broken stderr must not turn this into a panic.
        let _ = writeln!(std::io::stderr(), "error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Serve(args) => serve(*args),
        Command::Admin(args) => {
            let out = admin_command(args)?;
            println!("{out}");
            Ok(())
        }
        Command::Plugin(PluginCommand::Check { dir }) => {
            println!("{}", plugins::describe(&plugins::check(&dir)?));
            Ok(())
        }
        Command::Plugin(PluginCommand::Template { interface, name, out }) => {
            println!("{}", plugins::template(interface, &name, &out)?);
            Ok(())
        }
    }
}

/// Opens the data dir for `admin`: a missing one is refused unless
/// `--create` (a mistyped path must not get a fresh, empty database whose
/// keys the running server then refuses). Says on stderr which dir it used.
fn open_admin_data_dir(dir: &Path, create: bool, storage: &db::Storage) -> Result<db::Db> {
    if !dir.is_dir() {
        // With a primary the data dir only keeps this command's replica.
        if !create && matches!(storage, db::Storage::Local) {
            bail!("data dir {} does not exist (check --data-dir / SWITCHBOARD_DATA_DIR, or pass --create to make a new one)", dir.display());
        }
        std::fs::create_dir_all(dir).with_context(|| format!("creating data dir {}", dir.display()))?;
    }
    let shown = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let _ = writeln!(std::io::stderr(), "switchboard admin: data dir {}", shown.display());
    if let db::Storage::Replica(primary) = storage {
        let _ = writeln!(std::io::stderr(), "switchboard admin: primary {}", primary.url);
    }
    db::Db::open_storage(dir, db::Durability::Normal, storage)
}

fn admin_command(args: AdminArgs) -> Result<serde_json::Value> {
    let db = open_admin_data_dir(&args.data_dir, args.create, &args.primary.storage("admin"))?;
    match args.command {
        AdminCommand::Business(BusinessCommand::Create { name }) => admin::create_business(&db, &name),
        AdminCommand::Business(BusinessCommand::List) => admin::list_businesses(&db),
        AdminCommand::Key(KeyCommand::Create { business, scopes }) => admin::create_key(&db, &business, &scopes),
        AdminCommand::Key(KeyCommand::List { business }) => admin::list_keys(&db, &business),
        AdminCommand::Key(KeyCommand::Revoke { key_id }) => admin::revoke_key(&db, &key_id),
        AdminCommand::User(UserCommand::Create { business, email, role, password_stdin, console_url }) => {
            let password = if password_stdin {
                let mut line = String::new();
                std::io::stdin().read_line(&mut line).context("reading the password from standard input")?;
                Some(line.trim_end_matches(['\r', '\n']).to_string())
            } else {
                None
            };
            let role = match role {
                RoleArg::Owner => "owner",
                RoleArg::Viewer => "viewer",
            };
            console::users::create(&db, &business, &email, role, password.as_deref(), &console_url)
        }
        AdminCommand::User(UserCommand::List { business }) => console::users::list(&db, &business),
        AdminCommand::User(UserCommand::Disable { user_id }) => console::users::disable(&db, &user_id),
        AdminCommand::User(UserCommand::RevokeSessions { user_id }) => console::users::revoke_sessions(&db, &user_id),
        AdminCommand::Channel(ChannelCommand::Connect { business, channel, phone_number_id, account_id, label, username }) => match channel {
            ChannelArg::Chatapp => admin::connect_channel(&db, &business, "chatapp", phone_number_id.as_deref().unwrap_or_default(), label.as_deref()),
            ChannelArg::Photoapp => admin::connect_channel(&db, &business, "photoapp", account_id.as_deref().unwrap_or_default(), username.as_deref()),
        },
        AdminCommand::Voice(VoiceCommand::Configure { business, lines, price_per_block, caller_number, time_zone, calling_window }) => admin::voice::configure(
            &db,
            &business,
            &admin::voice::Settings { lines, price: price_per_block, caller: caller_number.as_deref(), time_zone: time_zone.as_deref(), calling_window: calling_window.as_deref() },
        ),
        AdminCommand::Credits(CreditsCommand::Add { business, microcredits, note }) => admin::voice::add_credits(&db, &business, microcredits, note.as_deref()),
        AdminCommand::Credits(CreditsCommand::Show { business, limit }) => admin::voice::show_credits(&db, &business, limit),
        AdminCommand::Summaries(SummariesCommand::Configure { business, price_per_contact, price_per_thousand_characters }) => {
            admin::summaries::configure(&db, &business, price_per_contact, price_per_thousand_characters)
        }
        AdminCommand::Provider(ProviderCommand::Use { business, interface, plugin, plugin_dir, setting }) => {
            plugins::choice::choose(&db, &business, interface, &plugin_dir, &plugin, &setting)
        }
        AdminCommand::Provider(ProviderCommand::Reset { business, interface }) => plugins::choice::reset(&db, &business, interface),
        AdminCommand::Provider(ProviderCommand::Show { business, plugin_dir }) => plugins::choice::show(&db, &business, plugin_dir.as_deref()),
        AdminCommand::Sandbox(SandboxCommand::Inbound { channel, phone_number_id, account_id, from, text, name, provider_message_id }) => {
            let to = match channel {
                ChannelArg::Chatapp => admin::Sender::Chatapp(phone_number_id.as_deref().unwrap_or_default()),
                ChannelArg::Photoapp => admin::Sender::Photoapp(account_id.as_deref().unwrap_or_default()),
            };
            admin::sandbox_inbound(&db, &admin::Inbound { to, from: &from, text: &text, name: name.as_deref(), provider_message_id: provider_message_id.as_deref() })
        }
        AdminCommand::Sandbox(SandboxCommand::Reaction { account_id, from, reaction, message_id, removed }) => admin::sandbox_photoapp_signal(
            &db,
            &account_id,
            &from,
            &admin::PhotoappSignal::Reaction { reaction: &reaction, message_id: message_id.as_deref(), removed },
        ),
        AdminCommand::Sandbox(SandboxCommand::Comment { account_id, from, text, name, post_id, comment_id }) => admin::sandbox_photoapp_signal(
            &db,
            &account_id,
            &from,
            &admin::PhotoappSignal::Comment { text: &text, name: name.as_deref(), post_id: post_id.as_deref(), comment_id: comment_id.as_deref() },
        ),
        AdminCommand::Sandbox(SandboxCommand::Referral { account_id, from, source, ad_id, post_id }) => admin::sandbox_photoapp_signal(
            &db,
            &account_id,
            &from,
            &admin::PhotoappSignal::Referral { source: &source, ad_id: ad_id.as_deref(), post_id: post_id.as_deref() },
        ),
    }
}

/// Settings of a provider component: its `SWITCHBOARD_<PREFIX>_<NAME>`
/// environment variables (for secrets of a real adapter; `STEP_DELAY_MS` is
/// `step-delay-ms`), then each of its `--…-setting NAME=VALUE` flags.
fn provider_settings(prefix: &str, flags: &[(String, String)]) -> std::collections::HashMap<String, String> {
    let mut settings = std::collections::HashMap::new();
    for (k, v) in std::env::vars() {
        if let Some(name) = k.strip_prefix(prefix) {
            settings.insert(name.to_ascii_lowercase().replace('_', "-"), v);
        }
    }
    settings.extend(flags.iter().cloned());
    settings
}

fn serve(args: ServeArgs) -> Result<()> {
    let durability = match args.durability {
        DurabilityArg::Normal => db::Durability::Normal,
        DurabilityArg::Full => db::Durability::Full,
    };
    let db = db::Db::open_storage(&args.data_dir, durability, &args.primary.storage("serve"))?;
    metrics::install();
    let public_url = args.public_url.clone().unwrap_or_else(|| format!("http://{}", args.listen));
    switchboard_runtime::recording_links::configure(switchboard_runtime::recording_links::load_secret(&db).context("the recording link secret")?, &public_url, args.recording_link_ttl_ms);
    let overrides: Vec<(String, PathBuf)> = args.component_override.iter().map(|(n, p)| (n.clone(), PathBuf::from(p))).collect();
    let mut outbound = engine::OutboundPolicy {
        public_only: args.webhook_public_only,
        timeout: Duration::from_millis(args.webhook_timeout_ms),
        ..Default::default()
    };
    if let Some(Delays(list)) = args.webhook_retry_delays_ms {
        outbound.retry_delays_ms = list;
    }
    if let (Some(url), Some(model)) = (&args.ai_endpoint, &args.ai_model) {
        engine::providers::ai::configure(url, model);
    }
    let embeddings = match (&args.ai_embeddings_model, &args.ai_endpoint) {
        (Some(model), Some(chat)) => {
            let url = match &args.ai_embeddings_endpoint {
                Some(u) => u.clone(),
                None => engine::providers::ai::embeddings_url(chat).with_context(|| {
                    format!("--ai-endpoint {chat} does not end in /chat/completions; name the embeddings URL with --ai-embeddings-endpoint")
                })?,
            };
            Some(engine::providers::ai::configure_embeddings(&url, model, args.ai_embeddings_dimensions))
        }
        _ => None,
    };
    let backfill = knowledge::prepare(&db, embeddings).context("the vector store of grounded agents")?;
    if db.ships_writes() {
        // The vector table may have been made just now: guard it too.
        ship::install_guard(&db).context("the write guard of shipped transactions")?;
    }
    db::execute(
        &*db.conn()?,
        "INSERT OR REPLACE INTO runtime_settings (name, value) VALUES ('campaign_minute_ms', ?1)",
        vec![libsql::Value::Text(args.campaign_minute_ms.to_string())],
    )
    .context("storing the runtime settings")?;
    if backfill > 0 {
        logging::line("info", &format!("embedding the passages of {backfill} data sources (data-sources.embed jobs)"));
    }
    let plugins = plugins::Registry::start(args.plugin_dir.clone(), &args.data_dir.join("cache"), args.webhook_public_only).context("loading plugins")?;
    let components = engine::Components::load(
        &args.data_dir.join("cache"),
        &overrides,
        outbound,
        [
            (engine::providers::messenger::COMPONENT, provider_settings("SWITCHBOARD_MESSENGER_", &args.messenger_setting)),
            (engine::providers::carrier::COMPONENT, provider_settings("SWITCHBOARD_CARRIER_", &args.carrier_setting)),
        ]
        .into_iter()
        .collect(),
        plugins,
    )
    .context("loading components")?;
    let runner = jobs::RunnerConfig { concurrency: args.job_concurrency as usize };
    let gateway = switchboard_gateway::Gateway::new().map_err(anyhow::Error::msg).context("building the OpenAPI document")?;
    let app = pipeline::App {
        gateway,
        db,
        components,
        deadline: Duration::from_millis(args.request_timeout_ms.max(10)),
        bench_baseline: args.bench_baseline,
        sandbox_routes: args.sandbox_routes,
        max_upload_bytes: usize::try_from(args.max_upload_bytes).unwrap_or(usize::MAX),
        console: console::Console::new(public_url.starts_with("https://")),
    };
    let settings = server::Settings {
        addr: args.listen,
        upload_sweep_after: Duration::from_millis(args.upload_sweep_after_ms),
        shutdown_timeout: Duration::from_millis(args.shutdown_timeout_ms),
        runner,
        metrics_listen: args.metrics_listen,
        write_node: args.write_node.clone(),
        limits: limits::Settings {
            per_key_per_second: args.rate_limit_key,
            per_business_per_second: args.rate_limit_business,
            max_in_flight: args.max_in_flight,
        },
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().max_blocking_threads(256).build()?;
    let served = runtime.block_on(server::serve(app, settings));
    // A component call still running past the shutdown limit is abandoned
    // (its transaction never commits) rather than waited for.
    runtime.shutdown_timeout(Duration::from_secs(1));
    served
}
