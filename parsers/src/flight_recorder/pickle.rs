//! A bounded reader for the subset of Python's pickle protocol that plain
//! data uses (dicts, lists, tuples, strings, numbers, None, booleans): what
//! PyTorch's C++ pickler writes for Flight Recorder dumps. Opcodes that build
//! objects through Python code (GLOBAL, REDUCE, BUILD, ...) are refused: a dump
//! has none, and topo never runs Python.
//!
//! Values live in an arena so that memo references (`BINGET`) share a node
//! instead of copying it: the number of nodes is bounded by the input length.

use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum PickleError {
    #[error("pickle ends early at byte {0}")]
    Truncated(usize),
    #[error("pickle opcode {op:#04x} at byte {at} is not plain data (topo reads dicts, lists, strings and numbers)")]
    Unsupported { op: u8, at: usize },
    #[error("malformed pickle at byte {at}: {what}")]
    Malformed { at: usize, what: &'static str },
}

pub type NodeId = u32;

/// One value. Strings and bytes are ranges of the input.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    None,
    Bool(bool),
    Int(i64),
    /// An integer wider than 64 bits (kept as its low 64 bits' sign only: never needed).
    BigInt,
    Float(f64),
    Str {
        start: u32,
        len: u32,
    },
    Bytes {
        start: u32,
        len: u32,
    },
    /// Lists, tuples and sets: a chain of links (no allocation per container).
    List(Chain),
    Dict(Chain),
}

/// Where a container's items are in the shared link table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Chain {
    head: u32,
    tail: u32,
    len: u32,
}

const NIL: u32 = u32::MAX;

impl Chain {
    const EMPTY: Chain = Chain { head: NIL, tail: NIL, len: 0 };
}

/// One item of a container: a value (lists) or a key and value (dicts).
#[derive(Debug, Clone, Copy)]
struct Link {
    a: NodeId,
    b: NodeId,
    next: u32,
}

/// A decoded pickle: the arena and the root value.
pub struct Pickle<'a> {
    input: &'a [u8],
    nodes: Vec<Node>,
    links: Vec<Link>,
    root: NodeId,
}

#[derive(Clone, Copy)]
enum Slot {
    Mark,
    Value(NodeId),
}

/// Deepest MARK nesting and most memo slots accepted.
const MAX_MEMO: usize = 1 << 24;

impl<'a> Pickle<'a> {
    pub fn parse(input: &'a [u8]) -> Result<Pickle<'a>, PickleError> {
        if input.len() > u32::MAX as usize {
            return Err(PickleError::Malformed { at: 0, what: "input over 4 GiB" });
        }
        Parser {
            input,
            pos: 0,
            nodes: Vec::with_capacity((input.len() / 4).min(1 << 20)),
            links: Vec::with_capacity((input.len() / 8).min(1 << 20)),
            stack: Vec::new(),
            memo: Vec::new(),
        }
        .run()
    }

    pub fn root(&self) -> NodeId {
        self.root
    }

    pub fn node(&self, id: NodeId) -> &Node {
        self.nodes.get(id as usize).unwrap_or(&Node::None)
    }

    /// A string or bytes value, as text (invalid UTF-8 replaced).
    pub fn text(&self, id: NodeId) -> Option<std::borrow::Cow<'a, str>> {
        match self.node(id) {
            Node::Str { start, len } | Node::Bytes { start, len } => {
                let bytes = self.input.get(*start as usize..(*start as usize + *len as usize))?;
                Some(String::from_utf8_lossy(bytes))
            }
            _ => None,
        }
    }

    fn key_is(&self, id: NodeId, key: &str) -> bool {
        match self.node(id) {
            Node::Str { start, len } => {
                self.input.get(*start as usize..(*start as usize + *len as usize)) == Some(key.as_bytes())
            }
            _ => false,
        }
    }

