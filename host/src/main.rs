//! `switchboard`: the native host. `serve` runs the API; `admin` manages
//! businesses and keys on a data dir.

mod admin;
mod bench_native;
mod clock;
mod contract;
mod db;
mod download;
mod engine;
mod jobs;
mod logging;
mod metrics;
mod outbound;
mod pipeline;
mod raw_upload;
mod sandbox;
mod server;
mod staging;

use anyhow::{bail, Context, Result};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

const USAGE: &str = "\
usage:
  switchboard serve [--listen ADDR] [--data-dir DIR] [--request-timeout-ms MS] [--bench-baseline]
                    [--component-override NAME=WASM]... [--webhook-public-only] [--sandbox-routes]
                    [--webhook-timeout-ms MS] [--webhook-retry-delays-ms MS,MS,...]
                    [--ai-endpoint URL --ai-model NAME]   (env SWITCHBOARD_AI_API_KEY)
                    [--messenger-setting NAME=VALUE]...   (env SWITCHBOARD_MESSENGER_<NAME>;
                     the sandbox messenger reads step-delay-ms, default 20)
                    [--max-upload-bytes N] [--upload-sweep-after-ms MS] [--job-concurrency N]
                    [--durability normal|full]   (env SWITCHBOARD_DURABILITY)
  switchboard admin [--data-dir DIR] business create --name NAME
  switchboard admin [--data-dir DIR] key create --business ID --scopes LIST|all
  switchboard admin [--data-dir DIR] key list --business ID
  switchboard admin [--data-dir DIR] key revoke --key-id ID
  switchboard admin [--data-dir DIR] channel connect --business ID --channel chatapp --phone-number-id PNID [--label TEXT]
  switchboard admin [--data-dir DIR] channel connect --business ID --channel photoapp --account-id ACCT [--username NAME]
  switchboard admin [--data-dir DIR] sandbox inbound --phone-number-id PNID --from +E164 --text TEXT [--name NAME]
                    [--provider-message-id ID]
  switchboard admin [--data-dir DIR] sandbox inbound --channel photoapp --account-id ACCT --from USER_ID --text TEXT
                    [--name HANDLE] [--provider-message-id ID]

defaults: --listen 127.0.0.1:8080, --data-dir ./data (or $SWITCHBOARD_DATA_DIR),
          --request-timeout-ms 30000, --max-upload-bytes 536870912 (512 MiB, raw uploads),
          --upload-sweep-after-ms 3600000 (staged uploads idle this long are removed),
          --job-concurrency 16 (job steps that call out running at once; one business at most half),
          --durability normal (a commit survives a process crash; `full` also a power loss)";

/// Flags of the form `--name value` (and bare `--flag`), plus positionals.
struct Args {
    positional: Vec<String>,
    flags: Vec<(String, Option<String>)>,
}

impl Args {
    fn parse(raw: impl Iterator<Item = String>) -> Result<Args> {
        let mut positional = Vec::new();
        let mut flags = Vec::new();
        let mut it = raw.peekable();
        while let Some(a) = it.next() {
            if let Some(name) = a.strip_prefix("--") {
                if let Some((k, v)) = name.split_once('=') {
                    flags.push((k.to_string(), Some(v.to_string())));
                } else if matches!(name, "bench-baseline" | "help" | "webhook-public-only" | "sandbox-routes") {
                    flags.push((name.to_string(), None));
                } else {
                    let v = it.next().with_context(|| format!("--{name} needs a value"))?;
                    flags.push((name.to_string(), Some(v)));
                }
            } else {
                positional.push(a);
            }
        }
        Ok(Args { positional, flags })
    }
    fn get(&self, name: &str) -> Option<&str> {
        self.flags.iter().rev().find(|(k, _)| k == name).and_then(|(_, v)| v.as_deref())
    }
    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.flags.iter().filter(move |(k, _)| k == name).filter_map(|(_, v)| v.as_deref())
    }
    fn has(&self, name: &str) -> bool {
        self.flags.iter().any(|(k, _)| k == name)
    }
    fn require(&self, name: &str) -> Result<&str> {
        self.get(name).with_context(|| format!("--{name} is required\n\n{USAGE}"))
    }
    fn check_known(&self, known: &[&str]) -> Result<()> {
        for (k, _) in &self.flags {
            if !known.contains(&k.as_str()) {
                bail!("unknown option --{k}\n\n{USAGE}");
            }
        }
        Ok(())
    }
    fn data_dir(&self) -> PathBuf {
        self.get("data-dir")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("SWITCHBOARD_DATA_DIR").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("./data"))
    }
}

