//! Opening a checkpoint: locate its files, map every shard read-only,
//! validate the headers and build one tensor index, read `config.json`.
//! A GGUF file is one shard whose metadata stands in for `config.json`.
//!
//! Opening reads headers only; tensor bytes are touched when a command asks
//! for them through [`Checkpoint::bytes`].
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | [`Checkpoint`]: the shards mapped, one tensor index, the config |
//! | `locate.rs` | MODEL turned into files: directory, file, index, Hub cache, Ollama store |
//! | `hub_cache.rs` | Hub ids and where the local Hugging Face cache keeps them |
//! | `ollama.rs` | Ollama names and the GGUF blob a manifest names |
//! | `header.rs` | one safetensors header, read by the safetensors crate, names given twice found |
//! | `header_json.rs` | embscope's own reading of a header: entries as written, names given twice, faults in its words |
//! | `index.rs` | `*.safetensors.index.json`, the weight map of a sharded checkpoint |
//! | `gguf.rs` | one GGUF file read from untrusted, mapped bytes |
//! | `gguf_split.rs` | a GGUF model split into several files |
//! | `gguf_config.rs` | the config of a GGUF file, from its metadata |
//! | `config.rs` | `config.json`, read leniently |
//! | `unreadable.rs` | side files that could not be read, and what is wrong with each |
//! | `unmap.rs` | letting go of tensors' mapped pages, on all cores |

pub mod config;
pub mod gguf;
pub mod gguf_config;
mod gguf_split;
pub mod header;
mod header_json;
mod hub_cache;
mod index;
pub mod locate;
mod ollama;
mod unmap;
mod unreadable;

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::ops::Range;
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::Value as GgufValue;

pub use config::ModelConfig;
pub use locate::{HubSnapshot, Sources};
pub use unreadable::Unreadable;

use crate::dtype::Dtype;
use crate::mapped::Mapped;
use crate::matrix::Matrix;
use crate::{Error, Result};

/// One mapped safetensors file.
#[derive(Debug)]
pub struct Shard {
    /// The file.
    pub path: PathBuf,
    /// Its bytes, mapped read-only.
    pub map: Mapped,
    /// Number of tensors in this file.
    pub tensor_count: usize,
}

/// Where one tensor lives.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorEntry {
    /// Tensor name.
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Shape.
    pub shape: Vec<usize>,
    /// Index into [`Checkpoint::shards`].
    pub shard: usize,
    /// Absolute byte range in the shard file.
    pub range: Range<usize>,
}

impl TensorEntry {
    /// Number of elements.
    pub fn params(&self) -> u64 {
        self.shape.iter().map(|&d| d as u64).product()
    }

    /// Number of bytes.
    pub fn bytes(&self) -> u64 {
        (self.range.end - self.range.start) as u64
    }
}

/// Tokenizer files of formats older than tokenizer.json that a model
/// directory may hold instead (see [`Checkpoint::unread_tokenizer_files`]).
const UNREAD_TOKENIZER_FILES: &[&str] = &[
    "tokenizer.model",
    "spiece.model",
    "sentencepiece.bpe.model",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    MISTRAL_SENTENCEPIECE,
];

/// The tokenizer file of Mistral's own layout that is not read
/// (SentencePiece v3; its `tekken.json` is): many Mistral repositories also
/// hold a tokenizer.json, which is.
const MISTRAL_SENTENCEPIECE: &str = "tokenizer.model.v3";

/// `a`, `a and b`, `a, b and c`.
fn and_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// How the weights are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WeightFormat {
    /// safetensors files (one, or shards under an index).
    Safetensors,
    /// A GGUF file (llama.cpp), or the splits of one model.
    Gguf,
}

/// What opening does with a fault of a file that `check` reports as a
/// finding and audits past: a safetensors header that gives a tensor name
/// twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Faults {
    /// Refuse the file with a one-line error (every command but `check`).
    Refuse,
    /// Read on, the fault kept in [`Checkpoint::duplicate_names`] (`check`).
    Record,
}

