fn main() -> std::process::ExitCode {
    nyl_render::cli::main()
}
