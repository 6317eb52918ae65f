//! The dispatcher: the composition root of background work. The host's
//! runner calls `run` for every job; the dispatcher links each area's job
//! code and hands the job to the area named by its kind's prefix
//! (`data-sources.ingest` → the data-sources area). It has no rules of its
//! own: each area's kinds are a typed enum declared in
//! `switchboard-job-kinds`, and the area runs them in its `jobs::run`.
//!
//! The runner claims a due job under a lease with a fencing token and calls
//! `run` inside a write transaction; the job's writes commit together with
//! its new state only while the fence holds.

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod bindings {
    // The imports are the guest library's, so the areas' job code (written
    // against it) links here unchanged; only the job-handler export is
    // generated.
    wit_bindgen::generate!({
        world: "dispatcher",
        path: "../../wit",
        with: {
            "switchboard:platform/types@0.1.0": switchboard_guest::bindings::switchboard::platform::types,
            "switchboard:platform/store@0.1.0": switchboard_guest::bindings::switchboard::platform::store,
            "switchboard:platform/jobs@0.1.0": switchboard_guest::bindings::switchboard::platform::jobs,
            "switchboard:provider/clock@0.1.0": switchboard_guest::bindings::switchboard::provider::clock,
            "switchboard:provider/ids@0.1.0": switchboard_guest::bindings::switchboard::provider::ids,
            "switchboard:provider/log@0.1.0": switchboard_guest::bindings::switchboard::provider::log,
            "switchboard:platform/http-out@0.1.0": switchboard_guest::bindings::switchboard::platform::http_out,
            "switchboard:provider/ai@0.1.0": switchboard_guest::bindings::switchboard::provider::ai,
            "switchboard:provider/messenger@0.1.0": switchboard_guest::bindings::switchboard::provider::messenger,
            "switchboard:provider/carrier@0.1.0": switchboard_guest::bindings::switchboard::provider::carrier,
            "switchboard:platform/job-types@0.1.0": switchboard_guest::bindings::switchboard::platform::job_types,
        },
    });
}

use bindings::exports::switchboard::platform::job_handler::Guest;
use switchboard_guest::job_types::{Job, Outcome};

/// The area that owns a job kind: the part of the kind before the first `.`.
pub fn area(kind: &str) -> &str {
    kind.split_once('.').map_or("", |(area, _)| area)
}

struct Dispatcher;

impl Guest for Dispatcher {
    fn run(job: Job) -> Outcome {
        match area(&job.kind) {
            "data-sources" => switchboard_data_sources_area::jobs::run(&job),
            "messaging" => switchboard_messaging_area::jobs::run(&job),
            "webhooks" => switchboard_webhooks_area::jobs::run(&job),
            "voice" => switchboard_voice_area::jobs::run(&job),
            "campaigns" => switchboard_campaigns_area::jobs::run(&job),
            _ => Outcome::Dead(format!("unknown job kind `{}`", job.kind)),
        }
    }

    fn batched_kinds() -> Vec<String> {
        switchboard_webhooks_area::jobs::BATCHED_KINDS.iter().map(|k| k.to_string()).collect()
    }

    fn run_batch(jobs: Vec<Job>) -> Vec<Outcome> {
        match jobs.first().map(|j| area(&j.kind)) {
            Some("webhooks") => switchboard_webhooks_area::jobs::run_batch(&jobs),
            // No other area has a batch form: one after another.
            _ => jobs.into_iter().map(Self::run).collect(),
        }
    }
}

#[cfg(target_arch = "wasm32")]
bindings::export!(Dispatcher with_types_in bindings);

#[cfg(test)]
mod tests {
    #[test]
    fn the_area_is_the_kind_prefix() {
        assert_eq!(super::area("data-sources.ingest"), "data-sources");
        assert_eq!(super::area("messaging.photoapp-inbound"), "messaging");
        assert_eq!(super::area("webhooks.deliver"), "webhooks");
        assert_eq!(super::area("nodot"), "");
    }
}
