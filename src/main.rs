fn main() -> std::process::ExitCode {
    keryx_hooks::main(std::env::args_os().collect())
}
