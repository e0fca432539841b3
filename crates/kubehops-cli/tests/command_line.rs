//! The command line as its users meet it: `--version`, the completion
//! scripts (bash's run for real), the kubectl plugin `kubectl-hops` run the
//! way kubectl runs it, and AGE at kubectl's rounding edges.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `program` in the crate's directory with `stdin`.
fn run_binary(program: &Path, args: &[&str], stdin: &str) -> Run {
    run_command(Command::new(program).args(args), stdin)
}

fn run_command(cmd: &mut Command, stdin: &str) -> Run {
    let mut child = cmd.current_dir(manifest_dir()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    Run {
        code: out.status.code().expect("exit code (not killed by a signal)"),
        stdout: String::from_utf8(out.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("utf-8 stderr"),
    }
}

fn kubehops(args: &[&str]) -> Run {
    run_binary(Path::new(env!("CARGO_BIN_EXE_kubehops")), args, "")
}

fn plugin(args: &[&str], stdin: &str) -> Run {
    run_binary(Path::new(env!("CARGO_BIN_EXE_kubectl-hops")), args, stdin)
}

/// A fresh directory under the target dir for files a test makes.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

// ------------------------------------------------------------ --version

#[test]
fn version() {
    let want = format!("kubehops {}\n", env!("CARGO_PKG_VERSION"));
    for flag in ["--version", "-V"] {
        let r = kubehops(&[flag]);
        assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (0, want.as_str(), ""), "{flag}");
    }
    let r = plugin(&["--version"], "");
    assert_eq!((r.code, r.stdout), (0, format!("kubectl hops {}\n", env!("CARGO_PKG_VERSION"))));
    // A command has no --version of its own.
    let r = kubehops(&["get", "--version"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.starts_with("error: unknown flag: --version\n"), "{}", r.stderr);
}

// ------------------------------------------------------------ completion

/// What bash's programmable completion offers for `words`, the last one
/// being the word under the cursor, with the script `kubehops completion
/// bash` printed loaded as `source <(kubehops completion bash)` loads it.
fn bash_completes(script: &Path, function: &str, words: &[&str]) -> Vec<String> {
    let words_q: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let n = words.len() - 1;
    let prev = if n > 0 { words[n - 1] } else { "" };
    let code = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={n}; COMP_LINE='{}'; COMP_POINT=${{#COMP_LINE}}; {function} '{}' '{}' '{prev}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        words_q.join(" "),
        words.join(" "),
        words[0],
        words[n],
    );
    let out = Command::new("bash").args(["--norc", "-c", &code]).output().expect("bash");
    assert!(out.status.success(), "bash: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8").lines().map(String::from).filter(|l| !l.is_empty()).collect()
}

#[test]
fn bash_completion_completes_commands_flags_and_values() {
    let r = kubehops(&["completion", "bash"]);
    assert_eq!((r.code, r.stderr.as_str()), (0, ""));
    let script = scratch("completion").join("kubehops.bash");
    std::fs::write(&script, &r.stdout).expect("write script");
    let complete = |words: &[&str]| bash_completes(&script, "_kubehops", words);
    assert_eq!(complete(&["kubehops", "ip"]), ["iptables-save"]);
    assert_eq!(complete(&["kubehops", "d"]), ["dig"]);
    assert_eq!(complete(&["kubehops", "iptables-save", "--iptables-f"]), ["--iptables-features"]);
    assert_eq!(complete(&["kubehops", "iptables-save", "--format", ""]), ["kube-proxy", "restore", "kernel"]);
    assert_eq!(complete(&["kubehops", "trace", "--proto", ""]), ["tcp", "udp", "sctp"]);
    assert_eq!(complete(&["kubehops", "trace", "--network", ""]), ["routed", "vxlan"]);
    assert_eq!(complete(&["kubehops", "get", "-o", ""]), ["wide"]);
    assert_eq!(complete(&["kubehops", "completion", "z"]), ["zsh"]);
    let get_flags = complete(&["kubehops", "get", "--"]);
    for f in ["--namespace", "--all-namespaces", "--output", "--now", "--filename", "--strict", "--service-node-port-range", "--help"] {
        assert!(get_flags.contains(&f.to_string()), "get completes {f}: {get_flags:?}");
    }
    assert!(!get_flags.contains(&"--format".to_string()), "--format is iptables-save's");
    // The script registers itself for the command.
    let out = Command::new("bash").args(["--norc", "-c", &format!("source '{}'; complete -p kubehops", script.display())]).output().expect("bash");
    assert!(String::from_utf8_lossy(&out.stdout).contains("-F _kubehops kubehops"), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn completion_for_each_shell_kubectl_supports() {
    let marks = [("zsh", "#compdef kubehops"), ("fish", "complete -c kubehops"), ("powershell", "Register-ArgumentCompleter -Native -CommandName 'kubehops'")];
    for (shell, mark) in marks {
        let r = kubehops(&["completion", shell]);
        assert_eq!((r.code, r.stderr.as_str()), (0, ""), "{shell}");
        assert!(r.stdout.contains(mark), "{shell}: {mark}");
        for word in ["iptables-save", "trace", "dig", "iptables-features", "service-node-port-range", "full-sync"] {
            assert!(r.stdout.contains(word), "{shell} completes {word}");
        }
    }
    let r = kubehops(&["completion", "tcsh"]);
    assert_eq!((r.code, r.stdout.as_str()), (2, ""));
    assert!(r.stderr.starts_with("error: unsupported shell type \"tcsh\": want bash, zsh, fish or powershell\n\nUsage: kubehops completion "), "{}", r.stderr);
    let r = kubehops(&["completion"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.starts_with("error: a shell is required: bash, zsh, fish or powershell\n"), "{}", r.stderr);
}

// ------------------------------------------------------------ the plugin

/// The cluster fixture as `kubectl get svc,endpointslices,pods,nodes -A -o
/// yaml` prints it: one v1 List holding every object.
fn as_kubectl_get_list() -> String {
    let dir = manifest_dir().join("tests/fixtures/cluster");
    let text = std::fs::read_to_string(dir.join("cluster.yaml")).expect("cluster.yaml");
    let stream = kubehops_cli::input::documents(&kubehops_cli::input::Source { name: "cluster.yaml".into(), text }).expect("cluster.yaml reads");
    let mut items: Vec<serde_json::Value> = stream.into_iter().map(|d| d.value).collect();
    let shop: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("shop.json")).expect("shop.json")).expect("JSON");
    items.extend(shop["items"].as_array().expect("a List").iter().cloned());
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}});
    let mut yaml = String::new();
    block_yaml(&list, 0, &mut yaml);
    yaml
}

/// A non-empty mapping or sequence in the block style kubectl's YAML
/// printer uses: a sequence under a key is not indented, a mapping is, by
/// two spaces.
fn block_yaml(v: &serde_json::Value, indent: usize, out: &mut String) {
    use serde_json::Value;
    let pad = " ".repeat(indent);
    match v {
        Value::Object(map) => {
            for (key, value) in map {
                out.push_str(&format!("{pad}{}:", yaml_scalar(&Value::String(key.clone()))));
                match value {
                    Value::Object(m) if !m.is_empty() => {
                        out.push('\n');
                        block_yaml(value, indent + 2, out);
                    }
                    Value::Array(a) if !a.is_empty() => {
                        out.push('\n');
                        block_yaml(value, indent, out);
                    }
                    _ => out.push_str(&format!(" {}\n", yaml_scalar(value))),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                match item {
                    // The item's block, its first indent replaced by "- ".
                    Value::Object(m) if !m.is_empty() => dash(item, &pad, indent, out),
                    Value::Array(a) if !a.is_empty() => dash(item, &pad, indent, out),
                    _ => out.push_str(&format!("{pad}- {}\n", yaml_scalar(item))),
                }
            }
        }
        _ => unreachable!("a block is a mapping or a sequence"),
    }
}

fn dash(item: &serde_json::Value, pad: &str, indent: usize, out: &mut String) {
    let mut inner = String::new();
    block_yaml(item, indent + 2, &mut inner);
    out.push_str(pad);
    out.push_str("- ");
    out.push_str(&inner[indent + 2..]);
}

/// A scalar (or an empty collection) on one line: a string plain where no
/// YAML reader could take it for anything else, otherwise double-quoted
/// (JSON's escapes are a subset of YAML's).
fn yaml_scalar(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => {
            let plain = s.starts_with(|c: char| c.is_ascii_alphabetic())
                && s.chars().all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c))
                && !["true", "false", "null", "yes", "no", "on", "off", "y", "n"].contains(&s.to_ascii_lowercase().as_str());
            if plain {
                s.clone()
            } else {
                serde_json::to_string(s).expect("a string")
            }
        }
        other => serde_json::to_string(other).expect("a scalar"),
    }
}

