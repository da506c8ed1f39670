//! How many bytes of a block's buffers the lock-step engines keep in one core's L2 cache
//! (`float_batch::block_size`): the CPU's own L2 size, read once, capped at
//! [`MAX_L2_BUDGET`].
//!
//! It was the constant `tile_kernel::L2_BUDGET`, 1 MiB: half of the 2 MiB L2 of the Xeons
//! it was first measured on and all of Zen 4's and Zen 5's. A Zen 3 core has 512 KiB, which
//! blocks sized for 1 MiB overflowed into L3. Where the size cannot be read (not Linux, or
//! no sysfs cache entries), the budget stays [`MAX_L2_BUDGET`], as before. The threshold
//! above which packed weights are streamed stays `tile_kernel::L2_BUDGET`.
//!
//! Measured on Zen 3 (session 61: 1 thread unless noted, 15–25 calls alternating the two
//! budgets in one process, best / median, 512 KiB against 1 MiB): the GRU at (1024, 200,
//! 16, 4) f32 +3.2% / +2.5% and +4.3% / +3.6% in two runs, the LSTM there f64 +5.7% / +5.2%
//! and −1.5% / +2.1%, the GRU at (4096, 64, 64, 8) f32 +2.8% / +0.7% and +1.0% / +1.7%
//! (2 threads +10% / +1.5%), the LSTM there f64 on 2 threads −1.2% / +10.7%, the f64
//! SimpleRNN at (256, 128, 256, 64) +4.2% / +4.3%; the other rows within ±4%. Small next to
//! this guest's noise, but in the direction the cache sizes predict.

use std::sync::OnceLock;

/// The budget where the L2 is this large or larger, or unknown (1 MiB).
pub const MAX_L2_BUDGET: usize = 1 << 20;
/// The smallest budget whatever the reported size (a misreported tiny cache would split the
/// batch into blocks too small to fill a tile).
pub const MIN_L2_BUDGET: usize = 256 << 10;

/// The L2 working budget in bytes: min(this CPU's L2 size, 1 MiB), at least 256 KiB.
pub fn l2_budget() -> usize {
    static BUDGET: OnceLock<usize> = OnceLock::new();
    *BUDGET.get_or_init(|| budget_of(l2_bytes()))
}

/// The budget for an L2 of `l2` bytes (None: unknown).
fn budget_of(l2: Option<usize>) -> usize {
    l2.map_or(MAX_L2_BUDGET, |b| b.clamp(MIN_L2_BUDGET, MAX_L2_BUDGET))
}

/// The size of CPU 0's level-2 data or unified cache, from Linux's
/// /sys/devices/system/cpu/cpu0/cache/index*/{level,type,size}.
fn l2_bytes() -> Option<usize> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.flatten().find_map(|entry| {
        let read = |name: &str| std::fs::read_to_string(entry.path().join(name)).ok();
        let is_l2 = read("level")?.trim() == "2" && read("type")?.trim() != "Instruction";
        if is_l2 {
            parse_size(&read("size")?)
        } else {
            None
        }
    })
}

/// A sysfs cache size ("512K", "2048K", "1M", "32768K" or plain bytes) in bytes.
fn parse_size(text: &str) -> Option<usize> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let n: usize = digits.parse().ok()?;
    let scale = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale).filter(|&b| b > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_sizes_parse_to_bytes() {
        assert_eq!(parse_size("512K\n"), Some(512 << 10));
        assert_eq!(parse_size("2048K"), Some(2 << 20));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("65536"), Some(65536));
        for bad in ["", "K", "12Q", "-4K", "1.5M", "0K", "99999999999999999999K"] {
            assert_eq!(parse_size(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_budget_is_the_l2_size_within_its_bounds() {
        assert_eq!(budget_of(None), MAX_L2_BUDGET);
        assert_eq!(budget_of(Some(512 << 10)), 512 << 10);
        assert_eq!(budget_of(Some(2 << 20)), MAX_L2_BUDGET);
        assert_eq!(budget_of(Some(64 << 10)), MIN_L2_BUDGET);
    }

    /// The sysfs reading agrees with glibc's `getconf LEVEL2_CACHE_SIZE` (CPUID on x86), an
    /// independent source, where that reports a size.
    #[test]
    fn the_l2_size_read_is_the_one_getconf_reports() {
        let Ok(out) = std::process::Command::new("getconf").arg("LEVEL2_CACHE_SIZE").output() else {
            return;
        };
        let Some(size) = String::from_utf8_lossy(&out.stdout).trim().parse::<usize>().ok().filter(|&b| b > 0) else {
            return;
        };
        assert_eq!(l2_bytes(), Some(size), "sysfs against getconf");
    }
}
