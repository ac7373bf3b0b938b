//! Hub ids and the local Hugging Face cache: which strings are Hub ids
//! (and the plain name parts that Ollama names share), and where the
//! cache keeps a repository. Reading a snapshot is `locate`'s.

use std::path::PathBuf;

/// `org/name` or `name`, made of the characters the Hub allows.
pub(super) fn looks_like_hub_id(s: &str) -> bool {
    let parts: Vec<&str> = s.split('/').collect();
    (1..=2).contains(&parts.len()) && parts.iter().all(|p| plain_part(p))
}

/// One part of a Hub id or an Ollama name: letters, digits, `-`, `_` and
/// `.`, not empty and not starting with `.` (so never `..`).
pub(super) fn plain_part(p: &str) -> bool {
    !p.is_empty()
        && !p.starts_with('.')
        && p.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// The hub cache directory: `HF_HUB_CACHE`, else `HF_HOME/hub`, else
/// `XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`.
fn hub_cache_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = var("HF_HUB_CACHE") {
        return Some(PathBuf::from(p));
    }
    if let Some(p) = var("HF_HOME") {
        return Some(PathBuf::from(p).join("hub"));
    }
    if let Some(p) = var("XDG_CACHE_HOME") {
        return Some(PathBuf::from(p).join("huggingface").join("hub"));
    }
    var("HOME").map(|h| {
        PathBuf::from(h)
            .join(".cache")
            .join("huggingface")
            .join("hub")
    })
}

/// Where the Hub id `id` would be in the cache (`None`: no cache is known).
pub(super) fn hub_repo(id: &str) -> Option<PathBuf> {
    hub_cache_dir().map(|c| c.join(format!("models--{}", id.replace('/', "--"))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_ids() {
        for (s, ok) in [
            ("Qwen/Qwen3-0.6B", true),
            ("gpt2", true),
            ("meta-llama/Llama-3.1-8B", true),
            ("a/b/c", false),
            ("./x", false),
            ("../x/y", false),
            ("/abs/path", false),
            ("", false),
            ("x y/z", false),
        ] {
            assert_eq!(looks_like_hub_id(s), ok, "{s}");
        }
    }
}
