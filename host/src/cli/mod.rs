//! The command line (clap derive): `serve` (every flag also a
//! `SWITCHBOARD_*` variable, every value checked here before start),
//! `admin`, `plugin` and `webhooks`.

mod admin;
pub(crate) mod webhooks;

use crate::{db, plugins};
pub(crate) use admin::*;
use clap::builder::TypedValueParser as _;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
// A flag given twice takes the last value (scripts append overrides);
// repeatable flags (`--component-override`) still collect every value.
#[command(name = "switchboard", version, about = "One API for chat-app and photo-app messages, AI voice calls and campaigns.", args_override_self = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run the API on a data dir (created on first start).
    Serve(Box<ServeArgs>),
    /// Manage businesses, keys and channels on a data dir, with or without a running server.
    Admin(AdminArgs),
    /// Check a provider plugin, or write a working one to start from.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Receive webhook deliveries locally (`listen`), each printed with its signatures checked.
    #[command(subcommand)]
    Webhooks(webhooks::WebhooksCommand),
}

#[derive(Subcommand)]
pub(crate) enum PluginCommand {
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
        #[arg(long, value_parser = interface())]
        interface: plugins::Interface,
        #[arg(long, default_value = "my-plugin")]
        name: String,
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

/// A provider interface (`messenger`, `carrier`, `ai`): the runtime's type,
/// read here so that the runtime crate knows nothing of the command line.
fn interface() -> impl clap::builder::TypedValueParser<Value = plugins::Interface> {
    clap::builder::PossibleValuesParser::new(plugins::Interface::ALL.map(plugins::Interface::name))
        .map(|name| plugins::Interface::ALL.into_iter().find(|i| i.name() == name).expect("a possible value names an interface"))
}

/// One repeatable `--<interface>-setting NAME=VALUE` flag per provider
/// interface that declares one (`--messenger-setting`, `--carrier-setting`):
/// the runtime's list of interfaces says which, so a new provider brings its
/// flag without a line here. Each interface's flag values, in the list's
/// order.
#[derive(Default)]
pub(crate) struct ProviderSettingFlags(pub(crate) Vec<(plugins::Interface, Vec<(String, String)>)>);

impl clap::FromArgMatches for ProviderSettingFlags {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let flags = plugins::Interface::ALL.into_iter().filter_map(|i| i.settings_flag().map(|f| (i, m.get_many::<(String, String)>(f.long).map(|v| v.cloned().collect()).unwrap_or_default())));
        Ok(ProviderSettingFlags(flags.collect()))
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for ProviderSettingFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        plugins::Interface::ALL
            .into_iter()
            .filter_map(plugins::Interface::settings_flag)
            .fold(cmd, |cmd, f| cmd.arg(clap::Arg::new(f.long).long(f.long).value_name("NAME=VALUE").value_parser(name_value).action(clap::ArgAction::Append).help(f.help)))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// A positive number of milliseconds.
pub(crate) fn millis(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("must be at least 1 millisecond".into()),
        Ok(n) => Ok(n),
        Err(_) => Err("must be a whole number of milliseconds".into()),
    }
}

/// `NAME=VALUE` (a component override, a messenger setting).
pub(crate) fn name_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((n, v)) if !n.trim().is_empty() && !v.trim().is_empty() => Ok((n.trim().to_string(), v.trim().to_string())),
        _ => Err("takes NAME=VALUE".into()),
    }
}

/// Where `serve` keeps precompiled components (`--component-cache`).
#[derive(Clone)]
pub(crate) enum ComponentCache {
    Dir(PathBuf),
    /// Only in the data dir's `cache/`: every fresh data dir compiles again.
    Off,
}

/// A folder, or `off`.
pub(crate) fn component_cache(s: &str) -> Result<ComponentCache, String> {
    match s.trim() {
        "" => Err("takes a folder, or off".into()),
        "off" => Ok(ComponentCache::Off),
        dir => Ok(ComponentCache::Dir(PathBuf::from(dir))),
    }
}

/// A retry schedule: delays in milliseconds (a newtype, so clap takes the
/// whole list as one value).
#[derive(Clone)]
pub(crate) struct Delays(pub(crate) Vec<u64>);

