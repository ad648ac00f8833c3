//! Sessions: each is a stored run of an agent's canvas (the session id is the run id),
//! its messages the questions and answers of the run's turns. RAGFlow's
//! `/api/v1/agents/{agent_id}/sessions` endpoints (`api/apps/sdk/session.py`).

use std::sync::Arc;

use axum::extract::{Path, State};
use canvas_engine::Canvas;
use canvas_pyrt::Object;
use canvas_store::{RunRecord, RunStatus, SessionQuery, SessionRecord, StoreError};
use serde_json::{Value, json};

use super::body::{JsonBody, Params, opt_str, truthy};
use super::catalog::{Agent, page};
use super::reply::{ApiError, Reply, ok, ok_empty, ok_json};
use super::{App, times};

/// Begin's greeting when its `prologue` is not set (RAGFlow's `BeginParam`).
const DEFAULT_PROLOGUE: &str = "Hi! I'm your smart assistant. What can I do for you?";

impl App {
    /// Store a new session of `agent` for `user_id`: a run without a turn yet.
    pub(crate) fn new_session(
        &self,
        agent: &Agent,
        user_id: &str,
    ) -> Result<(RunRecord, SessionRecord), ApiError> {
        let mut rec = RunRecord::new(agent.source.clone(), agent.text.clone());
        // Nothing to continue: the first question starts its first turn.
        rec.status = RunStatus::Succeeded;
        rec.options = self.deps.options.clone();
        // Compiled (and cached) now: a canvas that cannot run fails here, not later.
        self.compiled(&agent.title, &rec.canvas_hash, &rec.canvas)?;
        self.call(|st| st.create_session(&rec, &agent.id, user_id))?;
        tracing::info!(session = %rec.id, agent = %agent.id, "session created");
        let sess = SessionRecord {
            run_id: rec.id.clone(),
            agent_id: agent.id.clone(),
            user_id: user_id.to_string(),
            created_at: rec.created_at,
        };
        Ok((rec, sess))
    }

