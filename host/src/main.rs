//! `switchboard`: the native host. `serve` runs the API; `admin` manages
//! businesses and keys on a data dir. The command line is `clap`'s: every
//! flag of `serve` also reads a `SWITCHBOARD_*` environment variable, and
//! every setting is checked here, before anything starts.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod admin_cli;
mod answer;
mod background;
mod bells;
mod bench_native;
mod carrier_events;
mod cli;
mod console;
mod download;
mod keys;
mod memory;
mod pipeline;
mod probes;
mod provider_events;
mod raw_upload;
mod readers;
mod recordings;
mod sandbox;
mod server;
mod shared;
mod side_routes;
mod staging;
mod supervisor;
mod wire;
mod write_node;
mod writer;

// The host's capabilities, each a crate of its own (crates/), under the
// names the modules here use.
use switchboard_admin::{self as admin, usage};
use switchboard_jobs as jobs;
use switchboard_ops::{clock, limits, logging, metrics};
use switchboard_runtime::recording_links::{self, RecordingLinks};
use switchboard_runtime::runtime_settings::RuntimeSettings;
use switchboard_runtime::{engine, knowledge, outbound, plugins};
use switchboard_storage::{db, freshness, ship};

use anyhow::{Context, Result};
use clap::Parser;
use cli::*;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use switchboard_storage::databases::Databases;

