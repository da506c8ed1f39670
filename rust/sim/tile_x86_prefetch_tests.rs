//! Tests of `tile_x86`'s prefetching: `NextSlice` (the next panel's slice fetched into L2
//! across a panel's tiles), `next_tile`, `rows_lines` and `rows_fetched_ahead` (the next
//! tile's rows fetched into L1 on streamed blocks).

use super::*;

/// Every group's ticks together fetch each line of the slice exactly once, within the
/// ticks the group has (so the whole slice is in flight before the next panel starts),
/// and the addresses a group's ticks give (`tick_with`, a stepped cursor) are its lines'
/// (`NextSlice::line`) in order, across empty and non-empty ranges.
#[test]
fn the_groups_fetch_every_line_once_within_their_ticks() {
    for (lines0, lines1) in [(0usize, 0usize), (1, 0), (64, 0), (512, 0), (300, 17), (2, 511), (5000, 3), (0, 9)] {
        let slice = NextSlice { ranges: [(1 << 20, lines0), (1 << 24, lines1), (1 << 26, lines1), (1 << 28, lines0)], lines: 2 * (lines0 + lines1) };
        for groups in [1usize, 2, 3, 8, 35] {
            for ticks in [1usize, 2, 7, 32, 33, 64] {
                let mut seen = vec![0u32; slice.lines];
                for g in 0..groups {
                    let (mut pf, mut by_index) = (slice.share(g, groups, ticks), slice.share(g, groups, ticks));
                    let (mut fetched, mut want) = (Vec::new(), Vec::new());
                    for _ in 0..ticks {
                        pf.tick_with(|line| fetched.push(line));
                        for i in by_index.due() {
                            seen[i] += 1;
                            want.push(slice.line(i));
                        }
                    }
                    assert_eq!(fetched, want, "lines {lines0}+{lines1} group {g} of {groups}, ticks {ticks}");
                }
                assert!(seen.iter().all(|&n| n == 1), "lines {lines0}+{lines1} groups {groups} ticks {ticks}: {:?}", seen.iter().enumerate().find(|(_, &n)| n != 1));
            }
        }
    }
}

