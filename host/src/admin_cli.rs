//! `switchboard admin …`: opens the data dir (or the primary's replica)
//! and runs one command of the admin crate, answering JSON.

use crate::cli::*;
use crate::{admin, db, plugins};
use anyhow::{bail, Context, Result};
use std::io::Write as _;
use std::path::Path;
use switchboard_storage::databases::Databases;

/// Opens the data dir for `admin`: a missing one is refused unless
/// `--create` (a mistyped path must not get a fresh, empty database whose
/// keys the running server then refuses). Says on stderr which dir it used.
fn open_admin_data_dir(dir: &Path, create: bool, storage: db::Storage) -> Result<Databases> {
    if !dir.is_dir() {
        // With a primary the data dir only keeps this command's replica.
        if !create && matches!(storage, db::Storage::Local) {
            bail!("data dir {} does not exist (check --data-dir / SWITCHBOARD_DATA_DIR, or pass --create to make a new one)", dir.display());
        }
        std::fs::create_dir_all(dir).with_context(|| format!("creating data dir {}", dir.display()))?;
    }
    let shown = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let _ = writeln!(std::io::stderr(), "switchboard admin: data dir {}", shown.display());
    if let db::Storage::Replica(primary) = &storage {
        let _ = writeln!(std::io::stderr(), "switchboard admin: primary {}", primary.url);
    }
    // A command opens the databases it names; none is prepared for
    // serving (the server does that when it opens one).
    Databases::open(dir, db::OpenOptions::default(), storage, Box::new(|_, _| Ok(())))
}

/// Runs one admin command: a restore or a local check on the files alone,
/// every other command on the opened databases.
pub(crate) fn run(args: AdminArgs) -> Result<serde_json::Value> {
    let files = admin::backup::Files { data_dir: &args.data_dir, replica: args.primary.primary_url.as_ref().map(|_| "replica-admin".to_string()) };
    if let Some(answer) = on_files(&args, &files) {
        return answer;
    }
    let keys = plugins::sealed::Keys::from_environment()?;
    let dbs = open_admin_data_dir(&args.data_dir, args.create, args.primary.storage("admin"))?;
    // Keys, users and the businesses' list live in main; everything else
    // of a business in its own database.
    let db = dbs.main().clone();
    let home = |business: &str| dbs.of_business(business);
    match args.command {
        AdminCommand::Restore { .. } => unreachable!("answered above"),
        AdminCommand::Backup { to } => {
            let say = |line: &str| {
                let _ = writeln!(std::io::stderr(), "switchboard admin: {line}");
            };
            admin::backup::backup(&dbs, &files, &to, &say)
        }
        AdminCommand::Check => checked(admin::backup::check(Some(&dbs), &files)?),
        AdminCommand::Business(BusinessCommand::Create { name, database }) => admin::create_business(&dbs, &name, database.as_deref()),
        AdminCommand::Database(DatabaseCommand::Add { name, url }) => dbs.add(&name, &url),
        AdminCommand::Database(DatabaseCommand::List) => dbs.list(),
        AdminCommand::Business(BusinessCommand::List) => admin::list_businesses(&db),
        AdminCommand::Business(BusinessCommand::Move { business, to }) => {
            // At the target, the business's passages are embedded again
            // (its vectors are keyed by rowids a copy does not keep).
            let embed = |c: &db::Connection, business: &str| crate::knowledge::embeddings_changed(c, business);
            let say = |line: &str| {
                let _ = writeln!(std::io::stderr(), "switchboard admin: {line}");
            };
            switchboard_storage::moves::move_business(&dbs, &business, &to, &switchboard_jobs::MovedJobs, &embed, &say)
        }
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
                RoleArg::Agent => "agent",
                RoleArg::Viewer => "viewer",
            };
            let console_url = console_url.unwrap_or_else(|| admin::users::served_url(&args.data_dir));
            admin::users::create_in_team(&dbs, &business, &email, role, password.as_deref(), &console_url)
        }
        AdminCommand::User(UserCommand::List { business }) => admin::users::list(&db, &business),
        AdminCommand::User(UserCommand::Disable { user_id }) => admin::users::disable(&dbs, &user_id),
        AdminCommand::User(UserCommand::RevokeSessions { user_id }) => admin::users::revoke_sessions(&db, &user_id),
        AdminCommand::Channel(ChannelCommand::Connect { business, channel, phone_number_id, account_id, label, username }) => match channel {
            ChannelArg::Chatapp => admin::connect_channel(&dbs, &business, "chatapp", phone_number_id.as_deref().unwrap_or_default(), label.as_deref()),
            ChannelArg::Photoapp => admin::connect_channel(&dbs, &business, "photoapp", account_id.as_deref().unwrap_or_default(), username.as_deref()),
        },
        AdminCommand::Voice(VoiceCommand::Configure { business, lines, price_per_block, caller_number, time_zone, calling_window }) => admin::voice::configure(
            &*home(&business)?,
            &business,
            &admin::voice::Settings { lines, price_per_block, caller_number: caller_number.as_deref(), time_zone: time_zone.as_deref(), calling_window: calling_window.as_deref() },
        ),
        AdminCommand::Credits(CreditsCommand::Add { business, microcredits, note }) => admin::voice::add_credits(&*home(&business)?, &business, microcredits, note.as_deref()),
        AdminCommand::Credits(CreditsCommand::Show { business, limit }) => admin::voice::show_credits(&*home(&business)?, &business, limit),
        AdminCommand::Summaries(SummariesCommand::Configure { business, price_per_contact, price_per_thousand_characters }) => {
            admin::summaries::configure(&*home(&business)?, &business, price_per_contact, price_per_thousand_characters)
        }
        AdminCommand::Provider(command) => provider(&dbs, &keys, command),
        AdminCommand::Sandbox(command) => sandbox(&dbs, command),
    }
}

