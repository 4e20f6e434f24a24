//! The table of NCCL's own messages (`parsers/data/nccl-messages.yaml`): for
//! each WARN format string, each INFO line that signals a degraded choice and
//! each framework error that carries NCCL's words, the root-cause class it
//! points at; for each class, why it matters and what to do. Knowledge lives in
//! that file; this module only reads it and matches lines against it.

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use serde::Deserialize;

use super::pattern::{Pattern, collapse_spaces};

/// Literal characters a WARN row needs before a line without NCCL's prefix is
/// taken as its text (`Error while creating shared memory segment` yes, `%s:%d %s` no).
const MIN_BARE_LITERAL: usize = 24;

/// The table as shipped, compiled once.
pub static CATALOGUE: LazyLock<Catalogue> = LazyLock::new(|| {
    // The file is part of the build and checked by tests; a broken one is a
    // build defect, so an empty table (not a panic) is the fallback here.
    Catalogue::from_yaml(include_str!("../../data/nccl-messages.yaml")).unwrap_or_default()
});

/// Where a message comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// NCCL's WARN macro (also the `Last error:` text frameworks repeat).
    Warn,
    /// An INFO line that says NCCL chose a slower or degraded path.
    Info,
    /// A framework's error line (PyTorch, DeepSpeed, Horovod, Ray) carrying NCCL's words.
    Framework,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

/// What is known about one root-cause class.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Class {
    pub severity: Option<Severity>,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub why: String,
    #[serde(default)]
    pub fix: String,
}

/// One row of the table.
#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    /// NCCL's format string as in its source (framework rows: the text as printed).
    pub pattern: String,
    pub level: Level,
    #[serde(default)]
    pub versions: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    pub class: String,
    #[serde(default)]
    pub severity: Option<Severity>,
    #[serde(default)]
    pub why: Option<String>,
    #[serde(default)]
    pub fix: Option<String>,
    /// Further classes the message points at (a connect failure with `No
    /// route to host` is also the interface NCCL chose).
    #[serde(default)]
    pub also: Vec<String>,
}

/// The subsystem an NCCL source file belongs to.
#[derive(Debug, Clone, Deserialize)]
pub struct SourceClass {
    /// A path relative to NCCL's `src/` (a prefix: `transport/net_ib/` covers the directory).
    pub file: String,
    pub class: String,
}

/// An address no other node can reach, as connect failures print it.
#[derive(Debug, Clone, Deserialize)]
pub struct UnreachableAddress {
    pub prefix: String,
    pub class: String,
    pub meaning: String,
}

/// A completion status code (`status=12`) and what it usually means.
#[derive(Debug, Clone, Deserialize)]
pub struct WcStatus {
    pub code: i64,
    pub name: String,
    pub meaning: String,
    #[serde(default)]
    pub hint: Option<String>,
    /// The class this status usually points at beyond the completion error
    /// itself (a protection error on a GPUDirect path: `gdr-path-broken`).
    #[serde(default)]
    pub class: Option<String>,
}

/// An `ncclResult_t` value as error trails print it (`init.cc:1234 -> 2`).
#[derive(Debug, Clone, Deserialize)]
pub struct ResultCode {
    pub code: i64,
    pub name: String,
    pub meaning: String,
    #[serde(default)]
    pub class: Option<String>,
}

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    classes: BTreeMap<String, Class>,
    #[serde(default)]
    messages: Vec<Message>,
    #[serde(default)]
    ib_wc_status: Vec<WcStatus>,
    #[serde(default)]
    nccl_results: Vec<ResultCode>,
    #[serde(default)]
    sources: Vec<SourceClass>,
    #[serde(default)]
    unreachable_addresses: Vec<UnreachableAddress>,
}

/// The compiled table.
#[derive(Default)]
pub struct Catalogue {
    pub classes: BTreeMap<String, Class>,
    pub messages: Vec<Message>,
    pub wc_status: Vec<WcStatus>,
    pub results: Vec<ResultCode>,
    pub sources: Vec<SourceClass>,
    pub unreachable_addresses: Vec<UnreachableAddress>,
    patterns: Vec<Pattern>,
    /// INFO rows by the first word of their (anchored) pattern.
    info_by_word: HashMap<String, Vec<usize>>,
    /// WARN rows with enough literal text to recognise a line that lost its
    /// prefix, by the first word of their pattern.
    warn_by_word: HashMap<String, Vec<usize>>,
}

/// A row of the table that matched a line.
#[derive(Debug, Clone, Copy)]
pub struct Match<'a> {
    pub index: usize,
    pub row: &'a Message,
}

