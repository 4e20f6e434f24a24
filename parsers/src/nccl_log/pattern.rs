//! NCCL's printf format strings used as patterns: `"NET/IB : Got completion
//! from peer %s with status=%d opcode=%d"` matches every line NCCL printed from
//! it. Keeping the format strings verbatim is what lets the message table be
//! read against NCCL's source and extended by pasting a new string.

/// One compiled format string: its literal runs, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    literals: Vec<String>,
    /// The format begins with a literal, which must then begin the message.
    anchored: bool,
    /// Characters of literal text: the more, the more specific the pattern.
    specificity: usize,
}

impl Pattern {
    /// Compiles a printf format: each conversion (`%s`, `%d`, `%ld`, `%zu`,
    /// `%p`, `%.*s`, `%2.1f`, ...) matches any text; `%%` is a literal `%`.
    /// Whitespace at either end is dropped (NCCL's lines are trimmed).
    pub fn new(format: &str) -> Pattern {
        let mut literals = vec![String::new()];
        let mut chars = format.trim().chars().peekable();
        let mut anchored = true;
        let mut first = true;
        while let Some(c) = chars.next() {
            if c != '%' {
                if let Some(last) = literals.last_mut() {
                    last.push(c);
                }
                first = false;
                continue;
            }
            if chars.peek() == Some(&'%') {
                chars.next();
                if let Some(last) = literals.last_mut() {
                    last.push('%');
                }
                first = false;
                continue;
            }
            // Flags, width, precision and length, then the conversion letter.
            while let Some(&next) = chars.peek() {
                chars.next();
                if next.is_ascii_alphabetic() && !matches!(next, 'h' | 'l' | 'z' | 'j' | 't' | 'L' | 'q') {
                    break;
                }
            }
            if first {
                anchored = false;
            }
            first = false;
            literals.push(String::new());
        }
        let literals: Vec<String> =
            literals.into_iter().map(|l| collapse_spaces(&l)).filter(|l| !l.trim().is_empty()).collect();
        let specificity = literals.iter().map(|l| l.trim().len()).sum();
        Pattern { literals, anchored, specificity }
    }

    /// Literal characters in the pattern.
    pub fn specificity(&self) -> usize {
        self.specificity
    }

    /// The literal runs, in order (what the build script writes out).
    pub fn literals(&self) -> &[String] {
        &self.literals
    }

    /// Whether the format begins with a literal.
    pub fn anchored(&self) -> bool {
        self.anchored
    }

    /// The first word of the leading literal when the pattern is anchored:
    /// the key a line's first word is looked up by.
    pub fn first_word(&self) -> Option<&str> {
        first_word(&self.literals, self.anchored)
    }

    /// Whether `message` (what follows `NCCL WARN `/`NCCL INFO `) was printed
    /// from this format. Literals are found left to right; the text after the
    /// last one is free, since pasted lines are often cut.
    pub fn matches(&self, message: &str) -> bool {
        let text = collapse_spaces(message.trim());
        self.matches_collapsed(&text)
    }

    /// As [`Pattern::matches`], for a message whose runs of spaces are already
    /// collapsed (to test many patterns against one message).
    pub fn matches_collapsed(&self, text: &str) -> bool {
        matched_chars(&self.literals, self.anchored, text, MIN_CUT_OPENING).is_some()
    }
}

/// A pattern compiled when topo was built (the message table's rows): the
/// same literal runs as [`Pattern`], held in the binary's read-only data, so
/// the table costs no parsing and no heap when a log is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompiledPattern {
    pub literals: &'static [&'static str],
    pub anchored: bool,
    pub specificity: usize,
}

impl CompiledPattern {
    pub fn specificity(&self) -> usize {
        self.specificity
    }