/// A comma-separated, non-empty list of delays in milliseconds.
pub(crate) fn delays(s: &str) -> Result<Delays, String> {
    let list: Vec<u64> = s.split(',').map(|d| d.trim().parse::<u64>()).collect::<Result<_, _>>().map_err(|_| "takes comma-separated whole milliseconds, e.g. 10000,30000,120000".to_string())?;
    if list.is_empty() {
        return Err("needs at least one delay".into());
    }
    Ok(Delays(list))
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum DurabilityArg {
    /// A commit survives a crash of the process.
    Normal,
    /// A commit also survives a power loss (the WAL is synced at every commit).
    Full,
}

#[derive(Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "SWITCHBOARD_LISTEN", value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub(crate) listen: SocketAddr,
    /// The libSQL database `switchboard.db` (and `cache/`, precompiled components when the component cache is off or cannot be used).
    #[arg(long, env = "SWITCHBOARD_DATA_DIR", value_name = "DIR", default_value = "./data")]
    pub(crate) data_dir: PathBuf,
    /// Where components compiled to native code are kept, shared by every data dir a binary serves, so a fresh data dir starts without compiling [default: switchboard/components in the user's cache folder, e.g. ~/.cache]. `off`: in the data dir only.
    #[arg(long, env = "SWITCHBOARD_COMPONENT_CACHE", value_name = "DIR|off", value_parser = component_cache)]
    pub(crate) component_cache: Option<ComponentCache>,
    /// Deadline of one component call; past it the request fails with 503 and nothing is written.
    #[arg(long, env = "SWITCHBOARD_REQUEST_TIMEOUT_MS", value_name = "MS", default_value = "30000", value_parser = millis)]
    pub(crate) request_timeout_ms: u64,
    /// How long a stop (SIGTERM, SIGINT) waits for requests in flight and for steps calling out.
    #[arg(long, env = "SWITCHBOARD_SHUTDOWN_TIMEOUT_MS", value_name = "MS", default_value = "30000", value_parser = millis)]
    pub(crate) shutdown_timeout_ms: u64,
    /// Serve the native baseline route that bench/ measures against.
    #[arg(long, env = "SWITCHBOARD_BENCH_BASELINE")]
    pub(crate) bench_baseline: bool,
    /// Replace an embedded component with a wasm file (development, fault tests); repeatable.
    #[arg(long, env = "SWITCHBOARD_COMPONENT_OVERRIDE", value_name = "NAME=WASM", value_parser = name_value, value_delimiter = ',')]
    pub(crate) component_override: Vec<(String, String)>,
    /// Accept webhook targets (and plugins' hosts) on loopback, private and other non-public addresses: local development only. Without it they are refused where set and at every delivery.
    #[arg(long, env = "SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE")]
    pub(crate) webhook_allow_private: bool,
    /// The former opt-in to what is now the default: still accepted (scripts
    /// of production servers set it), changes nothing, contradicts
    /// --webhook-allow-private.
    #[arg(long = "webhook-public-only", env = "SWITCHBOARD_WEBHOOK_PUBLIC_ONLY", hide = true, conflicts_with = "webhook_allow_private")]
    pub(crate) _webhook_public_only: bool,
    /// How long the webhook delivery log (every attempt, and the events a redelivery sends) is kept.
    #[arg(long, env = "SWITCHBOARD_WEBHOOK_LOG_RETENTION_DAYS", value_name = "DAYS", default_value_t = crate::jobs::WEBHOOK_LOG_RETENTION_DAYS, value_parser = clap::value_parser!(u32).range(1..=36_500))]
    pub(crate) webhook_log_retention_days: u32,
    /// Serve the sandbox routes that inject inbound messages like a provider would.
    #[arg(long, env = "SWITCHBOARD_SANDBOX_ROUTES")]
    pub(crate) sandbox_routes: bool,
    /// Timeout of one webhook POST.
    #[arg(long, env = "SWITCHBOARD_WEBHOOK_TIMEOUT_MS", value_name = "MS", default_value = "10000", value_parser = millis)]
    pub(crate) webhook_timeout_ms: u64,
    /// Delays before webhook retry 1, 2, … [default: 10 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h, 12 h, 24 h]
    #[arg(long, env = "SWITCHBOARD_WEBHOOK_RETRY_DELAYS_MS", value_name = "MS,MS,...", value_parser = delays)]
    pub(crate) webhook_retry_delays_ms: Option<Delays>,
    /// An OpenAI-compatible chat-completions endpoint for agent replies (key in SWITCHBOARD_AI_API_KEY).
    #[arg(long, env = "SWITCHBOARD_AI_ENDPOINT", value_name = "URL", requires = "ai_model", value_parser = http_url)]
    pub(crate) ai_endpoint: Option<String>,
    /// The model named to --ai-endpoint.
    #[arg(long, env = "SWITCHBOARD_AI_MODEL", value_name = "NAME", requires = "ai_endpoint")]
    pub(crate) ai_model: Option<String>,
    /// An embeddings model of the same provider (same key): agents then also find passages by meaning (libSQL vector search).
    #[arg(long, env = "SWITCHBOARD_AI_EMBEDDINGS_MODEL", value_name = "NAME", requires = "ai_endpoint")]
    pub(crate) ai_embeddings_model: Option<String>,
    /// The embeddings URL [default: --ai-endpoint with `chat/completions` replaced by `embeddings`]
    #[arg(long, env = "SWITCHBOARD_AI_EMBEDDINGS_ENDPOINT", value_name = "URL", requires = "ai_embeddings_model", value_parser = http_url)]
    pub(crate) ai_embeddings_endpoint: Option<String>,
    /// The length of the model's vectors; when given it is also asked of the model [default: 1536]
    #[arg(long, env = "SWITCHBOARD_AI_EMBEDDINGS_DIMENSIONS", value_name = "N", requires = "ai_embeddings_model", value_parser = clap::value_parser!(u32).range(1..=8192))]
    pub(crate) ai_embeddings_dimensions: Option<u32>,
    /// `--messenger-setting`, `--carrier-setting`: the provider interfaces' settings flags.
    #[command(flatten)]
    pub(crate) provider_settings: ProviderSettingFlags,
    /// The base URL clients reach this service at, for the signed recording links of call reports [default: http://LISTEN]
    #[arg(long, env = "SWITCHBOARD_PUBLIC_URL", value_name = "URL", value_parser = http_url)]
    pub(crate) public_url: Option<String>,
    /// Write this process's id to FILE at start, and remove it at a
    /// graceful stop (to signal this server and no other: `kill -HUP $(cat FILE)`).
    #[arg(long, env = "SWITCHBOARD_PID_FILE", value_name = "FILE")]
    pub(crate) pid_file: Option<PathBuf>,
    /// How long a signed recording link stays valid.
    #[arg(long, env = "SWITCHBOARD_RECORDING_LINK_TTL_MS", value_name = "MS", default_value_t = switchboard_runtime::recording_links::DEFAULT_TTL_MS, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub(crate) recording_link_ttl_ms: u64,
    /// The length of a minute in campaign retry delays (`retryDelayMinutes`); shorten it only for tests and demos.
    #[arg(long, env = "SWITCHBOARD_CAMPAIGN_MINUTE_MS", value_name = "MS", default_value = "60000", value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub(crate) campaign_minute_ms: u64,
    /// How long a call waiting for a line waits before it asks again when no line has freed (a call is woken when one frees; this poll is the safety net: lines an operator adds). Tests set it long to show the wake-up alone places the call.
    #[arg(long, env = "SWITCHBOARD_VOICE_LINE_POLL_MS", value_name = "MS", default_value = "5000", value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub(crate) voice_line_poll_ms: u64,
    /// Limit of a raw (streamed) data source upload body in bytes.
    #[arg(long, env = "SWITCHBOARD_MAX_UPLOAD_BYTES", value_name = "N", default_value_t = switchboard_gateway::operations::RAW_UPLOAD_MAX_BYTES as u64, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_upload_bytes: u64,
    /// Staged raw uploads with no progress for this long are removed.
    #[arg(long, env = "SWITCHBOARD_UPLOAD_SWEEP_AFTER_MS", value_name = "MS", default_value = "3600000")]
    pub(crate) upload_sweep_after_ms: u64,
    /// Background steps that call out running at once, every database's together (one business gets at most half). They wait on other services, not on cores: each holds a thread and a wasm instance slot (the process has 128, shared with requests).
    #[arg(long, env = "SWITCHBOARD_JOB_CONCURRENCY", value_name = "N", default_value = "64", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub(crate) job_concurrency: u16,
    /// API requests per second per API key (bursts of twice that); 0 turns it off.
    #[arg(long, env = "SWITCHBOARD_RATE_LIMIT_KEY", value_name = "N", default_value = "100")]
    pub(crate) rate_limit_key: u32,
    /// API requests per second per business, all its keys together (bursts of twice that); 0 turns it off.
    #[arg(long, env = "SWITCHBOARD_RATE_LIMIT_BUSINESS", value_name = "N", default_value = "200")]
    pub(crate) rate_limit_business: u32,
    /// API requests in the service at once; beyond it, 503 overloaded at once. 0 turns it off.
    #[arg(long, env = "SWITCHBOARD_MAX_IN_FLIGHT", value_name = "N", default_value = "1024")]
    pub(crate) max_in_flight: usize,
    /// Serve GET /metrics on this address instead of the public listener.
    #[arg(long, env = "SWITCHBOARD_METRICS_LISTEN", value_name = "ADDR")]
    pub(crate) metrics_listen: Option<SocketAddr>,
    /// What an answered change survives.
    #[arg(long, env = "SWITCHBOARD_DURABILITY", value_enum, default_value = "normal")]
    pub(crate) durability: DurabilityArg,
    /// A folder of provider plugins (one folder each: plugin.toml, plugin.wasm), loaded at start and again on SIGHUP.
    #[arg(long, env = "SWITCHBOARD_PLUGIN_DIR", value_name = "DIR")]
    pub(crate) plugin_dir: Option<PathBuf>,
    /// A node beside the primary that runs this node's writes: every mutation is forwarded to it whole (one round trip of this node's link instead of one per statement); reads stay local. Needs --primary-url; this node then runs no background jobs.
    #[arg(long, env = "SWITCHBOARD_WRITE_NODE", value_name = "URL", value_parser = node_url, requires = "primary_url")]
    pub(crate) write_node: Option<String>,
    #[command(flatten)]
    pub(crate) primary: PrimaryArgs,
    #[command(flatten)]
    pub(crate) switches: BenchSwitches,
}

