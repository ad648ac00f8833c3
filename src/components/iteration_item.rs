//! IterationItem: one pass of an Iteration; collects the body's outputs of the
//! previous pass into the Iteration's outputs (`engine.md` §7.5).

use async_trait::async_trait;
use serde_json::{Value, json};

use super::iteration::not_a_list;
use crate::engine::value::{Object, truthy};
use crate::engine::{BuildError, CResult, Component, ComponentError, Kind, NodeCx};

/// Build an IterationItem.
pub fn build(_params: &Object) -> Result<Box<dyn Component>, BuildError> {
    Ok(Box::new(IterationItem))
}

/// The IterationItem component.
pub struct IterationItem;

impl IterationItem {
    /// `output_collation`: append each body output named by the Iteration's `ref`s.
    fn collate(cx: &NodeCx<'_>, parent: &crate::engine::Node) {
        let Some(outs) = parent.params.get("outputs").and_then(Value::as_object) else {
            return;
        };
        for child in cx.canvas().children_of(&parent.id) {
            for (name, def) in outs {
                let Some(r) = def.get("ref").and_then(Value::as_str) else {
                    continue;
                };
                let Some((cid, var)) = r.split_once('@') else {
                    continue;
                };
                if cid != child.id {
                    continue;
                }
                cx.with_state(|st| {
                    let mut cur = st.output(&parent.id, name);
                    if !truthy(&cur) || !cur.is_array() {
                        cur = json!([]);
                    }
                    let v = st.output(cid, var);
                    if let Value::Array(a) = &mut cur {
                        a.push(v);
                    }
                    st.set_output(&parent.id, name, cur);
                });
            }
        }
    }
}

#[async_trait]
impl Component for IterationItem {
    fn kind(&self) -> Kind {
        Kind::IterationItem
    }

    fn thoughts(&self, _cx: &NodeCx<'_>) -> String {
        "Next item.".into()
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        let parent = cx.parent().ok_or_else(|| {
            ComponentError::Fatal("this IterationItem has no parent Iteration".into())
        })?;
        let items_ref = parent
            .params
            .get("items_ref")
            .and_then(Value::as_str)
            .unwrap_or("");
        let items = cx.resolve(items_ref)?;
        let Value::Array(items) = items else {
            cx.set_counter(cx.id(), -1);
            return Err(ComponentError::Failed(not_a_list(items_ref, &items)));
        };
        let idx = cx.counter(cx.id());
        if idx > 0 {
            Self::collate(cx, parent);
        }
        if idx < 0 || idx as usize >= items.len() {
            cx.set_counter(cx.id(), -1);
            return Ok(());
        }
        let item = items[idx as usize].clone();
        cx.set_output("item", item.clone());
        cx.set_output("result", item);
        cx.set_output("index", json!(idx));
        cx.set_counter(cx.id(), idx + 1);
        Ok(())
    }

    fn end(&self, cx: &NodeCx<'_>) -> CResult<bool> {
        Ok(cx.counter(cx.id()) == -1)
    }
}
