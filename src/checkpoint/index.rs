//! `*.safetensors.index.json`: the weight map of a sharded checkpoint.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::TensorEntry;
use crate::{Error, Result};

/// A parsed and checked index.
#[derive(Debug, Clone)]
pub struct WeightMap {
    /// Tensor name → shard file name as written.
    pub map: BTreeMap<String, String>,
    /// The distinct shard files, resolved beside the index, sorted.
    pub shards: Vec<PathBuf>,
}

/// Reads an index and checks that every shard it names exists.
pub fn read(path: &Path) -> Result<WeightMap> {
    crate::regular_file::found(path, "a JSON file")?;
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| Error::bad_file(path, format!("not valid JSON ({e})")))?;
    let wm = v
        .get("weight_map")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            Error::bad_file(
                path,
                "expected an object `weight_map` of tensor name → shard file",
            )
        })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut map = BTreeMap::new();
    let mut files = BTreeSet::new();
    for (name, file) in wm {
        let file = file.as_str().ok_or_else(|| {
            Error::bad_file(
                path,
                format!("weight_map entry `{name}` is {file}, expected a file name"),
            )
        })?;
        if file.is_empty() || file.contains(['/', '\\']) || file == ".." {
            return Err(Error::bad_file(
                path,
                format!(
                    "weight_map entry `{name}` names `{file}`, expected a file name beside the index"
                ),
            ));
        }
        files.insert(file.to_string());
        map.insert(name.clone(), file.to_string());
    }
    if files.is_empty() {
        return Err(Error::bad_file(path, "`weight_map` is empty"));
    }
    let mut shards = Vec::with_capacity(files.len());
    for f in files {
        let p = dir.join(&f);
        if crate::regular_file::found(&p, "a .safetensors file")?.is_none() {
            return Err(Error::bad_file(
                path,
                format!("names shard `{f}`, which does not exist beside it"),
            ));
        }
        shards.push(p);
    }
    Ok(WeightMap { map, shards })
}

impl WeightMap {
    /// Checks that each tensor the index names is in the shard it names.
    pub fn check_against(
        &self,
        path: &Path,
        tensors: &BTreeMap<String, TensorEntry>,
        shards: &[PathBuf],
    ) -> Result<()> {
        for (name, file) in &self.map {
            let found = tensors.get(name).map(|t| &shards[t.shard]);
            match found {
                None => {
                    return Err(Error::bad_file(
                        path,
                        format!("names tensor `{name}` in `{file}`, but no shard has it"),
                    ));
                }
                Some(actual) if actual.file_name().and_then(|n| n.to_str()) != Some(file) => {
                    return Err(Error::bad_file(
                        path,
                        format!(
                            "names tensor `{name}` in `{file}`, but it is in `{}`",
                            actual.display()
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}
