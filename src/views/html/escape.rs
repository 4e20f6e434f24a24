//! The one way text from the input reaches the report. Host names, log lines,
//! device names and finding evidence come from files a hostile job can write;
//! every one goes through [`text`] so it can only ever be character data,
//! never markup, in element content and in quoted attribute values alike.

/// `&`, `<`, `>`, `"` and `'` as character references, and control
/// characters (other than newline and tab) shown as `\xNN` as on a terminal,
/// so a log line cannot smuggle a tag, end an attribute or hide text.
pub fn text(input: &str) -> String {
    let shown = crate::output::escape_controls(input, false);
    let mut out = String::with_capacity(shown.len() + 16);
    for c in shown.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::text;

    #[test]
    fn markup_and_controls_become_text() {
        assert_eq!(text("<script>alert('x')</script>"), "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
        assert_eq!(text("\"><img src=x onerror=alert(1)>"), "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;");
        assert_eq!(text("a & b"), "a &amp; b");
        assert_eq!(text("bell\x07 esc\x1b[2J\nnext"), "bell\\x07 esc\\x1b[2J\nnext");
        assert_eq!(text("gpu-node-01 H100 80GB"), "gpu-node-01 H100 80GB");
    }
}