/// A safetensors header that gives tensor names twice, opened with
/// [`Faults::Record`]: of each, the last entry is read.
#[derive(Debug, Clone, PartialEq)]
pub struct DuplicateNames {
    /// The file.
    pub file: PathBuf,
    /// The names given more than once, each once.
    pub names: Vec<String>,
    /// What is wrong and what loaders make of it, in one line (without
    /// the file name).
    pub fault: String,
}

/// An opened checkpoint: mapped shards, one tensor index, config.
#[derive(Debug)]
pub struct Checkpoint {
    /// How the weights are stored.
    pub format: WeightFormat,
    /// The MODEL argument as given.
    pub model: String,
    /// The files it resolved to.
    pub sources: Sources,
    /// Mapped shards, in the order of `sources.shards`.
    pub shards: Vec<Shard>,
    /// Every tensor, by name.
    pub tensors: BTreeMap<String, TensorEntry>,
    /// `config.json`, when present and readable; for GGUF, built from the
    /// metadata.
    pub config: Option<ModelConfig>,
    /// The side files opening read and could not (a malformed
    /// config.json): opening went on without them, as without the file,
    /// and the caller says so (see [`Unreadable`]).
    pub unreadable: Vec<Unreadable>,
    /// The safetensors headers that give tensor names twice (opened with
    /// [`Faults::Record`]; with [`Faults::Refuse`] such a file is an error).
    pub duplicate_names: Vec<DuplicateNames>,
    /// The metadata of a GGUF file.
    gguf_metadata: Option<HashMap<String, GgufValue>>,
}

impl Checkpoint {
    /// Locates and opens MODEL (see [`locate::locate`]).
    pub fn open(model: &str, revision: &str) -> Result<Checkpoint> {
        Checkpoint::open_located(model, locate::locate(model, revision)?)
    }

    /// Opens the files MODEL was located at (so that a caller can show
    /// [`Sources::notes`] before the files are read), refusing a faulty
    /// file (see [`Faults`]).
    pub fn open_located(model: &str, sources: Sources) -> Result<Checkpoint> {
        Checkpoint::open_located_with(model, sources, Faults::Refuse)
    }

    /// [`Checkpoint::open_located`], with `faults` saying what to do with
    /// a fault `check` audits past.
    pub fn open_located_with(
        model: &str,
        mut sources: Sources,
        faults: Faults,
    ) -> Result<Checkpoint> {
        if let [path] = &sources.shards[..]
            && locate::is_gguf(path)
        {
            return Self::open_gguf(model, sources);
        }
        let weight_map = match &sources.index {
            Some(index) => {
                let wm = index::read(index)?;
                sources.shards = wm.shards.clone();
                Some(wm)
            }
            None => None,
        };
        let mut shards: Vec<Shard> = Vec::with_capacity(sources.shards.len());
        let mut tensors: BTreeMap<String, TensorEntry> = BTreeMap::new();
        let mut duplicate_names = Vec::new();
        for (i, path) in sources.shards.iter().enumerate() {
            let map = map_file(path)?;
            let h = header::parse(path, &map)?;
            if let Some(fault) = h.duplicate_fault() {
                if faults == Faults::Refuse {
                    return Err(Error::bad_file(path, fault));
                }
                duplicate_names.push(DuplicateNames {
                    file: path.clone(),
                    names: h.duplicates.clone(),
                    fault,
                });
            }
            for t in &h.tensors {
                insert_once(&mut tensors, &shards, path, t, i)?;
            }
            shards.push(Shard {
                path: path.clone(),
                map,
                tensor_count: h.tensors.len(),
            });
        }
        if let (Some(wm), Some(index_path)) = (&weight_map, &sources.index) {
            wm.check_against(index_path, &tensors, &sources.shards)?;
        }
        // Nothing needs the config: the tie is decided from the files
        // without one, so a broken config blocks no command.
        let (config, unreadable) = match ModelConfig::load(&sources.dir) {
            Ok(config) => (config, Vec::new()),
            Err(e) => (
                None,
                vec![Unreadable::from_error(&e, &sources.dir.join("config.json"))],
            ),
        };
        Ok(Checkpoint {
            format: WeightFormat::Safetensors,
            model: model.to_string(),
            sources,
            shards,
            tensors,
            config,
            unreadable,
            duplicate_names,
            gguf_metadata: None,
        })
    }