/// A restore (a new data dir, made from the file alone) or a check of a
/// local data dir's files as they are (a damaged one must not stop the
/// check); None for a command on the databases.
fn on_files(args: &AdminArgs, files: &admin::backup::Files) -> Option<Result<serde_json::Value>> {
    let local = args.primary.primary_url.is_none();
    match &args.command {
        AdminCommand::Restore { .. } if !local => {
            Some(Err(anyhow::anyhow!("restore lays a backup out as a local data dir; run it without --primary-url (docs/operations.md says how to load one into a libSQL server)")))
        }
        AdminCommand::Restore { from } => {
            let _ = writeln!(std::io::stderr(), "switchboard admin: restoring {} into data dir {}", from.display(), args.data_dir.display());
            Some(admin::backup::restore(from, &args.data_dir))
        }
        AdminCommand::Check if local => {
            if !args.data_dir.is_dir() {
                return Some(Err(anyhow::anyhow!("data dir {} does not exist (check --data-dir / SWITCHBOARD_DATA_DIR)", args.data_dir.display())));
            }
            let _ = writeln!(std::io::stderr(), "switchboard admin: data dir {}", args.data_dir.display());
            Some(admin::backup::check(None, files).and_then(checked))
        }
        _ => None,
    }
}

/// `admin provider …`: a business's plugin choice, or every database's
/// sealed settings resealed.
fn provider(dbs: &Databases, keys: &plugins::sealed::Keys, command: ProviderCommand) -> Result<serde_json::Value> {
    let home = |business: &str| dbs.of_business(business);
    match command {
        ProviderCommand::Use { business, interface, plugin, plugin_dir, setting } => plugins::choice::choose(&*home(&business)?, keys, &business, interface, &plugin_dir, &plugin, &setting),
        ProviderCommand::Reset { business, interface } => plugins::choice::reset(&*home(&business)?, &business, interface),
        ProviderCommand::Show { business, plugin_dir } => plugins::choice::show(&*home(&business)?, &business, plugin_dir.as_deref()),
        ProviderCommand::Reseal { plugin_dir } => {
            // Every database's choices, one transaction each.
            dbs.open_registered();
            let mut resealed = 0;
            for (_, db) in dbs.all() {
                resealed += plugins::choice::reseal(&db, keys, plugin_dir.as_deref())?["resealed"].as_u64().unwrap_or(0);
            }
            Ok(serde_json::json!({"resealed": resealed}))
        }
    }
}

/// `admin sandbox …`: an inbound message or a photoapp signal, as the
/// sandbox messenger would deliver it.
fn sandbox(dbs: &Databases, command: SandboxCommand) -> Result<serde_json::Value> {
    match command {
        SandboxCommand::Inbound { channel, phone_number_id, account_id, from, text, name, provider_message_id } => {
            let to = match channel {
                ChannelArg::Chatapp => admin::Sender::Chatapp(phone_number_id.as_deref().unwrap_or_default()),
                ChannelArg::Photoapp => admin::Sender::Photoapp(account_id.as_deref().unwrap_or_default()),
            };
            admin::sandbox_inbound(dbs, &admin::Inbound { to, from: &from, text: &text, name: name.as_deref(), provider_message_id: provider_message_id.as_deref() })
        }
        SandboxCommand::Reaction { account_id, from, reaction, message_id, removed, occurred_at } => admin::sandbox_photoapp_signal(
            dbs,
            &account_id,
            &from,
            &admin::PhotoappSignal::Reaction { reaction: &reaction, message_id: message_id.as_deref(), removed, occurred_at: occurred_at.as_deref() },
        ),
        SandboxCommand::Comment { account_id, from, text, name, post_id, comment_id, occurred_at } => admin::sandbox_photoapp_signal(
            dbs,
            &account_id,
            &from,
            &admin::PhotoappSignal::Comment { text: &text, name: name.as_deref(), post_id: post_id.as_deref(), comment_id: comment_id.as_deref(), occurred_at: occurred_at.as_deref() },
        ),
        SandboxCommand::Referral { account_id, from, source, ad_id, post_id } => {
            admin::sandbox_photoapp_signal(dbs, &account_id, &from, &admin::PhotoappSignal::Referral { source: &source, ad_id: ad_id.as_deref(), post_id: post_id.as_deref() })
        }
    }
}

/// `admin check`'s answer; printed and an error (exit 1) when a database
/// has problems.
fn checked(found: serde_json::Value) -> Result<serde_json::Value> {
    if found["ok"] != true {
        println!("{found}");
        bail!("a database of the data dir has problems (listed above)");
    }
    Ok(found)
}
