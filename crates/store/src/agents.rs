//! Agents and sessions of `canvas serve`: the agents created through its API (a title,
//! a description and a canvas, kept as JSON), and which agent and user each session
//! serves. A session *is* a run (its id is the run's id): deleting the run deletes it.
//!
//! Canvases served from a directory are agents too, but they live in their files: only
//! the agents created through the API are stored here.

use serde::{Deserialize, Serialize};

use super::{Result, RunRecord, TurnRecord};

/// An agent created through the API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRecord {
    /// Its id (32 hex digits, as RAGFlow's).
    pub id: String,
    /// Its title, unique among stored agents.
    pub title: String,
    /// What it is for.
    pub description: Option<String>,
    /// The canvas, as JSON text.
    pub dsl: String,
    /// Creation time, Unix seconds.
    pub created_at: f64,
    /// Last change, Unix seconds.
    pub updated_at: f64,
}

/// What an update of an agent changes (`None`: left as it is).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentChange {
    /// A new title.
    pub title: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// A new canvas (JSON text).
    pub dsl: Option<String>,
}

/// A session: the run that holds it, the agent and the user it serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The run (and session) id.
    pub run_id: String,
    /// The agent it serves.
    pub agent_id: String,
    /// The user it was opened for (`""`: none given).
    pub user_id: String,
    /// Creation time, Unix seconds.
    pub created_at: f64,
}

/// Which sessions of an agent to list.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionQuery<'a> {
    /// Only this session.
    pub id: Option<&'a str>,
    /// Only this user's sessions.
    pub user_id: Option<&'a str>,
    /// By the run's last change (RAGFlow's `update_time`, its default), else by creation.
    pub by_update: bool,
    /// Newest first (else oldest first).
    pub desc: bool,
    /// Sessions skipped.
    pub offset: u64,
    /// Sessions returned at most.
    pub limit: u64,
}

/// Stored agents and sessions.
pub trait Agents {
    /// Store a new agent; [`crate::StoreError::Duplicate`] when its title is taken.
    fn create_agent(&self, agent: &AgentRecord) -> Result<()>;
    /// Every stored agent, oldest first.
    fn agents(&self) -> Result<Vec<AgentRecord>>;
    /// One stored agent.
    fn agent(&self, id: &str) -> Result<Option<AgentRecord>>;
    /// Change a stored agent; false when there is none with this id.
    /// [`crate::StoreError::Duplicate`] when the new title is another agent's.
    fn update_agent(&self, id: &str, change: &AgentChange) -> Result<bool>;
    /// Delete a stored agent (its sessions stay, as runs); false when there was none.
    fn delete_agent(&self, id: &str) -> Result<bool>;
    /// Store a new run without a turn, as a session of `agent_id` for `user_id`, in one
    /// transaction.
    fn create_session(&self, run: &RunRecord, agent_id: &str, user_id: &str) -> Result<()>;
    /// One session by its run id.
    fn session(&self, run_id: &str) -> Result<Option<SessionRecord>>;
    /// Sessions of an agent, by last change or creation time ([`SessionQuery`]).
    fn sessions(&self, agent_id: &str, query: &SessionQuery<'_>) -> Result<Vec<SessionRecord>>;
    /// Every turn of a run, in order (a session's questions).
    fn turns(&self, run_id: &str) -> Result<Vec<TurnRecord>>;
}
