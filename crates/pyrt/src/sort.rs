//! CPython's `list.sort` (timsort, `Objects/listobject.c` of 3.11/3.12) with a fallible
//! `<`: the same comparisons in the same order, so a comparison that raises stops the
//! sort exactly where Python's would.

/// The order `sorted(items, reverse=reverse)` puts `n` items in, as indices, given
/// Python's `<` between items `i` and `j`.
pub fn sorted_order<E, F: FnMut(usize, usize) -> Result<bool, E>>(
    n: usize,
    reverse: bool,
    mut lt: F,
) -> Result<Vec<usize>, E> {
    let mut order: Vec<usize> = (0..n).collect();
    // CPython sorts in reverse by reversing, sorting stably, and reversing back, so equal
    // keys keep their original order.
    if reverse {
        order.reverse();
    }
    timsort(&mut order, &mut lt)?;
    if reverse {
        order.reverse();
    }
    Ok(order)
}

const MIN_GALLOP: usize = 7;

struct Run {
    base: usize,
    len: usize,
    power: u32,
}

struct MergeState<T> {
    min_gallop: usize,
    pending: Vec<Run>,
    tmp: Vec<T>,
}

/// How a merge loop ended (CPython's `Succeed`/`Fail` and `CopyA`/`CopyB` labels).
enum Exit<E> {
    Done,
    CopyRest,
    Fail(E),
}

/// Sort `a` in place, stably, making the same `<` calls CPython's `list.sort` makes;
/// the first comparison error stops the sort and is returned (`a` is then some
/// permutation of what it was, as CPython leaves its list).
pub fn timsort<T: Copy, E, F: FnMut(T, T) -> Result<bool, E>>(
    a: &mut [T],
    lt: &mut F,
) -> Result<(), E> {
    let n = a.len();
    if n < 2 {
        return Ok(());
    }
    let mut ms = MergeState {
        min_gallop: MIN_GALLOP,
        pending: Vec::new(),
        tmp: Vec::new(),
    };
    let minrun = compute_minrun(n);
    let mut lo = 0;
    while lo < n {
        let remaining = n - lo;
        let (mut run, descending) = count_run(&a[lo..], lt)?;
        if descending {
            a[lo..lo + run].reverse();
        }
        if run < minrun {
            let force = remaining.min(minrun);
            binary_sort(&mut a[lo..lo + force], run, lt)?;
            run = force;
        }
        found_new_run(&mut ms, a, run, n, lt)?;
        ms.pending.push(Run {
            base: lo,
            len: run,
            power: 0,
        });
        lo += run;
    }
    while ms.pending.len() > 1 {
        let mut i = ms.pending.len() - 2;
        if i > 0 && ms.pending[i - 1].len < ms.pending[i + 1].len {
            i -= 1;
        }
        merge_at(&mut ms, a, i, lt)?;
    }
    Ok(())
}

fn compute_minrun(mut n: usize) -> usize {
    let mut r = 0;
    while n >= 64 {
        r |= n & 1;
        n >>= 1;
    }
    n + r
}

/// Length of the run at the start of `a`, and whether it is strictly descending.
fn count_run<T: Copy, E, F: FnMut(T, T) -> Result<bool, E>>(
    a: &[T],
    lt: &mut F,
) -> Result<(usize, bool), E> {
    if a.len() < 2 {
        return Ok((a.len(), false));
    }
    let mut n = 2;
    if lt(a[1], a[0])? {
        while n < a.len() && lt(a[n], a[n - 1])? {
            n += 1;
        }
        Ok((n, true))
    } else {
        while n < a.len() && !lt(a[n], a[n - 1])? {
            n += 1;
        }
        Ok((n, false))
    }
}

/// Binary insertion sort of `a`, whose first `start` items are already sorted.
fn binary_sort<T: Copy, E, F: FnMut(T, T) -> Result<bool, E>>(
    a: &mut [T],
    start: usize,
    lt: &mut F,
) -> Result<(), E> {
    for st in start.max(1)..a.len() {
        let pivot = a[st];
        let (mut l, mut r) = (0, st);
        while l < r {
            let p = l + ((r - l) >> 1);
            if lt(pivot, a[p])? {
                r = p;
            } else {
                l = p + 1;
            }
        }
        a.copy_within(l..st, l + 1);
        a[l] = pivot;
    }
    Ok(())
}

