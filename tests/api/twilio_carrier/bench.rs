//! The turn latency of the Twilio-style carrier (issue 48, point 3), run
//! by `bench/twilio_turns.sh` (ignored otherwise: it measures, it asserts
//! nothing about speed). From a speech post leaving the fake API to its
//! TwiML answer, at 20 concurrent calls each saying `TURNS` things, minus
//! the AI's own time. The customers think up to `BENCH_THINK_MS` (default
//! 1000, as a person takes a moment) before each line, so the calls' turns
//! spread out; with 0 all 20 speak at the same instant, every turn:
//! the worst case.
//!
//! * `offline`: the embedded offline AI (its time is the wasm call's);
//! * `slow`: an OpenAI-compatible endpoint that takes 500 ms for every
//!   answer (its time, measured where it answers, is subtracted per turn);
//! * `fast` and `one slow`: the same endpoint answering at once for every
//!   call, then for 19 of them while the 20th's answers take 500 ms: the 19
//!   calls' turns against the `fast` baseline of the same run say whether
//!   one call's slow AI delays another's turn.

use super::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CALLS: usize = 20;
const TURNS: usize = 5;
const SLOW: Duration = Duration::from_millis(500);

/// An OpenAI-compatible endpoint: "Noted." at once, or after [`SLOW`] when
/// the customer's last words contain "slow" (or always, with `all_slow`);
/// how long each answer took, by the customer's words.
#[derive(Clone, Default)]
struct Model {
    all_slow: Arc<Mutex<bool>>,
    took: Arc<Mutex<HashMap<String, Duration>>>,
}

impl Model {
    fn start(&self) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
        let me = self.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let me = me.clone();
                std::thread::spawn(move || {
                    let started = Instant::now();
                    let Some(request) = read_request(&stream) else { return };
                    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
                    let last = body["messages"].as_array().and_then(|m| m.iter().rev().find(|m| m["role"] == "user")).and_then(|m| m["content"].as_str()).unwrap_or_default().to_string();
                    if *me.all_slow.lock().unwrap() || last.contains("slow") {
                        std::thread::sleep(SLOW);
                    }
                    let answer = json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "Noted."}}]});
                    answer_json(&stream, &answer.to_string());
                    *me.took.lock().unwrap().entry(last).or_default() += started.elapsed();
                });
            }
        });
        url
    }
}

/// A server with the plugin, `extra` flags and a business of 20 lines.
fn start(fake: &Fake, extra: &[&str]) -> Setup {
    let data = DataDir::new();
    let plugins = data.0.join("plugins");
    let folder = plugins.join("twilio-carrier");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(PLUGIN, folder.join("plugin.wasm")).unwrap();
    let manifest = std::fs::read_to_string(format!("{}/../components/twilio-carrier/plugin.toml", env!("CARGO_MANIFEST_DIR"))).unwrap();
    std::fs::write(folder.join("plugin.toml"), manifest.replace("\"api.twilio.com\"", &format!("\"localhost:{}\"", fake.port))).unwrap();
    let log = data.0.join("server.log");
    let mut flags = vec!["--plugin-dir", plugins.to_str().unwrap(), "--rate-limit-key", "0", "--rate-limit-business", "0"];
    flags.extend_from_slice(extra);
    let s = Server::start_logged(&data.0, &flags, &log);
    plugins_loaded(&log, 1);
    let plugins = plugins.to_str().unwrap().to_string();
    let x = with_business(fake, data, s, plugins, log, CALLS as u32);
    // Twenty calls reserve their maximum duration each.
    admin(&x._data.0, &["credits", "add", "--business", &x.t.business, "--microcredits", "100000000"]);
    x
}

