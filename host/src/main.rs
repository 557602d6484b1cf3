//! The `injector-host` binary: parses the command line, runs the command, prints its output
//! and sets the exit status.

use clap::Parser;
use injector_host::cli::Command;

fn main() -> std::process::ExitCode {
    let cli = injector_host::cli::Cli::parse();
    match injector_host::cli::execute(&cli) {
        Ok(out) => {
            if matches!(cli.command, Command::Inject(_)) {
                // the YAML stream, byte for byte
                print!("{}", out.stdout);
            } else if !out.stdout.is_empty() {
                println!("{}", out.stdout.trim_end());
            }
            match out.failure {
                None => std::process::ExitCode::SUCCESS,
                Some(failure) => {
                    eprintln!("Error: {failure}");
                    std::process::ExitCode::FAILURE
                }
            }
        }
        Err(e) => {
            eprintln!("Error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
