"""Privacy of the exact-case subspace estimator (proof in docs/subspace_exact_privacy.md).

* the paper's Algorithm 1 (``_subspace_exact_paper_unfixed``) violates (ε, δ)-DP on the issue's pair;
* the fixed ``subspace_exact`` passes the same statistical check on that pair;
* the facts the proof rests on (score sensitivity 1, gap sensitivity 2, "different top candidates
  => both gaps <= 2", and the TLap shift bound) are checked exhaustively on every neighbouring pair
  of small datasets over fixed alphabets (k = 1 and k = 2, zero rows, repeated points, candidate sets
  that differ), with the scores cross-checked against an independent integer implementation, and the
  exact (ε, δ) inequality is checked on the exact output distributions;
* the mechanism's draws follow the closed-form distribution the proof analyses.
"""

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats

import mechanisms
from mechanisms.rational_subspaces import canonical_frame
from mechanisms.subspace import (
    exact_ptr_pass_probability,
    exact_ptr_threshold,
    subspace_exact,
    truncated_laplace_params,
    truncated_laplace_survival,
)
from mechanisms.subspace._known_broken import _subspace_exact_paper_unfixed
from mechanisms.subspace.exact import _exact_candidates, _noise_delta, _noise_params, _top_and_gap

ROOT = Path(__file__).resolve().parents[2]


def counterexample_pair():
    """The counterexample to Algorithm 1: 57 rows e₁ plus one row e₂ (D) vs plus one row e₃ (D′), d = 3, k = 1."""
    e = np.eye(3)
    base = np.tile(e[0], (57, 1))
    return np.vstack([base, e[1]]), np.vstack([base, e[2]])


def axis_of(out):
    """Index of the coordinate axis spanned by a k = 1 output, or None for ⊥."""
    if out.components is None:
        return None
    v = np.abs(out.components[:, 0])
    assert np.isclose(v.max(), 1.0, atol=1e-9)
    return int(np.argmax(v))


def outcome_counts(fn, X, trials, seed, **kw):
    counts = {}
    for s in range(trials):
        a = axis_of(fn(X, 1, rng=np.random.default_rng([seed, s]), epsilon=1.0, delta=1e-6, **kw))
        counts[a] = counts.get(a, 0) + 1
    return counts


def cp(k, n, level):
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    return ci.low, ci.high


def violation_certified(k_D, k_Dp, n, eps, delta, level=0.999):
    """True when the Clopper–Pearson bounds certify P_D[E] > e^ε P_D′[E] + δ (two-sided 99.9% each)."""
    return cp(k_D, n, level)[0] > math.exp(eps) * cp(k_Dp, n, level)[1] + delta


# --------------------------------------------------------------------------- the counterexample


def test_paper_algorithm_violates_dp_on_counterexample_pair():
    """The unfixed GAP-MAX: NULL score 57.26 and span(e₁) score 57 are within 1, every gap is 0, and
    the output is the argmax of three i.i.d. TLap draws: span(e₂) with probability 1/3 under D, never
    under D′ (not a candidate there).  600 runs each; the 99.9% Clopper–Pearson lower bound on
    P_D[span(e₂)] (≈ 0.21–0.27 for 160–200 hits; 200 expected) is far above
    e·(upper bound on P_D′[span(e₂)] = 0.0126 at 0 hits) + 1e-6 = 0.034."""
    D, Dp = counterexample_pair()
    n = 600
    cD = outcome_counts(_subspace_exact_paper_unfixed, D, n, 0)
    cDp = outcome_counts(_subspace_exact_paper_unfixed, Dp, n, 1)
    k_D, k_Dp = cD.get(1, 0), cDp.get(1, 0)
    assert k_Dp == 0  # span(e₂) is not a candidate under D′
    assert abs(k_D / n - 1 / 3) < 4.5 * math.sqrt(2 / 9 / n)
    assert violation_certified(k_D, k_Dp, n, 1.0, 1e-6)
    lo, _ = cp(k_D, n, 0.999)
    assert lo > 0.2  # no δ below 0.2 covers it


def test_paper_algorithm_is_marked_broken_and_unregistered():
    D, _ = counterexample_pair()
    out = _subspace_exact_paper_unfixed(D, 1, rng=np.random.default_rng(0), epsilon=1.0, delta=1e-6)
    assert out.guarantee.exact is False and "KNOWN NOT DP" in out.guarantee.note
    assert out.release["status"] in ("ok", "bottom") and "top_score" in out.diagnostics
    assert not any("paper_unfixed" in target for target in mechanisms.MECHANISMS.values())
    for cfg in (ROOT / "conf").rglob("*.yaml"):
        assert "paper_unfixed" not in cfg.read_text(), cfg


