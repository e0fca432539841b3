//! The `kubehops` binary: see `kubehops --help` and the library docs.

fn main() {
    kubehops_cli::process::main(kubehops_cli::args::Program::Kubehops)
}
