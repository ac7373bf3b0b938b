//! Letting go of tensors' mapped pages once a command has read them for
//! the last time, on all cores (`neighbors` after its scan, `check` and
//! `undertrained` after their passes over matrices of a GiB or more).
//!
//! Reading a mapped file makes the kernel fill a page-table entry for each
//! 4 KiB page; unmapping tears them down again, one thread for the whole
//! map: for Llama 3's two vocabulary matrices half a million entries,
//! 15–40 ms per GiB of `munmap` at exit (depending on how the file's
//! pages sit in the page cache), a serial tail after the parallel work.
//! `MADV_DONTNEED` on pieces of the map, from every worker at once, drops
//! the same entries in parallel; the `munmap` at exit then finds none.
//! The data stays in the page cache: a later read of a released page maps
//! it again.

use super::{Checkpoint, TensorEntry};

/// Bytes per piece released by one worker.
#[cfg(unix)]
const PIECE: usize = 32 << 20;

impl Checkpoint {
    /// Drops the page-table entries of the mapped bytes of `tensors`, on
    /// all cores. Their bytes can still be read (they are mapped again from
    /// the page cache), but that costs the faults again: call this when
    /// nothing more will read them.
    pub fn release(&self, tensors: &[&TensorEntry]) {
        #[cfg(unix)]
        {
            use memmap2::UncheckedAdvice;
            use rayon::prelude::*;
            let pieces: Vec<(usize, usize, usize)> = tensors
                .iter()
                .flat_map(|t| {
                    (t.range.start..t.range.end)
                        .step_by(PIECE)
                        .map(move |at| (t.shard, at, PIECE.min(t.range.end - at)))
                })
                .collect();
            pieces.par_iter().for_each(|&(shard, at, len)| {
                // SAFETY: the map is the checkpoint file, mapped read-only
                // and shared: MADV_DONTNEED only drops the page-table
                // entries, and a later read maps the same file bytes in
                // again from the page cache (it would discard data only in
                // a private written map). Failing is harmless: the entries
                // are then torn down at exit.
                let _ = unsafe {
                    self.shards[shard].map.unchecked_advise_range(
                        UncheckedAdvice::DontNeed,
                        at,
                        len,
                    )
                };
            });
        }
        #[cfg(not(unix))]
        let _ = tensors;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn released_tensors_read_the_same_bytes_again() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/llama-sharded");
        let ckpt = Checkpoint::open(dir.to_str().unwrap(), "main").unwrap();
        let names = ["model.embed_tokens.weight", "lm_head.weight"];
        let tensors: Vec<&TensorEntry> = names.iter().map(|n| ckpt.tensor(n).unwrap()).collect();
        let before: Vec<Vec<u8>> = tensors.iter().map(|t| ckpt.bytes(t).to_vec()).collect();
        assert!(before.iter().all(|b| b.iter().any(|&x| x != 0)));
        ckpt.release(&tensors);
        for (t, b) in tensors.iter().zip(&before) {
            assert_eq!(ckpt.bytes(t), &b[..], "{}", t.name);
        }
    }
}
