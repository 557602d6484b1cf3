//! The `injector-host` command line: the subcommands, their dispatch to the generic commands
//! ([`crate::commands`]) and Linkerd's ([`crate::linkerd::commands`]), and the one error type
//! `main` prints. The only module that knows both halves.

use clap::{Parser, Subcommand};
use thiserror::Error;

use crate::commands::generic::{AnnotateArgs, CommandError, Output, RunArgs, annotate, run};
use crate::linkerd::commands::{InjectArgs, LinkerdError, RolloutArgs, inject, rollout};

/// Why a command failed; its text is what `main` prints after `Error: `.
#[derive(Debug, Error)]
pub enum CliError {
    #[error(transparent)]
    Command(#[from] CommandError),
    #[error(transparent)]
    Linkerd(#[from] LinkerdError),
}

#[derive(Debug, Parser)]
#[command(
    name = "injector-host",
    version,
    about = "A small Kubewarden-compatible (waPC) policy engine"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Evaluate one request, print the AdmissionResponse as one JSON line (like `kwctl run`).
    Run(RunArgs),
    /// Play a Deployment rollout (linkerd2#3358) through the policy and summarise it.
    Rollout(RolloutArgs),
    /// Inject the proxy into manifests ahead of time, like `linkerd inject --manual`: YAML on
    /// stdout, a per-object report on stderr.
    Inject(InjectArgs),
    /// Write the policy metadata into the module's `io.kubewarden.metadata` section, like
    /// `kwctl annotate`.
    Annotate(AnnotateArgs),
}

/// Runs the parsed command.
pub fn execute(cli: &Cli) -> Result<Output, CliError> {
    let stdout = match &cli.command {
        Command::Rollout(args) => return Ok(rollout(args)?),
        Command::Inject(args) => inject(args)?,
        Command::Run(args) => run(args)?,
        Command::Annotate(args) => annotate(args)?,
    };
    Ok(stdout.into())
}
