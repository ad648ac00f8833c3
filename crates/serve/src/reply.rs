//! RAGFlow's response shapes: `{"code": 0, "data": …}` on success, `{"code": N,
//! "message": …}` on failure, with RAGFlow's codes (`common/constants.py`, `RetCode`).
//! RAGFlow answers most failures with HTTP 200 and a code; so does this server, except
//! where an HTTP status is what a client needs to see (a missing key, a body too large,
//! a malformed one, an unknown route).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// RAGFlow's `RetCode` values this server answers with.
pub mod code {
    /// Success.
    pub const SUCCESS: i64 = 0;
    /// An unexpected failure (the store refused, a canvas that cannot be compiled).
    pub const EXCEPTION_ERROR: i64 = 100;
    /// A missing or wrong argument.
    pub const ARGUMENT_ERROR: i64 = 101;
    /// What was asked for does not exist.
    pub const DATA_ERROR: i64 = 102;
    /// Not allowed on this object (a read-only agent, a session of another agent).
    pub const OPERATING_ERROR: i64 = 103;
    /// The session is running another request.
    pub const RUNNING: i64 = 106;
    /// A missing or wrong API key.
    pub const AUTHENTICATION_ERROR: i64 = 109;
    /// No such route.
    pub const NOT_FOUND: i64 = 404;
    /// The request took too long.
    pub const TIMEOUT: i64 = 504;
    /// A failure of the server itself (a handler that panicked).
    pub const SERVER_ERROR: i64 = 500;
}

/// A failed request, as RAGFlow words it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status (200 for most, as RAGFlow).
    pub status: StatusCode,
    /// RAGFlow's code.
    pub code: i64,
    /// The message.
    pub message: String,
    /// RAGFlow's `get_json_result(data=False, …)` shape adds `"data": false`.
    pub data_false: bool,
}

impl ApiError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::OK,
            code,
            message: message.into(),
            data_false: false,
        }
    }

    /// Something asked for does not exist (`get_error_data_result`).
    pub fn data(message: impl Into<String>) -> Self {
        Self::new(code::DATA_ERROR, message)
    }

    /// A missing or wrong argument (`get_json_result(code=ARGUMENT_ERROR)`).
    pub fn argument(message: impl Into<String>) -> Self {
        ApiError {
            data_false: true,
            ..Self::new(code::ARGUMENT_ERROR, message)
        }
    }

    /// Not allowed on this object.
    pub fn operating(message: impl Into<String>) -> Self {
        ApiError {
            data_false: true,
            ..Self::new(code::OPERATING_ERROR, message)
        }
    }

    /// The session is busy with another request.
    pub fn running(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::CONFLICT,
            ..Self::new(code::RUNNING, message)
        }
    }

    /// An unexpected failure, said in one line.
    pub fn exception(message: impl Into<String>) -> Self {
        let m: String = message.into();
        let line = m.lines().next().unwrap_or_default().to_string();
        Self::new(code::EXCEPTION_ERROR, line)
    }

    /// A failure with its own HTTP status.
    pub fn http(status: StatusCode, code: i64, message: impl Into<String>) -> Self {
        ApiError {
            status,
            data_false: true,
            ..Self::new(code, message)
        }
    }

    /// The body RAGFlow gives for it.
    pub fn body(&self) -> Value {
        let mut v = json!({"code": self.code, "message": self.message});
        if self.data_false {
            v["data"] = Value::Bool(false);
        }
        v
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl From<canvas_store::StoreError> for ApiError {
    fn from(e: canvas_store::StoreError) -> Self {
        ApiError::exception(format!("the run store failed: {e}"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body())).into_response()
    }
}

/// `get_result(data=…)`: `{"code": 0, "data": data}`.
pub fn ok(data: Value) -> Response {
    axum::Json(json!({"code": code::SUCCESS, "data": data})).into_response()
}

/// `get_result()` without data: `{"code": 0}`.
pub fn ok_empty() -> Response {
    axum::Json(json!({"code": code::SUCCESS})).into_response()
}

/// `get_json_result(data=…)`: `{"code": 0, "message": "success", "data": data}`.
pub fn ok_json(data: Value) -> Response {
    axum::Json(json!({"code": code::SUCCESS, "message": "success", "data": data})).into_response()
}

/// What a handler returns.
pub type Reply = Result<Response, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_have_ragflows_shape() {
        let e = ApiError::data("Session not found!");
        assert_eq!(
            e.body(),
            json!({"code": 102, "message": "Session not found!"})
        );
        let e = ApiError::argument("No title in request.");
        assert_eq!(
            e.body(),
            json!({"code": 101, "message": "No title in request.", "data": false})
        );
        assert_eq!(
            ApiError::exception("first\nsecond").message,
            "first",
            "one line"
        );
    }
}
