//! An allocator that refuses any single allocation beyond [`MAX_ALLOC`], for the fuzz
//! binaries and the regression test.
//!
//! A size read from untrusted bytes (a length prefix, a count) is how an input asks for
//! gigabytes. libFuzzer's `-malloc_limit_mb` needs a sanitizer's hooks, which the
//! targets are built without, and zeroed memory is mapped lazily, so its RSS limit never
//! sees such an allocation either: refused here, it aborts the process
//! ("memory allocation of N bytes failed"), which the fuzzer reports as a crash.

use std::alloc::{GlobalAlloc, Layout, System};

/// The largest allocation allowed: 2 GiB, the fuzzers' `-rss_limit_mb`.
pub const MAX_ALLOC: usize = 2 << 30;

/// The system allocator, refusing allocations beyond [`MAX_ALLOC`]. Install it with
/// `#[global_allocator] static ALLOC: Bounded = Bounded;`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bounded;

// SAFETY: every call goes to `System` with the caller's arguments, or returns null,
// which `GlobalAlloc` allows for any allocation.
unsafe impl GlobalAlloc for Bounded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOC {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOC {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller upholds `alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > MAX_ALLOC {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller upholds `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
