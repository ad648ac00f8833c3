//! IterationItem: one pass of an Iteration; collects the body's outputs of the
//! previous pass into the Iteration's outputs (`engine.md` §7.5).

use async_trait::async_trait;
use serde_json::{Value, json};
use std::borrow::Cow;

use super::iteration::not_a_list;
use canvas_engine::state::key_get;
use canvas_engine::{BuildError, CResult, Component, ComponentError, NodeCx, Role};
use canvas_pyrt::Object;

/// Build an IterationItem.
pub fn build(_params: &Object) -> Result<Box<dyn Component>, BuildError> {
    Ok(Box::new(IterationItem))
}

/// The IterationItem component.
pub struct IterationItem;

impl IterationItem {
    /// `output_collation`: append each body output named by the Iteration's `ref`s.
    fn collate(cx: &NodeCx<'_>, parent: &canvas_engine::Node) {
        let Some(outs) = key_get(&parent.params, "outputs").and_then(Value::as_object) else {
            return;
        };
        for child in cx.canvas().children_of(&parent.id) {
            for (name, def) in outs {
                let Some(r) = def
                    .as_object()
                    .and_then(|d| key_get(d, "ref"))
                    .and_then(Value::as_str)
                else {
                    continue;
                };
                let Some((cid, var)) = r.split_once('@') else {
                    continue;
                };
                if cid != child.id {
                    continue;
                }
                cx.with_state(|st| {
                    let v = st.output(cid, var);
                    // Appended in place: copying the growing list each pass would make
                    // an Iteration quadratic in its items (and so would checkpointing
                    // the whole list each time: an append is checkpointed as one).
                    st.append_output(&parent.id, name, v);
                });
            }
        }
    }
}

#[async_trait]
impl Component for IterationItem {
    fn instant(&self) -> bool {
        true
    }

    fn role(&self) -> Role {
        Role::ContainerItem
    }

    fn thoughts(&self, _cx: &NodeCx<'_>) -> Cow<'static, str> {
        "Next item.".into()
    }

    async fn invoke(&self, cx: &NodeCx<'_>) -> CResult<()> {
        let parent = cx.parent().ok_or_else(|| {
            ComponentError::Fatal("this IterationItem has no parent Iteration".into())
        })?;
        let items_ref = key_get(&parent.params, "items_ref")
            .and_then(Value::as_str)
            .unwrap_or("");
        let idx = cx.counter(cx.id());
        // Only the current item is copied out of the list (not the whole list per pass).
        let picked = cx.with_state(|st| {
            canvas_engine::refs::resolve_with(st, items_ref, |items| match items {
                Value::Array(a) => Ok((
                    a.len(),
                    usize::try_from(idx).ok().and_then(|i| a.get(i).cloned()),
                )),
                other => Err(not_a_list(items_ref, other)),
            })
        })?;
        let (len, item) = match picked {
            Ok(found) => found,
            Err(msg) => {
                cx.set_counter(cx.id(), -1);
                return Err(ComponentError::Failed(msg));
            }
        };
        if idx > 0 {
            Self::collate(cx, parent);
        }
        let Some(item) = item.filter(|_| idx >= 0 && (idx as usize) < len) else {
            cx.set_counter(cx.id(), -1);
            return Ok(());
        };
        cx.set_outputs([
            ("item", item.clone()),
            ("result", item),
            ("index", json!(idx)),
        ]);
        cx.set_counter(cx.id(), idx + 1);
        Ok(())
    }

    fn end(&self, cx: &NodeCx<'_>) -> CResult<bool> {
        Ok(cx.counter(cx.id()) == -1)
    }
}
