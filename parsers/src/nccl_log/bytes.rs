//! Byte helpers for the short fields of a log line (hosts, pids, pointers,
//! counts). They exist because the COLL lines that make up most of a long log
//! are made of tokens of a dozen bytes or so: too short to repay a SIMD
//! search's setup, and of varying length, so a byte loop's exit is a branch
//! mispredicted on most lines. Eight bytes at a time in a `u64` (SWAR) is
//! cheaper than both.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The index of the first `byte` in `bytes`.
#[inline(always)]
pub(crate) fn short_find(bytes: &[u8], byte: u8) -> Option<usize> {
    // The same byte twice: the compiler folds the two searches into one.
    short_find2(bytes, byte, byte)
}

/// The index of the first `a` or `b` in `bytes` ([`short_find`] for two bytes).
#[inline(always)]
pub(crate) fn short_find2(bytes: &[u8], a: u8, b: u8) -> Option<usize> {
    let (pattern_a, pattern_b) = (ONES * u64::from(a), ONES * u64::from(b));
    let flags = |word: u64, pattern: u64| {
        let word = word ^ pattern;
        word.wrapping_sub(ONES) & !word & HIGHS
    };
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        // A zero byte after the XOR is a match. Each side's lowest flag is
        // exact (a false flag needs a borrow, and borrows only carry upwards),
        // so the lowest of both is exact too.
        let found = flags(word, pattern_a) | flags(word, pattern_b);
        if found != 0 {
            return Some(offset + (found.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    chunks.remainder().iter().position(|c| *c == a || *c == b).map(|i| offset + i)
}

/// String equality for the short strings compared on every COLL line
/// (collective names, communicator pointers): overlapping word loads instead
/// of a `memcmp` call.
pub(crate) fn short_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    if !(8..=16).contains(&a.len()) {
        return a == b;
    }
    let word = |bytes: &[u8], at: usize| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(word)
    };
    let last = a.len() - 8;
    word(a, 0) == word(b, 0) && word(a, last) == word(b, last)
}

/// The run of ASCII digits at the front of `word` (eight bytes, the first in
/// the lowest byte) as (value, length), read without a loop or a branch: a
/// count's width changes from line to line, and a branch on it would be
/// mispredicted. No digits read as (0, 0); eight as their value, length 8
/// (more may follow).
#[inline(always)]
pub(crate) fn leading_digits(word: [u8; 8]) -> (u64, usize) {
    const HIGH_NIBBLES: u64 = 0xf0f0_f0f0_f0f0_f0f0;
    const THREES: u64 = 0x3030_3030_3030_3030;
    let w = u64::from_le_bytes(word);
    // A digit is 0x30..=0x39: high nibble 3, and still 3 after adding 6. A carry
    // out of a byte can only start at a non-digit, so the first one is exact.
    let off = ((w & HIGH_NIBBLES) ^ THREES) | ((w.wrapping_add(0x0606_0606_0606_0606) & HIGH_NIBBLES) ^ THREES);
    let flagged = (off | off >> 1 | off >> 2 | off >> 3) & 0x1010_1010_1010_1010;
    let len = (flagged.trailing_zeros() / 8) as usize;
    // The digits moved to the top bytes, zeros below them, then combined
    // pairwise: 2 digits, 4, 8 (the usual SWAR reduction).
    let mut v = (w & 0x0f0f_0f0f_0f0f_0f0f).checked_shl(8 * (8 - len) as u32).unwrap_or(0);
    v = (v.wrapping_mul(10 << 8 | 1) >> 8) & 0x00ff_00ff_00ff_00ff;
    v = (v.wrapping_mul(100 << 16 | 1) >> 16) & 0x0000_ffff_0000_ffff;
    v = v.wrapping_mul(10000 << 32 | 1) >> 32;
    (v, len)
}

/// A run of ASCII digits as a number: `None` if empty, if anything else is in
/// it, or if it may overflow (more than 19 digits). Cheaper than `str::parse`,
/// which also accepts a sign.
#[inline(always)]
pub(crate) fn digits(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 19 {
        return None;
    }
    text.bytes().try_fold(0u64, |value, b| b.is_ascii_digit().then(|| value * 10 + u64::from(b - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every position of the byte and every slice length up to three words,
    /// against the obvious loop: the word arithmetic must never flag a
    /// neighbour (0x00, 0x01 and 0x80 bytes included, the ones borrows touch).
    #[test]
    fn search_agrees_with_a_plain_loop() {
        for len in 0..24 {
            for at in 0..len {
                for (fill, byte) in [(b'a', b' '), (0x80, 0x00), (0x00, 0x80), (0x01, 0x00), (b'!', b' '), (0x7f, 0xff)]
                {
                    let mut bytes = vec![fill; len];
                    bytes[at] = byte;
                    if at + 3 < len {
                        bytes[at + 3] = byte;
                    }
                    assert_eq!(short_find(&bytes, byte), bytes.iter().position(|b| *b == byte), "{bytes:?}");
                }
            }
            assert_eq!(short_find(&vec![b'x'; len], b' '), None);
            for at in 0..len {
                for other in 0..len {
                    let mut bytes = vec![b'x'; len];
                    (bytes[at], bytes[other]) = (b'\n', b' ');
                    let first = bytes.iter().position(|b| *b == b' ' || *b == b'\n');
                    assert_eq!(short_find2(&bytes, b' ', b'\n'), first, "{bytes:?}");
                }
            }
        }
    }

    #[test]
    fn short_equality() {
        assert!(short_eq("0x7f372005a200", "0x7f372005a200"));
        assert!(!short_eq("0x7f372005a200", "0x7f372005a210"));
        assert!(!short_eq("0x7f372005a200", "0x7f372005a20"));
        assert!(short_eq("AllReduce", "AllReduce") && !short_eq("AllGather", "AllReduce"));
        assert!(short_eq("a", "a") && !short_eq("a", "b") && short_eq("", ""));
        assert!(!short_eq("0123456789abcdefX", "0123456789abcdefY"));
    }

    /// Every length of run, every byte after it, against `str::parse`.
    #[test]
    fn leading_digits_agree_with_parse() {
        let runs = ["", "0", "7", "10", "999", "4096", "65536", "7382228", "1234567", "12345678"];
        for run in runs {
            for next in 0..=255u8 {
                let mut word = [next; 8];
                word[..run.len()].copy_from_slice(run.as_bytes());
                let mut len = run.len();
                if next.is_ascii_digit() {
                    len = 8;
                }
                let (value, got) = leading_digits(word);
                assert_eq!(got, len, "{run:?} then {next}");
                let expected = std::str::from_utf8(&word[..len]).unwrap().parse().unwrap_or(0);
                assert_eq!(value, expected, "{run:?} then {next}");
            }
        }
    }

    #[test]
    fn digits_only() {
        assert_eq!(digits("34088"), Some(34088));
        assert_eq!(digits("9999999999999999999"), Some(9_999_999_999_999_999_999));
        assert_eq!(digits("18446744073709551615"), None);
        assert_eq!((digits(""), digits("+1"), digits("1 "), digits("0x1")), (None, None, None, None));
    }
}
