//! "Did you mean" hints: the closest known name to a mistyped one (component ids in
//! `validate`, classes and run ids in the CLI).

/// The candidate closest to `given`: one differing only in case first, else the most
/// similar by normalized Damerau-Levenshtein distance, when it is similar enough.
pub fn closest<'a>(given: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    // Below this similarity a suggestion is more confusing than none.
    const THRESHOLD: f64 = 0.7;
    let candidates: Vec<&str> = candidates.into_iter().filter(|c| *c != given).collect();
    if let Some(c) = candidates.iter().find(|c| c.eq_ignore_ascii_case(given)) {
        return Some(c);
    }
    candidates
        .into_iter()
        .map(|c| (strsim::normalized_damerau_levenshtein(given, c), c))
        .filter(|(score, _)| *score >= THRESHOLD)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn case_first_then_similarity_then_nothing() {
        let ids = ["LLM:Foo", "llm:bar", "Message:Reply"];
        assert_eq!(closest("LLM:Bar", ids), Some("llm:bar"));
        assert_eq!(closest("Mesage:Reply", ids), Some("Message:Reply"));
        assert_eq!(closest("Switch:Zzz", ids), None);
        assert_eq!(
            closest("01JABCDEF", ["01JABCDEG", "01KXYZ000"]),
            Some("01JABCDEG")
        );
    }
}
