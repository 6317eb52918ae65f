//! The components build.rs built and embedded in the binary, by name: the
//! areas, the dispatcher and every provider interface's default adapter
//! (`sandbox-*`, also what `plugin template` copies).

include!(concat!(env!("OUT_DIR"), "/components.rs"));
