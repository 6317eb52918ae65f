//! The agent runtime: everything about running an agent that more than one
//! area needs, in one place, so voice calls, message replies, console agent
//! tests and campaign openings run agents by the same rules.
//!
//! * [`template`]: the template language of agent texts (`{{alias}}`
//!   placeholders in a greeting or an opening message): one parser, used
//!   both to check a text when it is written and to fill it when it is
//!   used. Its rules, with examples, are in `template.rs` and in
//!   `docs/agents.md` ("Templates").
//! * [`turn`]: one agent turn: the instructions of each kind of turn
//!   (message, public comment reply, call), the grounded answer (a call
//!   turn may end the call by the `end_call` tool), and the greeting a
//!   voice conversation opens with.
//! * [`grounding`]: what an agent finds in its data sources for a turn
//!   (passages by words and by meaning, fused; lookups of structured
//!   sources) and the knowledge block of the instructions.
//!
//! Never: requests, job kinds or tables of its own. It reads the grounding
//! index (written by the data-sources area through
//! `switchboard_guest::knowledge`) and calls the `ai` import; `template`
//! and the assembly of instructions are pure and unit-tested natively.
//!
//! Entry points: [`turn::answer`] for a turn, [`template::parse`] to check
//! a text, [`template::fill`] and [`turn::greeting`] to use one.

pub mod grounding;
pub mod template;
pub mod turn;
