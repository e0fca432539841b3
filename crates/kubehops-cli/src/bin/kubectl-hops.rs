//! `kubectl-hops`: kubehops as a kubectl plugin. On PATH, it is what
//! kubectl runs for `kubectl hops …`, with the arguments after `hops`.

fn main() {
    kubehops_cli::process::main(kubehops_cli::args::Program::KubectlPlugin)
}
