"""Seeded synthetic response matrices with known truth (2PL and rank-r logistic models).

Missingness mechanisms:

- ``"mcar"``: exactly ``round(rate * N * J)`` cells hidden uniformly at random.
- ``"mar"``: each cell hidden with probability ``sigmoid(c + 2 (i/N - 1/2) + 2 (j/J - 1/2))``
  (depends on the row and column position only, not on the score), with ``c`` calibrated so
  the expected rate is ``rate``.
- ``"mnar"``: only incorrect responses (y = 0) are hidden, ``round(rate * N * J)`` of them
  (or all of them when there are fewer), the "MNAR_0" design of the cBMM paper. The observed
  data then over-state accuracy: a hard case for every estimator.

:class:`LeaderboardSimulator` fits a rank-r logistic model to a real matrix and draws any
number of new models from the fitted distribution of model factors, on the real item structure
(faithfulness is limited by construction: item structure beyond rank r and any non-Gaussian shape
of the model population are lost; :meth:`LeaderboardSimulator.fidelity` compares accuracy spread
and item correlations with the source).

This module sits above :mod:`latentbench.io` and :mod:`latentbench.irt` (it uses both), so
neither of them imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import expit

from latentbench._checks import is_integer, is_number
from latentbench._repr import GivenArgumentsRepr
from latentbench.exceptions import InputError
from latentbench.io._matrix import ResponseMatrix
from latentbench.irt._objective import general_direction, probabilities

__all__ = [
    "LeaderboardSimulator",
    "SyntheticData",
    "apply_missing",
    "leaderboard_like",
    "simulate_2pl",
    "simulate_low_rank",
    "simulate_stress",
]

Missingness = Literal["mcar", "mar", "mnar"]


@dataclass
class SyntheticData:
    """A simulated response matrix with its generating parameters.

    Attributes
    ----------
    matrix : ResponseMatrix
        Observed scores (NaN where hidden), shape (n_models, n_items).
    U : ndarray of shape (n_models, rank)
        True model factors (theta for the 2PL).
    V : ndarray of shape (n_items, rank)
        True item factors (a for the 2PL), nonnegative.
    b : ndarray of shape (n_items,)
        True intercepts.
    sigma : float
    probabilities : ndarray of shape (n_models, n_items)
        True P(correct) for every cell.
    complete : ndarray of shape (n_models, n_items)
        Scores before any cell was hidden.
    """

    matrix: ResponseMatrix
    U: np.ndarray
    V: np.ndarray
    b: np.ndarray
    sigma: float
    probabilities: np.ndarray
    complete: np.ndarray

    def __repr__(self) -> str:
        # one line: the dataclass's printed five arrays (324 lines at 300 x 3,000)
        return (
            f"SyntheticData({self.matrix!r}, rank {self.U.shape[1]}, sigma {self.sigma:g}; "
            "truth in U, V, b, probabilities, complete)"
        )

    @property
    def direction(self) -> np.ndarray:
        """The true items' mean-loading direction, shape (rank,): ``[1]`` at rank 1."""
        return general_direction(self.V)

    @property
    def theta(self) -> np.ndarray:
        """True abilities, shape (n_models,): ``U w`` along :attr:`direction`.

        The same definition as a fit's ability (:attr:`latentbench.IRTResult.direction`), so a
        rank-r fit's ``theta`` is compared with the truth's ability, not with an arbitrary first
        factor (rank 1: ``U[:, 0]``).
        """
        return np.asarray(self.U @ self.direction)

    @property
    def a(self) -> np.ndarray:
        """True discriminations along :attr:`direction`, shape (n_items,): ``V w``."""
        return np.asarray(self.V @ self.direction)


