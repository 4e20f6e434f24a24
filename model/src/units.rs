//! How sizes print: binary units, as the design's conventions ask.

/// Binary units: exact for powers of two (`8 MiB`), one decimal otherwise.
pub fn size_label(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut unit = 0;
    let mut value = bytes as f64;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 { format!("{value:.0} {}", UNITS[unit]) } else { format!("{value:.1} {}", UNITS[unit]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_units() {
        assert_eq!(size_label(8), "8 B");
        assert_eq!(size_label(1000), "1000 B");
        assert_eq!(size_label(64 << 10), "64 KiB");
        assert_eq!(size_label(3 << 30), "3 GiB");
        assert_eq!(size_label(1536), "1.5 KiB");
    }
}