    pub fn first_word(&self) -> Option<&'static str> {
        first_word(self.literals, self.anchored)
    }

    pub fn matches_collapsed(&self, text: &str) -> bool {
        matched_chars(self.literals, self.anchored, text, MIN_CUT_OPENING).is_some()
    }

    /// The literal characters a (collapsed) message holds when it matches:
    /// all of them ([`Self::specificity`]), or fewer for a line cut inside
    /// one. Rows are ranked by it: `Call to ibv_create_qp failed` holds more
    /// of its own row than of `Call to %s failed : Connection reset by peer`
    /// cut after `failed`.
    pub fn matched(&self, text: &str) -> Option<usize> {
        matched_chars(self.literals, self.anchored, text, MIN_CUT_OPENING)
    }

    /// [`Self::matched`] for the message of a line NCCL printed as a WARN: its
    /// prefix already says it is one of the table's WARN rows, so fewer of the
    /// opening words tell which (`NET/IB: Got completion`, a paste wrapped at
    /// the terminal's width).
    pub fn matched_warn(&self, text: &str) -> Option<usize> {
        matched_chars(self.literals, self.anchored, text, MIN_CUT_WARN_OPENING)
    }
}

fn first_word<S: AsRef<str>>(literals: &[S], anchored: bool) -> Option<&str> {
    if !anchored {
        return None;
    }
    literals.first()?.as_ref().split_whitespace().next()
}

/// The one matcher behind both kinds of pattern: the anchored first literal
/// must begin the text, the others follow in order. How many of the
/// pattern's literal characters `text` holds, when it matches: all of them,
/// or, for a line that stops inside a literal, those before the cut.
fn matched_chars<S: AsRef<str>>(literals: &[S], anchored: bool, text: &str, min_cut: usize) -> Option<usize> {
    let mut rest = text;
    let mut matched = 0;
    for (i, literal) in literals.iter().enumerate() {
        let literal = literal.as_ref();
        if i == 0 && anchored {
            let opening = literal.trim();
            match rest.strip_prefix(opening) {
                Some(after) => rest = after,
                // A line cut inside the opening words (an issue title, an
                // excerpt): enough of them, up to a word's end.
                None => {
                    let text = rest.trim_end();
                    return cut_in_opening(opening, text, min_cut).then_some(text.len());
                }
            }
            matched += opening.len();
            continue;
        }
        // The line may stop inside a literal (cut by an excerpt, wrapped by
        // its author, a multi-line WARN): at least its first word standing
        // at the line's end is enough, and nothing after it is asked for.
        match rest.find(literal) {
            Some(at) => rest = &rest[at + literal.len()..],
            None if !rest.is_empty() => return ends_inside(literal, rest.trim_end()).map(|k| matched + k),
            None => return None,
        }
        matched += literal.trim().len();
    }
    Some(matched)
}

/// `text` ends with the start of `literal`: its first word at least (a lone
/// punctuation mark takes the next word with it: a line ending in `,` or `:`
/// says nothing). The characters of `literal` it holds.
fn ends_inside(literal: &str, text: &str) -> Option<usize> {
    let literal = literal.trim_start();
    // The first word; a lone punctuation mark takes the next word with it
    // (`, len` of `, len `).
    let end_of_word = |from: usize| from + literal[from..].find(char::is_whitespace).unwrap_or(literal.len() - from);
    let mut head = end_of_word(0);
    if head < 2 {
        let next = literal.find(|c: char| c.is_ascii_alphanumeric())?;
        head = end_of_word(next);
    }
    (head..=literal.len())
        .rev()
        .filter(|&k| literal.is_char_boundary(k))
        .map(|k| literal[..k].trim_end())
        .find(|held| text.ends_with(held))
        .map(str::len)
}

/// Characters of a pattern's opening words a line cut inside them must keep.
const MIN_CUT_OPENING: usize = 24;
/// The same for a line whose NCCL prefix says WARN (see [`CompiledPattern::matched_warn`]).
const MIN_CUT_WARN_OPENING: usize = 16;

/// `text` is the start of `opening`, at least [`MIN_CUT_OPENING`] characters
/// long, ending where a word of `opening` ends (`Mismatched collective
/// detected` of `Mismatched collective detected, please check ...`).
fn cut_in_opening(opening: &str, text: &str, min_cut: usize) -> bool {
    text.len() >= min_cut
        && text.len() < opening.len()
        && opening.starts_with(text)
        && opening.as_bytes().get(text.len()).is_some_and(|b| !b.is_ascii_alphanumeric())
}

