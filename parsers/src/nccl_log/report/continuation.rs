//! Lines that go on a line before: a WARN, a quote of NCCL's text or a
//! watchdog report that a terminal or a paste hard-wrapped at its width. The
//! first line is held; the next says whether it goes on (and is joined) or
//! not (and the held line is read as it stood). Bounded in lines and length.

use super::*;

/// Lines below its first that a wrapped quote or WARN of NCCL's text may take: a
/// WARN's text is a few hundred characters, four terminal lines at most.
pub(super) const WRAPPED_LINES: u8 = 4;
/// A wrapped WARN joined from its lines is kept to this length.
pub(super) const MAX_WRAPPED_WARN_CHARS: usize = 2048;
/// Held WARN texts whose table row is remembered, and the longest remembered.
pub(super) const MAX_HELD_ROWS: usize = 512;
pub(super) const MAX_HELD_ROW_TEXT: usize = 512;

/// The last WARN line, held until the next line says whether it goes on
/// there (a paste hard-wrapped at the terminal's width), and the continuation
/// lines joined to it. Its text is in [`LogParser::held_warn_text`].
pub(super) struct HeldWarn {
    /// Its line number, which the warning cites.
    pub(super) line: u64,
    /// Where in the text its message begins, and its NCCL source location:
    /// as the line was read (NCCL 1.x's WARN puts the source after the level).
    pub(super) message_at: usize,
    pub(super) source_at: Option<(usize, usize)>,
    /// Literal characters of its table row the text holds so far, once asked
    /// (only when a bare line follows: most WARNs are followed by NCCL lines).
    pub(super) held: Option<usize>,
    /// Lines that may still continue it.
    pub(super) lines_left: u8,
}

/// XLA's quote of NCCL's last WARN, opened on one line and not yet closed (a
/// paste hard-wrapped at the terminal's width).
pub(super) struct OpenQuote {
    /// What was read of it so far (at most [`MAX_EVIDENCE_CHARS`] and a little).
    pub(super) text: String,
    /// Lines that may still continue it.
    pub(super) lines_left: u8,
    /// The line it began on, which the finding cites.
    pub(super) line: u64,
    pub(super) rank: Option<u32>,
}

impl LogParser {
    /// A line that continues a watchdog report cut after `operation
    /// timeout:` (`WorkNCCL(SeqNum=1, OpType=ALLREDUCE, ...` and, wrapped
    /// again, `Timeout(ms)=600000) ran for ...`): the report is read again
    /// whole and replaces what its first line gave. Anything else ends it.
    pub(super) fn watchdog_goes_on(&mut self, text: &str) -> bool {
        let Some((mut head, index, last)) = self.wrapped_watchdog.take() else { return false };
        let text = framework::without_rank_tag(text);
        let continues = if head.ends_with(':') { text.starts_with("WorkNCCL(") } else { !text.is_empty() };
        if !continues || self.line_number != last + 1 || head.len() + text.len() > MAX_EVIDENCE_CHARS * 4 {
            return false;
        }
        head.push(' ');
        head.push_str(text);
        if let Some(Event::WatchdogTimeout { seq, op, timeout_ms, ran_ms, group_size, numel_in, numel_out, .. }) =
            message::watchdog(&head)
            && let Some(timeout) = self.timeouts.get_mut(index)
        {
            (timeout.seq, timeout.op) = (seq.or(timeout.seq), op.to_string());
            (timeout.timeout_ms, timeout.ran_ms) = (timeout_ms.or(timeout.timeout_ms), ran_ms.or(timeout.ran_ms));
            timeout.group_size = group_size.or(timeout.group_size);
            (timeout.numel_in, timeout.numel_out) = (numel_in.or(timeout.numel_in), numel_out.or(timeout.numel_out));
        }
        self.nccl_lines += 1;
        // The report ends with `before timing out.`; until then the next line may go on.
        if !head.contains("timing out") && text.contains("WorkNCCL(") && !text.ends_with(')') {
            self.wrapped_watchdog = Some((head, index, self.line_number));
        }
        true
    }

