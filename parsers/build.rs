//! Compiles the message table (`data/nccl-messages.yaml`) into Rust statics.
//!
//! The table is knowledge kept as data: a newcomer adds a row to the YAML file.
//! Reading it when topo starts cost ~2.5 MiB of peak memory and a few
//! milliseconds on every run (issue 14's memory target); compiled here, the
//! rows live in the binary's read-only data. A row naming an unknown class, or
//! a file that does not parse, fails the build with the row quoted.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Deserialize;

#[allow(dead_code)]
#[path = "src/nccl_log/pattern.rs"]
mod pattern;

#[derive(Deserialize)]
struct Class {
    severity: Option<String>,
    #[serde(default)]
    title: String,
    #[serde(default)]
    why: String,
    #[serde(default)]
    fix: String,
    #[serde(default)]
    carried_by: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    pattern: String,
    level: String,
    #[serde(default)]
    versions: Option<String>,
    #[serde(default)]
    source: Option<String>,
    class: String,
    #[serde(default)]
    severity: Option<String>,
    #[serde(default)]
    why: Option<String>,
    #[serde(default)]
    fix: Option<String>,
    #[serde(default)]
    also: Vec<String>,
    #[serde(default)]
    only_in: Option<String>,
    #[serde(default)]
    carries: Option<String>,
    #[serde(default)]
    after_failure: bool,
    #[serde(default)]
    needs_peers: bool,
    #[serde(default)]
    off_node: bool,
    #[serde(default)]
    bare: bool,
    #[serde(default)]
    at_exit: bool,
}

#[derive(Deserialize)]
struct SourceClass {
    file: String,
    class: String,
    #[serde(default)]
    carries: Option<String>,
}

#[derive(Deserialize)]
struct FallbackTrail {
    location: String,
    #[allow(dead_code)]
    versions: String,
    instead: String,
}

#[derive(Deserialize)]
struct ErrnoCause {
    text: String,
    errno: String,
    class: String,
    meaning: String,
}

#[derive(Deserialize)]
struct UnreachableAddress {
    prefix: String,
    class: String,
    meaning: String,
}

#[derive(Deserialize)]
struct WcStatus {
    code: i64,
    name: String,
    meaning: String,
    #[serde(default)]
    hint: Option<String>,
    #[serde(default)]
    class: Option<String>,
    /// Provider errors only: the provider's own words, as a completion line
    /// quotes them (the code alone differs between providers).
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    provider: Option<String>,
}

