//! [`Agents`] on the SQLite store: `agents` and `sessions` (schema 8).

use rusqlite::{OptionalExtension, Row, params};

use super::agents::{AgentChange, AgentRecord, Agents, SessionQuery, SessionRecord};
use super::schema::sql;
use super::{Result, RunRecord, SqliteStore, StoreError, TurnRecord, unix_now};

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
        let sql_text = format!(
            "SELECT run_id, agent_id, user_id, created_at FROM sessions
             WHERE agent_id = ?1 AND (?2 IS NULL OR run_id = ?2) AND (?3 IS NULL OR user_id = ?3)
             ORDER BY created_at {order}, run_id {order} LIMIT ?4 OFFSET ?5"
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
        self.read_turns(run_id, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;

    fn store() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(dir.path().join("s.db")).unwrap();
        (dir, s)
    }

    fn agent(id: &str, title: &str) -> AgentRecord {
        AgentRecord {
            id: id.into(),
            title: title.into(),
            description: None,
            dsl: "{}".into(),
            created_at: 1.0,
            updated_at: 1.0,
        }
    }

    #[test]
    fn agents_are_created_changed_and_deleted() {
        let (_d, s) = store();
        s.create_agent(&agent("a1", "Support")).unwrap();
        let dup = s.create_agent(&agent("a2", "Support")).unwrap_err();
        assert!(matches!(dup, StoreError::Duplicate(_)), "{dup}");
        s.create_agent(&agent("a2", "Sales")).unwrap();
        let change = AgentChange {
            description: Some("answers".into()),
            ..AgentChange::default()
        };
        assert!(s.update_agent("a2", &change).unwrap());
        let got = s.agent("a2").unwrap().unwrap();
        assert_eq!(
            (got.title.as_str(), got.description.as_deref()),
            ("Sales", Some("answers"))
        );
        let clash = AgentChange {
            title: Some("Support".into()),
            ..AgentChange::default()
        };
        assert!(matches!(
            s.update_agent("a2", &clash),
            Err(StoreError::Duplicate(_))
        ));
        assert!(!s.update_agent("nope", &change).unwrap());
        assert!(s.delete_agent("a1").unwrap());
        assert!(!s.delete_agent("a1").unwrap());
        let ids: Vec<String> = s.agents().unwrap().into_iter().map(|a| a.id).collect();
        assert_eq!(ids, ["a2"]);
    }

    #[test]
    fn sessions_are_runs_and_go_with_them() {
        let (_d, s) = store();
        let mut runs = Vec::new();
        for (i, user) in ["ada", "bob", "ada"].into_iter().enumerate() {
            let mut rec = RunRecord::new("agent", "{}");
            rec.created_at = i as f64;
            rec.status = crate::RunStatus::Succeeded;
            s.create_session(&rec, "a1", user).unwrap();
            runs.push(rec.id);
        }
        let q = SessionQuery {
            id: None,
            user_id: Some("ada"),
            desc: true,
            offset: 0,
            limit: 10,
        };
        let ada: Vec<String> = s
            .sessions("a1", &q)
            .unwrap()
            .into_iter()
            .map(|x| x.run_id)
            .collect();
        assert_eq!(ada, [runs[2].clone(), runs[0].clone()]);
        let page = SessionQuery {
            user_id: None,
            desc: false,
            offset: 1,
            limit: 1,
            ..q
        };
        let second: Vec<String> = s
            .sessions("a1", &page)
            .unwrap()
            .into_iter()
            .map(|x| x.run_id)
            .collect();
        assert_eq!(second, [runs[1].clone()]);
        assert_eq!(s.find_run(&runs[1]).unwrap().turns, 0);
        assert!(s.turns(&runs[1]).unwrap().is_empty());
        s.begin_turn(
            &runs[1],
            crate::TurnKind::Start,
            "hi",
            &serde_json::json!({}),
        )
        .unwrap();
        s.begin_turn(
            &runs[1],
            crate::TurnKind::Next,
            "more",
            &serde_json::json!({}),
        )
        .unwrap();
        let queries: Vec<String> = s
            .turns(&runs[1])
            .unwrap()
            .into_iter()
            .map(|t| t.query)
            .collect();
        assert_eq!(queries, ["hi", "more"]);
        s.set_status(&runs[1], crate::RunStatus::Succeeded, None, None)
            .unwrap();
        assert_eq!(s.delete_runs(&[runs[1].clone()]).unwrap(), 1);
        assert_eq!(s.session(&runs[1]).unwrap(), None);
        assert_eq!(s.session(&runs[0]).unwrap().unwrap().user_id, "ada");
    }
}
