//! Turning the MODEL argument into files: a directory, a `.safetensors`
//! file, an `*.safetensors.index.json`, a `.gguf` file (or a file of either
//! format under another name, known by its first bytes), a Hub id found in
//! the local Hugging Face cache, or an Ollama model name found in Ollama's
//! store (see `ollama`). Nothing is downloaded, ever.
//!
//! A directory with safetensors weights is read as such even when it also
//! holds GGUF files. Without them, a directory holding exactly one `.gguf`
//! is that file; several are an error that lists them (GGUF repositories
//! usually hold one file per quantization, and guessing would hide which
//! one was read): name the file as MODEL.

use std::path::{Path, PathBuf};

use super::hub_cache::{hub_repo, looks_like_hub_id, plain_part};
use crate::{Error, Result};

/// What MODEL may be, when it is a path.
const MODEL_KINDS: &str = "a model directory, a .safetensors file, an .index.json or a .gguf file";

/// Where a checkpoint's files are.
#[derive(Debug, Clone, PartialEq)]
pub struct Sources {
    /// The directory searched for `config.json` and tokenizer files.
    pub dir: PathBuf,
    /// The index file, when the weights are sharded through one.
    pub index: Option<PathBuf>,
    /// The safetensors files, in a stable order, or the one GGUF file. For
    /// an index, the files it names (resolved later, once the index is
    /// read); empty until then.
    pub shards: Vec<PathBuf>,
    /// The Hub id and snapshot directory, when MODEL was resolved in the cache.
    pub hub: Option<HubSnapshot>,
    /// What a user should know about how MODEL was resolved (printed on
    /// stderr as `note: …`), such as a shard opened as its whole checkpoint.
    pub notes: Vec<String>,
}

/// A model found in the local Hugging Face cache.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HubSnapshot {
    /// The id as given, e.g. `Qwen/Qwen3-0.6B`.
    pub id: String,
    /// The revision asked for (`main` unless `--revision`).
    pub revision: String,
    /// The commit the revision points at.
    pub commit: String,
}

/// Resolves MODEL. `revision` applies only to Hub ids.
pub fn locate(model: &str, revision: &str) -> Result<Sources> {
    let path = Path::new(model);
    if path.is_dir() {
        return from_dir(path);
    }
    if path.is_file() {
        return from_file(path);
    }
    if let Ok(meta) = std::fs::metadata(path) {
        return Err(Error::NotRegularFile {
            path: path.to_path_buf(),
            kind: crate::regular_file::kind(&meta),
            expected: MODEL_KINDS,
        });
    }
    // A Hub id in the cache, or `org/repo:Q4_K_M` as llama.cpp's `-hf`
    // takes it: one quantization of a GGUF repository in the cache.
    let cached = |id: &str| hub_repo(id).filter(|r| r.is_dir());
    let hub = looks_like_hub_id(model);
    if let Some(repo) = cached(model).filter(|_| hub) {
        return from_hub(model, &repo, revision, None);
    }
    if let Some((id, quant)) = model.rsplit_once(':')
        && looks_like_hub_id(id)
        && plain_part(quant)
        && let Some(repo) = cached(id)
    {
        return from_hub(id, &repo, revision, Some(quant));
    }
    // Every Hub id is also an Ollama name (its tag `latest`).
    let Some(name) = super::ollama::Name::parse(model) else {
        return Err(Error::ModelNotFound {
            model: model.to_string(),
            what: ": no such file or directory (expected a model directory, a .safetensors file, an .index.json, a .gguf file, a Hub id such as `org/name` or an Ollama name such as `llama3.2:1b`)".to_string(),
        });
    };
    if let Some(found) = super::ollama::find(model, &name) {
        let (blob, note) = found?;
        let mut sources = from_file(&blob)?;
        sources.notes.push(note);
        return Ok(sources);
    }
    let ollama = super::ollama::expected(&name);
    let what = if hub {
        format!(
            " is not a path, not in the Hugging Face cache ({}) and not in Ollama's store (no {ollama}); embscope never downloads: fetch it with `hf download {model}` or `ollama pull {model}` first",
            hub_repo(model).map_or_else(
                || "none is known: set HF_HUB_CACHE or HF_HOME".to_string(),
                |r| format!("looked for `{}`", r.display())
            ),
        )
    } else {
        format!(
            " is not a path, and not in Ollama's store (no {ollama}); embscope never downloads: fetch it with `ollama pull {model}` first"
        )
    };
    Err(Error::ModelNotFound {
        model: model.to_string(),
        what,
    })
}