use std::io::Write as _;

fn main() {
    let log = logging::init();
    if let Err(e) = run() {
        drop(log);
        // Not eprintln!: a broken stderr must not turn this into a panic.
        let _ = writeln!(std::io::stderr(), "error: {e:#}");
        std::process::exit(2);
    }
}

fn run() -> Result<()> {
    let args = Args::parse(std::env::args().skip(1))?;
    if args.has("help") || args.positional.is_empty() {
        println!("{USAGE}");
        return Ok(());
    }
    match args.positional[0].as_str() {
        "serve" => {
            args.check_known(&["listen", "data-dir", "request-timeout-ms", "bench-baseline", "component-override", "webhook-public-only", "sandbox-routes", "webhook-timeout-ms", "webhook-retry-delays-ms", "ai-endpoint", "ai-model", "messenger-setting", "max-upload-bytes", "upload-sweep-after-ms", "job-concurrency", "durability"])?;
            serve(&args)
        }
        "admin" => {
            args.check_known(&["data-dir", "name", "business", "scopes", "key-id", "channel", "phone-number-id", "label", "account-id", "username", "from", "text", "provider-message-id"])?;
            let db = db::Db::open(&args.data_dir())?;
            let words: Vec<&str> = args.positional[1..].iter().map(String::as_str).collect();
            let out = match words.as_slice() {
                ["business", "create"] => admin::create_business(&db, args.require("name")?)?,
                ["key", "create"] => admin::create_key(&db, args.require("business")?, args.require("scopes")?)?,
                ["key", "list"] => admin::list_keys(&db, args.require("business")?)?,
                ["key", "revoke"] => admin::revoke_key(&db, args.require("key-id")?)?,
                ["channel", "connect"] => match args.require("channel")? {
                    "photoapp" => admin::connect_channel(&db, args.require("business")?, "photoapp", args.require("account-id")?, args.get("username"))?,
                    "chatapp" => admin::connect_channel(&db, args.require("business")?, "chatapp", args.require("phone-number-id")?, args.get("label"))?,
                    _ => bail!("--channel must be chatapp or photoapp\n\n{USAGE}"),
                },
                ["sandbox", "inbound"] => {
                    let to = match args.get("channel").unwrap_or("chatapp") {
                        "chatapp" => admin::Sender::Chatapp(args.require("phone-number-id")?),
                        "photoapp" => admin::Sender::Photoapp(args.require("account-id")?),
                        _ => bail!("--channel must be chatapp or photoapp\n\n{USAGE}"),
                    };
                    admin::sandbox_inbound(
                        &db,
                        &admin::Inbound {
                            to,
                            from: args.require("from")?,
                            text: args.require("text")?,
                            name: args.get("name"),
                            provider_message_id: args.get("provider-message-id"),
                        },
                    )?
                }
                _ => bail!("unknown admin command\n\n{USAGE}"),
            };
            println!("{out}");
            Ok(())
        }
        other => bail!("unknown command `{other}`\n\n{USAGE}"),
    }
}

