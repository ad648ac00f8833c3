//! Per-provider limits for many runs at once: a rate (`--rps`: attempts per second) and
//! a shared backoff. When one call to a provider is told to slow down (HTTP 429), every
//! call to that provider waits (the `Retry-After` it was given, else a doubling pause),
//! and the refused attempt is sent again then, without counting against the
//! component's own retries: at volume a rate limit is the provider's pace, not a
//! failure of the row that met it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// The first pause after a 429 without `Retry-After`; it doubles while 429s follow.
const FIRST_PAUSE: Duration = Duration::from_millis(500);
/// The longest pause.
const MAX_PAUSE: Duration = Duration::from_secs(60);
/// Attempts a call may have refused with 429 before the refusal is its error.
pub const MAX_THROTTLED: u32 = 8;

/// The limits of one provider (one base URL).
#[derive(Debug)]
pub struct Gate {
    /// Time between two attempts' starts (`1 / rps`), if rated.
    interval: Option<Duration>,
    state: Mutex<GateState>,
}

#[derive(Debug)]
struct GateState {
    /// When the next attempt may start (rated gates).
    next_slot: Instant,
    /// No attempt starts before this (after a 429).
    paused_until: Option<Instant>,
    /// 429s in a row.
    strikes: u32,
}

impl Gate {
    /// A gate allowing `rps` attempts per second (`None`: unrated).
    pub fn new(rps: Option<f64>) -> Gate {
        let interval = rps
            .filter(|r| r.is_finite() && *r > 0.0)
            .map(|r| Duration::from_secs_f64(1.0 / r));
        Gate {
            interval,
            state: Mutex::new(GateState {
                next_slot: Instant::now(),
                paused_until: None,
                strikes: 0,
            }),
        }
    }

    /// Wait until an attempt may start: after any pause, in its rate slot (a slot
    /// taken before a pause began is given up, and a new one taken after it).
    pub async fn admit(&self) {
        let mut slot: Option<Instant> = None;
        loop {
            let wait = {
                let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                let now = Instant::now();
                match st.paused_until {
                    Some(until) if until > now => {
                        slot = None;
                        until - now
                    }
                    _ => {
                        st.paused_until = None;
                        let Some(every) = self.interval else {
                            return;
                        };
                        let at = *slot.get_or_insert_with(|| {
                            let at = st.next_slot.max(now);
                            st.next_slot = at + every;
                            at
                        });
                        if at <= now {
                            return;
                        }
                        at - now
                    }
                }
            };
            tokio::time::sleep(wait).await;
        }
    }

    /// An attempt was refused with 429: pause every attempt for `retry_after`, else for a
    /// pause doubling with each refusal in a row.
    pub fn throttled(&self, retry_after: Option<Duration>) {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        st.strikes = st.strikes.saturating_add(1);
        let doubling = FIRST_PAUSE.saturating_mul(1 << st.strikes.saturating_sub(1).min(16));
        let pause = retry_after.unwrap_or(doubling).min(MAX_PAUSE);
        let until = Instant::now() + pause;
        let until = st.paused_until.map_or(until, |u| u.max(until));
        st.paused_until = Some(until);
        // The rate's slots start over after the pause, not in a burst at its end.
        st.next_slot = st.next_slot.max(until);
    }

    /// An attempt got through: the doubling starts over.
    pub fn passed(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .strikes = 0;
    }
}

/// The gates of every provider, made as they are first used.
#[derive(Debug, Default)]
pub struct Limits {
    rps: Option<f64>,
    gates: Mutex<HashMap<String, Arc<Gate>>>,
}

impl Limits {
    /// Limits of `rps` attempts per second per provider (`None`: only the backoff).
    pub fn new(rps: Option<f64>) -> Limits {
        Limits {
            rps,
            gates: Mutex::default(),
        }
    }

    /// The gate of the provider at `base_url`.
    pub fn gate(&self, base_url: &str) -> Arc<Gate> {
        let key = base_url.trim_end_matches('/').to_ascii_lowercase();
        let mut gates = self.gates.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(
            gates
                .entry(key)
                .or_insert_with(|| Arc::new(Gate::new(self.rps))),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_rated_gate_spaces_attempts() {
        let g = Gate::new(Some(4.0));
        let start = Instant::now();
        for _ in 0..5 {
            g.admit().await;
        }
        // Five attempts at 4 per second: the fifth starts a second after the first.
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(1000), "{took:?}");
        assert!(took < Duration::from_millis(1100), "{took:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_429_pauses_every_attempt_and_doubles_while_they_follow() {
        let g = Gate::new(None);
        let start = Instant::now();
        g.admit().await;
        assert!(start.elapsed() < Duration::from_millis(1));
        g.throttled(None);
        g.admit().await;
        assert!(start.elapsed() >= FIRST_PAUSE);
        g.throttled(None);
        let again = Instant::now();
        g.admit().await;
        assert!(again.elapsed() >= FIRST_PAUSE * 2, "{:?}", again.elapsed());
        g.passed();
        g.throttled(Some(Duration::from_secs(3)));
        let told = Instant::now();
        g.admit().await;
        assert!(told.elapsed() >= Duration::from_secs(3));
    }

    #[test]
    fn providers_have_gates_of_their_own() {
        let l = Limits::new(Some(1.0));
        let a = l.gate("http://a/v1/");
        assert!(Arc::ptr_eq(&a, &l.gate("HTTP://A/v1")));
        assert!(!Arc::ptr_eq(&a, &l.gate("http://b/v1")));
    }
}