const TRACE: [&str; 9] = ["trace", "--node", "node-2", "--src", "198.51.100.7", "--dst", "10.0.0.12", "--dport", "30080"];

#[test]
fn the_plugin_reads_kubectl_get_output_from_stdin() {
    let list = as_kubectl_get_list();
    assert!(list.starts_with("apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: "), "{list}");
    // kubectl runs `kubectl-hops` with the arguments after `hops`.
    let via_plugin = plugin(&[&TRACE[..], &["-f", "-"]].concat(), &list);
    assert_eq!((via_plugin.code, via_plugin.stderr.as_str()), (0, ""));
    let direct = kubehops(&[&TRACE[..], &["-f", "tests/fixtures/cluster"]].concat());
    assert_eq!(via_plugin.stdout, direct.stdout, "the same answer as kubehops on the files");
    assert!(via_plugin.stdout.ends_with("verdict: DNAT\ntargets: 10.244.1.5:8080, 10.244.3.9:8080\nmasquerade: true\n"), "{}", via_plugin.stdout);
}

#[test]
fn the_plugin_names_itself_kubectl_hops() {
    let help = plugin(&["--help"], "");
    assert_eq!(help.code, 0);
    assert!(help.stdout.starts_with("Usage: kubectl hops iptables-save "), "{}", help.stdout);
    assert!(help.stdout.contains("\n       kubectl hops trace "));
    for cmd in ["iptables-save", "trace", "get", "dig", "completion"] {
        for flag in ["--help", "-h"] {
            let r = plugin(&[cmd, flag], "");
            assert_eq!(r.code, 0, "{cmd} {flag}");
            assert!(r.stdout.starts_with(&format!("Usage: kubectl hops {cmd} ")), "{cmd} {flag}:\n{}", r.stdout);
            assert!(!r.stdout.contains("kubehops"), "{cmd} {flag} says kubehops:\n{}", r.stdout);
        }
    }
    let r = plugin(&["get", "svc", "--bogus", "-f", "x"], "");
    assert_eq!((r.code, r.stdout.as_str()), (2, ""));
    assert_eq!(r.stderr, "error: unknown flag: --bogus\n\nUsage: kubectl hops get svc [-n NAMESPACE | -A] [-o wide] [--now RFC3339] [--strict] -f FILE...\nRun 'kubectl hops get --help' for more.\n");
    let r = plugin(&[], "");
    assert_eq!(r.code, 2);
    assert!(r.stderr.starts_with("error: no command given\n\nUsage:\n  kubectl hops iptables-save "), "{}", r.stderr);
    assert!(r.stderr.ends_with("Run 'kubectl hops --help' for more.\n"), "{}", r.stderr);
}