#[derive(Deserialize)]
struct ResultCode {
    code: i64,
    name: String,
    meaning: String,
    #[serde(default)]
    class: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Setting {
    name: String,
    #[serde(default)]
    turns_off: Vec<String>,
    #[serde(default)]
    class: Option<String>,
    #[serde(default)]
    selects: bool,
    #[serde(default)]
    quiet: bool,
    meaning: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Suspect {
    class: String,
    check: String,
    /// One condition or several that must all hold (`[multi-node, connecting]`).
    #[serde(default)]
    first_when: OneOrMany,
}

/// A YAML value that is one string or a list of them.
#[derive(Deserialize, Default)]
#[serde(untagged)]
enum OneOrMany {
    #[default]
    None,
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn values(&self) -> Vec<&str> {
        match self {
            OneOrMany::None => Vec::new(),
            OneOrMany::One(v) => vec![v.as_str()],
            OneOrMany::Many(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Suspects {
    failure: String,
    title: String,
    #[serde(default)]
    codes: Vec<String>,
    #[serde(default)]
    words: Vec<String>,
    basis: String,
    list: Vec<Suspect>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    classes: BTreeMap<String, Class>,
    #[serde(default)]
    messages: Vec<Message>,
    #[serde(default)]
    ib_wc_status: Vec<WcStatus>,
    #[serde(default)]
    provider_errors: Vec<WcStatus>,
    #[serde(default)]
    nccl_results: Vec<ResultCode>,
    #[serde(default)]
    sources: Vec<SourceClass>,
    #[serde(default)]
    fallback_trails: Vec<FallbackTrail>,
    #[serde(default)]
    unreachable_addresses: Vec<UnreachableAddress>,
    #[serde(default)]
    errno_causes: Vec<ErrnoCause>,
    #[serde(default)]
    settings: Vec<Setting>,
    #[serde(default)]
    suspects: Vec<Suspects>,
}

/// A Rust string literal (Debug escapes are Rust's own).
fn lit(s: &str) -> String {
    format!("{s:?}")
}

fn opt(s: &Option<String>) -> String {
    s.as_deref().map_or("None".to_string(), |s| format!("Some({})", lit(s)))
}

fn variant(kind: &str, value: &str, allowed: &[(&str, &str)], row: &str) -> String {
    match allowed.iter().find(|(name, _)| *name == value) {
        Some((_, variant)) => format!("{kind}::{variant}"),
        None => panic!("nccl-messages.yaml: {row}: unknown {kind} {value:?}"),
    }
}

const SCOPES: &[(&str, &str)] = &[
    ("single-node", "SingleNode"),
    ("multi-node", "MultiNode"),
    ("after-progress", "AfterProgress"),
    ("connecting", "Connecting"),
    ("rdma", "Rdma"),
    ("nvls", "Nvls"),
    ("gdr-forced", "GdrForced"),
    ("slingshot", "Slingshot"),
];

const SEVERITIES: &[(&str, &str)] = &[("info", "Info"), ("warning", "Warning"), ("error", "Error")];
const LEVELS: &[(&str, &str)] = &[("warn", "Warn"), ("info", "Info"), ("framework", "Framework")];

fn severity(value: &Option<String>, row: &str) -> String {
    value.as_deref().map_or("None".to_string(), |v| format!("Some({})", variant("Severity", v, SEVERITIES, row)))
}

fn main() {
    let path = "data/nccl-messages.yaml";
    println!("cargo::rerun-if-changed={path}");
    println!("cargo::rerun-if-changed=src/nccl_log/pattern.rs");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let file: File = serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let known = |class: &str, row: &str| {
        assert!(file.classes.contains_key(class), "{path}: {row} names unknown class {class:?}");
    };
    let mut out = String::from("// Generated by parsers/build.rs from data/nccl-messages.yaml: edit the YAML file.\n");

    let _ = writeln!(out, "pub(super) static CLASSES: &[(&str, Class)] = &[");
    for (name, c) in &file.classes {
        assert!(
            !c.title.is_empty() && !c.why.is_empty() && !c.fix.is_empty(),
            "{path}: class {name} lacks title/why/fix"
        );
        let _ = writeln!(
            out,
            "    ({}, Class {{ severity: {}, title: {}, why: {}, fix: {}, carried_by: {} }}),",
            lit(name),
            severity(&c.severity, name),
            lit(&c.title),
            lit(&c.why),
            lit(&c.fix),
            opt(&c.carried_by)
        );
    }
    out.push_str("];\n");

    let _ = writeln!(out, "pub(super) static MESSAGES: &[Message] = &[");
    let mut patterns = String::from("pub(super) static PATTERNS: &[CompiledPattern] = &[\n");
    for m in &file.messages {
        let row = format!("row {:?}", m.pattern);
        known(&m.class, &row);
        for class in &m.also {
            known(class, &row);
        }
        let also: Vec<String> = m.also.iter().map(|a| lit(a)).collect();
        let _ = writeln!(
            out,
            "    Message {{ pattern: {}, level: {}, versions: {}, source: {}, class: {}, severity: {}, why: {}, fix: {}, also: &[{}], only_in: {}, carries: {}, after_failure: {}, needs_peers: {}, off_node: {}, bare: {}, at_exit: {} }},",
            lit(&m.pattern),
            variant("Level", &m.level, LEVELS, &row),
            opt(&m.versions),
            opt(&m.source),
            lit(&m.class),
            severity(&m.severity, &row),
            opt(&m.why),
            opt(&m.fix),
            also.join(", "),
            opt(&m.only_in),
            opt(&m.carries),
            m.after_failure,
            m.needs_peers,
            m.off_node,
            m.bare,
            m.at_exit
        );
        let compiled = pattern::Pattern::new(&m.pattern);
        let literals: Vec<String> = compiled.literals().iter().map(|l| lit(l)).collect();
        let _ = writeln!(
            patterns,
            "    CompiledPattern {{ literals: &[{}], anchored: {}, specificity: {} }},",
            literals.join(", "),
            compiled.anchored(),
            compiled.specificity()
        );
    }
    out.push_str("];\n");
    patterns.push_str("];\n");
    out.push_str(&patterns);

    for (name, statuses) in [("WC_STATUS", &file.ib_wc_status), ("PROVIDER_ERRORS", &file.provider_errors)] {
        let _ = writeln!(out, "pub(super) static {name}: &[WcStatus] = &[");
        for s in statuses {
            if let Some(class) = &s.class {
                known(class, &s.name);
            }
            let _ = writeln!(
                out,
                "    WcStatus {{ code: {}, name: {}, meaning: {}, hint: {}, class: {}, text: {}, provider: {} }},",
                s.code,
                lit(&s.name),
                lit(&s.meaning),
                opt(&s.hint),
                opt(&s.class),
                opt(&s.text),
                opt(&s.provider)
            );
        }
        out.push_str("];\n");
    }

    let _ = writeln!(out, "pub(super) static RESULTS: &[ResultCode] = &[");
    for r in &file.nccl_results {
        if let Some(class) = &r.class {
            known(class, &r.name);
        }
        let _ = writeln!(
            out,
            "    ResultCode {{ code: {}, name: {}, meaning: {}, class: {} }},",
            r.code,
            lit(&r.name),
            lit(&r.meaning),
            opt(&r.class)
        );
    }
    out.push_str("];\n");

    let _ = writeln!(out, "pub(super) static SOURCES: &[SourceClass] = &[");
    for s in &file.sources {
        known(&s.class, &s.file);
        let _ = writeln!(
            out,
            "    SourceClass {{ file: {}, class: {}, carries: {} }},",
            lit(&s.file),
            lit(&s.class),
            opt(&s.carries)
        );
    }
    out.push_str("];\n");

    let _ = writeln!(out, "pub(super) static FALLBACK_TRAILS: &[FallbackTrail] = &[");
    for t in &file.fallback_trails {
        let _ = writeln!(out, "    FallbackTrail {{ location: {}, instead: {} }},", lit(&t.location), lit(&t.instead));
    }
    out.push_str("];\n");

    let _ = writeln!(out, "pub(super) static SETTINGS: &[Setting] = &[");
    for v in &file.settings {
        if let Some(class) = &v.class {
            known(class, &v.name);
        }
        assert!(
            v.turns_off.is_empty() || v.class.is_some(),
            "{path}: setting {} turns something off but names no class",
            v.name
        );
        let values: Vec<String> = v.turns_off.iter().map(|x| lit(x)).collect();
        let _ = writeln!(
            out,
            "    Setting {{ name: {}, turns_off: &[{}], class: {}, selects: {}, quiet: {}, meaning: {} }},",
            lit(&v.name),
            values.join(", "),
            opt(&v.class),
            v.selects,
            v.quiet,
            lit(&v.meaning)
        );
    }
    out.push_str("];\n");

    let _ = writeln!(out, "pub(super) static SUSPECTS: &[Suspects] = &[");
    for f in &file.suspects {
        let row = format!("suspects {:?}", f.failure);
        assert!(!f.codes.is_empty() || !f.words.is_empty(), "{path}: {row} names neither codes nor words");
        assert!(!f.list.is_empty(), "{path}: {row} lists no suspect");
        let mut list = Vec::new();
        for s in &f.list {
            known(&s.class, &row);
            let when: Vec<String> =
                s.first_when.values().into_iter().map(|w| variant("Scope", w, SCOPES, &row)).collect();
            let when = format!("&[{}]", when.join(", "));
            list.push(format!(
                "Suspect {{ class: {}, check: {}, first_when: {} }}",
                lit(&s.class),
                lit(&s.check),
                when
            ));
        }
        let strings = |v: &[String]| v.iter().map(|x| lit(x)).collect::<Vec<_>>().join(", ");
        let _ = writeln!(
            out,
            "    Suspects {{ failure: {}, title: {}, codes: &[{}], words: &[{}], basis: {}, list: &[{}] }},",
            lit(&f.failure),
            lit(&f.title),
            strings(&f.codes),
            strings(&f.words),
            lit(&f.basis),
            list.join(", ")
        );
    }
    out.push_str("];\n");

    let _ = writeln!(out, "pub(super) static UNREACHABLE_ADDRESSES: &[UnreachableAddress] = &[");
    for a in &file.unreachable_addresses {
        known(&a.class, &a.prefix);
        let _ = writeln!(
            out,
            "    UnreachableAddress {{ prefix: {}, class: {}, meaning: {} }},",
            lit(&a.prefix),
            lit(&a.class),
            lit(&a.meaning)
        );
    }
    out.push_str("];\n");

    let _ = writeln!(out, "pub(super) static ERRNO_CAUSES: &[ErrnoCause] = &[");
    for e in &file.errno_causes {
        known(&e.class, &e.text);
        let _ = writeln!(
            out,
            "    ErrnoCause {{ text: {}, errno: {}, class: {}, meaning: {} }},",
            lit(&e.text),
            lit(&e.errno),
            lit(&e.class),
            lit(&e.meaning)
        );
    }
    out.push_str("];\n");

    let dest = std::path::Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("nccl_messages.rs");
    std::fs::write(&dest, out).unwrap_or_else(|e| panic!("{}: {e}", dest.display()));
}