/// Settings of the messaging provider: `SWITCHBOARD_MESSENGER_<NAME>`
/// environment variables (for secrets of a real adapter; `STEP_DELAY_MS` is
/// `step-delay-ms`), then each `--messenger-setting NAME=VALUE`.
fn messenger_settings(args: &Args) -> Result<std::collections::HashMap<String, String>> {
    let mut settings = std::collections::HashMap::new();
    for (k, v) in std::env::vars() {
        if let Some(name) = k.strip_prefix("SWITCHBOARD_MESSENGER_") {
            settings.insert(name.to_ascii_lowercase().replace('_', "-"), v);
        }
    }
    for s in args.all("messenger-setting") {
        let (name, value) = s.split_once('=').context("--messenger-setting takes NAME=VALUE")?;
        settings.insert(name.trim().to_string(), value.trim().to_string());
    }
    Ok(settings)
}

fn serve(args: &Args) -> Result<()> {
    let addr: SocketAddr = args.get("listen").unwrap_or("127.0.0.1:8080").parse().context("--listen must be HOST:PORT")?;
    let deadline_ms: u64 = args.get("request-timeout-ms").unwrap_or("30000").parse().context("--request-timeout-ms must be a number")?;
    let data_dir = args.data_dir();
    let durability = match args.get("durability").map(String::from).or_else(|| std::env::var("SWITCHBOARD_DURABILITY").ok()) {
        Some(d) => db::Durability::parse(&d).context("--durability must be normal or full")?,
        None => db::Durability::Normal,
    };
    let db = db::Db::open_with(&data_dir, durability)?;
    metrics::install();
    let overrides = args
        .all("component-override")
        .map(|o| {
            let (name, path) = o.split_once('=').context("--component-override takes NAME=PATH")?;
            Ok((name.to_string(), PathBuf::from(path)))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut outbound = engine::OutboundPolicy { public_only: args.has("webhook-public-only"), ..Default::default() };
    if let Some(ms) = args.get("webhook-timeout-ms") {
        outbound.timeout = Duration::from_millis(ms.parse().context("--webhook-timeout-ms must be a number")?);
    }
    if let Some(list) = args.get("webhook-retry-delays-ms") {
        outbound.retry_delays_ms = list
            .split(',')
            .map(|d| d.trim().parse::<u64>())
            .collect::<Result<_, _>>()
            .context("--webhook-retry-delays-ms takes comma-separated milliseconds")?;
    }
    match (args.get("ai-endpoint"), args.get("ai-model")) {
        (Some(url), Some(model)) => engine::providers::ai::configure(url, model),
        (None, None) => {}
        _ => anyhow::bail!("--ai-endpoint and --ai-model go together"),
    }
    let max_upload_bytes = match args.get("max-upload-bytes") {
        Some(n) => n.parse::<usize>().ok().filter(|n| *n > 0).context("--max-upload-bytes must be a positive number of bytes")?,
        None => switchboard_gateway::operations::RAW_UPLOAD_MAX_BYTES,
    };
    let upload_sweep_after = Duration::from_millis(
        args.get("upload-sweep-after-ms").unwrap_or("3600000").parse().context("--upload-sweep-after-ms must be a number")?,
    );
        let components = engine::Components::load(&data_dir.join("cache"), &overrides, outbound, [(engine::providers::messenger::COMPONENT, messenger_settings(args)?)].into_iter().collect()).context("loading components")?;
    let runner = jobs::RunnerConfig {
        concurrency: match args.get("job-concurrency") {
            Some(n) => n.parse::<usize>().ok().filter(|n| (1..=256).contains(n)).context("--job-concurrency must be 1 to 256")?,
            None => jobs::RunnerConfig::default().concurrency,
        },
    };
    let gateway = switchboard_gateway::Gateway::new().map_err(anyhow::Error::msg).context("building the OpenAPI document")?;
    let app = pipeline::App {
        gateway,
        db,
        components,
        deadline: Duration::from_millis(deadline_ms.max(10)),
        bench_baseline: args.has("bench-baseline"),
        sandbox_routes: args.has("sandbox-routes"),
        max_upload_bytes,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().max_blocking_threads(256).build()?;
    runtime.block_on(server::serve(app, addr, upload_sweep_after, runner))
}
