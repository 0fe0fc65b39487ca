"""Leaderboard-like simulator: new models drawn from a rank-r logistic fit of a real matrix.

Fit ``P(y_ij = 1) = sigmoid((u_i . v_j + b_j) / sigma)`` to a real response matrix with the cBMM
engine, keep the item parameters ``(V, b)`` and fit a Gaussian to the rows ``u_i``; new models
are ``u ~ N(mean, inflate * cov)`` and their scores independent Bernoulli draws. Experiments can
then use 1,000-model pools on the real item structure (difficulties, discriminations,
item-item correlations of the source).

Faithfulness is limited by construction: item structure beyond rank r and any non-Gaussian
shape of the model population (clusters, outliers) are lost; :meth:`LeaderboardSimulator.fidelity`
compares accuracy spread and item correlations with the source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from latentbench.exceptions import InputError

if TYPE_CHECKING:
    from latentbench.io import ResponseMatrix

__all__ = ["LeaderboardSimulator"]


class LeaderboardSimulator:
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
        """
        import warnings

        from latentbench.exceptions import ConvergenceWarning
        from latentbench.irt._cbmm import fit_cbmm

        if not isinstance(scores, np.ndarray) and hasattr(scores, "scores"):
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
        return int(self.V_.shape[0])

    def probabilities(self, U: np.ndarray) -> np.ndarray:
        """``sigmoid((U V^T + b) / sigma)``, shape (M, n_items), float32."""
        logits = (np.asarray(U, dtype=np.float32) @ self.V_.T.astype(np.float32)) + self.b_.astype(
            np.float32
        )
        probs = 0.5 * (1.0 + np.tanh(0.5 * logits / np.float32(self.sigma)))
        return np.asarray(probs, dtype=np.float32)

    def sample_factors(
        self, n_models: int, random_state: int | np.random.Generator | None = None
    ) -> np.ndarray:
        """Model factors ``u ~ N(mean, inflate * cov)``, shape (n_models, r)."""
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

        Returns a dict with, for source and sample: accuracy mean, SD, 5/50/95 % quantiles;
        the correlation of item p-values; the mean absolute item-item correlation over a
        random subset of 500 items; and the share of variance of the top 5 eigenvalues of the
        item correlation matrix.
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
