//! Agents: the canvases of the served directory (read-only, by file name) and those
//! created through the API (in the store). RAGFlow's `/api/v1/agents` endpoints
//! (`api/apps/sdk/agent.py`), with its responses and error messages.

use std::sync::Arc;

use axum::extract::{Path, State};
use canvas_pyrt::Object;
use canvas_store::{AgentChange, AgentRecord, StoreError, canvas_hash};
use serde_json::{Value, json};
use std::collections::HashMap;

use super::body::{JsonBody, Params, opt_str};
use super::reply::{ApiError, Reply, ok, ok_json};
use super::{App, new_id, now, times};

/// A canvas of the served directory, served as a read-only agent.
#[derive(Debug, Clone)]
pub struct FileAgent {
    /// Its id: the file's name without its extension.
    pub id: String,
    /// Its title (the same).
    pub title: String,
    /// The file's path (runs are stored with it as their source).
    pub path: String,
    /// The canvas text as read (what its sessions run, and store).
    pub text: String,
    /// The canvas as JSON (the API's `dsl`).
    pub dsl: Value,
    /// The file's modification time, Unix seconds.
    pub modified: f64,
}

/// An agent, wherever it lives.
#[derive(Debug, Clone)]
pub(crate) struct Agent {
    pub id: String,
    pub title: String,
    pub description: Option<String>,
    /// The canvas text its new sessions run.
    pub text: String,
    /// Where runs say it came from.
    pub source: String,
    pub dsl: Value,
    pub created: f64,
    pub updated: f64,
    /// Served from a file.
    pub read_only: bool,
}

impl Agent {
    fn of_file(f: &FileAgent) -> Agent {
        Agent {
            id: f.id.clone(),
            title: f.title.clone(),
            description: None,
            text: f.text.clone(),
            source: f.path.clone(),
            dsl: f.dsl.clone(),
            created: f.modified,
            updated: f.modified,
            read_only: true,
        }
    }

    fn of_record(r: AgentRecord) -> Agent {
        let dsl = serde_json::from_str(&r.dsl).unwrap_or(Value::Null);
        Agent {
            source: format!("agent:{}", r.id),
            id: r.id,
            title: r.title,
            description: r.description,
            text: r.dsl,
            dsl,
            created: r.created_at,
            updated: r.updated_at,
            read_only: false,
        }
    }

    /// The agent as RAGFlow lists it (`UserCanvasService.get_list`).
    pub fn json(&self) -> Value {
        let mut o = Object::new();
        o.insert("id".into(), json!(self.id));
        o.insert("title".into(), json!(self.title));
        o.insert("description".into(), json!(self.description));
        o.insert("avatar".into(), Value::Null);
        o.insert("canvas_type".into(), Value::Null);
        o.insert("canvas_category".into(), json!("agent_canvas"));
        o.insert("permission".into(), json!("me"));
        o.insert("user_id".into(), json!(""));
        o.insert("dsl".into(), self.dsl.clone());
        times("create", self.created, &mut o);
        times("update", self.updated, &mut o);
        Value::Object(o)
    }
}

impl App {
    /// Every agent: the served files, then the stored ones.
    pub(crate) fn agents(&self) -> Result<Vec<Agent>, ApiError> {
        let mut all: Vec<Agent> = self.deps.served.iter().map(Agent::of_file).collect();
        let stored = self.call(|st| st.agents())?;
        all.extend(stored.into_iter().map(Agent::of_record));
        Ok(all)
    }

    /// One agent by id.
    pub(crate) fn agent(&self, id: &str) -> Result<Option<Agent>, ApiError> {
        if let Some(f) = self.deps.served.iter().find(|f| f.id == id) {
            return Ok(Some(Agent::of_file(f)));
        }
        Ok(self.call(|st| st.agent(id))?.map(Agent::of_record))
    }

    /// A canvas given to the API: checked and compiled, as JSON text.
    fn admit_dsl(&self, title: &str, dsl: &Value) -> Result<String, ApiError> {
        // RAGFlow takes the DSL as an object or as a JSON string.
        let doc = match dsl {
            Value::String(s) => serde_json::from_str::<Value>(s)
                .map_err(|e| ApiError::argument(format!("`dsl` is not JSON: {e}")))?,
            other => other.clone(),
        };
        if !doc.is_object() {
            return Err(ApiError::argument("`dsl` must be an object."));
        }
        let text = doc.to_string();
        let label = format!("agent \"{title}\"");
        let canvas = self
            .deps
            .canvases
            .admit(&label, &text)
            .map_err(ApiError::argument)?;
        let mut cache = self
            .compiled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache.insert(canvas_hash(&text), Arc::new(canvas));
        Ok(text)
    }
}

fn duplicate(e: StoreError) -> ApiError {
    match e {
        StoreError::Duplicate(m) => ApiError::data(m),
        other => other.into(),
    }
}

