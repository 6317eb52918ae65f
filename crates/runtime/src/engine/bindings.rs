//! The platform worlds' bindings: `resource-area` (every area), the
//! dispatcher's world and the voice area's, generated once here so the
//! imports' host side (`imports.rs`, the provider files) names one set of
//! types.

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "resource-area",
});

pub use switchboard::platform::types;

/// A world that extends `resource-area`, its shared interfaces taken from
/// the bindings above (one set of host implementations serves every world).
macro_rules! area_world {
    ($world:literal) => {
        wasmtime::component::bindgen!({
            path: "../../wit",
            world: $world,
            with: {
                "switchboard:platform/types": super::switchboard::platform::types,
                "switchboard:platform/store": super::switchboard::platform::store,
                "switchboard:platform/jobs": super::switchboard::platform::jobs,
                "switchboard:provider/clock": super::switchboard::provider::clock,
                "switchboard:provider/ids": super::switchboard::provider::ids,
                "switchboard:provider/log": super::switchboard::provider::log,
            },
        });
    };
}

/// The dispatcher's world shares every import with `resource-area` (and the
/// providers' interfaces), so one set of host implementations serves both.
pub mod dispatcher_world {
    area_world!("dispatcher");
}
pub use dispatcher_world::switchboard::platform::job_types::{Job, Outcome};

/// The voice area's world: `resource-area` plus the signed recording links
/// (answered in `recordings.rs`).
pub mod voice_world {
    area_world!("voice-area");
}
