//! `canvas serve`'s agents and sessions, the same on every backend ([`Agents`]).

use crate::testkit::{Fixture, on_both};
use crate::{AgentChange, AgentRecord, RunRecord, SessionQuery, StoreError};

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

fn agents_are_created_changed_and_deleted(f: &Fixture) {
    let s = f.store();
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

fn sessions_are_runs_and_go_with_them(f: &Fixture) {
    let s = f.store();
    let mut runs = Vec::new();
    for (i, user) in ["ada", "bob", "ada"].into_iter().enumerate() {
        let mut rec = RunRecord::new("agent", "{}");
        rec.created_at = i as f64;
        rec.updated_at = i as f64;
        rec.status = crate::RunStatus::Succeeded;
        s.create_session(&rec, "a1", user).unwrap();
        runs.push(rec.id);
    }
    let q = SessionQuery {
        id: None,
        user_id: Some("ada"),
        by_update: false,
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
    // A session that changes last comes first by last change, still last by creation.
    s.begin_turn(
        &runs[0],
        crate::TurnKind::Start,
        "hi",
        &serde_json::json!({}),
    )
    .unwrap();
    let order = |by_update| -> Vec<String> {
        let q = SessionQuery {
            user_id: None,
            by_update,
            offset: 0,
            limit: 10,
            ..q
        };
        s.sessions("a1", &q)
            .unwrap()
            .into_iter()
            .map(|x| x.run_id)
            .collect()
    };
    assert_eq!(
        order(true),
        [runs[0].clone(), runs[2].clone(), runs[1].clone()]
    );
    assert_eq!(
        order(false),
        [runs[2].clone(), runs[1].clone(), runs[0].clone()]
    );
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

on_both!(
    agents_are_created_changed_and_deleted,
    sessions_are_runs_and_go_with_them,
);