def apply_missing(
    scores: np.ndarray,
    rate: float,
    mechanism: Missingness = "mcar",
    random_state: int | np.random.Generator | None = None,
) -> np.ndarray:
    """Return a float32 copy of ``scores`` with cells hidden (NaN) by ``mechanism``.

    Parameters
    ----------
    scores : ndarray of shape (n_models, n_items)
        Scores in [0, 1].
    rate : float
        Share of the cells to hide, in [0, 1).
    mechanism : {"mcar", "mar", "mnar"}, default "mcar"
        ``"mcar"``: cells chosen uniformly; ``"mar"``: more likely for later models and items
        (by position, rate matched on average); ``"mnar"``: wrong answers (score < 0.5) only.
    random_state : int, numpy Generator or None, optional

    Returns
    -------
    ndarray of shape (n_models, n_items)
        float32, NaN where hidden.

    Raises
    ------
    InputError
        A rate outside [0, 1), an unknown mechanism or a bad ``random_state``, named.
    """
    if not (is_number(rate) and 0 <= rate < 1):
        raise InputError(f"missing rate={rate!r}; expected a number in [0, 1)")
    if mechanism not in ("mcar", "mar", "mnar"):  # also at rate 0, where it hides nothing
        raise InputError(f"missing mechanism={mechanism!r}; expected 'mcar', 'mar' or 'mnar'")
    _check_random_state(random_state)
    rng = np.random.default_rng(random_state)
    out = np.array(scores, dtype=np.float32, copy=True)
    n, m = out.shape
    if rate == 0:
        return out
    count = round(rate * n * m)
    if mechanism == "mcar":
        hide = rng.choice(n * m, size=count, replace=False)
        out.reshape(-1)[hide] = np.nan
    elif mechanism == "mar":
        position = (np.arange(n)[:, None] / max(n - 1, 1) - 0.5) * 2 + (
            np.arange(m)[None, :] / max(m - 1, 1) - 0.5
        ) * 2
        from scipy.optimize import brentq  # here: slow to import (every select command paid it)

        shift = brentq(lambda c: expit(c + position).mean() - rate, -30, 30)
        out[rng.random((n, m)) < expit(shift + position)] = np.nan
    elif mechanism == "mnar":
        wrong = np.flatnonzero(out.reshape(-1) < 0.5)
        hide = rng.choice(wrong, size=min(count, wrong.size), replace=False)
        out.reshape(-1)[hide] = np.nan
    else:
        raise InputError(f"missing mechanism={mechanism!r}; expected 'mcar', 'mar' or 'mnar'")
    return out


def _check_random_state(random_state: object) -> None:
    """Refuse a seed numpy would refuse deep inside (1.5, "0", -1) naming it."""
    if not (
        random_state is None
        or isinstance(random_state, np.random.Generator)
        or (is_integer(random_state) and random_state >= 0)  # type: ignore[operator]
    ):
        raise InputError(
            f"random_state={random_state!r}; expected None, an integer >= 0 or a numpy Generator"
        )


def _check_size(n_models: object, n_items: object, least_models: int, least_items: int) -> None:
    """Refuse a size that is not an integer ("10", 10.5: named, not a numpy TypeError) or is
    too small."""
    for name, value, least in (
        ("n_models", n_models, least_models),
        ("n_items", n_items, least_items),
    ):
        if not is_integer(value):
            raise InputError(f"{name}={value!r}; expected an integer >= {least}")
    if n_models < least_models or n_items < least_items:  # type: ignore[operator]
        raise InputError(
            f"need at least {least_models} models and {least_items} items, got {n_models} x "
            f"{n_items}"
        )


def _finish(
    U: np.ndarray,
    V: np.ndarray,
    b: np.ndarray,
    sigma: float,
    rng: np.random.Generator,
    missing: float,
    mechanism: Missingness,
) -> SyntheticData:
    p = probabilities(U, V, b, sigma)
    complete = (rng.random(p.shape) < p).astype(np.float32)
    observed = apply_missing(complete, missing, mechanism, rng)
    n, m = complete.shape
    width_n, width_m = len(str(n - 1)), len(str(m - 1))
    matrix = ResponseMatrix(
        observed,
        [f"model_{i:0{width_n}d}" for i in range(n)],
        [f"item_{j:0{width_m}d}" for j in range(m)],
        source="synthetic",
    )
    return SyntheticData(matrix, U, V, b, sigma, p, complete)


