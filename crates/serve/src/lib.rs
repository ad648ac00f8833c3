//! `canvas serve`: RAGFlow's agent HTTP API over the run store, so RAGFlow's Python SDK
//! and OpenAI's clients work unchanged against canvases run by this engine.
//!
//! An agent is a canvas: those of the served directory (read-only) and those created
//! through the API (kept in the store). A session is a stored run: each question is a
//! turn, driven by [`canvas_runner::Drive`] under the run's lease, its events streamed
//! as they are emitted (a `node_finished` once it is durable). A session stopped by a
//! restart, a crash, a disconnected client or another instance's death continues where
//! it stopped at the next question. The modules: [`reply`] (RAGFlow's shapes), [`body`]
//! (request bodies), `catalog` (agents), `sessions`, `ask` (driving turns), `complete`
//! (the completion endpoints and their framings), `files` (files given as data).

mod ask;
pub mod body;
mod catalog;
mod complete;
mod files;
pub mod reply;
mod sessions;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use canvas_engine::{Canvas, RunConfig, StopReason, StopSignal};
use canvas_runner::Lease;
use canvas_store::Store;
use canvas_store::writer::WriterHandle;
use serde_json::Value;
use sha2::{Digest, Sha256};

pub use catalog::FileAgent;
use reply::{ApiError, code};

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The API keys a request may carry (`Authorization: Bearer KEY`); at least one.
    pub keys: Vec<String>,
    /// The largest request body taken, in bytes.
    pub body_limit: usize,
    /// How long a request may take to be answered, and a turn to run (a turn past it
    /// stops at its next node boundary, resumable).
    pub timeout: Duration,
    /// How long a session's lease lasts without renewal (renewed every third of it): how
    /// soon another instance takes over the sessions of one that died elsewhere.
    pub lease: Duration,
    /// How long a question to a session another request is running waits for it.
    pub busy_wait: Duration,
}

/// Checks and compiles canvases (the binary's validate pipeline and registry).
pub trait Canvases: Send + Sync {
    /// Check and compile a canvas given to the API; the error is one line.
    fn admit(&self, label: &str, text: &str) -> Result<Canvas, String>;
    /// Compile a stored copy of a canvas that was admitted before.
    fn compile(&self, label: &str, text: &str) -> Result<Canvas, String>;
    /// The canvas document as JSON (a YAML canvas too), for the API's `dsl` fields.
    fn document(&self, text: &str) -> Option<Value>;
}

/// One request, for the access log.
#[derive(Debug, Clone)]
pub struct Access {
    /// The method.
    pub method: String,
    /// The path (without the query).
    pub path: String,
    /// The HTTP status answered.
    pub status: u16,
    /// Time to the response's head (a stream goes on after it).
    pub millis: f64,
}

/// What the server runs on.
pub struct Deps {
    /// The store holding sessions (runs) and created agents.
    pub store: Arc<dyn Store>,
    /// Its writer, shared by every session's turns.
    pub writer: WriterHandle,
    /// Models, services and limits of every turn (run id, query, inputs, user and stop
    /// signal are set per turn).
    pub config: RunConfig,
    /// Checks and compiles canvases.
    pub canvases: Arc<dyn Canvases>,
    /// The canvases of the served directory, as read-only agents.
    pub served: Vec<FileAgent>,
    /// Stored with every new session's run: the options `canvas resume` uses for it.
    pub options: Option<Value>,
    /// Told of every request once it is answered.
    pub access: Arc<dyn Fn(&Access) + Send + Sync>,
}

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listener failed.
    #[error("the server failed: {0}")]
    Io(#[from] std::io::Error),
}

/// The server's state, shared by every request.
pub(crate) struct App {
    settings: Settings,
    deps: Deps,
    /// This process's lease on the sessions it runs (their holder, lifetime, and which
    /// it holds now).
    lease: Lease,
    /// Compiled canvases by hash (a session runs its stored copy).
    compiled: Mutex<HashMap<String, Arc<Canvas>>>,
    /// Sessions whose turn runs in this process, with their stop signals.
    active: Mutex<HashMap<String, StopSignal>>,
    /// Shutting down: no new turn starts.
    stopping: AtomicBool,
    /// Digests of the API keys (compared in constant time).
    keys: Vec<[u8; 32]>,
}