/// `kubehops` under the name `kubectl-hops` (a symlink, as some install
/// it) is the plugin too: the program follows the executable's name.
#[test]
fn a_symlink_named_kubectl_hops_is_the_plugin() {
    let dir = scratch("symlink");
    let link = dir.join("kubectl-hops");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_kubehops"), &link).expect("symlink");
    let r = run_binary(&link, &["dig", "--help"], "");
    assert!(r.stdout.starts_with("Usage: kubectl hops dig NAME"), "{}", r.stdout);
    assert!(kubehops(&["dig", "--help"]).stdout.starts_with("Usage: kubehops dig NAME"));
}

/// With kubectl on PATH, `kubectl hops …` finds the plugin by kubectl's own
/// lookup. Where kubectl is not installed this says so and checks nothing
/// more: the tests above run the plugin as kubectl would.
#[test]
fn kubectl_runs_the_plugin_when_installed() {
    let Ok(found) = Command::new("kubectl").args(["version", "--client"]).output() else {
        eprintln!("skipped: no kubectl on PATH");
        return;
    };
    assert!(found.status.success(), "kubectl version --client: {}", String::from_utf8_lossy(&found.stderr));
    let dir = scratch("kubectl-path");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_kubectl-hops"), dir.join("kubectl-hops")).expect("symlink");
    let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut kubectl = Command::new("kubectl");
    kubectl.env("PATH", &path).env("KUBECONFIG", dir.join("no-kubeconfig"));
    let r = run_command(kubectl.arg("hops").args(TRACE).args(["-f", "-"]), &as_kubectl_get_list());
    assert_eq!((r.code, r.stderr.as_str()), (0, ""), "kubectl hops trace");
    assert_eq!(r.stdout, kubehops(&[&TRACE[..], &["-f", "tests/fixtures/cluster"]].concat()).stdout);
    let mut kubectl = Command::new("kubectl");
    let r = run_command(kubectl.env("PATH", &path).args(["hops", "get", "--help"]), "");
    assert!(r.stdout.starts_with("Usage: kubectl hops get svc"), "{}", r.stdout);
}