def test_fixed_mechanism_on_counterexample_pair():
    """The fixed mechanism on the issue's pair: gap 56 on both sides (top span(e₁), runner-up 1), so
    both release span(e₁) with the same probability (0.99999977) and never span(e₂) or span(e₃).

    Check, for every outcome E and both directions, that the 99.9% Clopper–Pearson bounds do NOT
    certify P_D[E] > e^ε P_D′[E] + δ, with 1000 runs each.  Power: the same check catches the unfixed
    algorithm (previous test, 600 runs); with 1000 runs and P_D′[E] = 0 (CP upper bound 0.0076), 38
    hits certify a violation, so any violation with P_D[E] >= 0.054 is caught with probability >= 0.99
    (binomial tail, computed with scipy.stats.binom)."""
    D, Dp = counterexample_pair()
    n = 1000
    cD = outcome_counts(subspace_exact, D, n, 2)
    cDp = outcome_counts(subspace_exact, Dp, n, 3)
    assert set(cD) <= {0, None} and set(cDp) <= {0, None}  # only the top candidate is ever released
    for E in (0, 1, 2, None):
        assert not violation_certified(cD.get(E, 0), cDp.get(E, 0), n, 1.0, 1e-6)
        assert not violation_certified(cDp.get(E, 0), cD.get(E, 0), n, 1.0, 1e-6)
    assert violation_certified(38, 0, n, 1.0, 1e-6) and not violation_certified(37, 0, n, 1.0, 1e-6)
    assert stats.binom.sf(37, n, 0.054) >= 0.99  # the power claim above


# --------------------------------------------------------------------------- the draws follow the formula


def design(name):
    """Neighbouring pairs whose gaps are near τ, so that the release is genuinely random: (k, D, D′,
    gap on D, gap on D′ (computed by hand), ε, δ)."""
    e = np.eye(4)
    if name == "k1-zero-rows":  # ε = 1, δ = 1e-3: A = 13.5, τ = 15.5
        # u(e₁) = 19 − 3 zero rows = 16, u(e₂) = 1 -> gap 15
        D = np.vstack([np.tile(e[0], (16, 1)), np.zeros((3, 4)), e[1]])
        Dp = D.copy()
        Dp[-1] = 0.0  # e₂ -> zero row: u(e₁) = 20 − 4 = 16, no runner-up -> gap 16
        return 1, D, Dp, 15, 16, 1.0, 1e-3
    if name == "k2-repeated":  # ε = 2, δ = 0.05: A = 4.2, τ = 6.2
        # plane(e₁, e₂): 3 copies of e₁ + 7 generic points; one row e₃ outside
        rng = np.random.default_rng(7)
        ang = rng.uniform(0.1, np.pi - 0.1, 7)
        P = np.c_[np.cos(ang), np.sin(ang), np.zeros(7), np.zeros(7)]
        D = np.vstack([np.tile(e[0], (3, 1)), P, e[2]])
        Dp = D.copy()
        Dp[3] = e[0]  # a generic point becomes a 4th copy of e₁
        # D: u(plane) = 10 − 3 = 7, runner-up span(e₃, x) = 1 -> 6;  D′: 10 − 4 = 6 -> 5
        return 2, D, Dp, 6, 5, 2.0, 0.05
    raise ValueError(name)


@pytest.mark.parametrize("name", ["k1-zero-rows", "k2-repeated"])
def test_release_distribution_matches_closed_form(name):
    """On each side: the gap equals the hand computation; the frequency of releases matches
    exact_ptr_pass_probability(gap) within 4.5 standard errors (400 runs, s.e. <= 0.025); every release
    is the top candidate's canonical frame, bit for bit the same on both sides whenever the top
    candidate is the same subspace."""
    k, D, Dp, gap_D, gap_Dp, eps, delta = design(name)
    frames = []
    for X, gap in ((D, gap_D), (Dp, gap_Dp)):
        keys, scores, _, _ = _exact_candidates(X, k)
        top, g, _ = _top_and_gap(scores)
        assert g == gap
        frame = canonical_frame(keys[top])
        frames.append(frame)
        n, released = 400, 0
        for s in range(n):
            out = subspace_exact(X, k, rng=np.random.default_rng([11, s]), epsilon=eps, delta=delta)
            assert out.diagnostics["gap"] == gap
            if out.status == "ok":
                released += 1
                assert out.components.tobytes() == frame.tobytes()
        p = exact_ptr_pass_probability(gap, eps, delta)
        assert 0.05 < p < 0.95
        assert abs(released / n - p) < 4.5 * math.sqrt(p * (1 - p) / n)
    assert frames[0].tobytes() == frames[1].tobytes()