    /// Opens the GGUF file of `sources`: the whole model when it is one
    /// split of several (see `gguf_split`).
    fn open_gguf(model: &str, mut sources: Sources) -> Result<Checkpoint> {
        let path = sources.shards[0].clone();
        let map = map_file(&path)?;
        let g = gguf::read(&path, &map)?;
        let split = gguf_split::of(&path, &g.metadata)?;
        let files = match split {
            None => vec![path.clone()],
            Some(split) => {
                if split.no != 0 {
                    let name = path.file_name().unwrap_or_default().to_string_lossy();
                    sources.notes.push(format!(
                        "{name} is split {} of {}; opening the whole model",
                        split.no + 1,
                        split.count
                    ));
                }
                gguf_split::files(&path, split)?
            }
        };
        // The file given is read once; the other splits in their turn.
        let mut given = Some((map, g));
        let mut shards: Vec<Shard> = Vec::with_capacity(files.len());
        let mut tensors = BTreeMap::new();
        let mut first = None;
        for (i, file) in files.iter().enumerate() {
            let (map, g) = match given.take_if(|_| *file == path) {
                Some(read) => read,
                None => {
                    let map = map_file(file)?;
                    let g = gguf::read(file, &map)?;
                    (map, g)
                }
            };
            if let Some(split) = split {
                gguf_split::check(file, &files[0], &g.metadata, i, split.count)?;
            }
            for t in &g.tensors {
                insert_once(&mut tensors, &shards, file, t, i)?;
            }
            shards.push(Shard {
                path: file.clone(),
                map,
                tensor_count: g.tensors.len(),
            });
            first.get_or_insert(g);
        }
        let g = first.expect("at least one file");
        if split.is_some() {
            gguf_split::check_count(&files[0], &g.metadata, tensors.len())?;
        }
        let config = gguf_config::from_metadata(&files[0], &g.metadata)?;
        sources.shards = files;
        Ok(Checkpoint {
            format: WeightFormat::Gguf,
            model: model.to_string(),
            sources,
            shards,
            tensors,
            config: Some(config),
            unreadable: Vec::new(),
            duplicate_names: Vec::new(),
            gguf_metadata: Some(g.metadata),
        })
    }

    /// The metadata key-values of a GGUF checkpoint (`None` for safetensors).
    pub fn gguf_metadata(&self) -> Option<&HashMap<String, GgufValue>> {
        self.gguf_metadata.as_ref()
    }

    /// Where a vocabulary was looked for and not found, for messages:
    /// "no tokenizer.json in `DIR`", naming the older tokenizer files the
    /// directory has instead (see [`Checkpoint::unread_tokenizer_files`])
    /// and how to make a tokenizer.json from them; or for a GGUF file "no
    /// vocabulary in the GGUF metadata of `FILE`".
    pub fn no_vocab(&self) -> String {
        let dir = self.sources.dir.display();
        match self.format {
            WeightFormat::Safetensors => match &self.unread_tokenizer_files()[..] {
                [] => format!("no tokenizer.json in `{dir}`"),
                [MISTRAL_SENTENCEPIECE] => format!(
                    "no tokenizer.json in `{dir}`, only Mistral's {MISTRAL_SENTENCEPIECE}, which embscope does not read (many Mistral repositories also hold a tokenizer.json: put it beside them)",
                ),
                unread => format!(
                    "no tokenizer.json in `{dir}`, only {}, which embscope does not read (in Python, `transformers.AutoTokenizer.from_pretrained({py}).save_pretrained({py})` writes a tokenizer.json from {})",
                    and_list(unread),
                    if unread.len() == 1 { "it" } else { "them" },
                    py = format!("{:?}", self.sources.dir.display().to_string()),
                ),
            },
            WeightFormat::Gguf => format!(
                "no vocabulary in the GGUF metadata of `{}`",
                self.shards[0].path.display()
            ),
        }
    }

