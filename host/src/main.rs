use clap::Parser;
use injector_host::cli::Command;

fn main() -> std::process::ExitCode {
    let cli = injector_host::cli::Cli::parse();
    match injector_host::cli::execute(&cli) {
        Ok(out) => {
            if matches!(cli.command, Command::Inject(_)) {
                // the YAML stream, byte for byte
                print!("{out}");
            } else if !out.is_empty() {
                println!("{}", out.trim_end());
            }
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("Error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