fn from_dir(dir: &Path) -> Result<Sources> {
    let mut safetensors = Vec::new();
    let mut indexes = Vec::new();
    let mut ggufs = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in entries {
        let p = entry.map_err(|e| Error::io(dir, e))?.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".safetensors.index.json") {
            indexes.push(p);
        } else if name.ends_with(".safetensors") && p.is_file() {
            safetensors.push(p);
        } else if has_gguf_extension(&p) && p.is_file() {
            ggufs.push(p);
        }
    }
    if safetensors.is_empty() && indexes.is_empty() && !ggufs.is_empty() {
        return one_gguf(dir, ggufs);
    }
    indexes.sort();
    safetensors.sort();
    let preferred = dir.join("model.safetensors.index.json");
    let index = if indexes.contains(&preferred) {
        Some(preferred)
    } else if indexes.len() == 1 {
        indexes.pop()
    } else if indexes.len() > 1 {
        return Err(Error::bad_file(
            dir,
            format!(
                "{} index files and none is `model.safetensors.index.json`; name one of them as MODEL",
                indexes.len()
            ),
        ));
    } else {
        None
    };
    if index.is_some() {
        return Ok(Sources {
            dir: dir.to_path_buf(),
            index,
            shards: Vec::new(),
            hub: None,
            notes: Vec::new(),
        });
    }
    if safetensors.is_empty() {
        return Err(Error::bad_file(
            dir,
            "no .safetensors files, no .safetensors.index.json and no .gguf file in this directory",
        ));
    }
    let single = dir.join("model.safetensors");
    let shards = if safetensors.contains(&single) {
        vec![single]
    } else {
        safetensors
    };
    Ok(Sources {
        dir: dir.to_path_buf(),
        index: None,
        shards,
        hub: None,
        notes: Vec::new(),
    })
}

fn from_file(file: &Path) -> Result<Sources> {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let dir = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if name.ends_with(".index.json") {
        Ok(Sources {
            dir,
            index: Some(file.to_path_buf()),
            shards: Vec::new(),
            hub: None,
            notes: Vec::new(),
        })
    } else if name.ends_with(".safetensors") || is_gguf(file) || sniffs_as_safetensors(file) {
        // A shard alone lacks the tensors of the other shards: open the
        // checkpoint its index describes (a GGUF file is whole, and no
        // safetensors index names one).
        if name.ends_with(".safetensors")
            && let Some(index) = index_naming(&dir, name)
        {
            let index_name = index.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let note = format!("{name} is a shard of {index_name}; opening the whole checkpoint");
            return Ok(Sources {
                dir,
                index: Some(index),
                shards: Vec::new(),
                hub: None,
                notes: vec![note],
            });
        }
        Ok(Sources {
            dir,
            index: None,
            shards: vec![file.to_path_buf()],
            hub: None,
            notes: Vec::new(),
        })
    } else {
        Err(Error::bad_file(
            file,
            "expected a .safetensors file, a .safetensors.index.json, a .gguf file or a model directory (its first bytes are neither GGUF's magic nor a safetensors header)",
        ))
    }
}

/// The `*.safetensors.index.json` in `dir` whose weight map names the file
/// `shard` (`model.safetensors.index.json` first, then by name). An index
/// that cannot be read is passed over: the file named still opens alone.
fn index_naming(dir: &Path, shard: &str) -> Option<PathBuf> {
    let mut indexes: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".safetensors.index.json"))
        })
        .collect();
    indexes.sort_by_key(|p| (!p.ends_with("model.safetensors.index.json"), p.clone()));
    indexes.into_iter().find(|index| {
        let Ok(text) = std::fs::read_to_string(index) else {
            return false;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
            return false;
        };
        v.get("weight_map")
            .and_then(|m| m.as_object())
            .is_some_and(|m| m.values().any(|f| f.as_str() == Some(shard)))
    })
}

/// True for a file named `*.gguf` (any case), or one under a name of no
/// known kind that starts with GGUF's magic (an Ollama blob, say).
pub fn is_gguf(path: &Path) -> bool {
    has_gguf_extension(path) || (!known_name(path) && first_bytes(path, 4) == b"GGUF")
}

/// True for a file named `*.gguf` (any case).
fn has_gguf_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
}

/// True for the names whose kind the name says: `.safetensors`, `.json`,
/// `.gguf`.
fn known_name(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".safetensors") || name.ends_with(".json") || has_gguf_extension(path)
}

/// True for a file under a name of no known kind that starts as a
/// safetensors file does: an 8-byte header length, then `{` (a blob of
/// the Hugging Face cache named by its hash, say).
fn sniffs_as_safetensors(path: &Path) -> bool {
    !known_name(path) && first_bytes(path, 9).get(8) == Some(&b'{')
}

/// Up to the first `n` bytes of the file at `path` (fewer for a shorter or
/// unreadable file).
fn first_bytes(path: &Path, n: usize) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::with_capacity(n);
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(n as u64).read_to_end(&mut out);
    }
    out
}

