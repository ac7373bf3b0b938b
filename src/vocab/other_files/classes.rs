//! The `transformers` tokenizer classes whose conversion of older files
//! `other_files` follows, and which class and files a download is read as.

use std::path::Path;

use serde_json::{Map, Value};

/// Which older files a vocabulary is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// `vocab.txt`: one WordPiece entry per line, the line number its id.
    WordPiece,
    /// `vocab.json` (token → id) and `merges.txt` (one merge per line).
    ByteLevelBpe,
    /// `tokenizer.model`, a SentencePiece model: its pieces are the
    /// vocabulary; it encodes as `LlamaTokenizer` only (transformers'
    /// pipeline for it depends on the class and the model type, and has
    /// changed between its versions).
    SentencePiece,
    /// `spiece.model` of a T5 tokenizer class: as `SentencePiece`, with
    /// the `<extra_id_N>` sentinels T5 adds after the pieces.
    T5Spiece,
}

impl Layout {
    /// The files read, the first named in messages.
    pub(crate) fn files(self) -> &'static [&'static str] {
        match self {
            Layout::WordPiece => &["vocab.txt"],
            Layout::ByteLevelBpe => &["vocab.json", "merges.txt"],
            Layout::SentencePiece => &["tokenizer.model"],
            Layout::T5Spiece => &["spiece.model"],
        }
    }

    pub(super) fn present(self, dir: &Path) -> bool {
        self.files().iter().all(|f| dir.join(f).is_file())
    }
}

/// What a converter adds to encoded text.
#[derive(Debug, Clone, Copy)]
pub(super) enum Post {
    /// `cls $A sep` (BERT's `[CLS] … [SEP]`, MPNet's `<s> … </s>`).
    ClsSep,
    /// GPT-2: nothing, or `bos $A` when `add_bos_token` is set.
    Gpt2,
    /// RoBERTa's processor: `<s> … </s>`.
    Roberta,
    /// Llama's: `bos` with `add_bos_token`, `eos` with `add_eos_token`
    /// (both off unless set).
    BosEos,
}

/// A `transformers` tokenizer class this module converts.
pub(super) struct Class {
    pub name: &'static str,
    pub layout: Layout,
    pub post: Post,
    /// Its special tokens when the files name none, by role.
    pub defaults: &'static [(&'static str, &'static str)],
}

const BERT: &[(&str, &str)] = &[
    ("unk", "[UNK]"),
    ("sep", "[SEP]"),
    ("pad", "[PAD]"),
    ("cls", "[CLS]"),
    ("mask", "[MASK]"),
];
const MPNET: &[(&str, &str)] = &[
    ("bos", "<s>"),
    ("eos", "</s>"),
    ("sep", "</s>"),
    ("cls", "<s>"),
    ("unk", "[UNK]"),
    ("pad", "<pad>"),
    ("mask", "<mask>"),
];
const FUNNEL: &[(&str, &str)] = &[
    ("unk", "<unk>"),
    ("sep", "<sep>"),
    ("pad", "<pad>"),
    ("cls", "<cls>"),
    ("mask", "<mask>"),
    ("bos", "<s>"),
    ("eos", "</s>"),
];
const GPT2: &[(&str, &str)] = &[
    ("unk", "<|endoftext|>"),
    ("bos", "<|endoftext|>"),
    ("eos", "<|endoftext|>"),
];
const LLAMA: &[(&str, &str)] = &[("unk", "<unk>"), ("bos", "<s>"), ("eos", "</s>")];
const ROBERTA: &[(&str, &str)] = &[
    ("bos", "<s>"),
    ("eos", "</s>"),
    ("sep", "</s>"),
    ("cls", "<s>"),
    ("unk", "<unk>"),
    ("pad", "<pad>"),
    ("mask", "<mask>"),
];
const DEBERTA: &[(&str, &str)] = &[
    ("bos", "[CLS]"),
    ("eos", "[SEP]"),
    ("sep", "[SEP]"),
    ("cls", "[CLS]"),
    ("unk", "[UNK]"),
    ("pad", "[PAD]"),
    ("mask", "[MASK]"),
];

const fn class(
    name: &'static str,
    layout: Layout,
    post: Post,
    defaults: &'static [(&'static str, &'static str)],
) -> Class {
    Class {
        name,
        layout,
        post,
        defaults,
    }
}

