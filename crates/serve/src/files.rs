//! Files given with a question, as data (this server keeps no uploads): each becomes an
//! entry of `sys.files` as RAGFlow makes it, the text of a text file or the data URL of
//! an image.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use super::reply::ApiError;

/// The `sys.files` entries of a request's `files`: each a data URL
/// (`data:text/plain;base64,…`), or an object with `name`, `mime_type` and `data` (a
/// data URL or base64) or `content` (text).
pub fn sys_files(files: &Value) -> Result<Vec<Value>, ApiError> {
    let list = match files {
        Value::Null => return Ok(Vec::new()),
        Value::Array(a) => a,
        _ => return Err(ApiError::argument("`files` must be a list.")),
    };
    list.iter()
        .enumerate()
        .map(|(i, f)| one(f).map_err(|why| ApiError::argument(format!("files[{i}]: {why}"))))
        .collect()
}

fn one(f: &Value) -> Result<Value, String> {
    let (name, mime, data, content) = match f {
        Value::String(s) => ("file", None, Some(s.as_str()), None),
        Value::Object(o) => (
            o.get("name").and_then(Value::as_str).unwrap_or("file"),
            o.get("mime_type").and_then(Value::as_str),
            o.get("data").and_then(Value::as_str),
            o.get("content").and_then(Value::as_str),
        ),
        _ => return Err("a file is a data URL or an object".into()),
    };
    if let Some(text) = content {
        return Ok(Value::String(text.to_string()));
    }
    let Some(data) = data else {
        return Err(format!(
            "{name}: give its `data` (a data URL or base64) or `content`"
        ));
    };
    let (mime, b64) = match data.strip_prefix("data:") {
        Some(rest) => {
            let (head, b64) = rest
                .split_once(',')
                .ok_or_else(|| format!("{name}: a data URL has a comma before its data"))?;
            let head_mime = head
                .strip_suffix(";base64")
                .ok_or_else(|| format!("{name}: only base64 data URLs are taken (…;base64,…)"))?;
            (mime.unwrap_or(head_mime).to_string(), b64)
        }
        None => (mime.unwrap_or("text/plain").to_string(), data),
    };
    let bytes = STANDARD
        .decode(b64.trim())
        .map_err(|e| format!("{name}: its data is not base64: {e}"))?;
    if mime.starts_with("image/") {
        // RAGFlow hands images to models as data URLs.
        return Ok(Value::String(format!(
            "data:{mime};base64,{}",
            STANDARD.encode(&bytes)
        )));
    }
    let textual = mime.starts_with("text/")
        || ["json", "xml", "yaml", "csv", "markdown", "javascript"]
            .iter()
            .any(|t| mime.contains(t));
    if !textual {
        return Err(format!(
            "{name} ({mime}): only text files and images are read here"
        ));
    }
    String::from_utf8(bytes)
        .map(Value::String)
        .map_err(|_| format!("{name}: a text file must be UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_and_images_become_sys_files() {
        let got = sys_files(&json!([
            "data:text/plain;base64,aGVsbG8=",
            {"name": "n.md", "mime_type": "text/markdown", "data": "IyBoaQ=="},
            {"name": "c.txt", "content": "as is"},
            "data:image/png;base64,iVBORw0KGgo=",
        ]))
        .unwrap();
        assert_eq!(got[0], "hello");
        assert_eq!(got[1], "# hi");
        assert_eq!(got[2], "as is");
        assert_eq!(got[3], "data:image/png;base64,iVBORw0KGgo=");
        let e = sys_files(
            &json!([{"name": "a.pdf", "mime_type": "application/pdf", "data": "JVBERg=="}]),
        )
        .unwrap_err();
        assert!(
            e.message.contains("a.pdf (application/pdf)"),
            "{}",
            e.message
        );
        assert!(sys_files(&json!("x")).is_err());
        assert!(sys_files(&Value::Null).unwrap().is_empty());
    }
}
