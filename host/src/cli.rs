//! The `injector-host` command line: the subcommands, their dispatch to the generic commands
//! ([`crate::commands`]) and Linkerd's ([`crate::linkerd::commands`]), and the one error type
//! `main` prints. The only module that knows both halves. The generic commands print nothing:
//! their stderr lines are printed here, as each step hands them back.

use clap::{Parser, Subcommand};
use thiserror::Error;

use crate::commands::annotate::{self, AnnotateArgs};
use crate::commands::common::{CommandError, Output};
use crate::commands::run::{self, RunArgs};
use crate::linkerd::commands::{InjectArgs, RolloutArgs, inject, rollout};
use crate::linkerd::inject::InjectError;
use crate::linkerd::rollout::RolloutError;

/// Why a command failed; its text is what `main` prints after `Error: `.
#[derive(Debug, Error)]
pub enum CliError {
    /// `run` and `annotate`, and the steps every command shares.
    #[error(transparent)]
    Command(#[from] CommandError),
    #[error(transparent)]
    Rollout(#[from] RolloutError),
    #[error(transparent)]
    Inject(#[from] InjectError),
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

/// Runs the parsed command; its stderr lines are printed before it returns (before `main`
/// prints stdout), those of a step before the next step runs.
pub fn execute(cli: &Cli) -> Result<Output, CliError> {
    let output = match &cli.command {
        Command::Rollout(args) => rollout(args)?,
        Command::Inject(args) => inject(args)?.into(),
        Command::Run(args) => {
            let prepared = run::prepare(args)?;
            print_stderr(&prepared.warnings);
            prepared.evaluate()?
        }
        Command::Annotate(args) => {
            let annotation = annotate::prepare(args)?;
            print_stderr(&annotation.warnings());
            annotation.write()?
        }
    };
    print_stderr(&output.stderr);
    Ok(output)
}

fn print_stderr(lines: &[String]) {
    for line in lines {
        eprintln!("{line}");
    }
}