/// A pass's tick count is what the tiles tick: the chunks of every segment, which
/// cover the segment's k in order, at most PF_CHUNK at a time.
#[test]
fn a_pass_counts_the_chunks_its_tiles_tick() {
    let (a, b) = (Packed::new(&[1f32; 5 * 16], 5, 16, 1), Packed::new(&[1f32; 300 * 16], 300, 16, 1));
    let z = [0f32; 400];
    let terms: [TermRef<'_, f32>; 2] = [(&a, &z, 5), (&b, &z, 300)];
    let mut pass = Pass::new(z.as_ptr());
    // (start, end, segments' k ranges, ticks): both terms; the second alone, mid-term
    for (start, end, want, ticks) in [(0, 256, vec![(0, 5), (0, 251)], 1 + 32), (256, 305, vec![(251, 300)], 7)] {
        pass.fill(&terms, start, end);
        assert_eq!(pass.segs[..pass.n].iter().map(|s| (s.k0, s.k1)).collect::<Vec<_>>(), want);
        assert_eq!(pass.ticks, ticks);
        for seg in &pass.segs[..pass.n] {
            let ks: Vec<usize> = seg.chunks().flatten().collect();
            assert_eq!(ks, (seg.k0..seg.k1).collect::<Vec<_>>());
            assert!(seg.chunks().all(|c| c.len() <= PF_CHUNK && !c.is_empty()));
        }
    }
}

#[test]
fn each_tile_names_the_one_after_it() {
    for (ns, width, pw, rows) in [(64, 16, 16, 6), (13, 8, 32, 6), (5, 4, 8, 4), (12, 16, 16, 6)] {
        let panels = 3..7;
        let mut order = Vec::new();
        for q in panels.clone() {
            for off in (0..pw).step_by(width) {
                for s0 in (0..ns).step_by(rows) {
                    order.push((q, off, s0, (ns - s0).min(rows)));
                }
            }
        }
        for (i, &(q, off, s0, m)) in order.iter().enumerate() {
            let expected = order.get(i + 1).map(|&(q, off, s0, _)| (q, off, s0));
            assert_eq!(next_tile((q, off, s0 + m), ns, width, pw, panels.end), expected, "tile {i} of {ns} sequences");
        }
    }
}

/// The lines fetched for a tile are those its loads and stores touch: its accumulators'
/// rows when it starts from them, and on the gate split's pass its regions' rows and
/// addends (the units of a gate without a region stay in `acc`).
#[test]
fn a_tile_s_rows_are_the_lines_fetched_for_it() {
    let (ns, hsz, l) = (13, 24, 8);
    let units = 4 * hsz;
    let (pw, up) = (16, 4 * hsz);
    let mut acc = vec![0f32; ns * up];
    let mut pre = vec![0f32; 3 * ns * hsz];
    let addend = vec![0f32; ns * (units + 8)];
    let gates = GateStore { addend: addend.as_ptr(), addend_ld: units + 8, pre: pre.as_mut_ptr(), hsz, units, region: [Some(0), None, Some(2), Some(1), None] };
    let ap = acc.as_mut_ptr();
    let line = |p: *mut f32| p as usize & !63;
    for (q, off, s0, m) in [(0, 0, 0, 6), (1, 8, 6, 6), (2, 0, 12, 1), (3, 8, 0, 6), (5, 0, 7, 6)] {
        for (gates, loads) in [(None, true), (Some(gates), true), (Some(gates), false)] {
            let dest = unsafe { dests::<f32, 2>(ap, pw, up, l, ns, gates, q, off) };
            let unit = q * pw + off;
            let mut fetched = std::collections::BTreeSet::new();
            unsafe { rows_lines::<f32, 2>((ap, up, l), loads, &dest, unit, s0..s0 + m, |a| {
                fetched.insert(a);
            }) };
            let mut touched = std::collections::BTreeSet::new();
            for s in s0..s0 + m {
                for (r, d) in dest.iter().enumerate() {
                    for j in [0, l - 1] {
                        if loads {
                            touched.insert(line(unsafe { ap.add(s * up + unit + r * l + j) }));
                        }
                        touched.insert(line(unsafe { d.ptr.add(s * d.ld + j) }));
                        if !d.add.is_null() {
                            touched.insert(line(unsafe { d.add.add(s * d.ld_add + j) }.cast_mut()));
                        }
                    }
                }
            }
            assert_eq!(fetched, touched, "tile at panel {q}, unit {off}, rows {s0}.., gates {}, loads {loads}", gates.is_some());
        }
    }
}

#[test]
fn lines_are_counted_over_the_ranges_in_order() {
    let slice = NextSlice { ranges: [(4096, 3), (65536, 2), (0, 0), (0, 0)], lines: 5 };
    assert_eq!((0..5).map(|i| slice.line(i)).collect::<Vec<_>>(), [4096, 4160, 4224, 65536, 65600]);
    let slice = NextSlice { ranges: [(4096, 1), (0, 0), (65536, 2), (1 << 20, 1)], lines: 4 };
    assert_eq!((0..4).map(|i| slice.line(i)).collect::<Vec<_>>(), [4096, 65536, 65600, 1 << 20]);
    // a slice of k rows starting mid-line covers the partial lines at both ends
    let data = vec![0f32; 4096];
    let owner = [data.as_ptr()];
    let seg = [Seg { panel: data.as_ptr(), pstride: 64 * 16, z: data.as_ptr(), ldz: 0, k0: 1, k1: 3 }];
    let next = NextSlice::of(&seg, &owner, 1, 1, 16);
    let (lo, hi) = (data.as_ptr() as usize + (64 + 1) * 16 * 4, data.as_ptr() as usize + (64 + 3) * 16 * 4);
    let (first, n) = next.ranges[0];
    assert!(first <= lo && first + 64 * n >= hi && first % 64 == 0 && first + 64 > lo && n == next.lines);
    // two panels: panel 2's slice follows panel 1's
    let two = NextSlice::of(&seg, &owner, 1, 2, 16);
    assert_eq!(two.ranges[0], next.ranges[0]);
    assert_eq!(two.ranges[1], (next.ranges[0].0 + 64 * 16 * 4, n));
    assert_eq!(two.lines, 2 * n);
}

/// The next tile's rows are fetched where the measurements found it paid: 1 MiB of f32
/// LSTM accumulators (64 × 4,096) on Zen 3's 512 KiB and Zen 5's 1 MiB budgets, and the
/// f32 SimpleRNN's 256 KiB (64 × 1,024) on Zen 3 only.
#[test]
fn rows_are_fetched_ahead_where_the_accumulators_fill_half_the_l2() {
    let (zen3, zen5) = (512 << 10, 1 << 20);
    let (lstm, rnn) = (64 * 4096 * 4, 64 * 1024 * 4);
    assert!(rows_fetched_ahead(lstm, zen3) && rows_fetched_ahead(lstm, zen5));
    assert!(rows_fetched_ahead(rnn, zen3));
    assert!(!rows_fetched_ahead(rnn, zen5));
    assert!(!rows_fetched_ahead(rnn - 64, zen3));
}