/// Powersort's "power" of the run boundary between `[s1, s1+n1)` and the next `n2`.
fn powerloop(s1: usize, n1: usize, n2: usize, n: usize) -> u32 {
    let mut result = 0;
    let mut a = 2 * s1 + n1;
    let mut b = a + n1 + n2;
    loop {
        result += 1;
        if a >= n {
            a -= n;
            b -= n;
        } else if b >= n {
            break;
        }
        a <<= 1;
        b <<= 1;
    }
    result
}

fn found_new_run<T: Copy, E, F: FnMut(T, T) -> Result<bool, E>>(
    ms: &mut MergeState<T>,
    a: &mut [T],
    n2: usize,
    n: usize,
    lt: &mut F,
) -> Result<(), E> {
    let Some(top) = ms.pending.last() else {
        return Ok(());
    };
    let power = powerloop(top.base, top.len, n2, n);
    while ms.pending.len() > 1 && ms.pending[ms.pending.len() - 2].power > power {
        let i = ms.pending.len() - 2;
        merge_at(ms, a, i, lt)?;
    }
    if let Some(top) = ms.pending.last_mut() {
        top.power = power;
    }
    Ok(())
}

fn merge_at<T: Copy, E, F: FnMut(T, T) -> Result<bool, E>>(
    ms: &mut MergeState<T>,
    a: &mut [T],
    i: usize,
    lt: &mut F,
) -> Result<(), E> {
    let (base_a, na) = (ms.pending[i].base, ms.pending[i].len);
    let (base_b, nb) = (ms.pending[i + 1].base, ms.pending[i + 1].len);
    ms.pending[i].len = na + nb;
    ms.pending.remove(i + 1);
    // Elements of A before where B's first belongs are already in place...
    let k = gallop_right(a[base_b], &a[base_a..base_a + na], 0, lt)?;
    let (base_a, na) = (base_a + k, na - k);
    if na == 0 {
        return Ok(());
    }
    // ...and so are elements of B after where A's last belongs.
    let nb = gallop_left(a[base_a + na - 1], &a[base_b..base_b + nb], nb - 1, lt)?;
    if nb == 0 {
        return Ok(());
    }
    if na <= nb {
        merge_lo(ms, a, base_a, na, base_b, nb, lt)
    } else {
        merge_hi(ms, a, base_a, na, base_b, nb, lt)
    }
}

/// Where `key` goes in sorted `arr`, left of any equal items; the search starts at `hint`.
fn gallop_left<T: Copy, E, F: FnMut(T, T) -> Result<bool, E>>(
    key: T,
    arr: &[T],
    hint: usize,
    lt: &mut F,
) -> Result<usize, E> {
    let n = arr.len() as isize;
    let hint = hint as isize;
    let at = |i: isize| arr[i as usize];
    let (mut lastofs, mut ofs): (isize, isize) = (0, 1);
    if lt(at(hint), key)? {
        let maxofs = n - hint;
        while ofs < maxofs {
            if lt(at(hint + ofs), key)? {
                lastofs = ofs;
                ofs = (ofs << 1) + 1;
            } else {
                break;
            }
        }
        ofs = ofs.min(maxofs);
        lastofs += hint;
        ofs += hint;
    } else {
        let maxofs = hint + 1;
        while ofs < maxofs {
            if lt(at(hint - ofs), key)? {
                break;
            }
            lastofs = ofs;
            ofs = (ofs << 1) + 1;
        }
        ofs = ofs.min(maxofs);
        let k = lastofs;
        lastofs = hint - ofs;
        ofs = hint - k;
    }
    lastofs += 1;
    while lastofs < ofs {
        let m = lastofs + ((ofs - lastofs) >> 1);
        if lt(at(m), key)? {
            lastofs = m + 1;
        } else {
            ofs = m;
        }
    }
    Ok(ofs as usize)
}