impl App {
    fn store(&self) -> &dyn Store {
        self.deps.store.as_ref()
    }

    /// Call the store from async code (in place for a local file, else with the
    /// thread's other tasks handed over first).
    fn call<T>(&self, f: impl FnOnce(&dyn Store) -> T) -> T {
        canvas_store::call(self.store(), || f(self.store()))
    }

    /// The compiled canvas of a stored text (cached by hash).
    fn compiled(&self, label: &str, hash: &str, text: &str) -> Result<Arc<Canvas>, ApiError> {
        let lock = || self.compiled.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = lock().get(hash) {
            return Ok(Arc::clone(c));
        }
        let canvas = self
            .deps
            .canvases
            .compile(label, text)
            .map_err(ApiError::exception)?;
        let canvas = Arc::new(canvas);
        lock().insert(hash.to_string(), Arc::clone(&canvas));
        Ok(canvas)
    }

    fn active(&self) -> std::sync::MutexGuard<'_, HashMap<String, StopSignal>> {
        self.active.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stop every turn under way at its next node boundary (they stay resumable).
    fn stop_all(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        for stop in self.active().values() {
            stop.request(StopReason::Interrupted);
        }
    }

    /// Renew the leases of the sessions under way; one another process took is stopped
    /// (it is that process's now).
    async fn renew(self: Arc<Self>) {
        let every = (self.settings.lease / 3).max(Duration::from_millis(50));
        loop {
            tokio::time::sleep(every).await;
            let runs: Vec<(String, StopSignal)> = self
                .active()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            for (run_id, stop) in runs {
                // Only a lease a drive holds now: one just let go of is not taken again.
                let renewed = self.lease.held.while_held(&run_id, || {
                    self.call(|st| st.renew_lease(&run_id, &self.lease.owner, self.lease.ttl))
                });
                if let Some(Err(e)) = renewed {
                    tracing::warn!(run_id, error = %e, "a session's lease was lost");
                    stop.request(StopReason::Cancelled);
                }
            }
        }
    }

    /// Whether `headers` carry one of the API keys.
    fn authorized(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let unauthorized =
            |m: &str| ApiError::http(StatusCode::UNAUTHORIZED, code::AUTHENTICATION_ERROR, m);
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Err(unauthorized("`Authorization` can't be empty"));
        };
        let value = value.to_str().unwrap_or_default();
        let mut parts = value.split_whitespace();
        let (Some(_scheme), Some(token)) = (parts.next(), parts.next()) else {
            return Err(unauthorized("Please check your authorization format."));
        };
        let given: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        // Every key is compared, each in constant time (digests: no length leaks).
        let mut found = false;
        for key in &self.keys {
            found |= same(key, &given);
        }
        if found {
            Ok(())
        } else {
            Err(unauthorized("Authentication error: API key is invalid!"))
        }
    }
}

/// Constant-time equality of two digests.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// Serve the API on `listener` until `shutdown` completes; then stop the turns under way
/// at their next node boundary (each stored, resumable), finish their responses, and
/// return once every turn has let go of its session.
pub async fn serve(
    listener: tokio::net::TcpListener,
    settings: Settings,
    deps: Deps,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let keys = settings
        .keys
        .iter()
        .map(|k| Sha256::digest(k.as_bytes()).into())
        .collect();
    let app = Arc::new(App {
        deps,
        lease: Lease {
            owner: canvas_store::lease_holder(),
            ttl: settings.lease,
            held: Default::default(),
        },
        compiled: Mutex::default(),
        active: Mutex::default(),
        stopping: AtomicBool::new(false),
        keys,
        settings,
    });
    let renewer = tokio::spawn(Arc::clone(&app).renew());
    let stopper = Arc::clone(&app);
    let served = axum::serve(listener, router(Arc::clone(&app)))
        .with_graceful_shutdown(async move {
            shutdown.await;
            tracing::info!("shutting down: the turns under way stop at their next node boundary");
            stopper.stop_all();
        })
        .await;
    // Turns whose client is gone still finish their last write.
    let deadline = Instant::now() + app.settings.timeout;
    while !app.active().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    renewer.abort();
    served.map_err(ServeError::Io)
}