/// Runs of spaces and tabs as one space: NCCL pads some fields, people's
/// terminals and issue trackers change padding.
pub fn collapse_spaces(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c == ' ' || c == '\t' {
            if !space {
                out.push(' ');
            }
            space = true;
        } else {
            out.push(c);
            space = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_match_any_text() {
        let p = Pattern::new("NET/IB : Got completion from peer %s with status=%d opcode=%d len=%u vendor err %u");
        assert!(p.matches(
            "NET/IB : Got completion from peer 10.1.2.3<4455> with status=12 opcode=0 len=0 vendor err 129 (Send)"
        ));
        assert!(!p.matches("NET/IB : Got async event : port error"));
        let shm = Pattern::new("Error while creating shared memory segment %s (size %d)");
        assert!(shm.matches("Error while creating shared memory segment /dev/shm/nccl-LbNx9c (size 9637888)"));
        assert!(!shm.matches("Something else: Error while creating shared memory segment x (size 1)"));
    }

    #[test]
    fn leading_conversion_and_percent() {
        let p = Pattern::new("%s:%d Cuda failure '%s'");
        assert!(p.matches("enqueue.cc:229 Cuda failure 'invalid argument'"));
        assert!(Pattern::new("used %d%% of %s").matches("used 90% of /dev/shm"));
        assert!(Pattern::new("width %2.1f, %.*s and %lu, %zu").matches("width 24.0, abc and 7, 9"));
        assert_eq!(Pattern::new("%s").specificity(), 0);
    }

    #[test]
    fn cut_lines_and_padding() {
        let p = Pattern::new("Call to %s failed : %s");
        assert!(p.matches("Call to ibv_modify_qp failed : Connection timed out"));
        // A line cut after the call name still names the call.
        let cut = Pattern::new("socketPollConnect: Connect to %s failed : %s");
        assert!(cut.matches("socketPollConnect: Connect to 10.0.0.1<43211> failed"));
        assert!(Pattern::new("Channel %02d :  %d").matches("Channel   01   :     3"));
    }

    /// What a compiled row holds of a line: the same literal runs as
    /// [`Pattern`], borrowed as `build.rs` writes them.
    fn compiled(pattern: &Pattern) -> CompiledPattern {
        let literals: Vec<&'static str> =
            pattern.literals.iter().map(|l| &*Box::leak(l.clone().into_boxed_str())).collect();
        CompiledPattern {
            literals: Box::leak(literals.into_boxed_slice()),
            anchored: pattern.anchored,
            specificity: pattern.specificity,
        }
    }

    #[test]
    fn a_line_may_stop_inside_any_literal() {
        let row = Pattern::new("NET/IB : Got completion from peer %s with error %d, opcode %d, len %d, vendor err %d");
        // The author wrapped the WARN after `len` (stas00/ml-engineering).
        let wrapped = "NET/IB : Got completion from peer 10.2.0.5<33092> with error 12, opcode 0, len";
        assert!(row.matches(wrapped));
        let held = compiled(&row).matched(wrapped).unwrap();
        assert!(held < row.specificity() && held > 40, "{held}");
        // A line ending on a lone mark holds nothing of the next literal.
        assert!(!Pattern::new("%s : invalid type %d").matches("mlx5: host_unknown: got completion with error:"));
        // Cut inside the opening words, at a word's end, 24 characters or more.
        let title =
            Pattern::new("Mismatched collective detected, please check your collective calls at and around rank %d.");
        assert!(title.matches("Mismatched collective detected"));
        assert!(!title.matches("Mismatched collective"));
        assert!(!title.matches("Mismatched collective detec"));
        // A line NCCL printed as a WARN may stop sooner, 16 characters on.
        let completion = compiled(&Pattern::new("NET/IB: Got completion from peer %s with status=%s(%d)"));
        assert_eq!(completion.matched("NET/IB: Got completion"), None);
        assert_eq!(completion.matched_warn("NET/IB: Got completion"), Some(22));
        assert_eq!(completion.matched_warn("NET/IB: Got"), None);
        // A whole line holds more of its own row than of a row it only opens.
        let own = compiled(&Pattern::new("Call to ibv_create_qp failed"));
        let other = compiled(&Pattern::new("Call to %s failed : Connection reset by peer"));
        let line = "Call to ibv_create_qp failed";
        assert!(own.matched(line).unwrap() > other.matched(line).unwrap());
    }
}
