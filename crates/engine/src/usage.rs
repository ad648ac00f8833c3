//! Token usage of model calls, as `node_finished` and `workflow_finished` report it and
//! the run state keeps it.

use serde::{Deserialize, Serialize};

/// Token usage summed over model calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Sum of both.
    pub total_tokens: u64,
    /// Number of model calls.
    pub calls: u64,
}

impl Usage {
    /// Count one call.
    pub fn add_call(&mut self, prompt_tokens: u64, completion_tokens: u64) {
        self.prompt_tokens += prompt_tokens;
        self.completion_tokens += completion_tokens;
        self.total_tokens += prompt_tokens + completion_tokens;
        self.calls += 1;
    }
}
