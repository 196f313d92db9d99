//! The `goodput` binary: parse flags, run, map the outcome to an exit status.

use clap::Parser;

fn main() {
    let cli = goodput::cli::Cli::parse();
    let stdout = std::io::stdout();
    let code = match goodput::cli::run(cli, &mut stdout.lock()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("{}", err.message());
            err.exit_code()
        }
    };
    std::process::exit(code);
}
