fn main() -> std::process::ExitCode {
    canvas::cli::main()
}
