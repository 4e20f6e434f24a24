//! The COLL lines of one thread all start with the same prefix
//! (`gpu34:34088:34105 [0] NCCL INFO `). Remembering each prefix, found by its
//! first 16 bytes and checked in full, spares the prefix parse and the host
//! lookup on every line after the first.

use super::message::CollMemo;

/// What a prefix told the first time it was parsed. `host` is a byte range:
/// the host sits at the same place in every line with this prefix.
#[derive(Debug, Clone)]
pub struct Known {
    pub prefix: Box<[u8]>,
    pub host: Option<(usize, usize)>,
    pub pid: Option<u64>,
    pub tid: Option<u64>,
    pub cuda_dev: Option<u32>,
    pub host_slot: usize,
    /// The tails of this thread's recent COLL lines, to read its next ones faster.
    pub memo: CollMemo,
}

/// Two-way: a prefix lives in its slot or the one next to it, so two threads
/// whose prefixes share a slot do not evict each other on every line.
const SLOTS: usize = 256;

#[derive(Debug)]
pub struct PrefixCache {
    /// Boxed: the table stays a few KiB, so the slots of the threads in use
    /// stay in the L1 cache while the log streams through it.
    slots: Vec<Option<Box<Known>>>,
}

impl Default for PrefixCache {
    fn default() -> Self {
        PrefixCache { slots: vec![None; SLOTS] }
    }
}

fn slot(line: &[u8]) -> Option<usize> {
    let word = |range: std::ops::Range<usize>| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(line.get(range)?);
        Some(u64::from_le_bytes(bytes))
    };
    let mixed = (word(0..8)? ^ word(8..16)?.rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    Some(((mixed >> 56) as usize % SLOTS) & !1)
}

impl PrefixCache {
    /// The remembered prefix `line` starts with, if any.
    pub fn get_mut(&mut self, bytes: &[u8]) -> Option<&mut Known> {
        let first = slot(bytes)?;
        let way = [first, first + 1].into_iter().find(|i| {
            self.slots.get(*i).and_then(Option::as_deref).is_some_and(|known| starts_with(bytes, &known.prefix))
        })?;
        self.slots.get_mut(way)?.as_deref_mut()
    }

    /// Remembers the prefix of `line` (everything before `message`, which must
    /// be a suffix of it), replacing whatever shared its slot.
    pub fn insert(&mut self, line: &str, message: &str, host: Option<&str>, known: Known) {
        let Some(index) = slot(line.as_bytes()) else { return };
        let prefix_len = line.len() - message.len();
        let start = line.as_ptr() as usize;
        let host = host.and_then(|h| {
            let at = (h.as_ptr() as usize).checked_sub(start)?;
            (at + h.len() <= prefix_len).then_some((at, at + h.len()))
        });
        let prefix = line.as_bytes()[..prefix_len].into();
        // The empty way of the pair, else the second: the first stays with the
        // prefix that has held it longest.
        let way = if self.slots.get(index).is_some_and(Option::is_none) { index } else { index + 1 };
        if let Some(entry) = self.slots.get_mut(way) {
            *entry = Some(Box::new(Known { prefix, host, ..known }));
        }
    }
}

/// `bytes.starts_with(prefix)`, eight bytes at a time, the last word
/// overlapping the one before: prefixes are a few dozen bytes, too short to
/// repay a `memcmp` call.
fn starts_with(bytes: &[u8], prefix: &[u8]) -> bool {
    let Some(head) = bytes.get(..prefix.len()) else { return false };
    let word = |s: &[u8], at: usize| s.get(at..).and_then(<[u8]>::first_chunk::<8>).map(|w| u64::from_le_bytes(*w));
    let Some(last) = prefix.len().checked_sub(8) else { return head == prefix };
    word(head, last) == word(prefix, last) && (0..last).step_by(8).all(|at| word(head, at) == word(prefix, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Known {
        Known {
            prefix: Box::default(),
            host: None,
            pid: Some(1),
            tid: Some(2),
            cuda_dev: Some(0),
            host_slot: 0,
            memo: CollMemo::default(),
        }
    }

    #[test]
    fn remembers_prefixes_and_checks_them_in_full() {
        let mut cache = PrefixCache::default();
        let line = "gpu34:34088:34105 [0] NCCL INFO AllReduce: opCount 1";
        let message = &line[32..];
        cache.insert(line, message, Some(&line[..5]), known());
        let hit = cache.get_mut(b"gpu34:34088:34105 [0] NCCL INFO Broadcast: opCount 2").unwrap();
        assert_eq!((hit.prefix.len(), hit.host), (32, Some((0, 5))));
        // Same first 16 bytes, another thread: not this prefix.
        assert!(cache.get_mut(b"gpu34:34088:34106 [0] NCCL INFO AllReduce: opCount 1").is_none());
        assert!(cache.get_mut(b"short").is_none());
        assert!(starts_with(b"abcdefghijk", b"abcdefghij") && !starts_with(b"abcdefghiX", b"abcdefghij"));
        assert!(!starts_with(b"abc", b"abcd"));
        for len in 0..40 {
            let prefix: Vec<u8> = (0..len as u8).collect();
            let mut line = prefix.clone();
            line.extend_from_slice(b" NCCL INFO");
            assert!(starts_with(&line, &prefix));
            for at in 0..len {
                let mut other = line.clone();
                other[at] ^= 1;
                assert!(!starts_with(&other, &prefix), "len {len} at {at}");
            }
        }
    }
}