def simulate_2pl(
    n_models: int,
    n_items: int,
    *,
    sigma: float = 1.0,
    a_log_sd: float = 0.3,
    b_sd: float = 1.0,
    missing: float = 0.0,
    mechanism: Missingness = "mcar",
    random_state: int | np.random.Generator | None = None,
) -> SyntheticData:
    """Binary responses from the 2PL: theta ~ N(0, 1), a ~ LogNormal(0, a_log_sd), b ~ N(0, b_sd²).

    ``P(y = 1) = sigmoid((a_j theta_i + b_j) / sigma)``.

    Parameters
    ----------
    n_models, n_items : int
        The matrix's shape (at least 2 each).
    sigma : float, default 1.0
        The logistic scale (smaller: sharper items).
    a_log_sd : float, default 0.3
        Standard deviation of ``log a``.
    b_sd : float, default 1.0
        Standard deviation of the intercepts.
    missing : float, default 0.0
        Share of the cells hidden (NaN) after drawing, in [0, 1).
    mechanism : {"mcar", "mar", "mnar"}, default "mcar"
        How they are hidden (:func:`apply_missing`).
    random_state : int, numpy Generator or None, optional
        Seed (an integer >= 0) or generator; None draws a fresh one.

    Returns
    -------
    SyntheticData
        The matrix (ids ``model_0``, ``item_0``, ... zero-padded to one width) and the
        parameters that made it.

    Raises
    ------
    InputError
        A size that is not an integer or is below 2, a rate outside [0, 1), an unknown
        mechanism or a bad ``random_state``, named.

    Examples
    --------
    >>> from latentbench import synthetic
    >>> data = synthetic.simulate_2pl(30, 60, random_state=0)
    >>> data.matrix.shape, data.theta.shape
    ((30, 60), (30,))
    """
    _check_size(n_models, n_items, 2, 2)
    _check_random_state(random_state)
    rng = np.random.default_rng(random_state)
    theta = rng.normal(size=(n_models, 1))
    a = rng.lognormal(0.0, a_log_sd, size=(n_items, 1))
    b = rng.normal(0.0, b_sd, size=n_items)
    return _finish(theta, a, b, sigma, rng, missing, mechanism)


def simulate_low_rank(
    n_models: int,
    n_items: int,
    rank: int,
    *,
    sigma: float = 1.0,
    sparsity: float = 0.0,
    b_sd: float = 0.5,
    missing: float = 0.0,
    mechanism: Missingness = "mcar",
    random_state: int | np.random.Generator | None = None,
) -> SyntheticData:
    """Binary responses from the rank-r model of the cBMM paper's generator.

    U ~ N(0, 1) (n_models, rank); V ~ U(0.5, 1.0) with a fraction ``sparsity`` of entries set
    to 0; b ~ N(0, b_sd²).

    Parameters
    ----------
    n_models, n_items : int
        The matrix's shape (at least 2 each).
    rank : int
        Factors per model and item (at least 1).
    sigma : float, default 1.0
        The logistic scale.
    sparsity : float, default 0.0
        Share of the item loadings set to 0.
    b_sd : float, default 0.5
        Standard deviation of the intercepts.
    missing : float, default 0.0
        Share of the cells hidden (NaN) after drawing, in [0, 1).
    mechanism : {"mcar", "mar", "mnar"}, default "mcar"
        How they are hidden (:func:`apply_missing`).
    random_state : int, numpy Generator or None, optional
        Seed (an integer >= 0) or generator; None draws a fresh one.

    Returns
    -------
    SyntheticData
        The matrix (ids ``model_0``, ``item_0``, ... zero-padded to one width) and the
        parameters that made it.

    Raises
    ------
    InputError
        A size that is not an integer or is below 2, a rate outside [0, 1), an unknown
        mechanism or a bad ``random_state``, named.
    """
    _check_size(n_models, n_items, 2, 2)
    if not is_integer(rank) or rank < 1:
        raise InputError(f"rank={rank!r}; expected an integer >= 1")
    _check_random_state(random_state)
    rng = np.random.default_rng(random_state)
    U = rng.normal(size=(n_models, rank))
    V = rng.uniform(0.5, 1.0, size=(n_items, rank))
    if sparsity > 0:
        V[rng.random(V.shape) < sparsity] = 0.0
    b = rng.normal(0.0, b_sd, size=n_items)
    return _finish(U, V, b, sigma, rng, missing, mechanism)