    /// What could not be read when loading the vocabulary failed with
    /// `err`: the tokenizer file beside safetensors weights that it names
    /// (else tokenizer.json). `None` for GGUF, whose vocabulary is in the
    /// weights file: a fault in it is the file's, as a malformed header is.
    pub fn vocab_unreadable(&self, err: &Error) -> Option<Unreadable> {
        let file = self.sources.dir.join("tokenizer.json");
        (self.format == WeightFormat::Safetensors).then(|| Unreadable::from_error(err, &file))
    }

    /// The tokenizer files of older formats beside safetensors weights
    /// with no tokenizer.json (SentencePiece models, WordPiece `vocab.txt`,
    /// GPT-2 style `vocab.json` and `merges.txt`). The vocabulary is read
    /// from `vocab.txt`, `vocab.json` + `merges.txt`, a SentencePiece
    /// `tokenizer.model` or a T5 `spiece.model` when there are (see
    /// `Vocab::load`), so when none was read, none of these was: messages
    /// about a missing vocabulary name them as unread.
    pub fn unread_tokenizer_files(&self) -> Vec<&'static str> {
        let dir = &self.sources.dir;
        if self.format != WeightFormat::Safetensors || dir.join("tokenizer.json").is_file() {
            return Vec::new();
        }
        UNREAD_TOKENIZER_FILES
            .iter()
            .copied()
            .filter(|name| dir.join(name).is_file())
            .collect()
    }

    /// The tensor called `name`.
    pub fn tensor(&self, name: &str) -> Option<&TensorEntry> {
        self.tensors.get(name)
    }

    /// The stored bytes of a tensor (touches the mapped pages when read).
    pub fn bytes(&self, t: &TensorEntry) -> &[u8] {
        &self.shards[t.shard].map[t.range.clone()]
    }

    /// Tensor `t` as a matrix over its mapped bytes (its shape, dtype and
    /// length checked by [`Matrix::new`]).
    pub fn matrix<'a>(&'a self, t: &'a TensorEntry) -> Result<Matrix<'a>> {
        Matrix::new(&t.name, self.bytes(t), t.dtype, &t.shape)
    }

    /// The file a tensor is stored in.
    pub fn file_of(&self, t: &TensorEntry) -> &Path {
        &self.shards[t.shard].path
    }
}

/// Adds the tensor `t` of shard `shard` (the file at `path`) to `tensors`;
/// a name already added, from one of `shards`, is an error.
fn insert_once(
    tensors: &mut BTreeMap<String, TensorEntry>,
    shards: &[Shard],
    path: &Path,
    t: &header::RawTensor,
    shard: usize,
) -> Result<()> {
    if let Some(prev) = tensors.get(&t.name) {
        return Err(Error::bad_file(
            path,
            format!(
                "tensor `{}` is also in `{}`; a tensor must be stored once",
                t.name,
                shards[prev.shard].path.display()
            ),
        ));
    }
    let entry = TensorEntry {
        name: t.name.clone(),
        dtype: t.dtype,
        shape: t.shape.clone(),
        shard,
        range: t.start..t.end,
    };
    tensors.insert(t.name.clone(), entry);
    Ok(())
}

/// Maps a file read-only (its header is validated by [`header::parse`] or
/// [`gguf::read`]); a file truncated while it is mapped is reported as
/// such (see `mapped`).
fn map_file(path: &Path) -> Result<Mapped> {
    crate::regular_file::found(path, "a .safetensors or .gguf file")?;
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    Mapped::map(path, &file).map_err(|e| Error::io(path, e))
}