/// Every route, behind the key check (but `/healthz`), the body limit, the timeout, the
/// access log and the panic catcher.
fn router(app: Arc<App>) -> Router {
    layered(api(), app)
}

/// The API's routes.
fn api() -> Router<Arc<App>> {
    Router::new()
        .route("/api/v1/agents", get(catalog::list).post(catalog::create))
        .route(
            "/api/v1/agents/{agent_id}",
            get(catalog::get_one)
                .put(catalog::update)
                .delete(catalog::remove),
        )
        .route(
            "/api/v1/agents/{agent_id}/sessions",
            get(sessions::list)
                .post(sessions::create)
                .delete(sessions::remove),
        )
        .route(
            "/api/v1/agents/{agent_id}/sessions/{session_id}",
            get(sessions::get_one).delete(sessions::remove_one),
        )
        .route("/api/v1/agents/{agent_id}/completions", post(complete::sdk))
        .route("/api/v1/agents/chat/completions", post(complete::chat))
        .route(
            "/api/v1/agents_openai/{agent_id}/chat/completions",
            post(complete::openai),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(not_allowed)
}

/// `api` behind the key check, with `/healthz`, the body limit, the timeout, the access
/// log and the panic catcher.
fn layered(api: Router<Arc<App>>, app: Arc<App>) -> Router {
    let api = api.layer(middleware::from_fn_with_state(Arc::clone(&app), auth));
    Router::new()
        .route("/healthz", get(healthz))
        .merge(api)
        .layer(DefaultBodyLimit::max(app.settings.body_limit))
        .layer(middleware::from_fn_with_state(Arc::clone(&app), access))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(panicked))
        .with_state(app)
}

async fn healthz(State(app): State<Arc<App>>) -> Response {
    let store = app.call(|st| st.count_runs(None));
    let stopping = app.stopping.load(Ordering::SeqCst);
    let (status, ok) = match (&store, stopping) {
        (Ok(_), false) => (StatusCode::OK, true),
        _ => (StatusCode::SERVICE_UNAVAILABLE, false),
    };
    let body = serde_json::json!({
        "ok": ok,
        "store": store.as_ref().map(|_| "ok".to_string()).unwrap_or_else(|e| e.to_string()),
        "stopping": stopping,
        "sessions_running": app.active().len(),
    });
    (status, axum::Json(body)).into_response()
}

async fn not_found(req: Request) -> ApiError {
    ApiError::http(
        StatusCode::NOT_FOUND,
        code::NOT_FOUND,
        format!("Not found: {} {}", req.method(), req.uri().path()),
    )
}

async fn not_allowed(req: Request) -> ApiError {
    ApiError::http(
        StatusCode::METHOD_NOT_ALLOWED,
        code::NOT_FOUND,
        format!("Method not allowed: {} {}", req.method(), req.uri().path()),
    )
}

/// No key, no access.
async fn auth(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    match app.authorized(req.headers()) {
        Ok(()) => next.run(req).await,
        Err(e) => e.into_response(),
    }
}

/// The request timeout and the access log.
async fn access(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let res = match tokio::time::timeout(app.settings.timeout, next.run(req)).await {
        Ok(r) => r,
        Err(_) => ApiError::http(
            StatusCode::GATEWAY_TIMEOUT,
            code::TIMEOUT,
            "The request took too long.",
        )
        .into_response(),
    };
    (app.deps.access)(&Access {
        method,
        path,
        status: res.status().as_u16(),
        millis: started.elapsed().as_secs_f64() * 1e3,
    });
    res
}