    /// A line that continues a wrapped quote of NCCL's text: the quote ends at
    /// its closing `'`, or after [`WRAPPED_LINES`] lines, and is then
    /// read whole, as if it had been printed on its first line. A line with
    /// something else to say (an NCCL prefix, another framework error) is not
    /// a continuation: the quote is read as far as it went.
    pub(super) fn quote_goes_on(&mut self, text: &str) -> bool {
        let Some(mut quote) = self.open_quote.take() else { return false };
        // (An open quote always has lines left: one that ran out was read.)
        let continues = !text.is_empty() && framework::recognise(text).is_none();
        if continues {
            self.nccl_lines += 1;
            let (part, closed) = text.rfind('\'').map_or((text, false), |close| (&text[..close], true));
            let room = MAX_EVIDENCE_CHARS.saturating_sub(quote.text.chars().count());
            quote.text.push(' ');
            quote.text.extend(part.trim().chars().take(room));
            quote.lines_left = quote.lines_left.saturating_sub(1);
            if !closed && quote.lines_left > 0 {
                self.open_quote = Some(quote);
                return true;
            }
        }
        self.read_quote(quote);
        continues
    }

    /// The line after a held WARN: joined to it when the WARN stops inside
    /// its table row and this bare line carries more of that row, else the
    /// WARN is read as it stood (before this line, so nothing this line
    /// changes, such as a new communicator, reaches it).
    pub(super) fn warn_goes_on(&mut self, text: &str) -> bool {
        let Some(mut held) = self.held_warn.take() else { return false };
        let rest = text.trim();
        // (A held WARN always has lines left: one that ran out was read.)
        if rest.is_empty() || prefix::split(text).level != Level::Bare {
            self.read_held_warn(held);
            return false;
        }
        let message = |raw: &str| CATALOGUE.warn_held(raw.get(held.message_at..).unwrap_or(""));
        let so_far = match held.held {
            Some(so_far) => Some(so_far),
            None => self.held_row(held.message_at).filter(|(held, whole)| held < whole).map(|(held, _)| held),
        };
        let Some(so_far) = so_far else {
            self.read_held_warn(held);
            return false;
        };
        let mut joined = self.held_warn_text.clone();
        joined.push(' ');
        joined.extend(rest.chars().take(MAX_WRAPPED_WARN_CHARS.saturating_sub(joined.len())));
        match message(&joined).filter(|(now, _)| *now > so_far) {
            Some((now, whole)) => {
                self.nccl_lines += 1;
                self.held_warn_text = joined;
                held = HeldWarn { held: Some(now), lines_left: held.lines_left.saturating_sub(1), ..held };
                match now < whole && held.lines_left > 0 {
                    true => self.held_warn = Some(held),
                    false => self.read_held_warn(held),
                }
                true
            }
            None => {
                self.read_held_warn(held);
                false
            }
        }
    }

    /// How much of its table row the held WARN's text holds (see
    /// `Catalogue::warn_held`), remembered for texts seen before.
    pub(super) fn held_row(&mut self, message_at: usize) -> Option<(usize, usize)> {
        let message = self.held_warn_text.get(message_at..).unwrap_or("");
        if let Some(known) = self.held_rows.get(message) {
            return *known;
        }
        let found = CATALOGUE.warn_held(message);
        // Bounded: a few hundred short texts (a hostile log of distinct WARNs
        // is read as before, without the memory).
        if self.held_rows.len() < MAX_HELD_ROWS && message.len() <= MAX_HELD_ROW_TEXT {
            self.held_rows.insert(message.to_string(), found);
        }
        found
    }

    /// The held WARN, if any, read now.
    pub(super) fn read_held_warn_now(&mut self) {
        if let Some(held) = self.held_warn.take() {
            self.read_held_warn(held);
        }
    }

    /// The held WARN, read as one line at the line it began on, its message
    /// and source where they were when it was first read.
    pub(super) fn read_held_warn(&mut self, held: HeldWarn) {
        let text = std::mem::take(&mut self.held_warn_text);
        let mut line = prefix::split(&text);
        line.level = Level::Warn;
        line.message = text.get(held.message_at..).unwrap_or(line.message);
        line.source = held.source_at.and_then(|(from, to)| text.get(from..to)).or(line.source);
        self.warning(&line, held.line);
        self.held_warn_text = text;
    }

    /// Reads a wrapped quote as far as it went (the log ended, or NCCL's own
    /// lines came before its closing `'`).
    pub(super) fn close_quote(&mut self) {
        if let Some(quote) = self.open_quote.take() {
            self.read_quote(quote);
        }
    }

    /// A quote's text, as the framework error of the line it began on.
    pub(super) fn read_quote(&mut self, quote: OpenQuote) {
        if quote.text.trim().is_empty() {
            return;
        }
        let current = std::mem::replace(&mut self.line_number, quote.line);
        self.add_framework_error(quote.text.trim(), Some("Last error"), quote.rank);
        self.line_number = current;
    }
}
