fn main() -> std::process::ExitCode {
    stalemate::cli::main()
}
