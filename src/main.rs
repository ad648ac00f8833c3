//! The `canvas` command: everything is in `canvas::cli`.

fn main() -> std::process::ExitCode {
    canvas::cli::main()
}
