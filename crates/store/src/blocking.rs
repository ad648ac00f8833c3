//! Calling the blocking store from async code ([`blocking`]), and telling when a call
//! is made that way ([`in_blocking_section`]).
//!
//! A store call blocks its thread; the PostgreSQL client even runs a small runtime of
//! its own for the call, which tokio refuses to start (it panics) on a thread that is
//! driving a runtime. Inside `tokio::task::block_in_place` the thread has handed its
//! tasks over and left the runtime's context, so both are fine there, although
//! `Handle::try_current()` still finds the runtime: a thread-local flag marks such a
//! section, so the store can tell it from a call made straight from a task.

use std::cell::Cell;

use tokio::runtime::{Handle, RuntimeFlavor};

thread_local! {
    /// Set while this thread runs a [`blocking`] section.
    static IN_SECTION: Cell<bool> = const { Cell::new(false) };
}

/// Run `f`, a blocking call (the store), from async code: on a multi-thread runtime the
/// thread hands its other tasks over first (`block_in_place`); elsewhere (no runtime, a
/// current-thread one) it simply runs. A PostgreSQL store called from a current-thread
/// runtime's task still refuses ([`StoreError::AsyncContext`](crate::StoreError)): there
/// no thread can take the runtime's tasks over.
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| section(f))
        }
        _ => f(),
    }
}

/// Call `store` from async code: a store whose calls are quick
/// ([`Store::calls_are_quick`](crate::Store::calls_are_quick), a local file) is called in
/// place (handing the thread over costs more than such a call); any other through
/// [`blocking`].
pub fn call<T>(store: &dyn crate::Store, f: impl FnOnce() -> T) -> T {
    if store.calls_are_quick() {
        f()
    } else {
        blocking(f)
    }
}

/// True while this thread runs inside [`blocking`]'s `block_in_place`.
pub(crate) fn in_blocking_section() -> bool {
    IN_SECTION.with(Cell::get)
}

/// Run `f` with the flag set, restoring it after (also when `f` panics, so a caught
/// panic leaves no stale mark).
fn section<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_SECTION.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(IN_SECTION.with(|c| c.replace(true)));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_is_marked_only_inside_block_in_place() {
        assert!(!in_blocking_section());
        // No runtime: a plain call, nothing to mark.
        assert!(!blocking(in_blocking_section));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let (inside, after) = rt.block_on(async {
            tokio::spawn(async {
                let inside = blocking(|| blocking(in_blocking_section));
                (inside, in_blocking_section())
            })
            .await
            .unwrap()
        });
        assert!(inside && !after);
        // A panic inside leaves no mark behind.
        let caught = rt.block_on(async {
            tokio::spawn(async {
                let r = std::panic::catch_unwind(|| blocking(|| panic!("boom")));
                (r.is_err(), in_blocking_section())
            })
            .await
            .unwrap()
        });
        assert_eq!(caught, (true, false));
        let ct = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(!ct.block_on(async { blocking(in_blocking_section) }));
    }
}
