//! `stored_events`: the decoder of stored event chunks (`canvas events`, `resume`).
//!
//! The first byte picks the mode. Odd: the rest is a chunk's text (`NAME DATA` lines);
//! each line with an event name and JSON data is stored as the writer stores it
//! (bit 1 also adds a large value to each, which goes to `blobs`), then read back.
//! Even: the rest is a stored row as found on disk, trusted in nothing:
//! `SEQ (8 bytes LE) N (8 bytes LE) BODY_LEN (2 bytes LE) BODY CUTS \0 BLOB`.

use std::collections::HashMap;

use canvas_engine::events::wire::{self, Envelope};
use canvas_store::{EventChunk, StoreError, StoredChunk};
use serde_json::Value;

const RUN: &str = "01FUZZ";
const MESSAGE_ID: &str = "m-1";
const CREATED_AT: i64 = 1_700_000_000;

/// Reading stored events gives the lines written, or an error; never anything else.
pub fn stored_events(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 1 {
        round_trip(rest, mode & 2 == 2);
    } else {
        corrupt(rest);
    }
}

/// Events stored by the writer's encoding read back as the lines they were emitted as.
fn round_trip(text: &[u8], large: bool) {
    let Some(text) = crate::text(text) else {
        return;
    };
    let mut chunk = EventChunk::new(MESSAGE_ID, CREATED_AT);
    let mut want = Vec::new();
    for line in text.lines() {
        let Some((name, data)) = line.split_once(' ') else {
            continue;
        };
        let Ok(mut data) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        if !wire::is_event_name(name) {
            continue;
        }
        if large {
            // At least 16 KiB, the same for every line: cut out once, kept once.
            let big = "large value ".repeat(1400);
            data = serde_json::json!({"big": big, "data": data, "name": name});
        }
        // Compact, as the writer serialises events: one line each.
        let data = serde_json::to_string(&data).expect("a JSON value serialises");
        chunk.push(name, &data);
        want.push(line_of(name, &data));
    }
    if chunk.is_empty() {
        return;
    }
    let encoded = chunk.encode();
    let blobs: HashMap<&str, &str> = encoded.blobs().collect();
    let cuts = encoded.cuts();
    let stored = StoredChunk {
        seq: 1,
        n: i64::from(chunk.count),
        message_id: MESSAGE_ID,
        created_at: CREATED_AT,
        body: &encoded.body,
        cuts: cuts.as_deref(),
    };
    let got = stored.lines(RUN, |k| {
        blobs
            .get(k)
            .map(|v| v.to_string())
            .ok_or_else(|| StoreError::Corrupt(format!("no blob {k}")))
    });
    assert_eq!(got.expect("written events read back"), want);
}

/// The JSON line of one event, as `canvas run --format jsonl` printed it.
fn line_of(name: &str, data: &str) -> String {
    let env = Envelope {
        message_id: MESSAGE_ID,
        created_at: CREATED_AT,
        task_id: RUN,
    };
    let mut out = Vec::new();
    wire::write_line(name, data.as_bytes(), &env, &mut out);
    String::from_utf8(out).expect("UTF-8 in, UTF-8 out")
}

/// Arbitrary stored bytes: an error, or `n` lines that are each an event's JSON.
fn corrupt(row: &[u8]) {
    let int = |b: &[u8]| i64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    let (Some(seq), Some(n), Some(len)) = (row.get(0..8), row.get(8..16), row.get(16..18)) else {
        return;
    };
    let (seq, n) = (int(seq), int(n));
    let len = usize::from(u16::from_le_bytes([len[0], len[1]]));
    let rest = &row[18..];
    let (body, tail) = rest.split_at(len.min(rest.len()));
    let [cuts, blob] = crate::parts::<2>(tail);
    let cuts = crate::text(cuts).filter(|c| !c.is_empty());
    let blob = String::from_utf8_lossy(blob);
    let stored = StoredChunk {
        seq,
        n,
        message_id: MESSAGE_ID,
        created_at: CREATED_AT,
        body,
        cuts,
    };
    let Ok(lines) = stored.lines(RUN, |_| Ok(blob.to_string())) else {
        return;
    };
    assert_eq!(i64::try_from(lines.len()), Ok(n));
    for l in &lines {
        let v: Value = match serde_json::from_str(l) {
            Ok(v) => v,
            // The store keeps whatever depth a run reached; serde_json reads 128 levels.
            Err(e) if e.to_string().starts_with("recursion limit exceeded") => continue,
            Err(e) => panic!("{e}: {l}"),
        };
        let name = v["event"].as_str().unwrap_or_default();
        assert!(wire::is_event_name(name), "{l}");
        assert_eq!(v["task_id"], RUN);
    }
}