def simulate_stress(
    n_models: int = 22,
    n_items: int = 2854,
    *,
    uninformative: float = 0.54,
    constant: float = 0.047,
    extremes: bool = True,
    truth_rank: int = 1,
    trials: int = 1,
    random_state: int | np.random.Generator | None = None,
) -> SyntheticData:
    """A matrix shaped like the real ones on which ability intervals went wrong (issue 28).

    Few models, thousands of items, many items that tell the models apart barely or not at
    all, some constant items, one model near 0 % and one near 100 %:

    - abilities ``theta ~ N(0, 1)``; with ``extremes``, model 0 is placed below and model 1
      above all others, and both get an offset of -6 / +6 on every item (a second factor
      with loading 1 on every item: a broken model at about 1 % and one at about 99 %, which
      no 2PL of the others' items explains);
    - a fraction ``uninformative`` of the items has ``a ~ U(0, 0.1)``, the rest
      ``a ~ LogNormal(0, 0.4)``; intercepts ``b ~ N(-0.2, 1.5^2)`` (mean score about 0.45);
    - a fraction ``constant`` of the items is all-correct or all-wrong (half each);
    - ``truth_rank=2`` adds a second trait ``N(0, 1)`` loaded ``U(0, 1.5)`` by a random half
      of the items (a rank-2 truth for a rank-1 fit);
    - ``trials = K > 1`` makes every cell the mean of K Bernoulli trials (binomial counts).

    Parameters
    ----------
    n_models, n_items : int, default 22 and 2,854
        The matrix's shape (at least 4 models and 10 items).
    uninformative : float, default 0.54
        Share of the items that barely discriminate.
    constant : float, default 0.047
        Share of the items that every model answers alike.
    extremes : bool, default True
        Place one model near 0 % and one near 100 %.
    truth_rank : {1, 2}, default 1
        The rank of the truth.
    trials : int, default 1
        Bernoulli trials averaged per cell.
    random_state : int, numpy Generator or None, optional

    Returns
    -------
    SyntheticData
        ``U`` holds ``[theta, offset, (trait 2)]`` and ``V`` the matching loadings; the
        ``theta`` property is the first column.
    """
    _check_size(n_models, n_items, 4, 10)
    if truth_rank not in (1, 2):
        raise InputError(f"truth_rank={truth_rank!r}; expected 1 or 2")
    if not is_integer(trials) or trials < 1:
        raise InputError(f"trials={trials!r}; expected an integer >= 1")
    _check_random_state(random_state)
    rng = np.random.default_rng(random_state)
    theta = rng.normal(size=n_models)
    offset = np.zeros(n_models)
    if extremes:
        others = theta[2:]
        theta[0], theta[1] = others.min() - 0.5, others.max() + 0.5
        offset[0], offset[1] = -6.0, 6.0
    weak = rng.random(n_items) < uninformative
    a = np.where(weak, rng.uniform(0.0, 0.1, n_items), rng.lognormal(0.0, 0.4, n_items))
    b = rng.normal(-0.2, 1.5, n_items)
    U = [theta, offset]
    V = [a, np.ones(n_items)]
    if truth_rank == 2:
        U.append(rng.normal(size=n_models))
        V.append(np.where(rng.random(n_items) < 0.5, rng.uniform(0.0, 1.5, n_items), 0.0))
    U_arr, V_arr = np.column_stack(U), np.column_stack(V)
    p = probabilities(U_arr, V_arr, b, 1.0)
    fixed = rng.random(n_items) < constant
    p[:, fixed] = (rng.random(int(fixed.sum())) < 0.5).astype(float)
    counts = rng.binomial(int(trials), p)
    complete = (counts / trials).astype(np.float32)
    width_n, width_m = len(str(n_models - 1)), len(str(n_items - 1))
    matrix = ResponseMatrix(
        complete.copy(),
        [f"model_{i:0{width_n}d}" for i in range(n_models)],
        [f"item_{j:0{width_m}d}" for j in range(n_items)],
        source="synthetic",
    )
    return SyntheticData(matrix, U_arr, V_arr, b, 1.0, p, complete)