/// Switches that side-by-side benches turn (bench/README.md), each kept to
/// compare a measured change with the way before it (or one measured and
/// left off with the way it replaced). Not product settings: hidden from
/// `--help`, and set as their `SWITCHBOARD_*` variables (bench scripts'
/// `A_ENV`/`B_ENV`), or as the hidden flags. A malformed value is refused
/// at start, as every serve setting's is (a typo in an A/B run must not
/// measure the default twice); one left out keeps the default of the
/// crate it configures (`main.rs` hands each down: the storage's
/// `OpenOptions`, the job runner's `RunnerConfig`, the engine's `Setup`).
#[derive(Args)]
pub(crate) struct BenchSwitches {
    /// `0`: every writer is served in arrival order at a database's write gate, not requests' writes first.
    #[arg(long, env = "SWITCHBOARD_WRITE_PRIORITY", hide = true, value_name = "0|1", value_parser = zero_or_one)]
    pub(crate) write_priority: Option<bool>,
    /// `0`: a replica's writer pulls before every request batch instead of carrying on from the batches before.
    #[arg(long, env = "SWITCHBOARD_SHIP_CARRY", hide = true, value_name = "0|1", value_parser = zero_or_one)]
    pub(crate) ship_carry: Option<bool>,
    /// `PARTS,MIN`: a round's batched job claims are split into up to PARTS steps of at least MIN claims.
    #[arg(long, env = "SWITCHBOARD_JOB_BATCH_SPLIT", hide = true, value_name = "PARTS,MIN", value_parser = batch_split)]
    pub(crate) job_batch_split: Option<crate::jobs::BatchSplit>,
    /// `1`: reads run on the tokio worker instead of the reader threads.
    #[arg(long, env = "SWITCHBOARD_ASYNC_READS", hide = true, value_name = "0|1", value_parser = zero_or_one)]
    pub(crate) async_reads: Option<bool>,
    /// `0`: a fresh instance per call, none kept warm for the business's next.
    #[arg(long, env = "SWITCHBOARD_WARM_INSTANCES", hide = true, value_name = "0|1", value_parser = zero_or_one)]
    pub(crate) warm_instances: Option<bool>,
    /// Set to anything: wasmtime writes /tmp/perf-PID.map, so `perf report` names guest functions.
    #[arg(long, env = "SWITCHBOARD_PERF_MAP", hide = true, value_name = "ANY")]
    pub(crate) perf_map: Option<std::ffi::OsString>,
}

