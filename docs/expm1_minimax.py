"""Derives the expm1 polynomials of the f32 activations: P of degree N − 1 with r + r²·P(r)
closest to expm1(r) in relative error on |r| ≤ ln2/(2·TABLE) + 2^-40, the range left by a
reduction with a table of 2^(j/TABLE) (Remez exchange at 40 digits), then measures the
relative error of the coefficients rounded to double on 20,001 points.

    python docs/expm1_minimax.py          # EXPM1_P of activation_avx512.rs (16 entries, cubic)
    python docs/expm1_minimax.py 4 6      # the quintic of activation_avx2.rs up to session 20 (4 entries)

Needs mpmath (pip install mpmath); ~10 s. Prints the coefficients and log2 of the worst
relative error (-41.12 and -46.0).
"""

import sys

import mpmath as mp

mp.mp.dps = 40
TABLE = int(sys.argv[1]) if len(sys.argv) > 1 else 16  # entries 2^(j/TABLE) of the reduction
R = mp.log(2) / (2 * TABLE) + mp.mpf(2) ** -40  # |r| bound: the reduction's range plus rounding slack
N = int(sys.argv[2]) if len(sys.argv) > 2 else 4  # coefficients of P


def rel_err(cs, r):
    """(q(r) - expm1(r)) / expm1(r) for q = r + r²·P(r)."""
    p = mp.mpf(0)
    for c in reversed(cs):
        p = p * r + c
    t = mp.expm1(r)
    return (r + r * r * p - t) / t


def solve(ref):
    """P and E with rel_err(P, ref[i]) = (-1)^i E at the N + 1 reference points."""
    rows, rhs = [], []
    for i, r in enumerate(ref):
        t = mp.expm1(r)
        rows.append([r ** (j + 2) for j in range(N)] + [-((-1) ** i) * t])
        rhs.append(t - r)
    sol = mp.lu_solve(mp.matrix(rows), mp.matrix(rhs))
    return [sol[j] for j in range(N)]


def extrema(cs, points=4000):
    """The largest |error| of each run of one sign, in order (the new reference)."""
    runs = []
    for i in range(points + 1):
        r = -R + 2 * R * i / points
        if r == 0:
            continue  # the error vanishes at 0 by construction (q = r + O(r²))
        e = rel_err(cs, r)
        if runs and mp.sign(e) == runs[-1][2]:
            if abs(e) > runs[-1][1]:
                runs[-1] = [r, abs(e), mp.sign(e)]
        else:
            runs.append([r, abs(e), mp.sign(e)])
    while len(runs) > N + 1:  # drop the smaller end run
        runs.pop(0 if runs[0][1] < runs[-1][1] else -1)
    return [x[0] for x in runs]


def main():
    # a start away from 0 (where every candidate's error is 0)
    ref = [-R, -R * mp.mpf("0.6"), R * mp.mpf("0.15"), R * mp.mpf("0.7"), R]
    if N != 4:  # Chebyshev extrema, nudged off 0
        ref = [R * mp.cos(mp.pi * (N - i) / N) + R * mp.mpf("0.01") for i in range(N + 1)]
        ref[-1] = R
    for _ in range(12):
        cs = solve(ref)
        ref = extrema(cs)
    doubles = [float(c) for c in cs]
    worst = max(abs(rel_err([mp.mpf(c) for c in doubles], -R + 2 * R * i / 20000)) for i in range(20001) if i != 10000)
    print("coefficients =", [repr(c) for c in doubles])
    print("worst relative error of q: 2^%s" % mp.nstr(mp.log(worst, 2), 5))


if __name__ == "__main__":
    main()
