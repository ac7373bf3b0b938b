//! Files mapped read-only, and the one line said when one shrinks under
//! a read.
//!
//! A read of a mapped page that lies past the end of its file (another
//! process truncated or rewrote it after it was mapped) raises SIGBUS,
//! which by default kills the process with no word of why. Every map made
//! here registers its address range and its file's path in a fixed table
//! that a SIGBUS handler can read: the handler finds the map the faulting
//! address lies in, writes `embscope: `FILE` changed while it was read
//! (truncated?)` to stderr and exits with 2, as any other bad input does.
//!
//! The handler may run at any instruction, so it takes no lock and
//! allocates nothing: the table is a static array of slots made of atomics,
//! each stamped with a sequence number (odd while a slot is written) so
//! that a slot read while it changes is passed over, and it writes with
//! `write(2)` and leaves with `_exit(2)`, both async-signal-safe. A fault
//! in no registered map is not embscope's to explain: the handler puts
//! back the action it replaced (the Rust runtime's, which reports a stack
//! overflow, or the default) and returns, so that the fault, raised again,
//! meets it.
//!
//! On systems other than Unix the maps are plain: there is no SIGBUS.

use std::fs::File;
use std::io;
use std::ops::Deref;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering, fence};

use memmap2::Mmap;

/// Maps that can be registered at once; a map made while all are taken
/// is not guarded (a checkpoint of more shards than this is unheard of).
const SLOTS: usize = 256;
/// Bytes of a path kept in a slot: the end of a longer one is kept.
const PATH_BYTES: usize = 512;

/// A file mapped read-only, its address range registered for the SIGBUS
/// handler while the map lives.
#[derive(Debug)]
pub struct Mapped {
    map: Mmap,
    /// The slot of [`TABLE`] that names this map (`None`: not guarded).
    slot: Option<usize>,
}

impl Mapped {
    /// Maps `file`, opened from `path`, read-only, and registers it.
    pub fn map(path: &Path, file: &File) -> io::Result<Mapped> {
        // SAFETY: the map is read-only and private to this process, and
        // the file is never written by embscope. Another process may
        // truncate it while it is mapped: a read past its new end then
        // raises SIGBUS, which the handler registered below turns into a
        // one-line error naming the file.
        let map = unsafe { Mmap::map(file) }?;
        let slot = match map.len() {
            0 => None,
            len => register(map.as_ptr() as usize, len, path),
        };
        Ok(Mapped { map, slot })
    }
}

impl Deref for Mapped {
    type Target = Mmap;

    fn deref(&self) -> &Mmap {
        &self.map
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // Before the map goes (its fields drop after this), so that no
        // address of another map made later is taken for this file.
        if let Some(slot) = self.slot {
            TABLE[slot].clear();
        }
    }
}

/// One registered map.
struct Slot {
    /// Taken by a live [`Mapped`].
    taken: AtomicBool,
    /// Odd while the fields below are written.
    seq: AtomicUsize,
    /// First address of the map.
    start: AtomicUsize,
    /// Its length in bytes (0: none).
    len: AtomicUsize,
    /// Length of the whole path, in bytes.
    path_len: AtomicUsize,
    /// The path, or its last [`PATH_BYTES`] bytes when longer.
    path: [AtomicU8; PATH_BYTES],
}

/// Every registered map.
static TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];

impl Slot {
    const fn new() -> Slot {
        Slot {
            taken: AtomicBool::new(false),
            seq: AtomicUsize::new(0),
            start: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            path_len: AtomicUsize::new(0),
            path: [const { AtomicU8::new(0) }; PATH_BYTES],
        }
    }

    /// Writes the fields between two steps of `seq`, so that a reader
    /// that sees the same even `seq` before and after read them whole.
    fn write(&self, start: usize, len: usize, path: &[u8]) {
        self.seq.fetch_add(1, Ordering::Relaxed);
        // Pairs with the reader's fence: a reader that sees any field
        // written below sees the odd `seq` too.
        fence(Ordering::Release);
        self.start.store(start, Ordering::Relaxed);
        self.len.store(len, Ordering::Relaxed);
        let kept = &path[path.len().saturating_sub(PATH_BYTES)..];
        for (cell, &b) in self.path.iter().zip(kept) {
            cell.store(b, Ordering::Relaxed);
        }
        self.path_len.store(path.len(), Ordering::Relaxed);
        self.seq.fetch_add(1, Ordering::Release);
    }

    fn clear(&self) {
        self.write(0, 0, &[]);
        self.taken.store(false, Ordering::Release);
    }