/// A switch: `1` on, `0` off, anything else refused.
fn zero_or_one(value: &str) -> Result<bool, String> {
    match value {
        "1" => Ok(true),
        "0" => Ok(false),
        _ => Err("must be 0 (off) or 1 (on)".into()),
    }
}

/// `PARTS,MIN`, both whole numbers; anything else refused.
fn batch_split(value: &str) -> Result<crate::jobs::BatchSplit, String> {
    crate::jobs::BatchSplit::parse(value).ok_or_else(|| "must be PARTS,MIN (two whole numbers, e.g. 5,2)".into())
}

impl ServeArgs {
    /// The settings in force that are unsafe in production, each with what
    /// it gives up (`serve` names them in one line at start). `public_url`
    /// is the URL the service is reached at (`--public-url`, else
    /// `http://LISTEN`).
    pub(crate) fn unsafe_settings(&self, public_url: &str) -> Vec<&'static str> {
        let mut found = Vec::new();
        if self.webhook_allow_private {
            found.push("--webhook-allow-private (webhook targets and plugin hosts may be loopback or private-network addresses)");
        }
        if self.rate_limit_key == 0 {
            found.push("--rate-limit-key 0 (no rate limit per API key)");
        }
        if self.rate_limit_business == 0 {
            found.push("--rate-limit-business 0 (no rate limit per business)");
        }
        if self.max_in_flight == 0 {
            found.push("--max-in-flight 0 (no load shedding)");
        }
        if self.sandbox_routes {
            found.push("--sandbox-routes (a key with a channel's write scope can inject inbound messages)");
        }
        if !self.component_override.is_empty() {
            found.push("--component-override (embedded components replaced by wasm files)");
        }
        if !public_url.starts_with("https://") {
            found.push("console session cookies without Secure (--public-url is not https://)");
        }
        found
    }
}

