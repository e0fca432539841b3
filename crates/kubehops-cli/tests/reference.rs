//! The documentation cannot drift from the binary: `docs/cli.md` is the
//! `--help` of every command as the built binary prints it, every flag the
//! README names exists, and no help line is wider than 100 columns.

use kubehops_cli::args::{self, Program};
use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What the built binary prints on stdout for `args`, which must succeed.
fn printed(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kubehops")).args(args).output().expect("run kubehops");
    assert!(out.status.success(), "kubehops {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The commands, as `kubehops --help` lists them (without `help`).
fn commands() -> Vec<String> {
    let root = args::command(Program::Kubehops);
    root.get_subcommands().map(|c| c.get_name().to_string()).filter(|n| n != "help").collect()
}

#[test]
fn the_reference_is_the_binarys_help() {
    let reference = args::reference(Program::Kubehops);
    kubehops_core::golden::check(&repo().join("docs/cli.md"), &reference);
    // Each section holds exactly what `--help` prints, so the file is the
    // binary's own text and not a second rendering of it.
    let block = |title: &str| -> String {
        let heading = format!("\n## {title}\n\n```text\n");
        let start = reference.find(&heading).unwrap_or_else(|| panic!("section {title}")) + heading.len();
        reference[start..].split("```\n").next().unwrap_or("").to_string()
    };
    assert_eq!(block("kubehops"), printed(&["--help"]));
    let commands = commands();
    assert_eq!(commands, ["iptables-save", "nft", "trace", "get", "dig", "completion"]);
    for c in &commands {
        assert_eq!(block(&format!("kubehops {c}")), printed(&[c, "--help"]), "{c}");
    }
}

/// Flags of other programs that the README's comments name when they
/// describe iptables' output: `-X` (delete a chain), `MARK --set-xmark`,
/// `iptables-restore --noflush`, `MASQUERADE --random-fully`.
const IPTABLES_FLAGS: [&str; 4] = ["-X", "--set-xmark", "--noflush", "--random-fully"];

/// The flags the README names: on `kubehops …` and `kubectl hops …`
/// command lines (with the command they are given to), in the comments of
/// those examples, and in backquotes in the prose (`-o json`,
/// `--format restore`).
fn readme_flags() -> Vec<(String, Option<String>)> {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let mut found = Vec::new();
    let (mut in_code, mut continued) = (false, false);
    let mut prose = String::new();
    for line in readme.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if !in_code {
            prose.push_str(line);
            prose.push('\n');
            continue;
        }
        let text = line.trim_start().trim_start_matches("$ ");
        let program = ["kubectl hops ", "kubehops "].iter().find_map(|p| text.find(p).map(|i| i + p.len()));
        if let Some(comment) = text.strip_prefix('#') {
            let words = comment.split_whitespace().map(|w| w.trim_matches(|c: char| "(),;.`".contains(c)));
            found.extend(words.filter(|w| is_flag(w) && !IPTABLES_FLAGS.contains(w)).map(|w| (w.to_string(), None)));
        } else if let Some(from) = program.or(continued.then_some(0)) {
            let words: Vec<&str> = text[from..].split_whitespace().collect();
            let command = if continued { found.last().and_then(|(_, c): &(String, Option<String>)| c.clone()) } else { words.first().filter(|w| !w.starts_with('-')).map(|w| w.to_string()) };
            found.extend(words.iter().filter(|w| is_flag(w)).map(|w| (w.to_string(), command.clone())));
        }
        continued = text.ends_with('\\') && (program.is_some() || continued);
    }
    for (i, span) in prose.split('`').enumerate() {
        if i % 2 == 1 && is_flag(span.split_whitespace().next().unwrap_or("")) {
            found.push((span.split_whitespace().next().unwrap_or(span).to_string(), None));
        }
    }
    found
}

fn is_flag(word: &str) -> bool {
    word.starts_with('-') && word.len() > 1 && word.chars().nth(1).is_some_and(|c| c == '-' || c.is_ascii_alphabetic())
}

/// Whether `flag` (`-f`, `-fFILE`, `--now=…`) is one of `command`'s, or of
/// any command's when the README does not say which. `-h`/`--help` is
/// every command's, `--version` the program's own.
fn exists(flag: &str, command: Option<&str>) -> bool {
    let root = args::command(Program::Kubehops);
    let name = flag.split('=').next().unwrap_or(flag);
    if ["-h", "--help"].contains(&name) || (name == "--version" && command.is_none()) {
        return true;
    }
    let has = |c: &clap::Command| {
        c.get_arguments().any(|a| match name.strip_prefix("--") {
            Some(long) => a.get_long() == Some(long),
            None => name.chars().nth(1).is_some_and(|s| a.get_short() == Some(s)),
        })
    };
    match command {
        Some(c) => root.find_subcommand(c).is_some_and(has),
        None => root.get_subcommands().any(has),
    }
}

#[test]
fn every_flag_the_readme_names_exists() {
    let flags = readme_flags();
    assert!(flags.len() > 20, "the README's command lines were found: {flags:?}");
    let missing: Vec<String> = flags.iter().filter(|(f, c)| !exists(f, c.as_deref())).map(|(f, c)| format!("{f} ({})", c.as_deref().unwrap_or("any command"))).collect();
    assert!(missing.is_empty(), "the README names flags kubehops does not have: {missing:?}");
    // The check itself can fail: a flag no command has is caught.
    assert!(!exists("--no-such-flag", None));
    assert!(!exists("--now", Some("trace")), "--now is get's only");
    assert!(!exists("--version", Some("get")));
    assert!(exists("-fFILE", Some("dig")) && exists("--now=2024-05-01T12:00:00Z", Some("get")));
}

#[test]
fn help_fits_in_100_columns() {
    for program in [Program::Kubehops, Program::KubectlPlugin] {
        let mut root = args::command(program);
        root.build();
        let mut texts = vec![root.render_help().to_string(), root.render_long_help().to_string()];
        for sub in root.get_subcommands_mut() {
            texts.push(sub.render_help().to_string());
            texts.push(sub.render_long_help().to_string());
        }
        for text in texts {
            // Synopses are one line per command, however long, as before.
            let name = program.name();
            for line in text.lines().filter(|l| !l.starts_with("Usage: ") && !l.trim_start().starts_with(name)) {
                assert!(line.chars().count() <= 100, "{} columns:\n{line}", line.chars().count());
            }
        }
    }
}