// ------------------------------------------------------------ AGE

/// The AGE cell `kubehops get svc --now NOW` prints for a Service created
/// at 2024-05-01T00:00:00Z.
fn age_at(now: &str) -> String {
    let svc = "apiVersion: v1\nkind: Service\nmetadata: {name: web, creationTimestamp: '2024-05-01T00:00:00Z'}\nspec: {clusterIP: 10.96.0.50, ports: [{port: 80}]}\n";
    let r = run_binary(Path::new(env!("CARGO_BIN_EXE_kubehops")), &["get", "svc", "--now", now, "-f", "-"], svc);
    assert_eq!((r.code, r.stderr.as_str()), (0, ""), "--now {now}");
    r.stdout.lines().nth(1).and_then(|l| l.split_whitespace().last()).unwrap_or_default().to_string()
}

/// kubectl prints AGE with apimachinery's `duration.HumanDuration`: seconds
/// up to 119, minutes (with seconds below 10m) up to 179, hours (with
/// minutes below 8h) up to 47, days (with hours below 8d), then days.
#[test]
fn age_rounds_as_kubectl_does() {
    let cases = [
        ("2024-05-01T00:00:59Z", "59s"),
        ("2024-05-01T00:01:59Z", "119s"),
        ("2024-05-01T00:02:00Z", "2m"),
        ("2024-05-01T01:59:00Z", "119m"),
        ("2024-05-01T02:59:59Z", "179m"),
        ("2024-05-01T03:00:00Z", "3h"),
        ("2024-05-02T23:00:00Z", "47h"),
        ("2024-05-02T23:59:59Z", "47h"),
        ("2024-05-03T00:00:00Z", "2d"),
        ("2024-05-08T23:00:00Z", "7d23h"),
        ("2024-05-09T00:00:00Z", "8d"),
        ("2024-05-09T23:00:00Z", "8d"),
        // The same instants written otherwise; a fraction does not round up.
        ("2024-05-01T02:00:59+02:00", "59s"),
        ("2024-04-30T20:01:59-04:00", "119s"),
        ("2024-05-01T00:00:59.999Z", "59s"),
        // A creation time up to a second ahead is clock skew; more is not.
        ("2024-04-30T23:59:59Z", "0s"),
        ("2024-04-30T23:59:58Z", "<invalid>"),
    ];
    for (now, want) in cases {
        assert_eq!(age_at(now), want, "--now {now}");
    }
}