/// `GET /api/v1/agents`: `page`, `page_size`, `orderby`, `desc`, `id`, `title`.
pub(crate) async fn list(State(app): State<Arc<App>>, Params(q): Params) -> Reply {
    let id = q.get("id").filter(|s| !s.is_empty());
    let title = q.get("title").filter(|s| !s.is_empty());
    let mut all = app.agents()?;
    if id.is_some() || title.is_some() {
        all.retain(|a| id.is_none_or(|i| *i == a.id) && title.is_none_or(|t| *t == a.title));
        if all.is_empty() {
            return Err(ApiError::data("The agent doesn't exist."));
        }
    }
    let by_create = q.get("orderby").is_some_and(|o| o == "create_time");
    all.sort_by(|a, b| {
        let (x, y) = if by_create {
            (a.created, b.created)
        } else {
            (a.updated, b.updated)
        };
        x.total_cmp(&y).then_with(|| a.id.cmp(&b.id))
    });
    if !q.get("desc").is_some_and(|d| d == "False" || d == "false") {
        all.reverse();
    }
    let (offset, limit) = page(&q)?;
    let data: Vec<Value> = all
        .iter()
        .skip(offset)
        .take(limit)
        .map(Agent::json)
        .collect();
    Ok(ok(Value::Array(data)))
}

/// `page` (from 1) and `page_size` as an offset and a limit.
pub(crate) fn page(q: &HashMap<String, String>) -> Result<(usize, usize), ApiError> {
    let num = |key: &str, default: usize| -> Result<usize, ApiError> {
        match q.get(key).map(|s| s.trim()).filter(|s| !s.is_empty()) {
            None => Ok(default),
            Some(s) => s
                .parse::<usize>()
                .map_err(|_| ApiError::argument(format!("`{key}` must be a whole number."))),
        }
    };
    let page = num("page", 1)?.max(1);
    let size = num("page_size", 30)?;
    Ok(((page - 1).saturating_mul(size), size))
}

/// `GET /api/v1/agents/{agent_id}`.
pub(crate) async fn get_one(State(app): State<Arc<App>>, Path(id): Path<String>) -> Reply {
    match app.agent(&id)? {
        Some(a) => Ok(ok(a.json())),
        None => Err(ApiError::data("canvas not found.")),
    }
}

/// `POST /api/v1/agents`: `title`, `dsl`, `description`.
pub(crate) async fn create(State(app): State<Arc<App>>, JsonBody(req): JsonBody) -> Reply {
    let Some(dsl) = req.get("dsl").filter(|v| !v.is_null()) else {
        return Err(ApiError::argument("No DSL data in request."));
    };
    let Some(title) = opt_str(&req, "title")? else {
        return Err(ApiError::argument("No title in request."));
    };
    let title = title.trim().to_string();
    if app.agents()?.iter().any(|a| a.title == title) {
        return Err(ApiError::data(format!(
            "Agent with title {title} already exists."
        )));
    }
    let text = app.admit_dsl(&title, dsl)?;
    let t = now();
    let rec = AgentRecord {
        id: new_id(),
        title,
        description: opt_str(&req, "description")?,
        dsl: text,
        created_at: t,
        updated_at: t,
    };
    app.call(|st| st.create_agent(&rec)).map_err(duplicate)?;
    tracing::info!(agent = %rec.id, title = %rec.title, "agent created");
    Ok(ok_json(Value::Bool(true)))
}

/// `PUT /api/v1/agents/{agent_id}`: any of `title`, `dsl`, `description`.
pub(crate) async fn update(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    JsonBody(req): JsonBody,
) -> Reply {
    let agent = owned(&app, &id)?;
    let title = opt_str(&req, "title")?.map(|t| t.trim().to_string());
    if let Some(t) = &title {
        if app.agents()?.iter().any(|a| a.title == *t && a.id != id) {
            return Err(ApiError::data(format!(
                "Agent with title {t} already exists."
            )));
        }
    }
    let dsl = match req.get("dsl").filter(|v| !v.is_null()) {
        Some(d) => Some(app.admit_dsl(title.as_deref().unwrap_or(&agent.title), d)?),
        None => None,
    };
    let change = AgentChange {
        title,
        description: opt_str(&req, "description")?,
        dsl,
    };
    app.call(|st| st.update_agent(&id, &change))
        .map_err(duplicate)?;
    Ok(ok_json(Value::Bool(true)))
}

/// `DELETE /api/v1/agents/{agent_id}` (its sessions stay, as runs).
pub(crate) async fn remove(State(app): State<Arc<App>>, Path(id): Path<String>) -> Reply {
    owned(&app, &id)?;
    app.call(|st| st.delete_agent(&id))?;
    Ok(ok_json(Value::Bool(true)))
}

/// A stored agent this API may change.
fn owned(app: &App, id: &str) -> Result<Agent, ApiError> {
    match app.agent(id)? {
        Some(a) if a.read_only => Err(ApiError::operating(format!(
            "Agent {id} is served from a file and is read-only."
        ))),
        Some(a) => Ok(a),
        None => Err(ApiError::operating(
            "Only owner of canvas authorized for this operation.",
        )),
    }
}
