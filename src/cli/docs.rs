//! `stalemate docs cli`: docs/cli.md, the command-line reference, rendered from the flags'
//! own definitions (ripgrep's way: flags are data, the reference is made from them), so it
//! cannot drift from `--help`. A test below fails when docs/cli.md is stale and says how
//! to regenerate it.
//!
//! A hidden subcommand rather than a hidden flag: it is a verb of its own with its own
//! output (the top-level flags would otherwise have to make the subcommand optional), and
//! hidden, it stays out of `--help` and out of the page it writes.

use std::fmt::Write;

use anyhow::Result;
use clap::{Arg, ArgAction, Args, Command, ValueEnum};

#[derive(Debug, Args)]
pub struct DocsArgs {
    /// Which page to print.
    #[arg(value_enum)]
    pub page: Page,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Page {
    /// docs/cli.md: every subcommand and flag, with its help and default.
    Cli,
}

/// What regenerates docs/cli.md (the stale-page test names it).
pub const REGENERATE: &str = "cargo run --bin stalemate -- docs cli > docs/cli.md";

/// `cli` is the whole command line (`Cli::command()`), handed in so that this file needs
/// nothing from the verbs it documents.
pub fn run(args: DocsArgs, cli: Command) -> Result<()> {
    match args.page {
        Page::Cli => print!("{}", cli_markdown(cli)),
    }
    Ok(())
}

/// docs/cli.md's text.
pub fn cli_markdown(mut cmd: Command) -> String {
    cmd.build();
    let mut out = String::new();
    out.push_str("# Command-line reference\n\n");
    let _ = writeln!(
        out,
        "<!-- Generated from the flags' definitions (src/cli/) by `{REGENERATE}`. \
         Do not edit: the test cli::docs_tests::docs_cli_md_is_current fails when this \
         page is stale. -->\n"
    );
    out.push_str(
        "Every subcommand and flag of `stalemate`, with its help, default and \
         environment variable, as `--help` gives them. Each command also takes `-h` (a \
         summary) and `--help` (all of it). For how and why to use them, see \
         [run.md](run.md), [explore.md](explore.md) and the README.\n\n",
    );
    out.push_str("**Commands:**");
    for sub in visible_subcommands(&cmd) {
        let _ = write!(out, " [{0}](#{1})", sub.get_name(), anchor(&bin_name(sub)));
    }
    out.push_str("\n\n");
    section(&mut cmd, 1, &mut out);
    out
}

pub(super) fn visible_subcommands(cmd: &Command) -> impl Iterator<Item = &Command> {
    cmd.get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
}

pub(super) fn bin_name(cmd: &Command) -> String {
    cmd.get_bin_name()
        .unwrap_or_else(|| cmd.get_name())
        .to_string()
}

/// GitHub's heading anchor: lower case, spaces to dashes, punctuation dropped.
pub(super) fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// One command: its heading, description, usage, arguments and flags, then its
/// subcommands one level down.
fn section(cmd: &mut Command, depth: usize, out: &mut String) {
    if depth > 1 {
        let _ = writeln!(out, "{} {}\n", "#".repeat(depth.min(6)), bin_name(cmd));
    }
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        let _ = writeln!(out, "{}\n", about.to_string().trim_end());
    }
    let usage = cmd.render_usage().to_string();
    let usage = usage.trim_start_matches("Usage: ").trim_end();
    let _ = writeln!(out, "```text\n{usage}\n```\n");
    // Global flags are listed once, where they are defined (the top).
    let args: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !is_builtin(a) && (depth == 1 || !a.is_global_set()))
        .collect();
    let (positionals, flags): (Vec<&Arg>, Vec<&Arg>) =
        args.into_iter().partition(|a| a.is_positional());
    for (title, list) in [("Arguments", positionals), ("Options", flags)] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(out, "**{title}:**\n");
        for a in list {
            arg(a, out);
            out.push('\n');
        }
    }
    if let Some(after) = cmd.get_after_long_help().or(cmd.get_after_help()) {
        let _ = writeln!(out, "```text\n{}\n```\n", after.to_string().trim_end());
    }
    let names: Vec<String> = visible_subcommands(cmd)
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        if let Some(sub) = cmd.find_subcommand_mut(&name) {
            section(sub, depth + 1, out);
        }
    }
}

/// clap's own `--help` and `--version`.
fn is_builtin(a: &Arg) -> bool {
    matches!(
        a.get_action(),
        ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
    )
}

/// One argument as a list item: its spelling, then its help, then the facts clap keeps
/// about it (required, default, environment variable, values).
fn arg(a: &Arg, out: &mut String) {
    let _ = write!(out, "- `{}`", spelling(a));
    let mut facts = Vec::new();
    if a.is_required_set() {
        facts.push("required".to_string());
    }
    let defaults: Vec<String> = a
        .get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect();
    if !defaults.is_empty() && a.get_action().takes_values() {
        facts.push(format!("default {}", defaults.join(" ")));
    }
    if matches!(a.get_action(), ArgAction::Append) && !spelling(a).ends_with("...") {
        facts.push("repeatable".to_string());
    }
    if let Some(env) = a.get_env() {
        facts.push(format!("env `{}`", env.to_string_lossy()));
    }
    let aliases = a.get_visible_aliases().unwrap_or_default();
    if !aliases.is_empty() {
        let list: Vec<String> = aliases.iter().map(|s| format!("`--{s}`")).collect();
        facts.push(format!("alias {}", list.join(", ")));
    }
    if !facts.is_empty() {
        let _ = write!(out, " ({})", facts.join("; "));
    }
    out.push('\n');
    if let Some(help) = a.get_long_help().or(a.get_help()) {
        for para in help.to_string().trim_end().split("\n\n") {
            let _ = writeln!(out, "\n  {}", para.replace('\n', "\n  "));
        }
    }
    let values: Vec<_> = a
        .get_possible_values()
        .into_iter()
        .filter(|v| !v.is_hide_set())
        .collect();
    // A switch's `true`/`false` says nothing its spelling does not.
    if !values.is_empty() && a.get_action().takes_values() {
        out.push('\n');
        for v in values {
            match v.get_help() {
                Some(h) => {
                    let _ = writeln!(out, "  - `{}`: {h}", v.get_name());
                }
                None => {
                    let _ = writeln!(out, "  - `{}`", v.get_name());
                }
            }
        }
    }
}

/// `-n, --namespace <NS>`, `--setup <FILE>...`, `<CMD>...`.
fn spelling(a: &Arg) -> String {
    let mut s = String::new();
    if let Some(c) = a.get_short() {
        let _ = write!(s, "-{c}");
    }
    if let Some(l) = a.get_long() {
        if !s.is_empty() {
            s.push_str(", ");
        }
        let _ = write!(s, "--{l}");
    }
    if a.get_action().takes_values() {
        let names: Vec<String> = a
            .get_value_names()
            .map(|n| n.iter().map(|n| format!("<{n}>")).collect())
            .unwrap_or_else(|| vec![format!("<{}>", a.get_id().as_str().to_uppercase())]);
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(&names.join(" "));
        if a.get_num_args().is_some_and(|n| n.max_values() > 1) {
            s.push_str("...");
        }
    }
    s
}