/// Where `key` goes in sorted `arr`, right of any equal items; the search starts at
/// `hint`.
fn gallop_right<T: Copy, E, F: FnMut(T, T) -> Result<bool, E>>(
    key: T,
    arr: &[T],
    hint: usize,
    lt: &mut F,
) -> Result<usize, E> {
    let n = arr.len() as isize;
    let hint = hint as isize;
    let at = |i: isize| arr[i as usize];
    let (mut lastofs, mut ofs): (isize, isize) = (0, 1);
    if lt(key, at(hint))? {
        let maxofs = hint + 1;
        while ofs < maxofs {
            if lt(key, at(hint - ofs))? {
                lastofs = ofs;
                ofs = (ofs << 1) + 1;
            } else {
                break;
            }
        }
        ofs = ofs.min(maxofs);
        let k = lastofs;
        lastofs = hint - ofs;
        ofs = hint - k;
    } else {
        let maxofs = n - hint;
        while ofs < maxofs {
            if lt(key, at(hint + ofs))? {
                break;
            }
            lastofs = ofs;
            ofs = (ofs << 1) + 1;
        }
        ofs = ofs.min(maxofs);
        lastofs += hint;
        ofs += hint;
    }
    lastofs += 1;
    while lastofs < ofs {
        let m = lastofs + ((ofs - lastofs) >> 1);
        if lt(key, at(m))? {
            ofs = m;
        } else {
            lastofs = m + 1;
        }
    }
    Ok(ofs as usize)
}

/// Merge adjacent runs `[base_a, +na)` and `[base_b, +nb)` with A the shorter; A is
/// copied out and the merge fills from the left.
fn merge_lo<T: Copy, E, F: FnMut(T, T) -> Result<bool, E>>(
    ms: &mut MergeState<T>,
    a: &mut [T],
    base_a: usize,
    mut na: usize,
    base_b: usize,
    mut nb: usize,
    lt: &mut F,
) -> Result<(), E> {
    ms.tmp.clear();
    ms.tmp.extend_from_slice(&a[base_a..base_a + na]);
    let (mut dest, mut pa, mut pb) = (base_a, 0usize, base_b);
    a[dest] = a[pb];
    dest += 1;
    pb += 1;
    nb -= 1;
    let exit = 'merge: {
        if nb == 0 {
            break 'merge Exit::Done;
        }
        if na == 1 {
            break 'merge Exit::CopyRest;
        }
        let mut min_gallop = ms.min_gallop;
        loop {
            let (mut acount, mut bcount) = (0usize, 0usize);
            // One item at a time until one run wins `min_gallop` times in a row.
            loop {
                match lt(a[pb], ms.tmp[pa]) {
                    Err(e) => break 'merge Exit::Fail(e),
                    Ok(true) => {
                        a[dest] = a[pb];
                        dest += 1;
                        pb += 1;
                        bcount += 1;
                        acount = 0;
                        nb -= 1;
                        if nb == 0 {
                            break 'merge Exit::Done;
                        }
                        if bcount >= min_gallop {
                            break;
                        }
                    }
                    Ok(false) => {
                        a[dest] = ms.tmp[pa];
                        dest += 1;
                        pa += 1;
                        acount += 1;
                        bcount = 0;
                        na -= 1;
                        if na == 1 {
                            break 'merge Exit::CopyRest;
                        }
                        if acount >= min_gallop {
                            break;
                        }
                    }
                }
            }
            // Galloping mode.
            min_gallop += 1;
            loop {
                min_gallop -= usize::from(min_gallop > 1);
                ms.min_gallop = min_gallop;
                let k = match gallop_right(a[pb], &ms.tmp[pa..pa + na], 0, lt) {
                    Ok(k) => k,
                    Err(e) => break 'merge Exit::Fail(e),
                };
                acount = k;
                if k > 0 {
                    a[dest..dest + k].copy_from_slice(&ms.tmp[pa..pa + k]);
                    dest += k;
                    pa += k;
                    na -= k;
                    if na == 1 {
                        break 'merge Exit::CopyRest;
                    }
                    // Impossible with a consistent `<`, which CPython does not assume.
                    if na == 0 {
                        break 'merge Exit::Done;
                    }
                }
                a[dest] = a[pb];
                dest += 1;
                pb += 1;
                nb -= 1;
                if nb == 0 {
                    break 'merge Exit::Done;
                }
                let k = match gallop_left(ms.tmp[pa], &a[pb..pb + nb], 0, lt) {
                    Ok(k) => k,
                    Err(e) => break 'merge Exit::Fail(e),
                };
                bcount = k;
                if k > 0 {
                    a.copy_within(pb..pb + k, dest);
                    dest += k;
                    pb += k;
                    nb -= k;
                    if nb == 0 {
                        break 'merge Exit::Done;
                    }
                }
                a[dest] = ms.tmp[pa];
                dest += 1;
                pa += 1;
                na -= 1;
                if na == 1 {
                    break 'merge Exit::CopyRest;
                }
                if acount < MIN_GALLOP && bcount < MIN_GALLOP {
                    break;
                }
            }
            min_gallop += 1;
            ms.min_gallop = min_gallop;
        }
    };
    match exit {
        Exit::CopyRest => {
            // A's last item belongs after what remains of B.
            a.copy_within(pb..pb + nb, dest);
            a[dest + nb] = ms.tmp[pa];
            Ok(())
        }
        Exit::Done => {
            a[dest..dest + na].copy_from_slice(&ms.tmp[pa..pa + na]);
            Ok(())
        }
        Exit::Fail(e) => {
            a[dest..dest + na].copy_from_slice(&ms.tmp[pa..pa + na]);
            Err(e)
        }
    }
}