class LeaderboardSimulator(GivenArgumentsRepr):
    """Draw synthetic models with the item structure of a real benchmark.

    Parameters
    ----------
    rank : int, default 4
        Rank r of the logistic model fitted to the source.
    sigma : float, default 1.0
        Link temperature.
    l2 : float, default 1e-2
        Ridge of the engine fit.
    inflate : float, default 1.0
        Scale of the fitted factor covariance when sampling (ridge-shrunk factors
        underestimate the spread; values > 1 widen it).
    max_iter : int, default 300
        Cap on engine sweeps.

    Attributes
    ----------
    V_ : ndarray of shape (n_items, r)
    b_ : ndarray of shape (n_items,)
    U_ : ndarray of shape (n_source_models, r)
    mean_ : ndarray of shape (r,)
    cov_ : ndarray of shape (r, r)
    item_ids_ : list of str or None
    """

    def __init__(
        self,
        rank: int = 4,
        *,
        sigma: float = 1.0,
        l2: float = 1e-2,
        inflate: float = 1.0,
        max_iter: int = 300,
    ) -> None:
        self.rank = rank
        self.sigma = sigma
        self.l2 = l2
        self.inflate = inflate
        self.max_iter = max_iter

    def fit(
        self, scores: np.ndarray | ResponseMatrix, item_ids: list[str] | None = None
    ) -> LeaderboardSimulator:
        """Fit the logistic model and the factor distribution.

        Parameters
        ----------
        scores : ndarray of shape (n_models, n_items) or ResponseMatrix
            Source scores in [0, 1], NaN = missing.
        item_ids : list of str, optional

        Returns
        -------
        self

        Raises
        ------
        InputError
            For scores that are not 2-D with at least 3 models, or ``inflate`` not positive.
        """
        import warnings

        from latentbench.exceptions import ConvergenceWarning
        from latentbench.irt._cbmm import fit_cbmm

        if isinstance(scores, ResponseMatrix):
            item_ids = item_ids or scores.item_ids
            scores = scores.scores
        Y = np.asarray(scores, dtype=np.float32)
        if Y.ndim != 2 or Y.shape[0] < 3:
            raise InputError(f"scores have shape {Y.shape}; expected (n_models >= 3, n_items)")
        if self.inflate <= 0:
            raise InputError(f"inflate={self.inflate!r}; expected a positive number")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fit = fit_cbmm(
                Y, rank=self.rank, sigma=self.sigma, l2=self.l2, max_iter=self.max_iter, tol=1e-6
            )
        self.V_, self.b_, self.U_ = fit.V, fit.b, fit.U
        self.mean_ = self.U_.mean(axis=0)
        self.cov_ = np.atleast_2d(np.cov(self.U_, rowvar=False))
        self.item_ids_ = None if item_ids is None else list(item_ids)
        self.source_ = Y
        return self

    @property
    def n_items(self) -> int:
        """Number of items of the fitted leaderboard."""
        return int(self.V_.shape[0])

    def probabilities(self, U: np.ndarray) -> np.ndarray:
        """``sigmoid((U V^T + b) / sigma)``, shape (M, n_items), float32.

        Parameters
        ----------
        U : ndarray of shape (M, rank)
            Model factors (e.g. from :meth:`sample_factors`).

        Returns
        -------
        ndarray of float32 of shape (M, n_items)
        """
        return probabilities(U, self.V_, self.b_, self.sigma, dtype=np.float32)

    def sample_factors(
        self, n_models: int, random_state: int | np.random.Generator | None = None
    ) -> np.ndarray:
        """Model factors ``u ~ N(mean, inflate * cov)``, shape (n_models, r).

        Parameters
        ----------
        n_models : int
            Models to draw (at least 1).
        random_state : int, Generator or None, optional
            Seed or generator of the draw.

        Returns
        -------
        ndarray of shape (n_models, rank)

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        InputError
            When ``n_models`` is below 1.
        """
        if not hasattr(self, "V_"):
            from latentbench.exceptions import NotFittedError

            raise NotFittedError("LeaderboardSimulator is not fitted; call fit(scores) first")
        if n_models < 1:
            raise InputError(f"n_models={n_models!r}; expected a positive integer")
        rng = np.random.default_rng(random_state)
        return rng.multivariate_normal(self.mean_, self.inflate * self.cov_, size=n_models)

    def sample(
        self,
        n_models: int,
        random_state: int | np.random.Generator | None = None,
        *,
        chunk: int = 256,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Draw new models and their binary scores.

        Parameters
        ----------
        n_models : int
        random_state : int or Generator, optional
        chunk : int
            Rows generated at a time (memory).

        Returns
        -------
        scores : ndarray of shape (n_models, n_items), float32 in {0, 1}
        U : ndarray of shape (n_models, r)
        """
        rng = np.random.default_rng(random_state)
        U = self.sample_factors(n_models, rng)
        out = np.empty((n_models, self.n_items), dtype=np.float32)
        for s in range(0, n_models, chunk):
            p = self.probabilities(U[s : s + chunk])
            out[s : s + chunk] = rng.random(p.shape, dtype=np.float32) < p
        return out, U

    def fidelity(self, sample: np.ndarray, source: np.ndarray | None = None) -> dict[str, float]:
        """Compare a synthetic sample with the source matrix.

        Parameters
        ----------
        sample : ndarray of shape (n_samples, n_items)
            Synthetic scores (e.g. from :meth:`sample`).
        source : ndarray of shape (n_models, n_items), optional
            The matrix to compare with (NaN = missing); default: the one :meth:`fit` was given.

        Returns
        -------
        dict of str to float
            For source and sample (``source_*``, ``synthetic_*``): accuracy mean, SD, 5/50/95 %
            quantiles, the mean absolute item-item correlation over a random subset of 500
            items and the share of variance of the top 5 eigenvalues of the item correlation
            matrix; and ``item_pvalue_corr``, the correlation of the item p-values.
        """
        src = self.source_ if source is None else np.asarray(source, dtype=np.float32)
        syn = np.asarray(sample, dtype=np.float32)
        rng = np.random.default_rng(0)
        cols = rng.choice(src.shape[1], size=min(500, src.shape[1]), replace=False)

        def stats(Y: np.ndarray, tag: str) -> dict[str, float]:
            acc = np.nanmean(Y, axis=1)
            Z = Y[:, cols]
            Z = np.where(np.isnan(Z), np.nanmean(Z, axis=0), Z)
            sd = Z.std(axis=0)
            keep = sd > 0
            C = np.corrcoef(Z[:, keep], rowvar=False)
            off = np.abs(C[~np.eye(C.shape[0], dtype=bool)])
            ev = np.sort(np.linalg.eigvalsh(C))[::-1]
            return {
                f"{tag}_acc_mean": float(acc.mean()),
                f"{tag}_acc_sd": float(acc.std()),
                f"{tag}_acc_q05": float(np.quantile(acc, 0.05)),
                f"{tag}_acc_q50": float(np.quantile(acc, 0.5)),
                f"{tag}_acc_q95": float(np.quantile(acc, 0.95)),
                f"{tag}_item_abs_corr": float(off.mean()),
                f"{tag}_top5_eig_share": float(ev[:5].sum() / ev.sum()),
            }

        out = {**stats(src, "source"), **stats(syn, "synthetic")}
        p_src, p_syn = np.nanmean(src, axis=0), syn.mean(axis=0)
        out["item_pvalue_corr"] = float(np.corrcoef(p_src, p_syn)[0, 1])
        return out


def leaderboard_like(
    n_models: int,
    n_items: int,
    *,
    s1: float = 1.2,
    s2: float = 1.2,
    sb: float = 2.0,
    mu_b: float = 0.5,
    random_state: int | np.random.Generator | None = None,
) -> np.ndarray:
    """Binary scores with the low-rank structure of real leaderboards (demo and tests).

    ``logit_ij = b_j + u_i1 a_j + sum_{k=2,3} u_ik v_jk``: a general ability ``u_i1 ~ N(0,
    s1^2)`` with positive loadings ``a_j ~ LogNormal(0, 0.3)``, two secondary factors
    ``u_ik, v_jk ~ N(0, s2)`` (skills some items need and others do not) and intercepts
    ``b_j ~ N(mu_b, sb^2)``. The defaults were calibrated by
    ``benchmarks/calibrate_synthetic.py`` to the shared real matrices (BFCL and MMLU-Pro):
    the spread of model means and of item means, and the shares of the double-centred
    matrix's variance in its first principal component, in the 2nd-5th, and outside them
    (residual variance); the calibrated values and the real ones are in
    ``docs/selection.md`` ("The demo's leaderboard").

    Parameters
    ----------
    n_models, n_items : int
    s1, s2, sb, mu_b : float
        Generator scales (see above).
    random_state : int or Generator, optional

    Returns
    -------
    ndarray of shape (n_models, n_items), float32 in {0, 1}
    """
    _check_size(n_models, n_items, 2, 2)
    _check_random_state(random_state)
    rng = np.random.default_rng(random_state)
    u1 = rng.normal(0.0, s1, size=n_models)
    a = rng.lognormal(0.0, 0.3, size=n_items)
    U2 = rng.normal(0.0, np.sqrt(s2), size=(n_models, 2))
    V2 = rng.normal(0.0, np.sqrt(s2), size=(n_items, 2))
    b = rng.normal(mu_b, sb, size=n_items)
    logit = b[None, :] + u1[:, None] * a[None, :] + U2 @ V2.T
    return (rng.random(logit.shape) < expit(logit)).astype(np.float32)