    /// A session and its run, when it belongs to `agent_id`.
    pub(crate) fn session_of(
        &self,
        agent_id: &str,
        session_id: &str,
    ) -> Result<Option<(SessionRecord, RunRecord)>, ApiError> {
        let Some(sess) = self.call(|st| st.session(session_id))? else {
            return Ok(None);
        };
        if sess.agent_id != agent_id {
            return Ok(None);
        }
        match self.call(|st| st.find_run(&sess.run_id)) {
            Ok(run) => Ok(Some((sess, run))),
            Err(StoreError::NotFound(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// A session as RAGFlow lists it: its messages (the greeting, then each turn's
    /// question and answer), and its canvas when `dsl`.
    fn session_json(
        &self,
        sess: &SessionRecord,
        run: &RunRecord,
        dsl: bool,
    ) -> Result<Value, ApiError> {
        let canvas = self.compiled(&run.source, &run.canvas_hash, &run.canvas)?;
        let mut messages = vec![json!({"role": "assistant", "content": prologue(&canvas)})];
        let turns = self.call(|st| st.turns(&run.id))?;
        for t in &turns {
            let events = self.call(|st| st.events_of_turn(&run.id, t.turn))?;
            let (id, answer) = answer_of(&events);
            messages.push(json!({"role": "user", "content": t.query, "id": id}));
            messages.push(json!({
                "role": "assistant",
                "content": answer,
                "created_at": t.ended_at.unwrap_or(t.started_at),
                "id": id,
            }));
        }
        let mut o = Object::new();
        o.insert("id".into(), json!(run.id));
        o.insert("agent_id".into(), json!(sess.agent_id));
        o.insert("user_id".into(), json!(sess.user_id));
        o.insert("source".into(), json!("agent"));
        o.insert("messages".into(), Value::Array(messages));
        o.insert("round".into(), json!(turns.len()));
        o.insert("status".into(), json!(run.status.as_str()));
        o.insert("errors".into(), json!(run.error));
        if dsl {
            o.insert(
                "dsl".into(),
                self.deps
                    .canvases
                    .document(&run.canvas)
                    .unwrap_or(Value::Null),
            );
        }
        times("create", sess.created_at, &mut o);
        times("update", run.updated_at, &mut o);
        Ok(Value::Object(o))
    }
}

/// The greeting Begin shows.
pub(crate) fn prologue(canvas: &Canvas) -> String {
    canvas
        .node("begin")
        .and_then(|b| b.params.get("prologue"))
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_PROLOGUE)
        .to_string()
}

/// A turn's message id and answer: its `message` events' text, the reasoning between
/// `<think>` tags, as RAGFlow keeps it.
pub(crate) fn answer_of(events: &[String]) -> (String, String) {
    let mut id = String::new();
    let mut text = String::new();
    for line in events {
        let Ok(ev) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if id.is_empty() {
            id = ev["message_id"].as_str().unwrap_or_default().to_string();
        }
        if ev["event"] != "message" {
            continue;
        }
        let d = &ev["data"];
        match &d["content"] {
            Value::String(s) => text.push_str(s),
            Value::Null => {}
            other => text.push_str(&other.to_string()),
        }
        if d["start_to_think"] == true {
            text.push_str("<think>");
        } else if d["end_to_think"] == true {
            text.push_str("</think>");
        }
    }
    (id, text)
}

/// `POST /api/v1/agents/{agent_id}/sessions`: `user_id`.
pub(crate) async fn create(
    State(app): State<Arc<App>>,
    Path(agent_id): Path<String>,
    JsonBody(req): JsonBody,
) -> Reply {
    let Some(agent) = app.agent(&agent_id)? else {
        return Err(ApiError::data("You cannot access the agent."));
    };
    let user_id = opt_str(&req, "user_id")?.unwrap_or_default();
    let (rec, _) = app.new_session(&agent, &user_id)?;
    let canvas = app.compiled(&agent.title, &rec.canvas_hash, &rec.canvas)?;
    Ok(ok(json!({
        "id": rec.id,
        "agent_id": agent.id,
        "user_id": user_id,
        "message": [{"role": "assistant", "content": prologue(&canvas)}],
        "source": "agent",
        "dsl": agent.dsl,
    })))
}

/// `GET /api/v1/agents/{agent_id}/sessions`: `page`, `page_size`, `desc`, `id`,
/// `user_id`, `dsl`.
pub(crate) async fn list(
    State(app): State<Arc<App>>,
    Path(agent_id): Path<String>,
    Params(q): Params,
) -> Reply {
    if app.agent(&agent_id)?.is_none() {
        return Err(ApiError::data(format!(
            "You don't own the agent {agent_id}."
        )));
    }
    let (offset, limit) = page(&q)?;
    let falsy = |k: &str| q.get(k).is_some_and(|v| v == "False" || v == "false");
    let query = SessionQuery {
        id: q.get("id").map(String::as_str).filter(|s| !s.is_empty()),
        user_id: q
            .get("user_id")
            .map(String::as_str)
            .filter(|s| !s.is_empty()),
        // RAGFlow orders by `update_time` unless told `create_time` (as agents are).
        by_update: q.get("orderby").is_none_or(|o| o != "create_time"),
        desc: !falsy("desc"),
        offset: offset as u64,
        limit: limit as u64,
    };
    let found = app.call(|st| st.sessions(&agent_id, &query))?;
    let mut out = Vec::with_capacity(found.len());
    for sess in found {
        let run = match app.call(|st| st.find_run(&sess.run_id)) {
            Ok(r) => r,
            // Deleted meanwhile.
            Err(StoreError::NotFound(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        out.push(app.session_json(&sess, &run, !falsy("dsl"))?);
    }
    Ok(ok(Value::Array(out)))
}

/// `GET /api/v1/agents/{agent_id}/sessions/{session_id}`.
pub(crate) async fn get_one(
    State(app): State<Arc<App>>,
    Path((agent_id, session_id)): Path<(String, String)>,
) -> Reply {
    match app.session_of(&agent_id, &session_id)? {
        Some((sess, run)) => Ok(ok_json(app.session_json(&sess, &run, true)?)),
        None => Err(ApiError::data("Session not found!")),
    }
}

/// `DELETE /api/v1/agents/{agent_id}/sessions`: `ids`, or `delete_all`.
pub(crate) async fn remove(
    State(app): State<Arc<App>>,
    Path(agent_id): Path<String>,
    JsonBody(req): JsonBody,
) -> Reply {
    if app.agent(&agent_id)?.is_none() {
        return Err(ApiError::data(format!(
            "You don't own the agent {agent_id}"
        )));
    }
    let ids: Vec<String> = match req.get("ids") {
        Some(Value::Array(a)) if !a.is_empty() => a
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        Some(v) if !v.is_null() && !v.is_array() => {
            return Err(ApiError::argument("`ids` must be a list."));
        }
        _ if truthy(&req, "delete_all", false) && req["delete_all"] == true => {
            let all = SessionQuery {
                id: None,
                user_id: None,
                by_update: false,
                desc: false,
                offset: 0,
                limit: u64::MAX,
            };
            let found = app.call(|st| st.sessions(&agent_id, &all))?;
            found.into_iter().map(|s| s.run_id).collect()
        }
        _ => return Ok(ok_empty()),
    };
    let mut unique: Vec<String> = Vec::new();
    let mut duplicates: Vec<String> = Vec::new();
    for id in ids {
        if unique.contains(&id) {
            duplicates.push(format!("Duplicate session ids: {id}"));
        } else {
            unique.push(id);
        }
    }
    let mut errors = Vec::new();
    let mut deleted = 0usize;
    for id in &unique {
        if app.session_of(&agent_id, id)?.is_none() {
            errors.push(format!("The agent doesn't own the session {id}"));
            continue;
        }
        if app.call(|st| st.delete_runs(std::slice::from_ref(id)))? == 0 {
            errors.push(format!(
                "The session {id} is answering a question; try again later"
            ));
            continue;
        }
        deleted += 1;
    }
    let partial = |errs: Vec<String>| {
        axum::response::IntoResponse::into_response(axum::Json(json!({
            "code": 0,
            "message": format!("Partially deleted {deleted} sessions with {} errors", errs.len()),
            "data": {"success_count": deleted, "errors": errs},
        })))
    };
    if !errors.is_empty() {
        if deleted > 0 {
            return Ok(partial(errors));
        }
        return Err(ApiError::data(errors.join("; ")));
    }
    if !duplicates.is_empty() {
        if deleted > 0 {
            return Ok(partial(duplicates));
        }
        return Err(ApiError::data(duplicates.join(";")));
    }
    Ok(ok_empty())
}

/// `DELETE /api/v1/agents/{agent_id}/sessions/{session_id}`.
pub(crate) async fn remove_one(
    State(app): State<Arc<App>>,
    Path((agent_id, session_id)): Path<(String, String)>,
) -> Reply {
    if app.session_of(&agent_id, &session_id)?.is_none() {
        return Err(ApiError::data("Session not found!"));
    }
    let n = app.call(|st| st.delete_runs(std::slice::from_ref(&session_id)))?;
    Ok(ok_json(Value::Bool(n > 0)))
}