/// Where the database lives: the data dir's file, or a libSQL server
/// primary (`serve` and `admin` alike).
#[derive(Args, Clone)]
pub(crate) struct PrimaryArgs {
    /// A libSQL server (sqld) primary: keep an embedded replica under the data dir, read from it, send every write to the primary (token in SWITCHBOARD_PRIMARY_AUTH_TOKEN).
    #[arg(long, env = "SWITCHBOARD_PRIMARY_URL", value_name = "URL", value_parser = primary_url, global = true)]
    pub(crate) primary_url: Option<String>,
    /// How often the replica pulls the primary's changes: how late this node may see another node's writes.
    #[arg(long, env = "SWITCHBOARD_SYNC_INTERVAL_MS", value_name = "MS", default_value = "1000", value_parser = clap::value_parser!(u64).range(10..=60_000), global = true)]
    pub(crate) sync_interval_ms: u64,
}

impl PrimaryArgs {
    pub(crate) fn storage(&self, role: &'static str) -> db::Storage {
        match &self.primary_url {
            None => db::Storage::Local,
            Some(url) => db::Storage::Replica(db::Primary {
                url: url.clone(),
                auth_token: std::env::var("SWITCHBOARD_PRIMARY_AUTH_TOKEN").unwrap_or_default(),
                sync_interval: Duration::from_millis(self.sync_interval_ms),
                role,
                // Writes shipped in one round trip (ship.rs) unless turned off.
                ship_writes: std::env::var("SWITCHBOARD_SHIP_WRITES").map_or(true, |v| v != "0"),
                namespace: "default".into(),
            }),
        }
    }
}