/// The classes converted, as `transformers` converts them (`BertConverter`,
/// `MPNetConverter`, `FunnelConverter`, `GPT2Converter`, `RobertaConverter`,
/// `DebertaConverter`; Llama's as its 5.x class builds it).
const CLASSES: &[Class] = &[
    class("BertTokenizer", Layout::WordPiece, Post::ClsSep, BERT),
    class("DistilBertTokenizer", Layout::WordPiece, Post::ClsSep, BERT),
    class("ElectraTokenizer", Layout::WordPiece, Post::ClsSep, BERT),
    class("MobileBertTokenizer", Layout::WordPiece, Post::ClsSep, BERT),
    class(
        "SqueezeBertTokenizer",
        Layout::WordPiece,
        Post::ClsSep,
        BERT,
    ),
    class("LayoutLMTokenizer", Layout::WordPiece, Post::ClsSep, BERT),
    class("ConvBertTokenizer", Layout::WordPiece, Post::ClsSep, BERT),
    class("LxmertTokenizer", Layout::WordPiece, Post::ClsSep, BERT),
    class("RetriBertTokenizer", Layout::WordPiece, Post::ClsSep, BERT),
    class(
        "DPRContextEncoderTokenizer",
        Layout::WordPiece,
        Post::ClsSep,
        BERT,
    ),
    class(
        "DPRQuestionEncoderTokenizer",
        Layout::WordPiece,
        Post::ClsSep,
        BERT,
    ),
    class("DPRReaderTokenizer", Layout::WordPiece, Post::ClsSep, BERT),
    class("MPNetTokenizer", Layout::WordPiece, Post::ClsSep, MPNET),
    class("FunnelTokenizer", Layout::WordPiece, Post::ClsSep, FUNNEL),
    class("GPT2Tokenizer", Layout::ByteLevelBpe, Post::Gpt2, GPT2),
    class("CodeGenTokenizer", Layout::ByteLevelBpe, Post::Gpt2, GPT2),
    class(
        "RobertaTokenizer",
        Layout::ByteLevelBpe,
        Post::Roberta,
        ROBERTA,
    ),
    class(
        "BartTokenizer",
        Layout::ByteLevelBpe,
        Post::Roberta,
        ROBERTA,
    ),
    class(
        "LongformerTokenizer",
        Layout::ByteLevelBpe,
        Post::Roberta,
        ROBERTA,
    ),
    class("LEDTokenizer", Layout::ByteLevelBpe, Post::Roberta, ROBERTA),
    class("MvpTokenizer", Layout::ByteLevelBpe, Post::Roberta, ROBERTA),
    class(
        "DebertaTokenizer",
        Layout::ByteLevelBpe,
        Post::ClsSep,
        DEBERTA,
    ),
    // Encodes only for a BPE model and a `llama` model type (or none):
    // transformers builds other combinations otherwise (see `legacy`).
    class("LlamaTokenizer", Layout::SentencePiece, Post::BosEos, LLAMA),
];

/// The class `transformers` picks by `config.json`'s `model_type` when
/// tokenizer_config.json names none.
const MODEL_TYPES: &[(&str, &str)] = &[
    ("bert", "BertTokenizer"),
    ("distilbert", "DistilBertTokenizer"),
    ("electra", "ElectraTokenizer"),
    ("mobilebert", "MobileBertTokenizer"),
    ("squeezebert", "SqueezeBertTokenizer"),
    ("layoutlm", "LayoutLMTokenizer"),
    ("convbert", "ConvBertTokenizer"),
    ("mpnet", "MPNetTokenizer"),
    ("funnel", "FunnelTokenizer"),
    ("gpt2", "GPT2Tokenizer"),
    ("gpt_neo", "GPT2Tokenizer"),
    ("gptj", "GPT2Tokenizer"),
    ("opt", "GPT2Tokenizer"),
    ("codegen", "CodeGenTokenizer"),
    ("roberta", "RobertaTokenizer"),
    ("bart", "BartTokenizer"),
    ("longformer", "LongformerTokenizer"),
    ("led", "LEDTokenizer"),
    ("mvp", "MvpTokenizer"),
    ("deberta", "DebertaTokenizer"),
    ("t5", "T5Tokenizer"),
    ("mt5", "MT5Tokenizer"),
    ("umt5", "T5Tokenizer"),
];

/// The T5 classes, whose `spiece.model` is read (for its vocabulary).
const T5_CLASSES: [&str; 3] = ["T5Tokenizer", "MT5Tokenizer", "UMT5Tokenizer"];

/// The class named for the files of `dir`: tokenizer_config.json's
/// `tokenizer_class` (without `Fast`), else by `config.json`'s
/// `model_type`.
pub(super) fn class_name(
    tok_config: Option<&Map<String, Value>>,
    config: Option<&Value>,
) -> Option<String> {
    if let Some(Value::String(name)) = tok_config.and_then(|c| c.get("tokenizer_class")) {
        return Some(name.strip_suffix("Fast").unwrap_or(name).to_string());
    }
    let model_type = config?.get("model_type")?.as_str()?;
    let (_, name) = MODEL_TYPES.iter().find(|(t, _)| *t == model_type)?;
    Some(name.to_string())
}

/// The layout read for `dir` and the class converted as (`None` when the
/// named class is not one of [`CLASSES`] or does not read that layout:
/// then its vocabulary is read alone, as for the `spiece.model` of a T5
/// class).
pub(super) fn choose(dir: &Path, name: Option<&str>) -> Option<(Layout, Option<&'static Class>)> {
    if name.is_some_and(|n| T5_CLASSES.contains(&n)) && Layout::T5Spiece.present(dir) {
        return Some((Layout::T5Spiece, None));
    }
    let known = name.and_then(|n| CLASSES.iter().find(|c| c.name == n));
    if let Some(c) = known.filter(|c| c.layout.present(dir)) {
        return Some((c.layout, Some(c)));
    }
    let layout = [
        Layout::WordPiece,
        Layout::ByteLevelBpe,
        Layout::SentencePiece,
    ]
    .into_iter()
    .find(|l| l.present(dir))?;
    let default = match layout {
        Layout::WordPiece => "BertTokenizer",
        Layout::ByteLevelBpe => "GPT2Tokenizer",
        Layout::SentencePiece | Layout::T5Spiece => return Some((layout, None)),
    };
    let class = match name {
        Some(_) => None,
        None => CLASSES.iter().find(|c| c.name == default),
    };
    Some((layout, class))
}
