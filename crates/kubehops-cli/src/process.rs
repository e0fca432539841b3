//! The process around [`crate::run_as`], shared by both binaries: argv in,
//! the standard streams, the exit code out.

use crate::args::Program;
use std::io::Write;

/// Runs the binary as `default`, or as the program its file name says
/// (`kubectl-hops`, also through a symlink), and exits with its code.
pub fn main(default: Program) -> ! {
    let mut argv = std::env::args_os();
    let program = Program::from_argv0(argv.next().as_deref(), default);
    let args: Vec<String> = argv.map(|a| a.to_string_lossy().into_owned()).collect();
    let (mut stdout, mut stderr) = (std::io::stdout().lock(), std::io::stderr().lock());
    let code = crate::run_as(program, &args, &mut std::io::stdin().lock(), &mut stdout, &mut stderr);
    // `exit` skips destructors, so flush what is buffered first.
    let _ = stdout.flush();
    let _ = stderr.flush();
    std::process::exit(code);
}