    fn chain(&self, chain: Chain) -> impl Iterator<Item = (NodeId, NodeId)> + '_ {
        let mut at = chain.head;
        std::iter::from_fn(move || {
            let link = self.links.get(at as usize)?;
            at = link.next;
            Some((link.a, link.b))
        })
    }

    /// The value under string key `key` of a dict node.
    pub fn get(&self, dict: NodeId, key: &str) -> Option<NodeId> {
        self.items(dict).find(|(k, _)| self.key_is(*k, key)).map(|(_, v)| v)
    }

    /// A dict's (key, value) pairs; nothing for other nodes.
    pub fn items(&self, dict: NodeId) -> impl Iterator<Item = (NodeId, NodeId)> + '_ {
        let chain = match self.node(dict) {
            Node::Dict(chain) => *chain,
            _ => Chain::EMPTY,
        };
        self.chain(chain)
    }

    /// A list's (tuple's, set's) items; nothing for other nodes.
    pub fn list(&self, id: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        let chain = match self.node(id) {
            Node::List(chain) => *chain,
            _ => Chain::EMPTY,
        };
        self.chain(chain).map(|(a, _)| a)
    }

    /// Items of a list or dict.
    pub fn len(&self, id: NodeId) -> usize {
        match self.node(id) {
            Node::List(chain) | Node::Dict(chain) => chain.len as usize,
            _ => 0,
        }
    }

    pub fn int(&self, id: NodeId) -> Option<i64> {
        match self.node(id) {
            Node::Int(v) => Some(*v),
            Node::Bool(b) => Some(i64::from(*b)),
            Node::Str { .. } => self.text(id)?.trim().parse().ok(),
            _ => None,
        }
    }

    pub fn bool(&self, id: NodeId) -> Option<bool> {
        match self.node(id) {
            Node::Bool(b) => Some(*b),
            Node::Int(v) => Some(*v != 0),
            _ => None,
        }
    }
}

struct Parser<'a> {
    input: &'a [u8],
    pos: usize,
    nodes: Vec<Node>,
    links: Vec<Link>,
    stack: Vec<Slot>,
    memo: Vec<Option<NodeId>>,
}