impl Catalogue {
    pub fn from_yaml(text: &str) -> Result<Catalogue, serde_yaml::Error> {
        let file: File = serde_yaml::from_str(text)?;
        let patterns: Vec<Pattern> = file.messages.iter().map(|m| Pattern::new(&m.pattern)).collect();
        let mut info_by_word: HashMap<String, Vec<usize>> = HashMap::new();
        let mut warn_by_word: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, (row, pattern)) in file.messages.iter().zip(&patterns).enumerate() {
            let Some(word) = pattern.first_word() else { continue };
            match row.level {
                Level::Info => info_by_word.entry(word.to_string()).or_default().push(i),
                Level::Warn if pattern.specificity() >= MIN_BARE_LITERAL => {
                    warn_by_word.entry(word.to_string()).or_default().push(i)
                }
                _ => {}
            }
        }
        Ok(Catalogue {
            classes: file.classes,
            messages: file.messages,
            wc_status: file.ib_wc_status,
            results: file.nccl_results,
            sources: file.sources,
            unreachable_addresses: file.unreachable_addresses,
            patterns,
            info_by_word,
            warn_by_word,
        })
    }

    /// The most specific row of `level` that printed `text` (most literal
    /// characters wins: `Call to posix_fallocate failed : %s` over `Call to %s
    /// failed : %s`). Framework rows match anywhere in the line.
    pub fn classify(&self, level: Level, text: &str) -> Option<Match<'_>> {
        let text = collapse_spaces(text.trim());
        let mut best: Option<(usize, usize)> = None;
        for (i, (row, pattern)) in self.messages.iter().zip(&self.patterns).enumerate() {
            if row.level != level || pattern.specificity() < 4 {
                continue;
            }
            let hit = match level {
                Level::Framework => text.contains(row.pattern.trim()),
                _ => pattern.matches_collapsed(&text),
            };
            if hit && best.is_none_or(|(_, s)| pattern.specificity() > s) {
                best = Some((i, pattern.specificity()));
            }
        }
        best.and_then(|(index, _)| Some(Match { index, row: self.messages.get(index)? }))
    }

    /// Whether an INFO message is one the table lists (cheap: one hash lookup
    /// on its first word before any pattern runs; this is on the per-line path).
    pub fn info_row(&self, message: &str) -> Option<Match<'_>> {
        self.row_by_first_word(&self.info_by_word, message)
    }

    /// A WARN row that printed `message` although the line has no NCCL prefix.
    pub fn bare_warn(&self, message: &str) -> Option<Match<'_>> {
        self.row_by_first_word(&self.warn_by_word, message)
    }

    /// The most specific row among those whose pattern begins with the
    /// message's first word.
    fn row_by_first_word(&self, by_word: &HashMap<String, Vec<usize>>, message: &str) -> Option<Match<'_>> {
        let rows = by_word.get(message.split_whitespace().next()?)?;
        let text = collapse_spaces(message.trim());
        rows.iter()
            .filter_map(|&i| Some((i, self.messages.get(i)?, self.patterns.get(i)?)))
            .filter(|(_, _, p)| p.matches_collapsed(&text))
            .max_by_key(|(_, _, p)| p.specificity())
            .map(|(index, row, _)| Match { index, row })
    }

    /// The subsystem class of an NCCL source location (`transport/nvls.cc:157`).
    pub fn source_class(&self, location: &str) -> Option<&str> {
        let file = location.split(':').next()?;
        self.sources.iter().find(|s| file.starts_with(&s.file)).map(|s| s.class.as_str())
    }

    /// The class of an unreachable peer address in a connect failure
    /// (`Connect to 127.0.0.1<45069> failed`), with what the address is.
    pub fn unreachable_address(&self, text: &str) -> Option<&UnreachableAddress> {
        let at = text.find("Connect to ")? + "Connect to ".len();
        let address = &text[at..];
        self.unreachable_addresses.iter().find(|a| {
            if a.prefix.starts_with('<') { address.contains(&a.prefix) } else { address.starts_with(&a.prefix) }
        })
    }

    pub fn class(&self, name: &str) -> Option<&Class> {
        self.classes.get(name)
    }

    /// The severity of a row: its own, else its class's, else warning.
    pub fn severity(&self, row: &Message) -> Severity {
        row.severity.or_else(|| self.class(&row.class).and_then(|c| c.severity)).unwrap_or(Severity::Warning)
    }

    pub fn result(&self, code: i64) -> Option<&ResultCode> {
        self.results.iter().find(|r| r.code == code)
    }

    /// The status of a completion error as NCCL prints it: `status=12`,
    /// `with error 12`, `status=IBV_WC_RETRY_EXC_ERR(12)`.
    pub fn completion_status(&self, text: &str) -> Option<&WcStatus> {
        if !text.contains("completion") {
            return None;
        }
        let code = ["status=", "with error "].iter().find_map(|key| {
            let at = text.find(key)? + key.len();
            let rest = &text[at..];
            let rest = match rest.find('(') {
                Some(open) if !rest[..open].contains(' ') => &rest[open + 1..],
                _ => rest,
            };
            rest.chars().take_while(char::is_ascii_digit).collect::<String>().parse::<i64>().ok()
        })?;
        self.wc_status(code)
    }

    pub fn wc_status(&self, code: i64) -> Option<&WcStatus> {
        self.wc_status.iter().find(|s| s.code == code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_reads_and_every_row_names_a_known_class() {
        let table = Catalogue::from_yaml(include_str!("../../data/nccl-messages.yaml")).unwrap();
        assert!(table.messages.len() > 50, "{} rows", table.messages.len());
        for row in &table.messages {
            assert!(table.classes.contains_key(&row.class), "row {:?} names unknown class {}", row.pattern, row.class);
        }
        for row in &table.messages {
            for class in &row.also {
                assert!(table.classes.contains_key(class), "row {:?} names unknown class {class}", row.pattern);
            }
        }
        for class in table.sources.iter().map(|s| &s.class).chain(table.unreachable_addresses.iter().map(|a| &a.class))
        {
            assert!(table.classes.contains_key(class), "unknown class {class}");
        }
        for (name, class) in &table.classes {
            assert!(!class.title.is_empty() && !class.why.is_empty() && !class.fix.is_empty(), "class {name}");
        }
    }

    #[test]
    fn the_most_specific_row_wins() {
        let hit = CATALOGUE.classify(Level::Warn, "Call to posix_fallocate failed : No space left on device").unwrap();
        assert_eq!(hit.row.class, "shm-too-small");
        let generic = CATALOGUE.classify(Level::Warn, "Call to bind failed : Address already in use");
        assert!(generic.is_some());
    }
}