    /// When this slot's map holds `addr`, copies its path (or the end of
    /// it) into `buf` and returns the whole path's length; `None` when it
    /// does not, or when the slot changed while it was read.
    /// Async-signal-safe: atomic loads only.
    fn read(&self, addr: usize, buf: &mut [u8; PATH_BYTES]) -> Option<usize> {
        let before = self.seq.load(Ordering::Acquire);
        if before % 2 == 1 {
            return None;
        }
        let start = self.start.load(Ordering::Relaxed);
        let len = self.len.load(Ordering::Relaxed);
        if len == 0 || addr < start || addr - start >= len {
            return None;
        }
        let whole = self.path_len.load(Ordering::Relaxed);
        for (b, cell) in buf.iter_mut().zip(&self.path).take(whole) {
            *b = cell.load(Ordering::Relaxed);
        }
        fence(Ordering::Acquire);
        (self.seq.load(Ordering::Relaxed) == before).then_some(whole)
    }
}

/// Registers the map of `path` at `start`, `len` bytes long, installing
/// the handler first; the slot taken, or `None` when all are.
fn register(start: usize, len: usize, path: &Path) -> Option<usize> {
    install();
    let slot = TABLE.iter().position(|s| {
        s.taken
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    })?;
    TABLE[slot].write(start, len, path.as_os_str().as_encoded_bytes());
    Some(slot)
}

/// The path of the registered map that holds `addr` (or its last
/// [`PATH_BYTES`] bytes), copied into `buf`, and whether it was cut.
fn path_at(addr: usize, buf: &mut [u8; PATH_BYTES]) -> Option<(&[u8], bool)> {
    let whole = TABLE.iter().find_map(|s| s.read(addr, buf))?;
    Some((&buf[..whole.min(PATH_BYTES)], whole > PATH_BYTES))
}

#[cfg(unix)]
fn install() {
    use std::sync::{Once, OnceLock};

    /// The action the handler replaced, put back for faults that are not
    /// in a registered map.
    static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
    static INSTALL: Once = Once::new();

    extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
        // SAFETY: the kernel hands a SA_SIGINFO handler a valid siginfo_t,
        // whose si_addr is the faulting address for SIGBUS.
        let addr = unsafe { (*info).si_addr() } as usize;
        let mut buf = [0u8; PATH_BYTES];
        match path_at(addr, &mut buf) {
            Some((path, cut)) => {
                for part in [
                    "embscope: `".as_bytes(),
                    if cut { "…" } else { "" }.as_bytes(),
                    path,
                    "` changed while it was read (truncated?)\n".as_bytes(),
                ] {
                    // SAFETY: write(2) and _exit(2) are async-signal-safe;
                    // each buffer is valid for its length.
                    unsafe { libc::write(2, part.as_ptr().cast(), part.len()) };
                }
                unsafe { libc::_exit(2) };
            }
            None => {
                // SAFETY: sigaction is async-signal-safe; PREVIOUS was set
                // before this handler was installed. Returning raises the
                // fault again, under the action put back.
                unsafe {
                    match PREVIOUS.get() {
                        Some(previous) => {
                            libc::sigaction(libc::SIGBUS, previous, std::ptr::null_mut())
                        }
                        None => {
                            libc::signal(libc::SIGBUS, libc::SIG_DFL);
                            0
                        }
                    };
                }
            }
        }
    }

    INSTALL.call_once(|| {
        // SAFETY: plain calls of sigaction with zeroed, then filled,
        // structures; the handler only reads the table and PREVIOUS.
        unsafe {
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut previous) != 0 {
                return;
            }
            let _ = PREVIOUS.set(previous);
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
        }
    });
}

#[cfg(not(unix))]
fn install() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_is_found_by_its_addresses_while_it_lives() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.safetensors");
        std::fs::write(&path, vec![7u8; 10_000]).unwrap();
        let map = Mapped::map(&path, &File::open(&path).unwrap()).unwrap();
        let start = map.as_ptr() as usize;
        let mut buf = [0u8; PATH_BYTES];
        let want = path.as_os_str().as_encoded_bytes();
        assert_eq!(path_at(start, &mut buf), Some((want, false)));
        assert_eq!(path_at(start + 9_999, &mut buf), Some((want, false)));
        assert_eq!(path_at(start + 10_000, &mut buf), None);
        assert_eq!(path_at(start.wrapping_sub(1), &mut buf), None);
        drop(map);
        assert_eq!(path_at(start, &mut buf), None);
    }

    #[test]
    fn a_long_path_keeps_its_end() {
        let slot = Slot::new();
        let long = [b"/d".repeat(400), b"/model.gguf".to_vec()].concat();
        slot.write(4096, 100, &long);
        let mut buf = [0u8; PATH_BYTES];
        assert_eq!(slot.read(4096, &mut buf), Some(long.len()));
        assert_eq!(&buf[..], &long[long.len() - PATH_BYTES..]);
        assert_eq!(slot.read(4096 + 100, &mut buf), None);
    }
}
