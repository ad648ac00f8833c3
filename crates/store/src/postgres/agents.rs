//! [`Agents`] on the PostgreSQL store: `agents` and `sessions` (schema 3), as SQLite's
//! schema 8 has them. Several `canvas serve` instances share them: a session started on
//! one is continued on another.

use postgres::Row;
use postgres::error::SqlState;

use super::{PgRows, PgStore, col, insert_run, pg_err};
use crate::agents::{AgentChange, AgentRecord, Agents, SessionQuery, SessionRecord};
use crate::record::RawTurn;
use crate::rows::Rows;

use crate::{Result, RunRecord, StoreError, TurnRecord, unix_now};

const AGENT_FIELDS: &str = "id, title, description, dsl, created_at, updated_at";

fn read_agent(r: &Row) -> Result<AgentRecord> {
    Ok(AgentRecord {
        id: col(r, 0)?,
        title: col(r, 1)?,
        description: col(r, 2)?,
        dsl: col(r, 3)?,
        created_at: col(r, 4)?,
        updated_at: col(r, 5)?,
    })
}

fn read_session(r: &Row) -> Result<SessionRecord> {
    Ok(SessionRecord {
        run_id: col(r, 0)?,
        agent_id: col(r, 1)?,
        user_id: col(r, 2)?,
        created_at: col(r, 3)?,
    })
}

/// A title taken by another agent, as its own error; any other failure with `what`.
fn agent_err(what: &str, title: &str, e: postgres::Error) -> StoreError {
    if e.code() == Some(&SqlState::UNIQUE_VIOLATION) {
        return StoreError::Duplicate(format!("an agent titled \"{title}\" already exists"));
    }
    pg_err(what, e)
}

impl Agents for PgStore {
    fn create_agent(&self, a: &AgentRecord) -> Result<()> {
        let mut c = self.pool.get()?;
        c.execute(
            "INSERT INTO agents (id, title, description, dsl, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &a.id,
                &a.title,
                &a.description,
                &a.dsl,
                &a.created_at,
                &a.updated_at,
            ],
        )
        .map_err(|e| agent_err("storing the agent", &a.title, e))?;
        Ok(())
    }

    fn agents(&self) -> Result<Vec<AgentRecord>> {
        let mut c = self.pool.get()?;
        let q = format!("SELECT {AGENT_FIELDS} FROM agents ORDER BY created_at, id");
        c.query(&q, &[])
            .map_err(|e| pg_err("listing the agents", e))?
            .iter()
            .map(read_agent)
            .collect()
    }

    fn agent(&self, id: &str) -> Result<Option<AgentRecord>> {
        let mut c = self.pool.get()?;
        let q = format!("SELECT {AGENT_FIELDS} FROM agents WHERE id = $1");
        c.query_opt(&q, &[&id])
            .map_err(|e| pg_err("reading the agent", e))?
            .map(|r| read_agent(&r))
            .transpose()
    }

    fn update_agent(&self, id: &str, ch: &AgentChange) -> Result<bool> {
        let mut c = self.pool.get()?;
        let n = c
            .execute(
                "UPDATE agents SET title = coalesce($2, title),
                    description = coalesce($3, description), dsl = coalesce($4, dsl),
                    updated_at = $5
                 WHERE id = $1",
                &[&id, &ch.title, &ch.description, &ch.dsl, &unix_now()],
            )
            .map_err(|e| agent_err("updating the agent", ch.title.as_deref().unwrap_or(""), e))?;
        Ok(n > 0)
    }

    fn delete_agent(&self, id: &str) -> Result<bool> {
        let mut c = self.pool.get()?;
        let n = c
            .execute("DELETE FROM agents WHERE id = $1", &[&id])
            .map_err(|e| pg_err("deleting the agent", e))?;
        Ok(n > 0)
    }

    fn create_session(&self, run: &RunRecord, agent_id: &str, user_id: &str) -> Result<()> {
        let ctx = format!("storing the session (run {})", run.id);
        self.tx(&ctx, |tx| {
            insert_run(
                &mut PgRows::new(tx, "creating the run"),
                &ctx,
                run,
                run.turns,
                run.status,
            )?;
            tx.execute(
                "INSERT INTO sessions (run_id, agent_id, user_id, created_at)
                 VALUES ($1, $2, $3, $4)",
                &[&run.id, &agent_id, &user_id, &run.created_at],
            )
            .map_err(|e| pg_err(&ctx, e))?;
            Ok(())
        })
    }

    fn session(&self, run_id: &str) -> Result<Option<SessionRecord>> {
        let mut c = self.pool.get()?;
        c.query_opt(
            "SELECT run_id, agent_id, user_id, created_at FROM sessions WHERE run_id = $1",
            &[&run_id],
        )
        .map_err(|e| pg_err("reading the session", e))?
        .map(|r| read_session(&r))
        .transpose()
    }

    fn sessions(&self, agent_id: &str, q: &SessionQuery<'_>) -> Result<Vec<SessionRecord>> {
        let mut c = self.pool.get()?;
        let order = if q.desc { "DESC" } else { "ASC" };
        let key = if q.by_update {
            "COALESCE(r.updated_at, s.created_at)"
        } else {
            "s.created_at"
        };
        let sql = format!(
            "SELECT s.run_id, s.agent_id, s.user_id, s.created_at
             FROM sessions s LEFT JOIN runs r ON r.id = s.run_id
             WHERE s.agent_id = $1 AND ($2::text IS NULL OR s.run_id = $2)
               AND ($3::text IS NULL OR s.user_id = $3)
             ORDER BY {key} {order}, s.run_id {order} LIMIT $4 OFFSET $5"
        );
        let limit = i64::try_from(q.limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(q.offset).unwrap_or(i64::MAX);
        c.query(&sql, &[&agent_id, &q.id, &q.user_id, &limit, &offset])
            .map_err(|e| pg_err("listing the sessions", e))?
            .iter()
            .map(read_session)
            .collect()
    }

    fn turns(&self, run_id: &str) -> Result<Vec<TurnRecord>> {
        let ctx = format!("reading the turns (run {run_id})");
        let mut c = self.pool.get()?;
        let rows = c
            .query(
                "SELECT turn, kind, query, inputs, started_at, ended_at, status FROM turns
                 WHERE run_id = $1 ORDER BY turn",
                &[&run_id],
            )
            .map_err(|e| pg_err(&ctx, e))?;
        if rows.is_empty() && !PgRows::new(&mut *c, "reading the turns").run_exists(run_id)? {
            return Err(StoreError::NotFound(run_id.to_string()));
        }
        rows.iter()
            .map(|r| {
                RawTurn {
                    turn: col(r, 0)?,
                    kind: col(r, 1)?,
                    query: col(r, 2)?,
                    inputs: col(r, 3)?,
                    started_at: col(r, 4)?,
                    ended_at: col(r, 5)?,
                    status: col(r, 6)?,
                }
                .into_record(run_id)
            })
            .collect()
    }
}
