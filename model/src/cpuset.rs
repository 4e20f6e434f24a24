//! Sets of logical CPUs, read from the two kernel spellings: lists (`0-23,48-71`)
//! and hex masks (`00000000,00ffffff`, most significant 32-bit word first).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A sorted set of logical CPU numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CpuSet(Vec<u32>);

/// Why a CPU list or mask could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a CPU list or mask: {0:?}")]
pub struct BadCpuSet(pub String);

/// Bound on CPU numbers we accept, so a hostile `0-4294967295` cannot make us
/// allocate gigabytes. Linux's own NR_CPUS limit is 8192.
const MAX_CPU: u32 = 1 << 16;

impl CpuSet {
    pub fn new(mut cpus: Vec<u32>) -> CpuSet {
        cpus.sort_unstable();
        cpus.dedup();
        CpuSet(cpus)
    }

    pub fn cpus(&self) -> &[u32] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, cpu: u32) -> bool {
        self.0.binary_search(&cpu).is_ok()
    }

    pub fn is_subset_of(&self, other: &CpuSet) -> bool {
        self.0.iter().all(|c| other.contains(*c))
    }

    /// Reads a list such as `0-23,48-71` or `0,2,4`. Empty text is the empty set.
    pub fn parse_list(text: &str) -> Result<CpuSet, BadCpuSet> {
        let bad = || BadCpuSet(text.to_string());
        let mut cpus = Vec::new();
        for part in text.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (lo, hi) = match part.split_once('-') {
                Some((lo, hi)) => (lo.trim(), hi.trim()),
                None => (part, part),
            };
            let lo: u32 = lo.parse().map_err(|_| bad())?;
            let hi: u32 = hi.parse().map_err(|_| bad())?;
            if lo > hi || hi > MAX_CPU {
                return Err(bad());
            }
            cpus.extend(lo..=hi);
        }
        Ok(CpuSet::new(cpus))
    }

    /// Reads a hex mask: comma-separated 32-bit words, most significant first
    /// (`local_cpus`, NCCL's `affinity=`). Short masks such as `c0c0` are fine.
    pub fn parse_mask(text: &str) -> Result<CpuSet, BadCpuSet> {
        let bad = || BadCpuSet(text.to_string());
        let words: Vec<&str> = text.trim().split(',').collect();
        if words.len() > (MAX_CPU / 32) as usize {
            return Err(bad());
        }
        let mut cpus = Vec::new();
        for (position, word) in words.iter().rev().enumerate() {
            let word = word.trim().trim_start_matches("0x");
            if word.len() > 8 || (word.is_empty() && words.len() > 1) {
                return Err(bad());
            }
            let bits = if word.is_empty() { 0 } else { u32::from_str_radix(word, 16).map_err(|_| bad())? };
            for bit in 0..32 {
                if bits & (1 << bit) != 0 {
                    cpus.push(position as u32 * 32 + bit);
                }
            }
        }
        Ok(CpuSet::new(cpus))
    }

    /// The hex mask form NCCL writes into its topology XML.
    pub fn to_mask(&self) -> String {
        let words = self.0.last().map_or(1, |max| *max as usize / 32 + 1);
        let mut out = Vec::with_capacity(words);
        for word in (0..words).rev() {
            let mut bits = 0u32;
            for cpu in &self.0 {
                if *cpu as usize / 32 == word {
                    bits |= 1 << (cpu % 32);
                }
            }
            out.push(format!("{bits:08x}"));
        }
        out.join(",")
    }
}

impl fmt::Display for CpuSet {
    /// The kernel's list form: `0-23,48-71`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end = self.0[i];
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?
            } else {
                write!(f, "{start}-{end}")?
            }
            i += 1;
        }
        Ok(())
    }
}

impl FromStr for CpuSet {
    type Err = BadCpuSet;
    fn from_str(text: &str) -> Result<CpuSet, BadCpuSet> {
        CpuSet::parse_list(text)
    }
}

impl Serialize for CpuSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        CpuSet::parse_list(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_masks_agree() {
        let list = CpuSet::parse_list("0-23,48-71").unwrap();
        assert_eq!(list.len(), 48);
        assert_eq!(list.to_string(), "0-23,48-71");
        let mask = CpuSet::parse_mask("00000000,00ffffff").unwrap();
        assert_eq!(mask.to_string(), "0-23");
        assert_eq!(CpuSet::parse_mask("c0c0").unwrap().to_string(), "6-7,14-15");
        assert_eq!(CpuSet::parse_mask(&list.to_mask()).unwrap(), list);
        assert_eq!(CpuSet::parse_list("").unwrap(), CpuSet::default());
        assert_eq!(CpuSet::parse_list("0,2,4\n").unwrap().to_string(), "0,2,4");
    }

    #[test]
    fn hostile_input_is_rejected() {
        for text in ["0-4294967295", "5-1", "a", "1-", "-"] {
            assert!(CpuSet::parse_list(text).is_err(), "{text:?}");
        }
        assert!(CpuSet::parse_mask("xyz").is_err());
        assert!(CpuSet::parse_mask("123456789").is_err());
    }
}