def test_pass_probability_is_the_truncated_laplace_survival():
    """The closed form the decision uses (no cancellation, integer gaps) equals P[gap + Z > τ] computed
    from the truncated Laplace survival function at δ₀, to 1e-12 absolute, for every integer gap."""
    for eps, delta in ((2.0, 0.05), (1.0, 1e-6), (0.05, 1e-9), (5.0, 1e-9)):
        d0 = (delta - (1 + math.exp(eps)) * 2.0**-40) / (1 + 2.0**-40)
        tau = exact_ptr_threshold(eps, delta)
        _, A = truncated_laplace_params(2.0, eps, d0)
        for gap in range(0, int(2 * A) + 6):
            want = truncated_laplace_survival(tau - gap, 2.0, eps, d0) if gap > 2 else 0.0
            assert exact_ptr_pass_probability(gap, eps, delta) == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize(
    "eps, delta",
    [
        (eps, delta)
        for eps in (0.05, 0.5, 1.0, 2.0, 5.0, 20.0)
        for delta in (1e-9, 1e-6, 0.05, 0.5)
        if delta > 2 * (1 + math.exp(eps)) * 2.0**-40  # smaller δ are refused (the share η)
    ],
)
def test_release_decision_is_within_claim_5s_error(eps, delta):
    """Claim 5 in numbers, against 200-bit arithmetic (mpmath) rather than the code's own formula:
    the probability that the code releases, ⌈2⁵³p̂⌉/2⁵³, is within 2⁻⁴⁰ of the exact tail
    P[g + Z > τ] of TLap with the computed λ and A, for every integer gap; 2/λ <= ε exactly; and the
    computed A gives that law a tail mass at A − 2 within a relative 2⁻⁴⁰ of δ₀.  The errors found
    are about 2⁻⁵²; calibrating A for δ instead of δ₀ fails every case (checked by mutation)."""
    import mpmath  # installed with dp-accounting, a dependency of the project

    with mpmath.workprec(200):
        lam, A = _noise_params(eps, delta)
        d0 = _noise_delta(eps, delta)
        assert mpmath.mpf(2) / mpmath.mpf(lam) <= mpmath.mpf(eps)
        lam_m, A_m = mpmath.mpf(lam), mpmath.mpf(A)
        norm = 2 * -mpmath.expm1(-A_m / lam_m)

        def tail(t):  # P[Z > t] for Z ~ TLap(λ, A), exactly at the computed λ, A
            if t >= A_m:
                return mpmath.mpf(0)
            if t <= -A_m:
                return mpmath.mpf(1)
            if t >= 0:
                return (mpmath.exp(-t / lam_m) - mpmath.exp(-A_m / lam_m)) / norm
            return 1 - tail(-t)

        mass = tail(A_m - 2)
        assert abs(mass - mpmath.mpf(d0)) <= 2.0**-40 * mpmath.mpf(d0)
        tau = 2 + A_m
        for gap in range(0, int(2 * A) + 6):
            p_hat = exact_ptr_pass_probability(gap, eps, delta)
            released = mpmath.ceil(mpmath.mpf(p_hat) * 2**53) / 2**53  # P[U < p̂], U on {j 2⁻⁵³}
            exact = tail(tau - gap) if gap > 2 else mpmath.mpf(0)
            assert abs(released - exact) <= 2.0**-40, (gap, float(released - exact))


