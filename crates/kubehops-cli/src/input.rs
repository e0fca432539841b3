//! Reading `-f` arguments: files, directories (their `.yaml`, `.yml` and
//! `.json` files, sorted) and `-` for stdin. Splitting the texts into
//! documents is [`kubehops_objects::input`]'s, shared with the browser,
//! and re-exported here.

use crate::Error;
use std::io::Read;
use std::path::Path;

pub use kubehops_objects::input::*;

/// Reads every `-f` argument in order. stdin is read at most once.
pub fn read_sources(paths: &[String], stdin: &mut dyn Read) -> Result<Vec<Source>, Error> {
    let mut out = Vec::new();
    let mut stdin_read = false;
    for p in paths {
        if p == "-" {
            if stdin_read {
                continue;
            }
            stdin_read = true;
            let mut buf = Vec::new();
            stdin.read_to_end(&mut buf).map_err(|e| Error::Other(format!("error reading STDIN: {e}")))?;
            out.push(Source { name: "STDIN".into(), text: text_of("STDIN", buf)? });
            continue;
        }
        let path = Path::new(p);
        let meta = std::fs::metadata(path).map_err(|_| Error::Other(format!("the path \"{p}\" does not exist")))?;
        if meta.is_dir() {
            let mut files: Vec<_> = std::fs::read_dir(path)
                .map_err(|e| Error::Other(format!("error reading \"{p}\": {e}")))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && f.extension().and_then(|x| x.to_str()).is_some_and(|x| matches!(x, "yaml" | "yml" | "json")))
                .collect();
            files.sort();
            for f in files {
                out.push(read_file(&f)?);
            }
        } else {
            out.push(read_file(path)?);
        }
    }
    Ok(out)
}

fn read_file(path: &Path) -> Result<Source, Error> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| Error::Other(format!("error reading \"{name}\": {e}")))?;
    Ok(Source { text: text_of(&name, bytes)?, name })
}

fn text_of(name: &str, bytes: Vec<u8>) -> Result<String, Error> {
    let mut text = String::from_utf8(bytes).map_err(|_| Error::Other(format!("error parsing {name}: the input is not UTF-8 text")))?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

