//! A small pool of blocking PostgreSQL connections.
//!
//! A `canvas` process uses its store from three threads at most at once (the command,
//! the writer, the lease watcher), each call holding a connection only while it runs:
//! a handful of connections, opened when first needed and kept for the process's life.
//! That is all this pool does; a general pool (r2d2) would add a thread pool of its
//! own, eager connections and errors that hide the server's reason.
//!
//! Every connection is set up alike: the store's schema first on its `search_path`, a
//! lock timeout, and read-only transactions for a read-only store. A connection that
//! broke (the server restarted, the network went) is dropped, not reused. Each keeps the
//! statements the store's writes prepared on it ([`Statements`]).

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use postgres::{Client, GenericClient, NoTls, Statement};

use super::pg_err;
use crate::{Result, StoreError};

/// How long a call waits for a free connection when all are in use.
const WAIT: Duration = Duration::from_secs(30);

/// Connections opened when needed, kept while idle.
pub(crate) struct Pool {
    config: postgres::Config,
    /// Run on every new connection.
    setup: String,
    /// Where the connection goes, for messages (no password).
    shown: String,
    max: usize,
    state: Mutex<State>,
    freed: Condvar,
}

struct State {
    idle: Vec<(Client, Statements)>,
    /// Connections open (idle or in use).
    open: usize,
}

/// A connection taken from the pool; it goes back when dropped (unless it broke).
pub(crate) struct Conn<'p> {
    pool: &'p Pool,
    client: Option<Client>,
    statements: Statements,
}

/// The statements prepared on one connection, by their text. A statement given as text
/// costs a round trip to prepare it before the one that runs it; one prepared here is
/// prepared once per connection (a prepared statement outlives the transaction it was
/// prepared in).
#[derive(Default)]
pub(crate) struct Statements(HashMap<String, Statement>);

impl Statements {
    /// `q` prepared on `c` (the connection these statements belong to, or a transaction
    /// of it).
    pub(crate) fn get(
        &mut self,
        c: &mut impl GenericClient,
        q: &str,
    ) -> std::result::Result<Statement, postgres::Error> {
        if let Some(st) = self.0.get(q) {
            return Ok(st.clone());
        }
        let st = c.prepare(q)?;
        self.0.insert(q.to_string(), st.clone());
        Ok(st)
    }
}

impl Conn<'_> {
    /// The client and its prepared statements, to use together.
    pub(crate) fn parts(&mut self) -> (&mut Client, &mut Statements) {
        // Taken only in `drop`.
        let client = self.client.as_mut().unwrap_or_else(|| unreachable!());
        (client, &mut self.statements)
    }
}

impl Deref for Conn<'_> {
    type Target = Client;

    fn deref(&self) -> &Client {
        // Taken only in `drop`.
        self.client.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl DerefMut for Conn<'_> {
    fn deref_mut(&mut self) -> &mut Client {
        self.client.as_mut().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for Conn<'_> {
    fn drop(&mut self) {
        let Some(client) = self.client.take() else {
            return;
        };
        let mut st = self.pool.lock();
        if client.is_closed() {
            st.open -= 1;
        } else {
            st.idle.push((client, std::mem::take(&mut self.statements)));
        }
        drop(st);
        self.pool.freed.notify_one();
    }
}

impl Pool {
    /// A pool of at most `max` connections to `config`, each set up with `setup`.
    pub(crate) fn new(config: postgres::Config, setup: String, shown: String, max: usize) -> Pool {
        Pool {
            config,
            setup,
            shown,
            max: max.max(1),
            state: Mutex::new(State {
                idle: Vec::new(),
                open: 0,
            }),
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is two plain values, consistent whenever the lock is free.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A connection: an idle one, a new one, or the first freed within [`WAIT`].
    pub(crate) fn get(&self) -> Result<Conn<'_>> {
        // The blocking client runs a runtime of its own, which tokio refuses to start
        // (it panics) on a thread that is driving a runtime; inside `blocking`'s
        // `block_in_place` the thread has left the runtime, and it may.
        if tokio::runtime::Handle::try_current().is_ok() && !crate::blocking::in_blocking_section()
        {
            return Err(StoreError::AsyncContext);
        }
        let deadline = Instant::now() + WAIT;
        let mut st = self.lock();
        loop {
            if let Some((client, statements)) = st.idle.pop() {
                if client.is_closed() {
                    st.open -= 1;
                    continue;
                }
                return Ok(Conn {
                    pool: self,
                    client: Some(client),
                    statements,
                });
            }
            if st.open < self.max {
                st.open += 1;
                drop(st);
                return match self.connect() {
                    Ok(client) => Ok(Conn {
                        pool: self,
                        client: Some(client),
                        statements: Statements::default(),
                    }),
                    Err(e) => {
                        self.lock().open -= 1;
                        self.freed.notify_one();
                        Err(e)
                    }
                };
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(StoreError::Busy(format!(
                    "all {} connections to {} stayed in use for {} s",
                    self.max,
                    self.shown,
                    WAIT.as_secs()
                )));
            }
            st = self
                .freed
                .wait_timeout(st, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn connect(&self) -> Result<Client> {
        let mut client = self
            .config
            .connect(NoTls)
            .map_err(|e| pg_err("connecting to the server", e))?;
        client
            .batch_execute(&self.setup)
            .map_err(|e| pg_err("setting up the connection", e))?;
        Ok(client)
    }
}
