//! How the report prints figures: durations, sizes and the met/missed mark.

use std::time::Duration;

/// A duration given in milliseconds, in the unit that suits it.
pub fn us(d: f64) -> String {
    if d >= 10.0 {
        format!("{d:.1} ms")
    } else if d >= 1.0 {
        format!("{d:.2} ms")
    } else {
        format!("{:.0} µs", d * 1e3)
    }
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

pub fn kib(bytes: usize) -> String {
    if bytes >= 1024 * 1024 {
        format!("{:.2} MiB", bytes as f64 / 1024.0 / 1024.0)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

/// The last column of a target row.
pub fn yes(ok: bool) -> &'static str {
    if ok { "**met**" } else { "**MISSED**" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_their_unit() {
        assert_eq!(us(12.34), "12.3 ms");
        assert_eq!(us(1.234), "1.23 ms");
        assert_eq!(us(0.4567), "457 µs");
    }

    #[test]
    fn sizes_pick_their_unit() {
        assert_eq!(kib(2048), "2.0 KiB");
        assert_eq!(kib(3 * 1024 * 1024 / 2), "1.50 MiB");
    }
}
