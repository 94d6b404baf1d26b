"""Randomization at collection time: noise law, kernels, AS/EM reconstruction, privacy measures,
ByClass naive Bayes, and the perturb/reconstruct CLI.

Oracles: scipy (χ² quantiles for the sample variance of Gaussian noise, ndtr, numerical
integration, the normal quantile), closed forms (Π(X|Z) = e^{−1/2} for X ~ U[0, 1] and uniform
noise of width 1), and EM's own optimality conditions.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, special, stats

from anonymize.dp import RandomSource
from anonymize.errors import AnonymizeError
from anonymize.randomize import (
    HistogramNaiveBayes,
    Noise,
    ReconstructedNaiveBayes,
    conditional_privacy,
    information_loss,
    perturb,
    reconstruct,
    scale_for_privacy,
)
from anonymize.randomize.noise import normal_cdf
from anonymize.randomize.reconstruct import histogram_on, kernel_matrix, reconstruct_binned, z_histogram
from parties.cli import main

LEVEL = 1e-6
ROOT = Path(__file__).resolve().parents[1]
SUBSET = ROOT / "anonymize" / "data" / "adult_subset.csv"


# ---------------------------------------------------------------- noise
def test_gaussian_noise_sample_variance_within_chi2_bound():
    n, sigma = 50000, 3.0
    y = Noise("gaussian", sigma).sample(n, RandomSource(1))
    stat = (n - 1) * y.var(ddof=1) / sigma**2  # ~ chi2(n-1) exactly for Gaussian noise
    assert stats.chi2.ppf(LEVEL / 2, n - 1) <= stat <= stats.chi2.ppf(1 - LEVEL / 2, n - 1)
    assert abs(y.mean()) <= stats.norm.ppf(1 - LEVEL / 2) * sigma / math.sqrt(n)
    assert stats.kstest(y, stats.norm(scale=sigma).cdf).pvalue > LEVEL


def test_uniform_noise_support_and_law():
    n, a = 50000, 2.5
    y = Noise("uniform", a).sample(n, RandomSource(2))
    assert np.all(np.abs(y) <= a)
    assert stats.kstest(y, stats.uniform(-a, 2 * a).cdf).pvalue > LEVEL
    var, mu4 = a**2 / 3, a**4 / 5  # 4th-moment CLT bound on the sample variance
    assert abs(y.var() - var) <= 4.9 * math.sqrt((mu4 - var**2) / n)


def test_normal_cdf_precision_and_cdf_integral():
    x = np.linspace(-9, 9, 20001)
    assert np.max(np.abs(normal_cdf(x) - special.ndtr(x))) <= 1.2e-7
    for kind, s in [("uniform", 1.5), ("gaussian", 0.7)]:
        nz = Noise(kind, s)
        for y in [-5.0, -1.0, 0.3, 2.0, 6.0]:
            want = integrate.quad(lambda t, nz=nz: float(nz.cdf(t)), -40, y, limit=200)[0]
            assert math.isclose(float(nz.cdf_integral(y)), want, abs_tol=2e-6)


def test_interval_privacy_and_scale_for_privacy():
    assert math.isclose(Noise("gaussian", 2.0).interval_width(0.95), 2 * stats.norm.ppf(0.975) * 2.0)
    assert Noise("uniform", 10.0).interval_width(0.95) == 19.0
    for kind in ("uniform", "gaussian"):
        s = scale_for_privacy(kind, 100.0, 0.95)
        assert math.isclose(Noise(kind, s).interval_width(0.95), 100.0)
    for bad in [0, -1, float("nan"), float("inf")]:
        with pytest.raises(AnonymizeError):
            Noise("uniform", bad)
    with pytest.raises(AnonymizeError):
        Noise("laplace", 1.0)
    with pytest.raises(AnonymizeError):
        perturb([1.0, float("nan")], Noise("uniform", 1.0))


# ---------------------------------------------------------------- kernels and EM
def test_em_kernel_columns_are_probabilities():
    nz = Noise("uniform", 0.3)
    edges = np.linspace(0, 1, 11)
    zedges = np.linspace(-0.3, 1.3, 321)  # covers the whole support of Z
    K = kernel_matrix("em", nz, edges, np.stack([zedges[:-1], zedges[1:]], axis=1))
    assert np.allclose(K.sum(axis=0), 1.0, atol=1e-9)
    # one entry against a direct integral: P(c <= x + y <= d | x ~ U[l, u]) = ∫ P(c - x <= y <= d - x) dx / (u - l)
    p, q = 3, 100
    c, d = zedges[q], zedges[q + 1]
    want = integrate.quad(lambda x: max(0.0, min(d - x, 0.3) - max(c - x, -0.3)) / 0.6, edges[p], edges[p + 1])[0]
    assert math.isclose(K[q, p], want / 0.1, rel_tol=1e-6, abs_tol=1e-12)


@pytest.mark.parametrize("kind", ["uniform", "gaussian"])
def test_em_reaches_the_maximum_likelihood_on_exact_expected_counts(kind):
    """No sampling error: counts are exactly n·P(z ∈ J_q), so the true π maximizes the likelihood
    (Gibbs' inequality). EM must approach that maximum, never decreasing the likelihood; with the
    well-conditioned uniform kernel it must also approach π itself (the Gaussian kernel's condition
    number is ~3000, so its parameters converge far more slowly than its likelihood)."""
    nz = Noise(kind, 0.25)
    edges = np.linspace(0, 1, 9)
    pi = np.array([0.05, 0.2, 0.25, 0.05, 0.0, 0.1, 0.3, 0.05])
    zedges = np.linspace(-1.5, 2.5, 401)
    zint = np.stack([zedges[:-1], zedges[1:]], axis=1)
    K = kernel_matrix("em", nz, edges, zint)
    counts = 1e6 * K @ pi
    rec = reconstruct_binned(zint, counts, nz, edges, "em", max_iter=20000, tol=0)
    K, counts = K[counts > 0], counts[counts > 0]  # 0 · log 0 = 0

    def loglik(p):
        return float(np.sum(counts * np.log(K @ p))) / counts.sum()

    assert 0 <= loglik(pi) - loglik(rec.probabilities) <= 1e-6
    assert np.all(np.diff(rec.history) >= -1e-12)
    if kind == "uniform":
        assert np.linalg.cond(K) < 100
        assert 0.5 * np.abs(rec.probabilities - pi).sum() < 0.01


def test_em_fixed_point_satisfies_the_likelihood_optimality_conditions():
    rng = np.random.default_rng(3)
    x = rng.beta(2, 5, 20000)
    nz = Noise("gaussian", 0.2)
    z = perturb(x, nz, RandomSource(3))
    rec = reconstruct(z, nz, bins=12, method="em", domain=(0, 1), max_iter=20000, tol=1e-12)
    # KKT for max Σ_q n_q log (Kπ)_q on the simplex: g_p = Σ_q n_q K_qp / (Kπ)_q / n ≤ 1, = 1 where π_p > 0
    zint, nq = z_histogram(z, rec.edges, 4)  # the grid reconstruct() used
    K = kernel_matrix("em", nz, rec.edges, zint)
    g = (K.T @ (nq / (K @ rec.probabilities))) / nq.sum()
    assert np.all(g <= 1 + 1e-3)
    assert np.allclose(g[rec.probabilities > 1e-3], 1.0, atol=1e-3)


def bimodal(n, rng):
    return np.clip(np.where(rng.random(n) < 0.5, rng.normal(0.25, 0.07, n), rng.normal(0.75, 0.07, n)), 0, 1)


@pytest.mark.parametrize("source", ["bimodal", "uniform"])
@pytest.mark.parametrize("kind, methods", [("uniform", ("as", "em")), ("gaussian", ("em",))])
def test_information_loss_at_full_privacy_meets_the_issue_target(source, kind, methods):
    """The issue's target, as documented in docs/randomization.md: 100 k values, noise with 100%
    privacy at 95% confidence (interval width = range of the data), ½∫|f − f̂| ≤ 0.15 on 20 bins
    over the public range [0, 1]. (AS under its own χ² rule misses it with Gaussian noise on the
    bimodal source — 0.24 — which the docs report.)"""
    rng = np.random.default_rng(11)
    x = bimodal(100_000, rng) if source == "bimodal" else rng.uniform(0, 1, 100_000)
    nz = Noise(kind, scale_for_privacy(kind, 1.0, 0.95))
    z = perturb(x, nz, RandomSource(12))
    for m in methods:
        rec = reconstruct(z, nz, bins=20, method=m, domain=(0, 1))
        assert rec.converged
        assert information_loss(x, rec) <= 0.15, (m, information_loss(x, rec))


def test_small_noise_reconstruction_is_the_histogram():
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 1, 50000)
    nz = Noise("uniform", 1e-4)
    z = perturb(x, nz, RandomSource(4))
    rec = reconstruct(z, nz, bins=10, method="em", domain=(0, 1))
    p, _ = histogram_on(x, rec.edges)
    # only values within 1e-4 of the 9 inner edges can change bins: at most 9 · 2e-4 of the mass
    assert 0.5 * np.abs(p - rec.probabilities).sum() <= 9 * 2e-4 + 1e-3
    # AS evaluates the noise density at interval midpoints: with noise narrower than the grid it
    # sees nothing, and says so
    with pytest.raises(AnonymizeError, match="narrower than the interval grid"):
        reconstruct(z, nz, bins=10, method="as", domain=(0, 1))


def test_information_loss_extremes_and_bad_arguments():
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, 1000)
    nz = Noise("uniform", 0.01)
    rec = reconstruct(perturb(x, nz, RandomSource(5)), nz, bins=4, domain=(0, 1))
    shifted = x + 10  # entirely outside the domain
    assert information_loss(shifted, rec) == pytest.approx(1.0)
    for kw in [dict(bins=1), dict(bins=2.5), dict(method="ml"), dict(domain=(1, 0)), dict(max_iter=0)]:
        with pytest.raises(AnonymizeError):
            reconstruct(x, nz, **kw)
    with pytest.raises(AnonymizeError):
        reconstruct([], nz)


# ---------------------------------------------------------------- privacy measures
def test_conditional_privacy_closed_form_and_numerical_oracle():
    r = conditional_privacy([0, 1], [1.0], Noise("uniform", 0.5))
    assert math.isclose(r["conditional_privacy"], math.exp(-0.5), rel_tol=1e-5)  # AA 2001: X, Y uniform, width 1
    assert math.isclose(r["privacy_loss"], 1 - math.exp(-0.5), rel_tol=1e-4)
    s = 0.3
    f = lambda t: stats.norm.cdf(t / s) - stats.norm.cdf((t - 1) / s)  # noqa: E731 - density of U[0,1] + N(0, s²)
    hz = integrate.quad(lambda t: -f(t) * math.log2(f(t)) if f(t) > 0 else 0.0, -4, 5, limit=200)[0]
    r = conditional_privacy([0, 0.5, 1], [0.5, 0.5], Noise("gaussian", s))
    assert math.isclose(r["h_z_bits"], hz, rel_tol=1e-6)
    assert math.isclose(r["h_x_given_z_bits"], 0 + 0.5 * math.log2(2 * math.pi * math.e * s * s) - hz, rel_tol=1e-6)


# ---------------------------------------------------------------- ByClass naive Bayes
def test_naive_bayes_on_reconstructed_distributions_is_close_to_the_original():
    rng = np.random.default_rng(6)
    n = 20000
    y = rng.random(n) < 0.4
    df = pd.DataFrame(
        {
            "a": np.where(y, rng.normal(65, 8, n), rng.normal(40, 10, n)).clip(0, 100),
            "b": np.where(y, rng.normal(30, 6, n), rng.normal(45, 6, n)).clip(0, 80),
            "cls": np.where(y, "yes", "no"),
        }
    )
    train, test = df.iloc[:15000], df.iloc[15000:]
    doms = {"a": (0, 100), "b": (0, 80)}
    noise = {c: Noise("uniform", scale_for_privacy("uniform", doms[c][1] - doms[c][0])) for c in doms}
    pert = train.copy()
    for i, c in enumerate(doms):
        pert[c] = perturb(train[c], noise[c], RandomSource(20 + i))
    for m in ("as", "em"):
        nb = ReconstructedNaiveBayes(noise, bins=20, method=m, domains=doms).fit(pert, "cls")
        base = HistogramNaiveBayes(nb.edges_).fit(train, "cls")
        acc, acc0 = nb.score(test, "cls"), base.score(test, "cls")
        assert acc >= acc0 - 0.05, (m, acc, acc0)  # the issue's target: within 5 points
        assert acc > 0.6 + 0.1  # and far above the majority class (0.6)


# ---------------------------------------------------------------- CLI
def cli(capsys, *argv):
    code = main([*map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_perturb_then_reconstruct_end_to_end(capsys, tmp_path):
    out = tmp_path / "p.csv"
    code, so, se = cli(
        capsys, "perturb", SUBSET, "--column", "age", "--noise", "uniform", "--scale", 40, "-o", out, "--seed", 1
    )
    assert code == 0, se
    orig, pert = pd.read_csv(SUBSET, sep=";"), pd.read_csv(out, sep=";")
    assert list(pert.columns) == list(orig.columns)
    pd.testing.assert_frame_equal(pert.drop(columns="age"), orig.drop(columns="age"))
    d = pert["age"] - orig["age"]
    assert d.abs().max() <= 40 and d.std() > 15  # uniform on [-40, 40]: std 23.1
    again = tmp_path / "p2.csv"
    cli(capsys, "perturb", SUBSET, "--column", "age", "--noise", "uniform", "--scale", 40, "-o", again, "--seed", 1)
    assert again.read_bytes() == out.read_bytes()  # --seed is reproducible

    png = tmp_path / "r.png"
    code, so, se = cli(
        capsys, "reconstruct", out, "--column", "age", "--noise", "uniform", "--scale", 40,
        "--bins", 10, "--method", "as", "--json", "--original", SUBSET, "--plot", png,
    )  # fmt: skip
    assert code == 0, se
    rep = json.loads(so)
    assert len(rep["bins"]) == 10 and len(rep["densities"]) == 10
    assert math.isclose(sum(rep["probabilities"]), 1.0)
    assert 0 <= rep["information_loss"] <= 0.5
    assert rep["privacy"]["interval"]["interval_width"] == 76.0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code, so, se = cli(capsys, "reconstruct", out, "--column", "age", "--noise", "uniform", "--scale", 40)
    assert code == 0 and "EM reconstruction" in so


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--column", "agex", "--noise", "uniform", "--scale", "5"], "no column 'agex'"),
        (["--column", "sex", "--noise", "uniform", "--scale", "5"], "not numeric"),
        (["--column", "age", "--noise", "uniform", "--scale", "0"], "--scale must be a positive"),
        (["--column", "age", "--noise", "gaussian", "--scale", "-2"], "--scale must be a positive"),
        (["--column", "age", "--noise", "gaussian", "--scale", "nan"], "--scale must be a positive"),
    ],
)
def test_perturb_bad_input_one_line_no_output(capsys, tmp_path, argv, fragment):
    out = tmp_path / "o.csv"
    code, so, se = cli(capsys, "perturb", SUBSET, *argv, "-o", out)
    assert code == 2 and se.startswith("ppdm: error: ") and se.count("\n") == 1 and fragment in se
    assert not out.exists()


def test_perturb_and_reconstruct_bad_files(capsys, tmp_path):
    nan = tmp_path / "nan.csv"
    nan.write_text("a,b\n1,x\n,y\n3,z\n")
    cases = [
        (
            [
                "perturb",
                tmp_path / "missing.csv",
                "--column",
                "a",
                "--noise",
                "uniform",
                "--scale",
                1,
                "-o",
                tmp_path / "o.csv",
            ],
            "not found",
        ),
        (
            ["perturb", nan, "--column", "a", "--noise", "uniform", "--scale", 1, "-o", tmp_path / "o.csv"],
            "missing or infinite",
        ),
        (
            ["perturb", nan, "--column", "b", "--noise", "uniform", "--scale", 1, "-o", tmp_path / "no" / "o.csv"],
            "does not exist",
        ),
        (["perturb", SUBSET, "--column", "age", "--noise", "uniform", "--scale", 1, "-o", SUBSET], "is the input file"),
        (["reconstruct", SUBSET, "--column", "sex", "--noise", "uniform", "--scale", 1], "not numeric"),
        (["reconstruct", SUBSET, "--column", "age", "--noise", "uniform", "--scale", 1, "--bins", 1], "bins must be"),
        (["reconstruct", SUBSET, "--column", "age", "--noise", "uniform", "--scale", 1, "--domain", "5"], "LO:HI"),
        (
            ["reconstruct", SUBSET, "--column", "age", "--noise", "uniform", "--scale", 1, "--original", nan],
            "no column 'age'",
        ),
    ]
    for argv, fragment in cases:
        code, so, se = cli(capsys, *argv)
        assert code == 2 and se.count("\n") == 1 and fragment in se, (argv, se)
    assert not (tmp_path / "o.csv").exists()
