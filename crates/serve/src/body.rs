//! Request bodies as JSON objects: an empty body is `{}` (RAGFlow's SDK sends none on
//! some calls), and a body too large or not a JSON object is refused in RAGFlow's
//! error shape, never with the framework's plain-text rejection.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use canvas_pyrt::Object;
use serde_json::Value;

use super::reply::{ApiError, code};

/// A request body: a JSON object.
pub struct JsonBody(pub Object);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::http(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    code::ARGUMENT_ERROR,
                    "The request body is too large.",
                )
            } else {
                ApiError::http(
                    StatusCode::BAD_REQUEST,
                    code::ARGUMENT_ERROR,
                    format!("The request body could not be read: {e}"),
                )
            }
        })?;
        parse(&bytes).map(JsonBody)
    }
}

/// The object a body holds (`{}` for an empty one).
pub fn parse(bytes: &[u8]) -> Result<Object, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Object::new());
    }
    let bad = |why: String| {
        ApiError::http(
            StatusCode::BAD_REQUEST,
            code::ARGUMENT_ERROR,
            format!("The request body is not a JSON object: {why}"),
        )
    };
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(o)) => Ok(o),
        // RAGFlow reads a JSON `null` body as no body.
        Ok(Value::Null) => Ok(Object::new()),
        Ok(other) => Err(bad(format!("got {}", kind(&other)))),
        Err(e) => Err(bad(e.to_string())),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A string field: absent or null is `None`; another type is an argument error.
pub fn opt_str(o: &Object, key: &str) -> Result<Option<String>, ApiError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ApiError::argument(format!(
            "`{key}` must be a string, not {}.",
            kind(other)
        ))),
    }
}

/// A boolean field as RAGFlow reads it (`bool(x)`): absent is `default`.
pub fn truthy(o: &Object, key: &str, default: bool) -> bool {
    match o.get(key) {
        None => default,
        Some(v) => canvas_pyrt::truthy(v),
    }
}

/// A query string's parameters; one that cannot be decoded is refused in RAGFlow's
/// shape.
pub struct Params(pub std::collections::HashMap<String, String>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Params {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        axum::extract::Query::try_from_uri(&parts.uri)
            .map(|axum::extract::Query(q)| Params(q))
            .map_err(|e| {
                ApiError::http(
                    StatusCode::BAD_REQUEST,
                    code::ARGUMENT_ERROR,
                    format!("The query string is not valid: {e}"),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_objects() {
        assert!(parse(b"").unwrap().is_empty());
        assert!(parse(b" null ").unwrap().is_empty());
        assert_eq!(parse(br#"{"a":1}"#).unwrap()["a"], 1);
        let e = parse(b"[1]").unwrap_err();
        assert_eq!((e.status, e.code), (StatusCode::BAD_REQUEST, 101));
        assert!(parse(b"{oops").is_err());
    }
}
