//! Layers point down (ARCHITECTURE.md): the data plane is what `sim`
//! drives and `scenarios` tell stories with, so nothing under
//! `src/dataplane/` may name them, or the scene drawn from them. Read as
//! text, line by line, leaving comments out: a path to a higher layer in
//! code, in any form (`crate::sim`, `super::super::sim`, a `use` of
//! several), fails with the file and line.

use std::path::{Path, PathBuf};

/// The modules above the data plane.
const HIGHER: [&str; 3] = ["sim", "scenarios", "scene"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("the source folder is there").flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The code of a line: what comes before a `//` comment.
fn code(line: &str) -> &str {
    line.find("//").map_or(line, |i| &line[..i])
}

/// Whether `code` names the crate's module `m`: a path from the crate
/// root or out of the data plane, or a `use crate::{…}` group listing it.
fn names(code: &str, m: &str) -> bool {
    let c: String = code.split_whitespace().collect();
    let path = [format!("crate::{m}::"), format!("crate::{m};"), format!("super::super::{m}")].iter().any(|p| c.contains(p.as_str()));
    let grouped = c.contains("crate::{") && c.split(['{', ',', '}']).any(|seg| seg == m || seg.starts_with(&format!("{m}::")));
    path || grouped
}

#[test]
fn the_data_plane_names_no_higher_layer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/dataplane");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() >= 5, "the data plane's files were found: {files:?}");
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable");
        for (i, line) in text.lines().enumerate() {
            for m in HIGHER {
                if names(code(line), m) {
                    found.push(format!("{}:{}: names `{m}`: {}", f.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "the data plane reaches up:\n{}", found.join("\n"));
}

#[test]
fn the_check_sees_each_form_of_a_path_up() {
    for line in ["use crate::sim::RuleLine;", "fn f() -> Vec<crate::sim::RuleLine> {", "use super::super::scenarios::x;", "use crate::{net, sim::View};", "use crate::{ scene };"] {
        assert!(HIGHER.iter().any(|m| names(code(line), m)), "missed: {line}");
    }
    for line in ["// crate::sim is above", "let sim = 1;", "use crate::net::Cidr;", "use super::iptables::RuleLine;", "let x = simulate::run();"] {
        assert!(!HIGHER.iter().any(|m| names(code(line), m)), "false alarm: {line}");
    }
}

/// Each proxy mode has its own home: the nftables mode (`nftables/`) names
/// none of the iptables mode's rule types (`dataplane::iptables`), and the iptables
/// mode (`kubeproxy.rs`, `iptables.rs`) names nothing of `nftables`. What
/// they share is `endpoints.rs`, the configuration and the hashing.
#[test]
fn the_proxy_modes_keep_apart() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/dataplane");
    let mut nft = Vec::new();
    rust_files(&dir.join("nftables"), &mut nft);
    assert!(nft.len() >= 2, "the nftables mode's files were found: {nft:?}");
    let mut pairs: Vec<(PathBuf, &str)> = nft.into_iter().map(|f| (f, "iptables")).collect();
    pairs.extend([(dir.join("kubeproxy.rs"), "nftables"), (dir.join("iptables.rs"), "nftables")]);
    let mut found = Vec::new();
    for (path, other) in pairs {
        let file = path.display();
        let text = std::fs::read_to_string(&path).expect("readable");
        let needles = [format!("dataplane::{other}"), format!("super::{other}"), format!("{other}::")];
        for (i, line) in text.lines().enumerate() {
            let c: String = code(line).split_whitespace().collect();
            if needles.iter().any(|n| c.contains(n.as_str())) || (c.contains("dataplane::{") && c.split(['{', ',', '}']).any(|s| s == other || s.starts_with(&format!("{other}::")))) {
                found.push(format!("{file}:{}: names `{other}`: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "a proxy mode reaches into the other:\n{}", found.join("\n"));
}
