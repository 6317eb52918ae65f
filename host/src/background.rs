//! The node's background loops beside the server: the job runner (when
//! this node runs jobs) and the plugin reloads on SIGHUP.

use crate::shared::Shared;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs job rounds on a blocking thread until `stop`; idles 25 ms when
/// there was nothing to do (an idle round is one indexed read). On stop,
/// waits (bounded) for steps still calling out, so each ends committed or
/// rolled back whole.
pub(crate) fn spawn_job_runner(shared: Arc<Shared>, stop: Arc<std::sync::atomic::AtomicBool>, config: crate::jobs::RunnerConfig, wait: Duration) -> tokio::task::JoinHandle<()> {
    tokio::task::spawn_blocking(move || {
        let mut runner = crate::jobs::Runner::new(config);
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            if runner.tick(&shared) == 0 {
                runner.idle(Duration::from_millis(25));
            }
        }
        let deadline = Instant::now() + wait;
        while runner.calling_out() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        // A step still calling out keeps its job leased: then the lease
        // runs out as it would after a crash.
        if runner.calling_out() == 0 {
            runner.step_down(&shared.app.db);
        }
    })
}

/// SIGHUP reads the plugin folder again (on a blocking thread: plugins
/// compile); calls in flight finish on the version they started with.
pub(crate) fn spawn_plugin_reloads(shared: Arc<Shared>) {
    #[cfg(unix)]
    tokio::spawn(async move {
        let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) else { return };
        while hup.recv().await.is_some() {
            crate::logging::line("info", "SIGHUP: reloading plugins");
            let s = shared.clone();
            let _ = tokio::task::spawn_blocking(move || s.app.components.providers().plugins.reload()).await;
        }
    });
    #[cfg(not(unix))]
    let _ = shared;
}