/// The GGUF file of the snapshot `dir` (of `id`) that is quantization
/// `quant`: the one whose path, cut at `/`, `-` and `.`, has `quant` (any
/// case) as a piece (`Q4_K_M` in `repo-Q4_K_M.gguf` or
/// `Q4_K_M/repo-Q4_K_M-00001-of-00002.gguf`, not in `repo-Q4_K_S.gguf`),
/// or the first of a split set; an error listing the files otherwise.
fn gguf_named(dir: &Path, id: &str, quant: &str) -> Result<PathBuf> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let p = entry.map_err(|e| Error::io(dir, e))?.path();
        if p.is_dir() {
            let inner = std::fs::read_dir(&p).map_err(|e| Error::io(&p, e))?;
            all.extend(inner.filter_map(|e| e.ok().map(|e| e.path())));
        } else {
            all.push(p);
        }
    }
    let relative = |p: &Path| p.strip_prefix(dir).unwrap_or(p).display().to_string();
    let mut ggufs: Vec<PathBuf> = all
        .into_iter()
        .filter(|p| has_gguf_extension(p) && p.is_file())
        .collect();
    ggufs.sort();
    let named: Vec<PathBuf> = ggufs
        .iter()
        .filter(|p| {
            relative(p)
                .split(['/', '-', '.'])
                .any(|piece| piece.eq_ignore_ascii_case(quant))
        })
        .cloned()
        .collect();
    match &named[..] {
        [one] => return Ok(one.clone()),
        [] => {}
        _ => {
            if let Some(first) = super::gguf_split::first_of_set(&named) {
                return Ok(first);
            }
        }
    }
    let list: Vec<String> = ggufs.iter().map(|p| relative(p)).collect();
    Err(Error::ModelNotFound {
        model: format!("{id}:{quant}"),
        what: format!(
            ": {} of the snapshot's .gguf files are named with `{quant}` ({})",
            if named.is_empty() { "none" } else { "several" },
            if list.is_empty() {
                "it has none".to_string()
            } else {
                list.join(", ")
            }
        ),
    })
}

/// The sources of a directory whose weights are the GGUF files `ggufs`:
/// exactly one, or the splits of one model, else an error listing them.
fn one_gguf(dir: &Path, mut ggufs: Vec<PathBuf>) -> Result<Sources> {
    ggufs.sort();
    // The splits of one model are that model (opened from the first).
    if let Some(first) = super::gguf_split::first_of_set(&ggufs) {
        ggufs = vec![first];
    }
    if ggufs.len() > 1 {
        let names: Vec<String> = ggufs
            .iter()
            .map(|p| {
                p.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        return Err(Error::bad_file(
            dir,
            format!(
                "{} .gguf files ({}); name one of them as MODEL",
                ggufs.len(),
                names.join(", ")
            ),
        ));
    }
    Ok(Sources {
        dir: dir.to_path_buf(),
        index: None,
        shards: ggufs,
        hub: None,
        notes: Vec::new(),
    })
}

/// The snapshot of `id` (cached in `repo`) at `revision`: the whole
/// checkpoint, or with `quant` the GGUF file (or split set) named with it.
fn from_hub(id: &str, repo: &Path, revision: &str, quant: Option<&str>) -> Result<Sources> {
    let ref_file = repo.join("refs").join(revision);
    let commit = if ref_file.is_file() {
        std::fs::read_to_string(&ref_file)
            .map_err(|e| Error::io(&ref_file, e))?
            .trim()
            .to_string()
    } else {
        revision.to_string()
    };
    let snapshot = repo.join("snapshots").join(&commit);
    // One plain name: not empty, no separator, not `.` or `..`.
    let plain = matches!(
        Path::new(&commit).components().collect::<Vec<_>>()[..],
        [std::path::Component::Normal(c)] if c == commit.as_str()
    );
    if !plain || !snapshot.is_dir() {
        return Err(Error::ModelNotFound {
            model: id.to_string(),
            what: format!(
                ": revision `{revision}` is not in the cache (no `{}` and no snapshot `{}`)",
                ref_file.display(),
                snapshot.display()
            ),
        });
    }
    let mut sources = match quant {
        None => from_dir(&snapshot)?,
        Some(quant) => from_file(&gguf_named(&snapshot, id, quant)?)?,
    };
    sources.hub = Some(HubSnapshot {
        id: id.to_string(),
        revision: revision.to_string(),
        commit,
    });
    Ok(sources)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_that_is_no_file_is_told_apart_from_one_that_is_not_there() {
        if Path::new("/dev/null").exists() {
            let err = locate("/dev/null", "main").unwrap_err();
            assert!(matches!(err, Error::NotRegularFile { .. }), "{err}");
            assert!(
                err.to_string()
                    .starts_with("`/dev/null` is not a regular file")
            );
        }
        let err = locate("./no/such/model", "main").unwrap_err();
        assert!(
            matches!(&err, Error::ModelNotFound { model, .. } if model == "./no/such/model"),
            "{err}"
        );
        assert!(err.to_string().contains("no such file or directory"));
    }
}