impl<'a> Parser<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PickleError> {
        let end = self.pos.checked_add(n).ok_or(PickleError::Truncated(self.pos))?;
        let bytes = self.input.get(self.pos..end).ok_or(PickleError::Truncated(self.pos))?;
        self.pos = end;
        Ok(bytes)
    }

    fn u8(&mut self) -> Result<u8, PickleError> {
        Ok(self.take(1)?.first().copied().unwrap_or(0))
    }

    fn le(&mut self, n: usize) -> Result<u64, PickleError> {
        let bytes = self.take(n)?;
        Ok(bytes.iter().rev().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    fn push(&mut self, node: Node) {
        let id = self.nodes.len() as NodeId;
        self.nodes.push(node);
        self.stack.push(Slot::Value(id));
    }

    fn pop(&mut self, at: usize) -> Result<NodeId, PickleError> {
        match self.stack.pop() {
            Some(Slot::Value(id)) => Ok(id),
            _ => Err(PickleError::Malformed { at, what: "stack empty or MARK where a value was expected" }),
        }
    }

    fn top(&self, at: usize) -> Result<NodeId, PickleError> {
        match self.stack.last() {
            Some(Slot::Value(id)) => Ok(*id),
            _ => Err(PickleError::Malformed { at, what: "no value on the stack" }),
        }
    }

    /// Where the topmost MARK is on the stack.
    fn mark(&self, at: usize) -> Result<usize, PickleError> {
        self.stack.iter().rposition(|s| matches!(s, Slot::Mark)).ok_or(PickleError::Malformed { at, what: "no MARK" })
    }

    /// Appends one item to a container's chain.
    fn link(&mut self, container: NodeId, a: NodeId, b: NodeId, dict: bool, at: usize) -> Result<(), PickleError> {
        let index = self.links.len() as u32;
        let chain = match (self.nodes.get_mut(container as usize), dict) {
            (Some(Node::List(chain)), false) | (Some(Node::Dict(chain)), true) => chain,
            _ => return Err(PickleError::Malformed { at, what: "item added to the wrong kind of container" }),
        };
        let previous = chain.tail;
        if chain.head == NIL {
            chain.head = index;
        }
        chain.tail = index;
        chain.len += 1;
        self.links.push(Link { a, b, next: NIL });
        if let Some(link) = self.links.get_mut(previous as usize) {
            link.next = index;
        }
        Ok(())
    }

    /// Moves the values above the topmost MARK into `container` (pairs for a
    /// dict) and removes them and the MARK.
    fn drain_mark_into(&mut self, container: NodeId, dict: bool, at: usize) -> Result<(), PickleError> {
        let mark = self.mark(at)?;
        let count = self.stack.len() - mark - 1;
        if dict && !count.is_multiple_of(2) {
            return Err(PickleError::Malformed { at, what: "odd number of dict items" });
        }
        let step = if dict { 2 } else { 1 };
        let mut i = mark + 1;
        while i + step <= self.stack.len() {
            let a = match self.stack.get(i) {
                Some(Slot::Value(id)) => *id,
                _ => return Err(PickleError::Malformed { at, what: "MARK among items" }),
            };
            let b = if dict {
                match self.stack.get(i + 1) {
                    Some(Slot::Value(id)) => *id,
                    _ => return Err(PickleError::Malformed { at, what: "MARK among items" }),
                }
            } else {
                a
            };
            self.link(container, a, b, dict, at)?;
            i += step;
        }
        self.stack.truncate(mark);
        Ok(())
    }

    /// A new container made of the values above the topmost MARK.
    fn container_from_mark(&mut self, dict: bool, at: usize) -> Result<(), PickleError> {
        let id = self.nodes.len() as NodeId;
        self.nodes.push(if dict { Node::Dict(Chain::EMPTY) } else { Node::List(Chain::EMPTY) });
        self.drain_mark_into(id, dict, at)?;
        self.stack.push(Slot::Value(id));
        Ok(())
    }

    fn string(&mut self, len: usize, bytes: bool) -> Result<(), PickleError> {
        let start = self.pos as u32;
        self.take(len)?;
        let len = len as u32;
        self.push(if bytes { Node::Bytes { start, len } } else { Node::Str { start, len } });
        Ok(())
    }

    fn memo_put(&mut self, index: usize, at: usize) -> Result<(), PickleError> {
        if index >= MAX_MEMO {
            return Err(PickleError::Malformed { at, what: "memo index too large" });
        }
        let id = self.top(at)?;
        if self.memo.len() <= index {
            self.memo.resize(index + 1, None);
        }
        if let Some(slot) = self.memo.get_mut(index) {
            *slot = Some(id);
        }
        Ok(())
    }

    fn memo_get(&mut self, index: usize, at: usize) -> Result<(), PickleError> {
        let id = self
            .memo
            .get(index)
            .copied()
            .flatten()
            .ok_or(PickleError::Malformed { at, what: "memo reference to nothing" })?;
        self.stack.push(Slot::Value(id));
        Ok(())
    }

    fn run(mut self) -> Result<Pickle<'a>, PickleError> {
        loop {
            let at = self.pos;
            let op = self.u8()?;
            match op {
                0x80 => {
                    self.u8()?; // PROTO n
                }
                0x95 => {
                    self.take(8)?; // FRAME length: frames are just the bytes that follow
                }
                b'.' => {
                    let root = self.pop(at)?;
                    return Ok(Pickle { input: self.input, nodes: self.nodes, links: self.links, root });
                }
                b'(' => self.stack.push(Slot::Mark),
                b'0' => {
                    self.stack.pop().ok_or(PickleError::Malformed { at, what: "POP on empty stack" })?;
                }
                b'1' => {
                    let mark = self.mark(at)?;
                    self.stack.truncate(mark);
                }
                b'2' => {
                    let id = self.top(at)?;
                    self.stack.push(Slot::Value(id));
                }
                b'N' => self.push(Node::None),
                0x88 => self.push(Node::Bool(true)),
                0x89 => self.push(Node::Bool(false)),
                b'J' => {
                    let v = self.le(4)? as u32 as i32;
                    self.push(Node::Int(i64::from(v)));
                }
                b'K' => {
                    let v = self.le(1)?;
                    self.push(Node::Int(v as i64));
                }
                b'M' => {
                    let v = self.le(2)?;
                    self.push(Node::Int(v as i64));
                }
                0x8a | 0x8b => {
                    let n = if op == 0x8a { self.le(1)? as usize } else { self.le(4)? as usize };
                    let bytes = self.take(n)?;
                    self.push(long_from_le(bytes));
                }
                b'G' => {
                    let bytes = self.take(8)?;
                    let mut be = [0u8; 8];
                    be.copy_from_slice(bytes);
                    self.push(Node::Float(f64::from_be_bytes(be)));
                }
                0x8c => {
                    let n = self.le(1)? as usize;
                    self.string(n, false)?;
                }
                b'X' => {
                    let n = self.le(4)? as usize;
                    self.string(n, false)?;
                }
                0x8d => {
                    let n = self.le(8)?;
                    self.string(usize::try_from(n).unwrap_or(usize::MAX), false)?;
                }
                b'U' | b'C' => {
                    let n = self.le(1)? as usize;
                    self.string(n, op == b'C')?;
                }
                b'T' | b'B' => {
                    let n = self.le(4)? as usize;
                    self.string(n, op == b'B')?;
                }
                0x8e => {
                    let n = self.le(8)?;
                    self.string(usize::try_from(n).unwrap_or(usize::MAX), true)?;
                }
                b']' | b')' | 0x8f => self.push(Node::List(Chain::EMPTY)),
                b'}' => self.push(Node::Dict(Chain::EMPTY)),
                b'l' | b't' | 0x91 => self.container_from_mark(false, at)?,
                b'd' => self.container_from_mark(true, at)?,
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    let start =
                        self.stack.len().checked_sub(n).ok_or(PickleError::Malformed { at, what: "short stack" })?;
                    self.stack.insert(start, Slot::Mark);
                    self.container_from_mark(false, at)?;
                }
                b'a' => {
                    let value = self.pop(at)?;
                    let list = self.top(at)?;
                    self.link(list, value, value, false, at)?;
                }
                b'e' | 0x90 => {
                    let mark = self.mark(at)?;
                    let list = match mark.checked_sub(1).and_then(|i| self.stack.get(i)) {
                        Some(Slot::Value(id)) => *id,
                        _ => return Err(PickleError::Malformed { at, what: "APPENDS without a list" }),
                    };
                    self.drain_mark_into(list, false, at)?;
                }
                b's' => {
                    let value = self.pop(at)?;
                    let key = self.pop(at)?;
                    let dict = self.top(at)?;
                    self.link(dict, key, value, true, at)?;
                }
                b'u' => {
                    let mark = self.mark(at)?;
                    let dict = match mark.checked_sub(1).and_then(|i| self.stack.get(i)) {
                        Some(Slot::Value(id)) => *id,
                        _ => return Err(PickleError::Malformed { at, what: "SETITEMS without a dict" }),
                    };
                    self.drain_mark_into(dict, true, at)?;
                }
                b'q' => {
                    let i = self.le(1)? as usize;
                    self.memo_put(i, at)?;
                }
                b'r' => {
                    let i = self.le(4)? as usize;
                    self.memo_put(i, at)?;
                }
                0x94 => {
                    let i = self.memo.len();
                    self.memo_put(i, at)?;
                }
                b'h' => {
                    let i = self.le(1)? as usize;
                    self.memo_get(i, at)?;
                }
                b'j' => {
                    let i = self.le(4)? as usize;
                    self.memo_get(i, at)?;
                }
                _ => return Err(PickleError::Unsupported { op, at }),
            }
        }
    }
}