/// A handler that panicked answers 500 in RAGFlow's shape; the server goes on.
fn panicked(err: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let what = err
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| err.downcast_ref::<&str>().copied())
        .unwrap_or("a handler panicked");
    tracing::error!(panic = what, "a request failed");
    ApiError::http(
        StatusCode::INTERNAL_SERVER_ERROR,
        code::SERVER_ERROR,
        "Internal server error.",
    )
    .into_response()
}

/// Now, in Unix seconds.
pub(crate) fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// RAGFlow's time fields: milliseconds, and an HTTP date.
pub(crate) fn times(prefix: &str, secs: f64, out: &mut canvas_pyrt::Object) {
    let ms = (secs * 1000.0).round() as i64;
    out.insert(format!("{prefix}_time"), Value::from(ms));
    let date = chrono::DateTime::from_timestamp_millis(ms)
        .map(|d| d.format("%a, %d %b %Y %H:%M:%S GMT").to_string())
        .unwrap_or_default();
    out.insert(format!("{prefix}_date"), Value::from(date));
}

/// A new id in RAGFlow's form (32 hex digits), sorting by time.
pub(crate) fn new_id() -> String {
    format!("{:032x}", ulid::Ulid::new().0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use tower::ServiceExt;

    struct NoCanvases;

    impl Canvases for NoCanvases {
        fn admit(&self, _: &str, _: &str) -> Result<Canvas, String> {
            Err("no canvases here".into())
        }
        fn compile(&self, _: &str, _: &str) -> Result<Canvas, String> {
            Err("no canvases here".into())
        }
        fn document(&self, _: &str) -> Option<Value> {
            None
        }
    }

    fn app() -> Arc<App> {
        let store: Arc<dyn Store> = Arc::new(canvas_store::SqliteStore::open_in_memory().unwrap());
        let (writer, _) = canvas_store::writer::spawn(Arc::clone(&store));
        let settings = Settings {
            keys: vec!["k".into()],
            body_limit: 1 << 10,
            timeout: Duration::from_secs(5),
            lease: Duration::from_secs(5),
            busy_wait: Duration::from_millis(10),
        };
        Arc::new(App {
            lease: Lease {
                owner: "test".into(),
                ttl: settings.lease,
                held: Default::default(),
            },
            keys: vec![Sha256::digest(b"k").into()],
            settings,
            deps: Deps {
                store,
                writer,
                config: RunConfig::default(),
                canvases: Arc::new(NoCanvases),
                served: Vec::new(),
                options: None,
                access: Arc::new(|_: &Access| {}),
            },
            compiled: Mutex::default(),
            active: Mutex::default(),
            stopping: AtomicBool::new(false),
        })
    }

    async fn get(router: &Router, path: &str) -> (StatusCode, Value) {
        let req = Request::get(path)
            .header(header::AUTHORIZATION, "Bearer k")
            .body(Body::empty())
            .unwrap();
        let res = router.clone().oneshot(req).await.unwrap();
        let status = res.status();
        let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
            .await
            .unwrap();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_handler_that_panics_answers_500_and_the_server_goes_on() {
        let routes = api().route(
            "/boom",
            axum::routing::get(|| async {
                if std::hint::black_box(true) {
                    panic!("a bug");
                }
            }),
        );
        let router = layered(routes, app());
        let (status, body) = get(&router, "/boom").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body["code"], 500);
        assert!(
            !body.to_string().contains("a bug"),
            "no trace leaks: {body}"
        );
        let (status, body) = get(&router, "/api/v1/agents").await;
        assert_eq!(
            (status, body["code"].clone()),
            (StatusCode::OK, Value::from(0))
        );
    }

    #[test]
    fn digests_compare_whole() {
        let a: [u8; 32] = Sha256::digest(b"key").into();
        let b: [u8; 32] = Sha256::digest(b"kez").into();
        assert!(same(&a, &a));
        assert!(!same(&a, &b));
    }
}