@pytest.mark.parametrize("name", ["k1-zero-rows", "k2-repeated"])
def test_bottom_release_is_the_same_on_neighbours(name):
    """The ⊥ output carries nothing about the data: on neighbours whose gaps and candidate counts
    differ, every ⊥ release (status, reason, threshold, every key) is the same dict, and nothing but
    the decision and the top candidate's frame varies in the release.  Fails if a ⊥ reason names the
    gap or a candidate count, or the release gains a data-dependent field."""
    k, D, Dp, gap_D, gap_Dp, eps, delta = design(name)
    assert gap_D != gap_Dp
    counts = [len(_exact_candidates(X, k)[0]) for X in (D, Dp)]
    bottoms = []
    for X in (D, Dp):
        for s in range(60):
            out = subspace_exact(X, k, rng=np.random.default_rng([13, s]), epsilon=eps, delta=delta)
            if out.status != "ok":
                assert out.components is None
                bottoms.append(out.release)
            else:
                assert set(out.release) == {"status", "bottom", "threshold"}
    assert bottoms and all(b == bottoms[0] for b in bottoms), (counts, bottoms[:2])
    assert set(bottoms[0]) == {"status", "bottom", "threshold", "reason"}


# --------------------------------------------------------------------------- exhaustive checks of the proof


def tlap_hockey_stick(shift, eps, delta):
    """sup_E P[Z ∈ E] − e^ε P[Z + shift ∈ E] for Z ~ TLap(2, ε, δ), by quadrature."""
    lam, A = truncated_laplace_params(2.0, eps, delta)
    B = 1 / (2 * lam * (1 - math.exp(-A / lam)))
    p = lambda x: B * math.exp(-abs(x) / lam) if abs(x) <= A else 0.0
    f = lambda x: max(0.0, p(x) - math.exp(eps) * p(x - shift))
    pts = sorted({-A, 0.0, shift, A, shift - A, shift + A})
    return sum(integrate.quad(f, a, b, limit=200)[0] for a, b in zip(pts[:-1], pts[1:]))


@pytest.mark.parametrize("eps,delta", [(2.0, 0.05), (1.0, 1e-6)])
def test_truncated_laplace_shifts_up_to_2_are_eps_delta(eps, delta):
    """Claim 4 of the note: the noisy gap (which decides the release once the top candidate is fixed)
    shifted by at most the gap sensitivity 2 has hockey-stick divergence <= δ at e^ε (Lemma A.14)."""
    for shift in (0.0, 0.5, 1.0, 2.0, -2.0):
        assert tlap_hockey_stick(shift, eps, delta) <= delta * (1 + 1e-6) + 1e-12
    assert tlap_hockey_stick(2.0, eps, delta) == pytest.approx(delta, rel=1e-4)  # tight at shift 2


def alphabet(k):
    """Integer letters in R³ (exact arithmetic for the independent scores) and their unit versions."""
    letters = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0), (1, -1, 0), (0, 1, 1)]
    return np.array(letters, dtype=np.int64)


def brute_scores(Z, k):
    """Independent scores with integer arithmetic in R³: {key: u} for every subspace with u >= 1.

    k = 1: a line is keyed by its primitive direction; u = number of non-zero rows on it (the zero rows
    lie in both the line and {0}).  k = 2: a plane is keyed by its primitive normal; u = non-zero rows
    in the plane minus the largest number of non-zero rows on one line of the plane (0 if none)."""

    def prim(v):
        v = np.asarray(v, dtype=np.int64)
        g = np.gcd.reduce(np.abs(v))
        v = v // g
        return tuple(v if v[np.flatnonzero(v)[0]] > 0 else -v)

    nz = [z for z in Z if np.any(z)]
    lines = {}
    for z in nz:
        key = prim(z)
        lines[key] = lines.get(key, 0) + 1
    if k == 1:
        return lines
    planes = {}
    for a, b in itertools.combinations(nz, 2):
        nrm = np.cross(a, b)
        if np.any(nrm):
            key = prim(nrm)
            if key not in planes:
                inside = [z for z in nz if int(np.dot(nrm, z)) == 0]
                on_line = max(lines[prim(z)] for z in inside)
                planes[key] = len(inside) - on_line
    return planes


def key_of(Q, k):
    """The brute-force key of a float basis Q (3 × k): primitive direction (k = 1) or normal (k = 2)."""
    v = Q[:, 0] if k == 1 else np.cross(Q[:, 0], Q[:, 1])
    v = v / np.abs(v).max()
    r = np.round(v * 2) / 2  # letters give directions/normals with entries in {0, ±1/2, ±1}
    assert np.allclose(v, r, atol=1e-9)
    r = (r * 2).astype(np.int64)
    g = np.gcd.reduce(np.abs(r))
    r = r // g
    return tuple(r if r[np.flatnonzero(r)[0]] > 0 else -r)


