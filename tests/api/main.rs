//! Black-box tests: each starts the real `switchboard` binary on a free
//! loopback port with a temp data dir and speaks HTTP to it.

mod agents;
mod autoreply;
mod billing;
mod campaigns;
mod cli;
mod cloud_messenger;
mod component_cache;
mod console;
mod contacts;
mod data_sources;
mod downloads;
mod edge;
mod edge_manifest;
mod far;
mod faults;
mod harness;
mod inbound;
mod jobs;
mod knowledge;
mod limits;
mod logging;
mod messaging;
mod participants;
mod photoapp;
mod platform;
mod plugins;
mod primary;
mod runner;
mod scale_out;
mod stalls;
mod summaries;
mod voice;
mod webhook_delivery;
mod webhooks;
mod writes;
