//! `goodput`'s command-line layer: the only crate of the workspace that reads
//! flags, prints, or chooses an exit status. Each subcommand is one file of
//! [`cli`]: its flags (clap), its call into the library crates, its printing
//! and its exit status; [`cli::error`] is every way a command ends, mapped to
//! a message and a status in one place ([`cli::exit`]).
//!
//! The library crates below it, every arrow pointing down:
//!
//! ```text
//! goodput (cli) ─▶ goodput-selfcheck ─▶ goodput-render ─▶ goodput-record ─▶ goodput-tokenizer
//!               ─▶ goodput-sim ─▶ goodput-tokenizer     ─▶ goodput-import ─▶ goodput-core ─▶ goodput-util
//! ```

pub mod cli;
