fn main() -> std::process::ExitCode {
    nyl_render::commands::main()
}
