//! A bound on the memory one piece of untrusted code may allocate: the
//! global allocator of the `embscope` binary (and of the Python module),
//! which charges the allocations made inside [`within`] to that call's
//! budget.
//!
//! A chat template is a program: fuel bounds its instructions, but not
//! the bytes each one makes. `{% set s = s ~ s %}` forty times asks for a
//! terabyte in forty instructions, and a list doubled so aborts the
//! process when one allocation fails (Rust has no recoverable out-of-memory
//! on stable). So while a render runs on a thread, the allocator counts
//! the bytes it holds (allocated minus freed) and the bytes it asks for
//! in all (which bounds the copying of a loop that copies a large value
//! and drops it). Past either bound it cannot fail the allocation (that
//! aborts) nor unwind (an allocator must not), so it does what embscope
//! does on any bad input: writes the one-line refusal given to [`within`]
//! to stderr and exits with code 2, with `write(2)` and `_exit(2)`, which
//! neither allocate nor take a lock.
//!
//! Outside [`within`] an allocation costs one read of a thread-local.
//! Without the allocator installed, [`within`] runs its closure unbounded.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// What the running [`within`] may still allocate on this thread.
#[derive(Clone, Copy)]
struct Left {
    /// Bytes that may be held at once (allocated minus freed; freeing
    /// what was allocated before the call gives room too).
    held: isize,
    /// Bytes that may be asked for in all, whatever is freed again: this
    /// bounds the copying, as a loop that copies a large value and drops
    /// the copy holds little.
    asked: usize,
}

thread_local! {
    /// The budget of the running [`within`]; `None` outside one.
    static LEFT: Cell<Option<Left>> = const { Cell::new(None) };
    /// The refusal to print when it runs out: a pointer and a length
    /// into the `String` that [`within`] keeps alive for the call.
    static REFUSAL: Cell<(*const u8, usize)> = const { Cell::new((std::ptr::null(), 0)) };
}

/// The system allocator, charging allocations made inside [`within`].
pub struct Budgeted;

// SAFETY: every call is passed on to the system allocator unchanged;
// `charge` and `release` only read and write this thread's cells
// (const-initialised, without destructors, so never allocating) or leave
// the process.
unsafe impl GlobalAlloc for Budgeted {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        charge(layout.size(), layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        charge(layout.size(), layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        release(layout.size());
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            // A growing reallocation may copy the whole block.
            charge(new_size - layout.size(), new_size);
        } else {
            release(layout.size() - new_size);
        }
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Runs `f` with at most `held` bytes allocated at once and `asked`
/// bytes asked for in all on this thread; past either, `refusal` (one
/// line, without the `embscope: ` prefix) is printed and the process
/// exits with code 2. Calls nest: the inner budget holds inside, the
/// outer one is restored after (without the inner call's spending).
pub fn within<R>(held: usize, asked: usize, refusal: &str, f: impl FnOnce() -> R) -> R {
    let line = format!("embscope: {refusal}\n");
    // Restores the caller's budget even when `f` panics.
    struct Restore(Option<Left>, (*const u8, usize));
    impl Drop for Restore {
        fn drop(&mut self) {
            LEFT.with(|l| l.set(self.0));
            REFUSAL.with(|r| r.set(self.1));
        }
    }
    let _restore = Restore(LEFT.with(Cell::get), REFUSAL.with(Cell::get));
    REFUSAL.with(|r| r.set((line.as_ptr(), line.len())));
    LEFT.with(|l| {
        l.set(Some(Left {
            held: isize::try_from(held).unwrap_or(isize::MAX),
            asked,
        }))
    });
    f()
}

/// Takes `held` bytes held and `asked` bytes asked for from this
/// thread's budget, if it has one.
fn charge(held: usize, asked: usize) {
    // `try_with`: an allocation made while the thread's locals are torn
    // down is outside any budget.
    let _ = LEFT.try_with(|left| {
        let Some(l) = left.get() else { return };
        let held = isize::try_from(held).unwrap_or(isize::MAX);
        if held > l.held || asked > l.asked {
            refuse();
        }
        left.set(Some(Left {
            held: l.held - held,
            asked: l.asked - asked,
        }));
    });
}

/// Gives `size` bytes freed back to this thread's budget, if it has one.
fn release(size: usize) {
    let _ = LEFT.try_with(|left| {
        if let Some(l) = left.get() {
            let size = isize::try_from(size).unwrap_or(isize::MAX);
            left.set(Some(Left {
                held: l.held.saturating_add(size),
                ..l
            }));
        }
    });
}

/// Prints the refusal and leaves with code 2, allocating nothing.
fn refuse() -> ! {
    // What runs on the way out allocates outside any budget.
    LEFT.with(|l| l.set(None));
    let (ptr, len) = REFUSAL.with(Cell::get);
    #[cfg(unix)]
    // SAFETY: `ptr..ptr + len` is the line `within` keeps alive while its
    // budget is in force; `write` and `_exit` take no lock.
    unsafe {
        if !ptr.is_null() {
            libc::write(2, ptr.cast(), len);
        }
        libc::_exit(2)
    }
    #[cfg(not(unix))]
    {
        let _ = (ptr, len);
        std::process::exit(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn left() -> Option<(isize, usize)> {
        LEFT.with(Cell::get).map(|l| (l.held, l.asked))
    }

    #[test]
    fn a_budget_counts_what_is_held_and_asked_and_nests() {
        // The allocator is not installed in the test binary: the
        // accounting is called directly.
        within(1000, 5000, "outer", || {
            charge(400, 400);
            release(400);
            assert_eq!(left(), Some((1000, 4600)));
            charge(300, 300);
            within(100, 200, "inner", || {
                charge(60, 60);
                assert_eq!(left(), Some((40, 140)));
            });
            assert_eq!(left(), Some((700, 4300)));
        });
        assert_eq!(left(), None);
        charge(usize::MAX, usize::MAX);
        release(usize::MAX);
        assert_eq!(left(), None);
    }
}
