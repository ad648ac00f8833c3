//! What the model-calling components (LLM, Agent, Categorize) share: think handling,
//! prompt fitting, lenient JSON, prompt texts.

pub mod answer;
pub mod call;
pub mod fit;
pub mod json_repair;
pub mod params;
pub mod prepare;
pub mod prompts;
pub mod think;