/// Merge adjacent runs with B the shorter; B is copied out and the merge fills from the
/// right. Indices are signed because they step below a run's start when it empties.
fn merge_hi<T: Copy, E, F: FnMut(T, T) -> Result<bool, E>>(
    ms: &mut MergeState<T>,
    a: &mut [T],
    base_a: usize,
    na: usize,
    base_b: usize,
    nb: usize,
    lt: &mut F,
) -> Result<(), E> {
    ms.tmp.clear();
    ms.tmp.extend_from_slice(&a[base_b..base_b + nb]);
    let u = |i: isize| i as usize;
    let mut dest = (base_b + nb - 1) as isize;
    let mut pa = (base_a + na - 1) as isize;
    let mut pb = nb as isize - 1;
    let (mut na, mut nb) = (na as isize, nb as isize);
    a[u(dest)] = a[u(pa)];
    dest -= 1;
    pa -= 1;
    na -= 1;
    let exit = 'merge: {
        if na == 0 {
            break 'merge Exit::Done;
        }
        if nb == 1 {
            break 'merge Exit::CopyRest;
        }
        let mut min_gallop = ms.min_gallop;
        loop {
            let (mut acount, mut bcount) = (0isize, 0isize);
            loop {
                match lt(ms.tmp[u(pb)], a[u(pa)]) {
                    Err(e) => break 'merge Exit::Fail(e),
                    Ok(true) => {
                        a[u(dest)] = a[u(pa)];
                        dest -= 1;
                        pa -= 1;
                        acount += 1;
                        bcount = 0;
                        na -= 1;
                        if na == 0 {
                            break 'merge Exit::Done;
                        }
                        if u(acount) >= min_gallop {
                            break;
                        }
                    }
                    Ok(false) => {
                        a[u(dest)] = ms.tmp[u(pb)];
                        dest -= 1;
                        pb -= 1;
                        bcount += 1;
                        acount = 0;
                        nb -= 1;
                        if nb == 1 {
                            break 'merge Exit::CopyRest;
                        }
                        if u(bcount) >= min_gallop {
                            break;
                        }
                    }
                }
            }
            min_gallop += 1;
            loop {
                min_gallop -= usize::from(min_gallop > 1);
                ms.min_gallop = min_gallop;
                let found = gallop_right(ms.tmp[u(pb)], &a[base_a..base_a + u(na)], u(na - 1), lt);
                let k = match found {
                    Ok(k) => na - k as isize,
                    Err(e) => break 'merge Exit::Fail(e),
                };
                acount = k;
                if k > 0 {
                    dest -= k;
                    pa -= k;
                    a.copy_within(u(pa + 1)..u(pa + 1 + k), u(dest + 1));
                    na -= k;
                    if na == 0 {
                        break 'merge Exit::Done;
                    }
                }
                a[u(dest)] = ms.tmp[u(pb)];
                dest -= 1;
                pb -= 1;
                nb -= 1;
                if nb == 1 {
                    break 'merge Exit::CopyRest;
                }
                let k = match gallop_left(a[u(pa)], &ms.tmp[..u(nb)], u(nb - 1), lt) {
                    Ok(k) => nb - k as isize,
                    Err(e) => break 'merge Exit::Fail(e),
                };
                bcount = k;
                if k > 0 {
                    dest -= k;
                    pb -= k;
                    a[u(dest + 1)..u(dest + 1 + k)]
                        .copy_from_slice(&ms.tmp[u(pb + 1)..u(pb + 1 + k)]);
                    nb -= k;
                    if nb == 1 {
                        break 'merge Exit::CopyRest;
                    }
                    // Impossible with a consistent `<`, which CPython does not assume.
                    if nb == 0 {
                        break 'merge Exit::Done;
                    }
                }
                a[u(dest)] = a[u(pa)];
                dest -= 1;
                pa -= 1;
                na -= 1;
                if na == 0 {
                    break 'merge Exit::Done;
                }
                if acount < MIN_GALLOP as isize && bcount < MIN_GALLOP as isize {
                    break;
                }
            }
            min_gallop += 1;
            ms.min_gallop = min_gallop;
        }
    };
    // What remains of B fills the slots left of `dest`.
    let restore_b = |a: &mut [T], tmp: &[T], dest: isize, nb: isize| {
        if nb > 0 {
            a[u(dest - (nb - 1))..u(dest + 1)].copy_from_slice(&tmp[..u(nb)]);
        }
    };
    match exit {
        Exit::CopyRest => {
            // B's first item belongs before what remains of A.
            dest -= na;
            pa -= na;
            a.copy_within(u(pa + 1)..u(pa + 1 + na), u(dest + 1));
            a[u(dest)] = ms.tmp[u(pb)];
            Ok(())
        }
        Exit::Done => {
            restore_b(a, &ms.tmp, dest, nb);
            Ok(())
        }
        Exit::Fail(e) => {
            restore_b(a, &ms.tmp, dest, nb);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic xorshift for the fuzz tests.
    fn rng(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    #[test]
    fn timsort_is_stable_and_matches_a_stable_sort() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for round in 0..300 {
            let n = (rng(&mut seed) % 700) as usize;
            let keys: Vec<u64> = (0..n)
                .map(|i| match round % 3 {
                    0 => rng(&mut seed) % 10,
                    1 => (i as u64) / 7 + rng(&mut seed) % 3,
                    _ => (n - i) as u64 + rng(&mut seed) % 2,
                })
                .collect();
            let mut order: Vec<usize> = (0..n).collect();
            timsort(&mut order, &mut |i: usize, j: usize| {
                Ok::<_, ()>(keys[i] < keys[j])
            })
            .unwrap();
            let mut want: Vec<usize> = (0..n).collect();
            want.sort_by_key(|&i| keys[i]);
            assert_eq!(order, want);
        }
    }

    #[test]
    fn timsort_survives_inconsistent_comparisons() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..300 {
            let n = (rng(&mut seed) % 500) as usize;
            let mut order: Vec<usize> = (0..n).collect();
            let mut s = seed;
            let res = timsort(&mut order, &mut |_: usize, _: usize| {
                let r = rng(&mut s);
                if r % 997 == 0 {
                    Err(())
                } else {
                    Ok(r % 2 == 0)
                }
            });
            let _ = res;
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "still a permutation");
            seed = s;
        }
    }

    #[test]
    fn reverse_keeps_equal_items_in_order() {
        let keys = [1, 0, 1, 0];
        let order = sorted_order(4, true, |i, j| Ok::<_, ()>(keys[i] < keys[j]));
        assert_eq!(order, Ok(vec![0, 2, 1, 3]));
    }
}