/// A server's root URL: http:// or https://, a host, path `/`, no query
/// and no password (a token goes elsewhere); without its trailing `/`.
pub(crate) fn root_url(s: &str) -> Option<String> {
    match url::Url::parse(s) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() && u.path() == "/" && u.query().is_none() && u.password().is_none() => Some(s.trim_end_matches('/').to_string()),
        _ => None,
    }
}

/// A primary's URL.
pub(crate) fn primary_url(s: &str) -> Result<String, String> {
    root_url(s).ok_or_else(|| "must be the primary's http:// or https:// URL, e.g. https://db.example.net or http://10.0.0.5:8080 (its token goes in SWITCHBOARD_PRIMARY_AUTH_TOKEN)".into())
}

/// Another node's base URL (`--write-node`).
pub(crate) fn node_url(s: &str) -> Result<String, String> {
    root_url(s).ok_or_else(|| "must be the write node's http:// or https:// base URL, e.g. http://10.0.0.6:8080".into())
}

/// An absolute http(s) URL.
pub(crate) fn http_url(s: &str) -> Result<String, String> {
    match url::Url::parse(s) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(s.to_string()),
        _ => Err("must be an absolute http:// or https:// URL".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    fn switches(flags: &[&str]) -> BenchSwitches {
        let args = [&["switchboard", "serve"][..], flags].concat();
        match Cli::try_parse_from(args).expect("serve's flags parse").command {
            Command::Serve(serve) => serve.switches,
            _ => unreachable!("a serve command"),
        }
    }

    /// Each bench switch takes `0` and `1` (a split `PARTS,MIN`), refuses
    /// any other value with its name in the message, and none is in
    /// `--help`.
    #[test]
    fn bench_switches_take_their_values_refuse_others_and_stay_hidden() {
        let s = switches(&["--write-priority", "0", "--ship-carry", "1", "--warm-instances", "0", "--async-reads", "1", "--job-batch-split", " 5 , 2", "--perf-map", ""]);
        assert_eq!((s.write_priority, s.ship_carry, s.warm_instances, s.async_reads), (Some(false), Some(true), Some(false), Some(true)));
        assert_eq!(s.job_batch_split, Some(crate::jobs::BatchSplit { parts: 5, min: 2 }));
        assert!(s.perf_map.is_some(), "set to anything, even nothing");
        let s = switches(&[]);
        assert_eq!((s.write_priority, s.ship_carry, s.warm_instances, s.async_reads, s.job_batch_split), (None, None, None, None, None));
        for (flag, bad) in [("--write-priority", "no"), ("--ship-carry", ""), ("--warm-instances", "true"), ("--async-reads", "2"), ("--job-batch-split", "5"), ("--job-batch-split", "a,b")] {
            let refused = Cli::try_parse_from(["switchboard", "serve", flag, bad]).err().unwrap_or_else(|| panic!("{flag} {bad:?} is refused"));
            let message = refused.to_string();
            assert!(message.contains(flag) && message.contains("must be"), "{flag} {bad:?}: {message}");
        }
        let cli = Cli::command();
        let serve = cli.find_subcommand("serve").expect("serve");
        let vars = ["SWITCHBOARD_WRITE_PRIORITY", "SWITCHBOARD_SHIP_CARRY", "SWITCHBOARD_JOB_BATCH_SPLIT", "SWITCHBOARD_ASYNC_READS", "SWITCHBOARD_WARM_INSTANCES", "SWITCHBOARD_PERF_MAP"];
        for var in vars {
            let arg = serve.get_arguments().find(|a| a.get_env() == Some(std::ffi::OsStr::new(var))).unwrap_or_else(|| panic!("serve reads {var}"));
            assert!(arg.is_hide_set(), "{var} is a bench switch, not in --help");
        }
    }
}