/// 20 calls at once, each saying `TURNS` things (`slow` for the calls whose
/// index `slow` picks); every turn's time minus its AI's, in ms, of the
/// calls `measured` picks.
fn run(x: &Setup, fake: &Fake, model: Option<&Model>, label: &str, slow: impl Fn(usize) -> bool, measured: impl Fn(usize) -> bool) -> Vec<f64> {
    let agent = x.agent("Take notes.", json!({"firstGreeting": "Hello.", "nudgeAfterSilenceSeconds": 30}));
    let first = fake.calls().len();
    let sampler = Sampler::start(x.s.child.id());
    let calls: Vec<String> = (0..CALLS).map(|i| x.call(&agent, &format!("+1555{:07}", 1000 + i))).collect();
    poll("every placement", || Some(()).filter(|_| fake.calls().len() == first + CALLS));
    let words = |i: usize, n: usize| format!("{label} call {i} turn {n}{}", if slow(i) { " slow" } else { "" });
    let customers: Vec<_> = (0..CALLS)
        .map(|i| {
            let mut script: Vec<Move> = (0..TURNS).map(|n| Move::Say(Box::leak(words(i, n).into_boxed_str()))).collect();
            script.push(Move::Say("Goodbye."));
            fake.pick_up(&format!("CA{}", first + i + 1), script)
        })
        .collect();
    for c in customers {
        c.join().unwrap();
    }
    for call in &calls {
        x.ended(call);
    }
    let (threads, rss_kib) = sampler.finish();
    println!("{label}: the server's most threads {threads}, most resident memory {} MiB", rss_kib / 1024);
    let took = model.map(|m| m.took.lock().unwrap().clone()).unwrap_or_default();
    let times: HashMap<String, Duration> = fake.turn_times().into_iter().collect();
    let mut out = Vec::new();
    for i in (0..CALLS).filter(|i| measured(*i)) {
        for n in 0..TURNS {
            let w = words(i, n);
            let turn = times[&w];
            let ai = took.get(&w).copied().unwrap_or_default();
            out.push(turn.saturating_sub(ai).as_secs_f64() * 1000.0);
        }
    }
    assert_eq!(fake.twiml_errors(), Vec::<String>::new());
    out
}

/// The most threads and resident memory (KiB) of a process, read from
/// /proc every 20 ms until [`Sampler::finish`] (Linux; zeros elsewhere).
struct Sampler {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<(u64, u64)>,
}

impl Sampler {
    fn start(pid: u32) -> Sampler {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut most = (0, 0);
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok()).unwrap_or(0);
                most = (most.0.max(field("Threads:")), most.1.max(field("VmRSS:")));
                std::thread::sleep(Duration::from_millis(20));
            }
            most
        });
        Sampler { stop, thread }
    }

    fn finish(self) -> (u64, u64) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

fn report(label: &str, mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let at = |q: f64| ms[((ms.len() as f64 * q).ceil() as usize).clamp(1, ms.len()) - 1];
    let (p50, p99) = (at(0.50), at(0.99));
    println!("{label:<44} turns {:>4}  p50 {p50:>7.1} ms  p99 {p99:>7.1} ms  max {:>7.1} ms", ms.len(), ms[ms.len() - 1]);
    (p50, p99)
}

#[test]
#[ignore = "a benchmark: bench/twilio_turns.sh"]
fn bench_turn_latency() {
    let extra: Vec<String> = std::env::var("BENCH_FLAGS").unwrap_or_default().split_whitespace().map(String::from).collect();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    println!("{CALLS} concurrent calls, {TURNS} speech turns each; a turn: the speech post to its TwiML answer, minus the AI's time");

    let think: u64 = std::env::var("BENCH_THINK_MS").ok().and_then(|t| t.parse().ok()).unwrap_or(1000);
    println!("customers think up to {think} ms before each line");
    let fake = Fake::start();
    fake.think(think);
    let x = start(&fake, &extra);
    report("offline AI", run(&x, &fake, None, "offline", |_| false, |_| true));
    drop(x);

    let fake = Fake::start();
    fake.think(think);
    let model = Model::default();
    let url = model.start();
    let flags = [extra.clone(), vec!["--ai-endpoint", &url, "--ai-model", "bench"]].concat();
    let x = start(&fake, &flags);
    let (fast, fast99) = report("AI endpoint answering at once (baseline)", run(&x, &fake, Some(&model), "fast", |_| false, |_| true));
    let (one, one99) = report("the 19 others while one call's AI takes 500 ms", run(&x, &fake, Some(&model), "one", |i| i == 0, |i| i != 0));
    *model.all_slow.lock().unwrap() = true;
    report("AI endpoint taking 500 ms for every call", run(&x, &fake, Some(&model), "slow", |_| true, |_| true));
    println!("one slow call against the baseline: p50 {:.2}x, p99 {:.2}x", one / fast, one99 / fast99);
}
