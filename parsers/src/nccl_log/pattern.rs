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
        matches_literals(&self.literals, self.anchored, text, true)
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
        matches_literals(self.literals, self.anchored, text, true)
    }

    /// [`Self::matches_collapsed`] with every literal present: not a line
    /// cut inside the last one (`Call to ibv_create_qp failed` is not `Call
    /// to %s failed : Connection reset by peer` cut after `failed`).
    pub fn matches_whole(&self, text: &str) -> bool {
        matches_literals(self.literals, self.anchored, text, false)
    }
}

fn first_word<S: AsRef<str>>(literals: &[S], anchored: bool) -> Option<&str> {
    if !anchored {
        return None;
    }
    literals.first()?.as_ref().split_whitespace().next()
}

/// The one matcher behind both kinds of pattern: the anchored first literal
/// must begin the text, the others follow in order.
fn matches_literals<S: AsRef<str>>(literals: &[S], anchored: bool, text: &str, allow_cut: bool) -> bool {
    let mut rest = text;
    for (i, literal) in literals.iter().enumerate() {
        let literal = literal.as_ref();
        if i == 0 && anchored {
            match rest.strip_prefix(literal.trim_end().trim_start()) {
                Some(after) => rest = after,
                None => return false,
            }
            continue;
        }
        // A literal at the end may be cut off with the line: its first
        // word standing at the end is enough.
        match rest.find(literal) {
            Some(at) => rest = &rest[at + literal.len()..],
            None if allow_cut && i + 1 == literals.len() && !rest.is_empty() => {
                // One punctuation mark (`:`) ends too many lines to say so.
                let head = literal.split_whitespace().next().unwrap_or("");
                return head.len() >= 2 && rest.trim_end().ends_with(head) && literal.trim().len() > head.len();
            }
            None => return false,
        }
    }
    true
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
}
