use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = injector_host::cli::Cli::parse();
    match injector_host::cli::execute(&cli) {
        Ok(out) => {
            println!("{}", out.trim_end());
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("Error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