fn main() {
    memory::configure();
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
            let out = admin_cli::run(args)?;
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
        Command::Webhooks(cli::webhooks::WebhooksCommand::Listen(args)) => cli::webhooks::listen(args),
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

/// The server's own AI: `--ai-endpoint` with `--ai-model`, and
/// `--ai-embeddings-model` (at `--ai-embeddings-endpoint`, else beside the
/// chat endpoint); the key of both in `SWITCHBOARD_AI_API_KEY`.
fn server_ai(args: &ServeArgs) -> Result<engine::ServerAi> {
    use engine::providers::ai::{embeddings_url, Embeddings, Endpoint, API_KEY_VAR};
    let api_key = std::env::var(API_KEY_VAR).ok().filter(|k| !k.is_empty());
    let endpoint = match (&args.ai_endpoint, &args.ai_model) {
        (Some(url), Some(model)) => Some(Endpoint { url: url.clone(), model: model.clone(), api_key: api_key.clone() }),
        _ => None,
    };
    let embeddings = match (&args.ai_embeddings_model, &args.ai_endpoint) {
        (Some(model), Some(chat)) => {
            let url = match &args.ai_embeddings_endpoint {
                Some(u) => u.clone(),
                None => embeddings_url(chat).with_context(|| format!("--ai-endpoint {chat} does not end in /chat/completions; name the embeddings URL with --ai-embeddings-endpoint"))?,
            };
            Some(Embeddings::new(&url, model, args.ai_embeddings_dimensions, api_key))
        }
        _ => None,
    };
    Ok(engine::ServerAi::new(endpoint, embeddings))
}

fn serve(args: ServeArgs) -> Result<()> {
    // A malformed key stops the start; without one, secret plugin settings
    // are refused (docs/configuration.md).
    let keys = plugins::sealed::Keys::from_environment()?;
    if !keys.is_set() {
        tracing::info!(variable = plugins::sealed::KEY_VAR, "no settings key: plugin settings that are secret cannot be chosen");
    }
    metrics::install();
    metrics::start_at_zero(&switchboard_job_kinds::all_kinds());
    let public_url = args.public_url.clone().unwrap_or_else(|| format!("http://{}", args.listen));
    let unsafe_settings = args.unsafe_settings(&public_url);
    // For the setup links of `admin user create` on this data dir.
    let _ = std::fs::write(args.data_dir.join(admin::users::SERVED_URL_FILE), &public_url);
    let server_ai = server_ai(&args)?;
    let dbs = open_databases(&args, server_ai.embeddings().cloned())?;
    let recording_links = RecordingLinks::new(recording_links::load_secret(dbs.main()).context("the recording link secret")?, &public_url, args.recording_link_ttl_ms);
    let components = components(&args, server_ai, keys, recording_links)?;
    // What the start freed (a compile's working memory, the migrations')
    // goes back to the system now rather than staying resident while idle.
    // SAFETY: mi_collect takes no pointers and may be called at any time.
    unsafe { libmimalloc_sys::mi_collect(true) };
    let gateway = switchboard_gateway::Gateway::new().map_err(anyhow::Error::msg).context("building the OpenAPI document")?;
    let app = pipeline::App {
        gateway,
        dbs,
        components,
        deadline: Duration::from_millis(args.request_timeout_ms.max(10)),
        bench_baseline: args.bench_baseline,
        sandbox_routes: args.sandbox_routes,
        max_upload_bytes: usize::try_from(args.max_upload_bytes).unwrap_or(usize::MAX),
        bells: Default::default(),
        usage: Default::default(),
    };
    let settings = server::Settings {
        addr: args.listen,
        upload_sweep_after: Duration::from_millis(args.upload_sweep_after_ms),
        shutdown_timeout: Duration::from_millis(args.shutdown_timeout_ms),
        runner: jobs::RunnerConfig::new(args.job_concurrency as usize).with_batch_split(args.switches.job_batch_split.unwrap_or_default()),
        metrics_listen: args.metrics_listen,
        write_node: args.write_node.clone(),
        secure_cookies: public_url.starts_with("https://"),
        limits: limits::Settings { per_key_per_second: args.rate_limit_key, per_business_per_second: args.rate_limit_business, max_in_flight: args.max_in_flight },
        webhook_log_retention: Duration::from_secs(u64::from(args.webhook_log_retention_days) * 24 * 3600),
    };
    if !unsafe_settings.is_empty() {
        tracing::warn!(settings = %unsafe_settings.join("; "), "unsafe settings in force");
    }
    if let Some(file) = &args.pid_file {
        std::fs::write(file, format!("{}\n", std::process::id())).with_context(|| format!("--pid-file {}", file.display()))?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().max_blocking_threads(256).build()?;
    let served = runtime.block_on(server::serve(app, settings));
    if let Some(file) = &args.pid_file {
        let _ = std::fs::remove_file(file);
    }
    // A component call still running past the shutdown limit is abandoned
    // (its transaction never commits) rather than waited for.
    runtime.shutdown_timeout(Duration::from_secs(1));
    served
}

/// The data dir's databases, each prepared when this node opens it, before
/// anything runs on it: the vector table's shape (for `embeddings`), the
/// write guard over it, the runtime settings its job steps read. A server
/// runs every database's jobs: it opens them all now.
fn open_databases(args: &ServeArgs, embeddings: Option<knowledge::Embeddings>) -> Result<Arc<Databases>> {
    let durability = match args.durability {
        DurabilityArg::Normal => db::Durability::Normal,
        DurabilityArg::Full => db::Durability::Full,
    };
    let default = db::OpenOptions::default();
    let options = db::OpenOptions { durability, write_priority: args.switches.write_priority.unwrap_or(default.write_priority), ship_carry: args.switches.ship_carry.unwrap_or(default.ship_carry) };
    let settings = RuntimeSettings { campaign_minute_ms: args.campaign_minute_ms, voice_line_poll_ms: args.voice_line_poll_ms };
    let prepare = move |name: &str, db: &db::Db| -> Result<()> {
        let backfill = knowledge::prepare(db, embeddings.as_ref()).context("the vector store of grounded agents")?;
        if db.ships_writes() {
            // The vector table may have been made just now: guard it too.
            ship::install_guard(db).context("the write guard of shipped transactions")?;
        }
        settings.store(db).context("storing the runtime settings")?;
        if backfill > 0 {
            tracing::info!(database = name, dataSources = backfill, "embedding the passages of data sources (data-sources.embed jobs)");
        }
        Ok(())
    };
    let dbs = Arc::new(Databases::open(&args.data_dir, options, args.primary.storage("serve"), Box::new(prepare))?);
    dbs.open_registered();
    Ok(dbs)
}

/// The components, compiled (or loaded from the artifact cache) and linked
/// with what `serve` configures for their imports.
fn components(args: &ServeArgs, server_ai: engine::ServerAi, keys: plugins::sealed::Keys, recording_links: RecordingLinks) -> Result<engine::Components> {
    let mut outbound = engine::OutboundPolicy { public_only: !args.webhook_allow_private, timeout: Duration::from_millis(args.webhook_timeout_ms), ..Default::default() };
    if let Some(Delays(list)) = &args.webhook_retry_delays_ms {
        outbound.retry_delays_ms = list.clone();
    }
    let artifacts = match &args.component_cache {
        Some(ComponentCache::Off) => args.data_dir.join("cache"),
        Some(ComponentCache::Dir(dir)) => engine::artifact_dir(Some(dir), &args.data_dir),
        None => engine::artifact_dir(None, &args.data_dir),
    };
    let plugins = plugins::Registry::start(args.plugin_dir.clone(), &artifacts, !args.webhook_allow_private).context("loading plugins")?;
    let setup = engine::Setup {
        outbound,
        provider_settings: args.provider_settings.0.iter().filter_map(|(i, flags)| Some((i.name(), provider_settings(i.settings_flag()?.env_prefix, flags)))).collect(),
        plugins,
        server_ai,
        keys,
        recording_links: Some(recording_links),
        switches: engine_switches(&args.switches),
    };
    let overrides: Vec<(String, PathBuf)> = args.component_override.iter().map(|(n, p)| (n.clone(), PathBuf::from(p))).collect();
    engine::Components::load(&artifacts, &overrides, setup).context("loading components")
}

/// The engine's bench switches (`cli::BenchSwitches`): one left out keeps
/// the engine's default.
fn engine_switches(switches: &BenchSwitches) -> engine::Switches {
    let default = engine::Switches::default();
    engine::Switches {
        warm_instances: switches.warm_instances.unwrap_or(default.warm_instances),
        async_reads: switches.async_reads.unwrap_or(default.async_reads),
        perf_map: switches.perf_map.is_some(),
    }
}
