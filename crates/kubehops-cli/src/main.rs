//! The `kubehops` binary: see `kubehops --help` and the library docs.

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args_os().skip(1).map(|a| a.to_string_lossy().into_owned()).collect();
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr().lock());
    let code = kubehops_cli::run(&args, &mut std::io::stdin().lock(), &mut stdout, &mut stderr);
    // `exit` skips destructors, so flush what is buffered first.
    let _ = stdout.flush();
    let _ = stderr.flush();
    std::process::exit(code);
}
