//! [`Agents`] on the SQLite store: `agents` and `sessions` (schema 8).

use rusqlite::{OptionalExtension, Row, params};

use super::SqliteStore;
use super::schema::sql;
use crate::agents::{AgentChange, AgentRecord, Agents, SessionQuery, SessionRecord};
use crate::{Result, RunRecord, StoreError, TurnRecord, unix_now};

const AGENT_FIELDS: &str = "id, title, description, dsl, created_at, updated_at";

fn read_agent(r: &Row<'_>) -> rusqlite::Result<AgentRecord> {
    Ok(AgentRecord {
        id: r.get(0)?,
        title: r.get(1)?,
        description: r.get(2)?,
        dsl: r.get(3)?,
        created_at: r.get(4)?,
        updated_at: r.get(5)?,
    })
}

fn read_session(r: &Row<'_>) -> rusqlite::Result<SessionRecord> {
    Ok(SessionRecord {
        run_id: r.get(0)?,
        agent_id: r.get(1)?,
        user_id: r.get(2)?,
        created_at: r.get(3)?,
    })
}

/// A title taken by another agent, as its own error; any other failure with `what`.
fn agent_err(what: &str, title: &str, e: rusqlite::Error) -> StoreError {
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation) {
        return StoreError::Duplicate(format!("an agent titled \"{title}\" already exists"));
    }
    sql(what, e)
}

impl Agents for SqliteStore {
    fn create_agent(&self, a: &AgentRecord) -> Result<()> {
        let g = self.lock();
        g.conn
            .execute(
                "INSERT INTO agents (id, title, description, dsl, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    a.id,
                    a.title,
                    a.description,
                    a.dsl,
                    a.created_at,
                    a.updated_at
                ],
            )
            .map_err(|e| agent_err("storing the agent", &a.title, e))?;
        Ok(())
    }

    fn agents(&self) -> Result<Vec<AgentRecord>> {
        let g = self.lock();
        let q = format!("SELECT {AGENT_FIELDS} FROM agents ORDER BY created_at, id");
        g.conn
            .prepare(&q)
            .and_then(|mut s| s.query_map([], read_agent)?.collect())
            .map_err(|e| sql("listing the agents", e))
    }

    fn agent(&self, id: &str) -> Result<Option<AgentRecord>> {
        let g = self.lock();
        let q = format!("SELECT {AGENT_FIELDS} FROM agents WHERE id = ?1");
        g.conn
            .query_row(&q, [id], read_agent)
            .optional()
            .map_err(|e| sql("reading the agent", e))
    }

    fn update_agent(&self, id: &str, c: &AgentChange) -> Result<bool> {
        let g = self.lock();
        let n = g
            .conn
            .execute(
                "UPDATE agents SET title = coalesce(?2, title),
                    description = coalesce(?3, description), dsl = coalesce(?4, dsl),
                    updated_at = ?5
                 WHERE id = ?1",
                params![id, c.title, c.description, c.dsl, unix_now()],
            )
            .map_err(|e| agent_err("updating the agent", c.title.as_deref().unwrap_or(""), e))?;
        Ok(n > 0)
    }

    fn delete_agent(&self, id: &str) -> Result<bool> {
        let g = self.lock();
        let n = g
            .conn
            .execute("DELETE FROM agents WHERE id = ?1", [id])
            .map_err(|e| sql("deleting the agent", e))?;
        Ok(n > 0)
    }

    fn create_session(&self, run: &RunRecord, agent_id: &str, user_id: &str) -> Result<()> {
        self.write_with_run(run, |tx| {
            tx.execute(
                "INSERT INTO sessions (run_id, agent_id, user_id, created_at)
                 VALUES (?1, ?2, ?3, ?4)",
                params![run.id, agent_id, user_id, run.created_at],
            )
            .map_err(|e| sql("storing the session", e))
            .map(drop)
        })
    }

    fn session(&self, run_id: &str) -> Result<Option<SessionRecord>> {
        let g = self.lock();
        g.conn
            .query_row(
                "SELECT run_id, agent_id, user_id, created_at FROM sessions WHERE run_id = ?1",
                [run_id],
                read_session,
            )
            .optional()
            .map_err(|e| sql("reading the session", e))
    }

    fn sessions(&self, agent_id: &str, q: &SessionQuery<'_>) -> Result<Vec<SessionRecord>> {
        let g = self.lock();
        let order = if q.desc { "DESC" } else { "ASC" };
        let key = if q.by_update {
            "COALESCE(r.updated_at, s.created_at)"
        } else {
            "s.created_at"
        };
        let sql_text = format!(
            "SELECT s.run_id, s.agent_id, s.user_id, s.created_at
             FROM sessions s LEFT JOIN runs r ON r.id = s.run_id
             WHERE s.agent_id = ?1 AND (?2 IS NULL OR s.run_id = ?2)
               AND (?3 IS NULL OR s.user_id = ?3)
             ORDER BY {key} {order}, s.run_id {order} LIMIT ?4 OFFSET ?5"
        );
        let limit = i64::try_from(q.limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(q.offset).unwrap_or(i64::MAX);
        g.conn
            .prepare(&sql_text)
            .and_then(|mut s| {
                s.query_map(
                    params![agent_id, q.id, q.user_id, limit, offset],
                    read_session,
                )?
                .collect()
            })
            .map_err(|e| sql("listing the sessions", e))
    }

    fn turns(&self, run_id: &str) -> Result<Vec<TurnRecord>> {
        self.all_turns(run_id)
    }
}
