//! The part a component plays in the run algorithm: what the scheduler knows of a
//! node instead of its class name.

/// The part a component plays in RAGFlow's run algorithm. The engine schedules by role,
/// never by class name; each component declares its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Receives the run's inputs and never pauses (Begin).
    Entry,
    /// Pauses the run for a form (UserFillUp).
    Form,
    /// Streams its content after the batch (Message).
    Streamer,
    /// Routes through its `_next` output (Switch, Categorize).
    Router,
    /// Enters its item child and finishes when the item ends (Iteration, Loop).
    Container(ContainerKind),
    /// One pass of its enclosing container (IterationItem, LoopItem).
    ContainerItem,
    /// Leaves the enclosing breakable container (ExitLoop).
    LoopBreak,
    /// Every other component.
    Plain,
}

/// What a container lets its children do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerKind {
    /// Walks a list: its children's texts may say `{item}`, `{index}`, `{result}`.
    OverList,
    /// Repeats until a condition: a `LoopBreak` child leaves it.
    Breakable,
}
