"""Low-rank logistic proxy for PULSE (``docs/selection.md``, The proxy).

Item factors ``V`` and intercepts ``b`` are learned once from historical models with the same
cBMM engine as the IRT fit (:func:`latentbench.irt._cbmm.fit_cbmm`) and frozen. Each candidate's
factor ``u`` is then a small regularised logistic regression given ``(V, b)``, solved exactly by
the engine's batched Newton solver (:func:`latentbench.irt.fit_model_factors`) for all
candidates at once.

Two priors on ``u`` are offered:

* ``prior="population"`` (default): ``u ~ N(mean, cov)`` of the historical models' factors. It
  is solved with the same engine by whitening, ``u = mean + L z`` with ``L L^T = cov``, so that
  ``logits = z (V L)^T + (b + V mean)`` and a unit ridge on ``z`` is exactly the Gaussian prior.
  With a handful of observed cells a candidate then starts from "a typical historical model"
  instead of from ``u = 0``.
* ``prior="ridge"``: a plain ridge ``l2_model / 2 |u|^2`` (the reference's weight decay).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from latentbench._checks import check_flag, is_integer, is_number
from latentbench._repr import GivenArgumentsRepr
from latentbench.exceptions import InputError
from latentbench.irt._objective import probabilities, sigmoid

if TYPE_CHECKING:
    from latentbench.io import ResponseMatrix
    from latentbench.irt import IRTResult

__all__ = ["LowRankProxy", "check_rank", "fit_history"]


def fit_history(proxy: LowRankProxy, history: np.ndarray, what: str) -> LowRankProxy:
    """``proxy.fit(history)``, with the warning of a history that carries no signal about
    model differences (every item discrimination ~0) naming ``what`` ("the history
    (hist.parquet)") and what it means for a selection: the cBMM engine's own message named
    no file and spoke of an IRT fit."""
    import warnings

    from latentbench._checks import user_stacklevel
    from latentbench.exceptions import IdentifiabilityWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        proxy.fit(history)
    said: set[tuple[type[Warning], str]] = set()  # rank="auto" fits several ranks
    for w in caught:
        text = str(w.message)
        if issubclass(w.category, IdentifiabilityWarning) and text.startswith(
            "every item discrimination is ~0"
        ):
            text = (
                f"{what}: every item discrimination is ~0, so the proxy it learns predicts "
                "every candidate alike (an item's difficulty only) and saves few evaluations; "
                "the estimates and intervals stay valid (they hold for any proxy)"
            )
        if (w.category, text) not in said:
            said.add((w.category, text))
            warnings.warn(text, w.category, stacklevel=user_stacklevel())
    return proxy


def check_rank(rank: int | str, shape: tuple[int, int], what: str) -> None:
    """Refuse a fixed ``rank`` above ``min(shape)``, the largest rank the matrix the factors
    are learned from can have (``what`` names it: "the history (hist.parquet)").

    A larger rank describes nothing more and costs time and memory in proportion (rank 1,000
    on a 51 x 400 history took 24 s instead of 0.1 s); the live run's ``[proxy] rank`` is
    bounded the same way.

    Raises
    ------
    InputError
        ``rank`` an integer above ``min(shape)``.
    """
    if rank == "auto" or not isinstance(rank, int | np.integer) or isinstance(rank, bool):
        return  # "auto", or a value the proxy itself refuses
    top = max(1, min(shape))
    if rank > top:
        raise InputError(
            f"rank={int(rank)}; expected an integer in [1, {top}] or 'auto' (min(models, "
            f"items) = min({shape[0]}, {shape[1]}) of {what}, from which the proxy's factors "
            "are learned)"
        )


def _one_se_choice(scores: dict[int, np.ndarray]) -> int:
    """Smallest rank whose mean score is within one paired standard error of the best."""
    ranks = sorted(scores)
    means = {r: float(scores[r].mean()) for r in ranks}
    best = min(ranks, key=lambda r: means[r])
    for r in ranks:
        diff = scores[r] - scores[best]
        se = float(diff.std(ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else 0.0
        if means[r] - means[best] <= se:
            return r
    return best


class LowRankProxy(GivenArgumentsRepr):
    """Frozen item factors from history plus per-candidate logistic regressions.

    Parameters
    ----------
    rank : int or "auto", default "auto"
        Number of latent factors r. ``auto`` chooses it by cross-validation on the history
        at any history size (:meth:`cv_ranks`): a third of the historical models (at most
        80) are held out, the item factors of each candidate rank in ``cv_grid`` are fit on
        (at most 400 of) the rest, each held-out model is prewarmed on ``cv_cells`` random
        cells (as a candidate is on its initial batch), and the rank with the smallest mean
        squared residual ``(Y - f)^2`` on its other cells wins, or the smallest rank within
        one standard error of it (the residual variance is what the doubly robust estimate
        pays).
    sigma : float, default 1.0
        Link temperature, ``f = sigmoid((U V^T + b) / sigma)``.
    l2 : float, default 1e-2
        Ridge of the item-factor fit on the history (engine parameter).
    prior : {"population", "ridge"}, default "population"
        Prior on candidate factors (see module docstring).
    l2_model : float, default 1.0
        Prior precision scale: the ridge on whitened factors (``population``) or on ``u``
        (``ridge``).
    nonneg : bool, default True
        Constrain ``V >= 0`` in the history fit.
    max_iter : int, default 50
        Cap on cBMM sweeps of the history fit. The proxy's held-out quality is flat beyond
        ~25 sweeps (residual variance ratio 0.392 at 25, 0.393 at 50, 0.393 at 200 sweeps on
        a leaderboard-like 2,000 x 10,000 history), so the default favours speed.
    newton_iter : int, default 25
        Cap on Newton steps per candidate refit.
    random_state : int or None
        Passed to the engine.
    max_cells : int, default 131072
        Size of the compacted sub-problems handed to the engine (see Notes).
    newton_tol : float, default 1e-4
        Stop a candidate's Newton iterations when its Newton decrement (about twice the
        remaining objective gap) is below this.
    cv_grid : tuple of int, default (1, 2, 4, 8, 16)
        Ranks tried by ``rank="auto"`` (those below the number of training models).
    cv_cells : int, default 64
        Cells each held-out model is prewarmed on.

    Notes
    -----
    Candidate rows are independent problems and unobserved cells contribute nothing, so
    :meth:`fit_models` hands the engine groups of rows restricted to the union of their
    observed columns (about ``max_cells`` cells per group) instead of the dense
    ``(n_models, n_items)`` matrix; the solution is the same, the work is proportional to
    the observed cells.

    Attributes
    ----------
    rank_ : int
        The rank used.
    V_ : ndarray of shape (n_items, r)
    b_ : ndarray of shape (n_items,)
    U_history_ : ndarray of shape (n_history, r)
    prior_mean_ : ndarray of shape (r,)
    prior_chol_ : ndarray of shape (r, r)
    fit_seconds_ : float
    """

    V_: np.ndarray
    b_: np.ndarray
    U_history_: np.ndarray

    def __init__(
        self,
        rank: int | str = "auto",
        *,
        sigma: float = 1.0,
        l2: float = 1e-2,
        prior: Literal["population", "ridge"] = "population",
        l2_model: float = 1.0,
        nonneg: bool = True,
        max_iter: int = 50,
        newton_iter: int = 25,
        random_state: int | None = None,
        max_cells: int = 1 << 17,
        newton_tol: float = 1e-4,
        cv_grid: tuple[int, ...] = (1, 2, 4, 8, 16),
        cv_cells: int = 64,
    ) -> None:
        self.cv_grid = cv_grid
        self.cv_cells = cv_cells
        self.newton_tol = newton_tol
        self.rank = rank
        self.max_cells = max_cells
        self.sigma = sigma
        self.l2 = l2
        self.prior = prior
        self.l2_model = l2_model
        self.nonneg = nonneg
        self.max_iter = max_iter
        self.newton_iter = newton_iter
        self.random_state = random_state

    def _check_numbers(self) -> None:
        """Refuse a numeric option of the wrong type or range, naming it ("x" was a
        ``TypeError`` from deep in the fit, ``nonneg="x"`` ran as True)."""
        checks: list[tuple[str, bool, str]] = [
            ("sigma", is_number(self.sigma) and self.sigma > 0, "a positive number"),
            ("l2", is_number(self.l2) and self.l2 >= 0, "a nonnegative number"),
            ("l2_model", is_number(self.l2_model) and self.l2_model > 0, "a positive number"),
            ("newton_tol", is_number(self.newton_tol) and self.newton_tol > 0, "a positive number"),
            ("nonneg", isinstance(self.nonneg, bool | np.bool_), "True or False"),
        ]
        for name in ("max_iter", "newton_iter", "max_cells", "cv_cells"):
            value = getattr(self, name)
            checks.append((name, is_integer(value) and value >= 1, "an integer >= 1"))
        grid = self.cv_grid
        checks.append(
            (
                "cv_grid",
                isinstance(grid, tuple | list)
                and len(grid) > 0
                and all(is_integer(r) and r >= 1 for r in grid),
                "a tuple of integers >= 1",
            )
        )
        state = self.random_state
        checks.append(
            (
                "random_state",
                state is None or isinstance(state, np.random.Generator) or is_integer(state),
                "None, an integer >= 0 or a numpy Generator",
            )
        )
        for name, good, expected in checks:
            if not good:
                raise InputError(f"{name}={getattr(self, name)!r}; expected {expected}")
        if is_integer(state) and state < 0:  # type: ignore[operator]
            raise InputError(f"random_state={state!r}; expected an integer >= 0")

    # ------------------------------------------------------------------ fitting
    def fit(
        self, history: np.ndarray | ResponseMatrix, *, warm_start: bool = False
    ) -> LowRankProxy:
        """Learn ``V``, ``b`` (and the population prior) from historical models.

        With fewer than 25% of the cells observed (a history-free run refitting the proxy on
        the candidates' revealed cells) the fit uses the observed-cells path
        (:func:`latentbench.irt._sparse.fit_sparse`), whose cost is proportional to the
        revealed cells.

        Parameters
        ----------
        history : ndarray of shape (n_history, n_items) or ResponseMatrix
            Scores in [0, 1], NaN = missing; the same items as the candidates.
        warm_start : bool, default False
            Start from the current fit (same shape and rank required), e.g. when the proxy is
            refit after a round revealed a few more cells.

        Returns
        -------
        self

        Raises
        ------
        InputError
            For an unknown ``prior``, or a history that is not 2-D with at least 2 models.
        """
        warm_start = check_flag(warm_start, "warm_start")  # "no" started from the last fit
        import time
        import warnings

        from latentbench.exceptions import ConvergenceWarning
        from latentbench.io._cells import SPARSE_DENSITY, ObservedCells
        from latentbench.irt._cbmm import fit_cbmm
        from latentbench.irt._sparse import fit_sparse

        H = self._fit_input(history)
        start = time.perf_counter()
        if self.rank == "auto":
            self.cv_scores_ = self.cv_ranks(H)
            rank = _one_se_choice(self.cv_scores_)
        else:
            rank = int(self.rank)
        self.rank_ = rank
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            warm = (
                (self.U_history_, self.V_, self.b_)
                if warm_start
                and hasattr(self, "V_")
                and self.U_history_.shape == (H.shape[0], rank)
                and self.V_.shape == (H.shape[1], rank)
                else None
            )
            observed = ~np.isnan(H)
            options: dict[str, Any] = {
                "rank": rank,
                "sigma": self.sigma,
                "l2": self.l2,
                "nonneg": self.nonneg,
                "max_iter": self.max_iter,
                "tol": 1e-5,
                "init": "accuracy" if warm is None else warm,
            }
            if observed.mean() < SPARSE_DENSITY:
                fit = fit_sparse(ObservedCells.from_dense(H), **options)
            else:
                fit = fit_cbmm(H, random_state=self.random_state, **options)
        self.V_ = np.asarray(fit.V, dtype=np.float64)
        self.b_ = np.asarray(fit.b, dtype=np.float64)
        self.U_history_ = np.asarray(fit.U, dtype=np.float64)
        self._set_prior()
        self.fit_seconds_ = time.perf_counter() - start
        return self

    def _fit_input(self, history: np.ndarray | ResponseMatrix) -> np.ndarray:
        """What :meth:`fit` refuses before it fits, checked (the options and the history's
        shape): the history as a float32 array. A caller that needs no fit (a live policy that
        learns no proxy) refuses the same histories without paying for the fit."""
        if self.prior not in ("population", "ridge"):
            raise InputError(f"prior={self.prior!r}; expected 'population' or 'ridge'")
        if self.rank != "auto" and (
            not isinstance(self.rank, int | np.integer)
            or isinstance(self.rank, bool)
            or self.rank < 1
        ):
            raise InputError(f"rank={self.rank!r}; expected an integer >= 1 or 'auto'")
        self._check_numbers()
        from latentbench.io import ResponseMatrix

        if isinstance(history, ResponseMatrix):  # its scores (numpy read it as one object)
            history = history.scores
        H = np.asarray(history, dtype=np.float32)
        if H.ndim != 2 or H.shape[0] < 2:
            raise InputError(f"history has shape {H.shape}; expected (n_history >= 2, n_items)")
        return H

    def cv_ranks(self, history: np.ndarray) -> dict[int, np.ndarray]:
        """Held-out squared residuals of each rank in ``cv_grid`` (see ``rank="auto"``).

        Parameters
        ----------
        history : ndarray of shape (n_history, n_items)

        Returns
        -------
        dict
            ``rank -> ndarray of shape (n_held_out,)``, the mean squared residual
            ``(Y - f)^2`` of each held-out model on the cells it was not prewarmed on.
        """
        H = np.asarray(history, dtype=np.float32)
        m, n = H.shape
        rng = np.random.default_rng(self.random_state)
        order = rng.permutation(m)
        n_hold = min(80, max(1, m // 3))
        hold, train = order[:n_hold], order[n_hold : n_hold + 400]
        cells = max(1, min(self.cv_cells, n // 2))
        seen = np.full((n_hold, n), np.nan, dtype=np.float32)
        picks = np.argsort(rng.random((n_hold, n)), axis=1)[:, :cells]
        rows = np.arange(n_hold)[:, None]
        seen[rows, picks] = H[hold][rows, picks]
        rest = np.isnan(seen) & ~np.isnan(H[hold])
        out: dict[int, np.ndarray] = {}
        params = self.get_params()
        for r in self.cv_grid:
            if train.size < 2 or r >= train.size:  # a fit needs 2 models, and more than r
                continue
            params.update(rank=int(r), random_state=self.random_state)
            proxy = LowRankProxy(**params).fit(H[train])
            f = proxy.predict(proxy.fit_models(seen), dtype=np.float64)
            sq = np.where(rest, (np.nan_to_num(H[hold]) - f) ** 2, 0.0)
            out[int(r)] = sq.sum(axis=1) / np.maximum(rest.sum(axis=1), 1)
        if not out:
            out[1] = np.zeros(n_hold)
        return out

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters (``rank`` fixed by cross-validation is not included).

        Returns
        -------
        dict of str to Any
        """
        names = ("sigma", "l2", "prior", "l2_model", "nonneg", "max_iter", "newton_iter",
                 "random_state", "max_cells", "newton_tol", "cv_grid", "cv_cells")  # fmt: skip
        return {k: getattr(self, k) for k in names}

    @classmethod
    def from_factors(
        cls, V: np.ndarray, b: np.ndarray, U_history: np.ndarray | None = None, **params: Any
    ) -> LowRankProxy:
        """Build a fitted proxy from known item factors (e.g. a saved fit or a simulator).

        Parameters
        ----------
        V : ndarray of shape (n_items, r)
        b : ndarray of shape (n_items,)
        U_history : ndarray of shape (n_history, r), optional
            Factors of reference models for the population prior; without it the prior is
            ``N(0, I)``.
        **params
            Constructor parameters.

        Returns
        -------
        LowRankProxy
            A fitted proxy of rank r.

        Raises
        ------
        InputError
            When ``b`` does not have shape (n_items,).
        """
        V = np.atleast_2d(np.asarray(V, dtype=np.float64).T).T
        self = cls(rank=V.shape[1], **params)
        self.rank_ = V.shape[1]
        self.V_ = V
        self.b_ = np.asarray(b, dtype=np.float64)
        if self.b_.shape != (V.shape[0],):
            raise InputError(f"b has shape {self.b_.shape}; expected ({V.shape[0]},)")
        self.U_history_ = (
            np.zeros((0, V.shape[1])) if U_history is None else np.asarray(U_history, float)
        )
        self._set_prior()
        self.fit_seconds_ = 0.0
        return self

    @classmethod
    def from_fit(cls, result: IRTResult, **params: Any) -> LowRankProxy:
        """Build a fitted proxy from an IRT fit: its item factors, intercepts, link temperature
        and, for the population prior, its models' factors (all on the fit's reported scale).

        Parameters
        ----------
        result : IRTResult
            A :class:`~latentbench.irt.TwoPL` fit (or one loaded with ``IRTResult.load``).
        **params
            Other constructor parameters (``prior``, ``l2_model``, ...); ``sigma`` defaults to
            the fit's.

        Returns
        -------
        LowRankProxy
            A fitted proxy of the fit's rank.
        """
        params.setdefault("sigma", float(result.sigma))
        return cls.from_factors(result.V, result.b, result.U, **params)

    def _set_prior(self) -> None:
        r = self.V_.shape[1]
        U = self.U_history_
        if self.prior == "population" and U.shape[0] >= 2:
            mean = U.mean(axis=0)
            cov = np.atleast_2d(np.cov(U, rowvar=False))
            cov = cov + (1e-3 * max(np.trace(cov) / r, 1e-6)) * np.eye(r)
            self.prior_mean_ = mean
            self.prior_chol_ = np.linalg.cholesky(cov)
        else:
            self.prior_mean_ = np.zeros(r)
            self.prior_chol_ = np.eye(r)
        # whitened item parameters used by the candidate fits
        if self.prior == "population":
            self._Vw = self.V_ @ self.prior_chol_
            self._bw = self.b_ + self.V_ @ self.prior_mean_
        else:
            self._Vw, self._bw = self.V_, self.b_

    def _check_fitted(self) -> None:
        if not hasattr(self, "V_"):
            from latentbench.exceptions import NotFittedError

            raise NotFittedError("LowRankProxy is not fitted; call fit(history) first")

    @property
    def n_items(self) -> int:
        """Number of items of the history fit (raises :class:`~latentbench.NotFittedError`
        before :meth:`fit`)."""
        self._check_fitted()
        return int(self.V_.shape[0])

    def fit_models(
        self, scores: np.ndarray, U0: np.ndarray | None = None, rows: np.ndarray | None = None
    ) -> np.ndarray:
        """MAP factors of candidate models given the frozen item factors.

        Parameters
        ----------
        scores : ndarray of shape (M, n_items)
            Observed scores, NaN = unobserved.
        U0 : ndarray of shape (M, r), optional
            Warm start (in the original, unwhitened parametrisation).
        rows : ndarray of int of shape (k,), optional
            Refit only these rows (the others keep ``U0``); rows are independent problems, so
            this is exact when the other rows' cells have not changed.

        Returns
        -------
        U : ndarray of shape (M, r)

        Raises
        ------
        InputError
            When ``scores`` is not 2-D with one column per item of the proxy.
        """
        from latentbench.irt._model_factors import fit_model_factors

        self._check_fitted()
        Y = np.asarray(scores)
        if Y.ndim != 2 or Y.shape[1] != self.V_.shape[0]:
            raise InputError(
                f"scores have shape {Y.shape}; expected (n_models, {self.V_.shape[0]})"
            )
        M = Y.shape[0]
        U = np.tile(self.prior_mean_, (M, 1)) if U0 is None else np.array(U0, dtype=np.float64)
        idx = np.arange(M) if rows is None else np.asarray(rows, dtype=np.int64)
        if idx.size == 0:
            return U
        Z0 = self._whiten(U[idx])
        Z = np.empty_like(Z0)
        observed = ~np.isnan(Y[idx])
        for group in _compact_groups(observed.sum(axis=1), self.max_cells):
            cols = np.flatnonzero(observed[group].any(axis=0))
            if cols.size == 0:
                Z[group] = 0.0
                continue
            Z[group] = fit_model_factors(
                Y[np.ix_(idx[group], cols)],
                self._Vw[cols],
                self._bw[cols],
                sigma=self.sigma,
                l2=self.l2_model,
                U0=Z0[group],
                max_iter=self.newton_iter,
                tol=self.newton_tol,
            )
        U[idx] = self._unwhiten(np.asarray(Z))
        return U

    def _whiten(self, U: np.ndarray) -> np.ndarray:
        if self.prior != "population":
            return U
        return np.linalg.solve(self.prior_chol_, (U - self.prior_mean_).T).T

    def _unwhiten(self, Z: np.ndarray) -> np.ndarray:
        if self.prior != "population":
            return Z
        return np.asarray(self.prior_mean_ + Z @ self.prior_chol_.T)

    def prior_prediction(self) -> np.ndarray:
        """Prediction for a model with the prior-mean factors, shape (n_items,).

        Returns
        -------
        ndarray of shape (n_items,)

        Raises
        ------
        NotFittedError
            Before :meth:`fit` (or :meth:`from_factors`).
        """
        self._check_fitted()
        return sigmoid((self.V_ @ self.prior_mean_ + self.b_) / self.sigma)

    def predict(self, U: np.ndarray, dtype: type = np.float32) -> np.ndarray:
        """Predicted probabilities ``sigmoid((U V^T + b) / sigma)``.

        Parameters
        ----------
        U : ndarray of shape (M, r)
            Model factors (e.g. from :meth:`fit_models`).
        dtype : type, default numpy.float32
            Type of the returned array (computed in float32 and cast).

        Returns
        -------
        ndarray of shape (M, n_items)
        """
        self._check_fitted()
        out = probabilities(U, self.V_, self.b_, self.sigma, dtype=np.float32)
        return np.asarray(out, dtype=dtype)


def _compact_groups(counts: np.ndarray, max_cells: int) -> list[np.ndarray]:
    """Group rows (sorted by observed count) so that ``len(group) * sum(counts) <= max_cells``."""
    order = np.argsort(counts, kind="stable")
    groups: list[np.ndarray] = []
    start, total = 0, 0
    for k, row in enumerate(order):
        c = int(counts[row])
        size = k - start + 1
        if k > start and size * (total + c) > max_cells:
            groups.append(order[start:k])
            start, total = k, 0
        total += c
    if start < len(order):
        groups.append(order[start:])
    return groups