/// A little-endian two's-complement integer (LONG1/LONG4).
fn long_from_le(bytes: &[u8]) -> Node {
    if bytes.is_empty() {
        return Node::Int(0);
    }
    if bytes.len() > 8 {
        return Node::BigInt;
    }
    let negative = bytes.last().is_some_and(|b| b & 0x80 != 0);
    let mut v: u64 = if negative { u64::MAX } else { 0 };
    for (i, b) in bytes.iter().enumerate() {
        v &= !(0xffu64 << (8 * i));
        v |= u64::from(*b) << (8 * i);
    }
    Node::Int(v as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long1_reads_nanosecond_timestamps_and_negatives() {
        // LONG1 of 1795486898976309603 as Python's pickle writes it (8 bytes, little-endian).
        let v: i64 = 1795486898976309603;
        assert_eq!(long_from_le(&v.to_le_bytes()), Node::Int(v));
        assert_eq!(long_from_le(&[0xff]), Node::Int(-1));
        assert_eq!(long_from_le(&[0x00, 0x80]), Node::Int(-32768));
    }

    #[test]
    fn refuses_code_and_truncation() {
        // protocol 2, GLOBAL "os\nsystem"
        assert!(matches!(Pickle::parse(b"\x80\x02cos\nsystem\n"), Err(PickleError::Unsupported { op: b'c', .. })));
        assert_eq!(Pickle::parse(b"\x80\x02X\xff\x00\x00\x00ab").err(), Some(PickleError::Truncated(7)));
        assert!(Pickle::parse(b"\x80\x02}q\x00(u").is_err());
        assert!(Pickle::parse(b"").is_err());
    }

    #[test]
    fn memo_shares_a_list_filled_after_it_was_memoised() {
        // [[1], <same list>] as protocol 2: EMPTY_LIST BINPUT0 MARK EMPTY_LIST BINPUT1 K1 APPEND BINGET1 APPENDS STOP
        let p = Pickle::parse(b"\x80\x02]q\x00(]q\x01K\x01ah\x01e.").unwrap();
        let outer: Vec<NodeId> = p.list(p.root()).collect();
        assert_eq!(outer.len(), 2);
        assert_eq!(p.len(outer[1]), 1);
    }
}