@pytest.mark.parametrize("k,n", [(1, 6), (2, 5)])
def test_exhaustive_neighbouring_pairs(k, n):
    """Every dataset of n rows (multisets) over a 7-letter alphabet in R³ (zero row, axes, diagonals;
    repeats allowed; n = 6 for k = 1 and 5 for k = 2) and every neighbour (one row replaced by another
    letter).  For each pair:

    (0) the mechanism's scores equal the independent integer implementation (k = 1 and 2);
    (1) |u(X, s) − u(X′, s)| <= 1 for every subspace s (0 for non-candidates)     [Claim 1]
    (2) |gap(X) − gap(X′)| <= 2                                                   [Claim 2]
    (3) different top candidates => gap(X) <= 2 and gap(X′) <= 2                  [Claim 3]
    (4) the exact distribution of the released subspace-or-⊥ satisfies P[E] <= e^ε P′[E] + δ for
        every event E (ε = 2, δ = 0.05: A = 4.2, τ = 6.2, so gaps 3..6 give pass probabilities
        strictly between 0 and 1; and ε = 1, δ = 1e-6).
    Coverage of the adversarial cases is asserted (pairs with different candidate sets, different top
    candidates, ties, zero rows, repeated rows)."""
    letters = alphabet(k)
    unit = letters / np.maximum(np.linalg.norm(letters, axis=1, keepdims=True), 1e-300)
    info = {}
    for combo in itertools.combinations_with_replacement(range(len(letters)), n):
        X = unit[list(combo)]
        keys, scores, _, _ = _exact_candidates(X, k)
        bases = [canonical_frame(key) for key in keys]
        got = {key_of(Q, k): int(u) for Q, u in zip(bases, scores)}
        assert got == brute_scores(letters[list(combo)], k), combo  # (0)
        top, gap, _ = _top_and_gap(scores)
        info[combo] = (
            got,
            None if top is None else key_of(bases[top], k),
            gap,
            scores.size > 1 and scores.max() == np.sort(scores)[-2],
        )
    settings = [(2.0, 0.05), (1.0, 1e-6)]
    cover = dict(pairs=0, cands_differ=0, top_differs=0, tie=0, zero_rows=0, repeated=0, worst=0.0)
    for combo, (u, top, gap, tie) in info.items():
        for i, new in itertools.product(range(n), range(len(letters))):
            if new == combo[i]:
                continue
            other = tuple(sorted(combo[:i] + (new,) + combo[i + 1 :]))
            u2, top2, gap2, _ = info[other]
            cover["pairs"] += 1
            cover["cands_differ"] += set(u) != set(u2)
            cover["tie"] += tie
            cover["zero_rows"] += 0 in combo
            cover["repeated"] += len(set(combo)) < n
            for s in set(u) | set(u2):
                assert abs(u.get(s, 0) - u2.get(s, 0)) <= 1, (combo, other, s)  # (1)
            assert abs(gap - gap2) <= 2, (combo, other)  # (2)
            if top != top2:
                cover["top_differs"] += 1
                assert gap <= 2 and gap2 <= 2, (combo, other)  # (3)
            for eps, delta in settings:  # (4)
                p = exact_ptr_pass_probability(gap, eps, delta) if top is not None else 0.0
                q = exact_ptr_pass_probability(gap2, eps, delta) if top2 is not None else 0.0
                P = {None: 1 - p}
                P[top] = P.get(top, 0.0) + p
                Q = {None: 1 - q}
                Q[top2] = Q.get(top2, 0.0) + q
                hs = sum(max(0.0, P[o] - math.exp(eps) * Q.get(o, 0.0)) for o in P)
                assert hs <= delta + 1e-12, (combo, other, eps, delta, hs)
                cover["worst"] = max(cover["worst"], hs / delta)
    assert (
        min(cover[key] for key in ("cands_differ", "top_differs", "tie", "zero_rows", "repeated"))
        > 100
    )
    # the check has teeth: the worst pair is a release probability P[Z > A − (gap − 2)] against 0,
    # for the largest gap <= 4 the alphabet allows: gap 4 vs 2 (k = 1) attains δ exactly; with 5 rows
    # a plane of the alphabet holds 4 directions, so k = 2 reaches gap 3 vs 1, i.e. P[Z > A − 1]
    # (largest relative to δ at ε = 1: (e^{1/2} − 1)/(e − 1) = 0.38)
    expected = (
        1.0 if k == 1 else max(exact_ptr_pass_probability(3.0, e, d) / d for e, d in settings)
    )  # P[Z > A − 1] at δ₀
    assert cover["worst"] == pytest.approx(expected, rel=1e-9)
