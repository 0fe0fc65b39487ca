"""Estimator layer: :class:`TwoPL` and its result object :class:`IRTResult`."""

from __future__ import annotations

import inspect
import json
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from latentbench.exceptions import ConvergenceWarning, InputError, NotFittedError
from latentbench.io._matrix import ResponseMatrix
from latentbench.irt._cbmm import CBMMFit, fit_cbmm, fit_model_factors
from latentbench.irt._heldout import (
    HeldOutScores,
    fit_additive,
    heldout_mask,
    predictive_scores,
)
from latentbench.irt._objective import (
    GaussianPenalty,
    Normalisation,
    logits,
    normalise,
    probabilities,
    sigmoid,
)
from latentbench.irt._priors import Prior, PriorSelection, resolve_prior
from latentbench.irt._sparse import SPARSE_DENSITY, ObservedCells, fit_sparse, predict_cells

if TYPE_CHECKING:
    from latentbench.irt.diagnostics import Diagnostics
    from latentbench.irt.inference import BootstrapResult, Uncertainty

__all__ = ["CrossValidation", "IRTResult", "RankSelection", "TwoPL"]


@dataclass(frozen=True)
class RankSelection:
    """Outcome of ``TwoPL(rank="auto")``.

    Attributes
    ----------
    ranks : list of int
        Candidate ranks tried.
    heldout_log_likelihood : list of float
        Mean held-out Bernoulli log-likelihood per cell for each candidate rank.
    chosen : int
        The rank with the highest held-out log-likelihood.
    heldout_fraction : float
        Fraction of observed cells masked for validation.
    """

    ranks: list[int]
    heldout_log_likelihood: list[float]
    chosen: int
    heldout_fraction: float


@dataclass
class IRTResult:
    """A fitted 2PL / rank-r logistic model (cBMM), reported under the normalisation below.

    The model is ``P(y_ij = 1) = sigmoid((U_i . V_j + b_j) / sigma)``; for rank 1,
    ``sigmoid((a_j theta_i + b_j) / sigma)`` with ``a_j >= 0``. Reported parameters are
    normalised so that theta has mean 0 and standard deviation 1 (rank 1; for rank > 1 the
    factors are centred): ``theta <- (theta - mu) / s``, ``a <- s a``, ``b <- b + mu a``.
    The fitted probabilities do not change.

    Attributes
    ----------
    abilities : DataFrame
        One row per model: ``model``, ``theta`` (first factor), ``accuracy`` (mean observed
        score), ``n_observed``, ``rank_theta`` and ``rank_accuracy`` (1 = best; ties share the
        lowest rank), ``rank_shift`` (rank_accuracy - rank_theta), ``constant`` (all observed
        scores equal: the ability is finite only because of the ridge); for rank > 1 also
        ``theta_1`` ... ``theta_r``.
    items : DataFrame
        One row per item: ``item``, ``discrimination`` (a, >= 0), ``easiness`` (b, the
        intercept), ``difficulty`` (``-b``: the log-odds of failure for an average model,
        theta = 0, in units of sigma; finite even when a = 0), ``location`` (``-b / a``: the
        ability at which P = 1/2, as mirt reports it; NaN where a = 0, and for rank > 1),
        ``proportion_correct`` (mean observed score),
        ``n_observed``, ``constant`` and ``zero_discrimination`` flags; for rank > 1 also
        ``discrimination_1`` ... ``discrimination_r``.
    U : ndarray of shape (n_models, rank)
        Normalised model factors.
    V : ndarray of shape (n_items, rank)
        Normalised item factors (discriminations).
    b : ndarray of shape (n_items,)
        Normalised item intercepts.
    sigma : float
    rank : int
    loss : float
        Final objective (negative log-likelihood over observed cells plus the ridge).
    loss_history : list of float
    n_iter : int
    converged : bool
    seconds : float
    options : dict
        The estimator's parameters.
    rank_selection : RankSelection or None
        Present when the rank was chosen automatically.
    penalty : GaussianPenalty
        The penalty (ridge / Gaussian priors) of the fitted objective, on the raw scale.
    prior_selection : PriorSelection or None
        How the prior's hyperparameters were chosen (None for joint ML, ``prior=None``).
    normalisation : Normalisation or None
        Raw factors are ``scale * U + shift`` (None: unknown, taken as the identity).
    matrix : ResponseMatrix or None
        The matrix the model was fitted on (kept by reference, statsmodels-style, so that
        :meth:`standard_errors`, :meth:`bootstrap` and :meth:`diagnostics` need no argument);
        None for a result loaded from disk.
    """

    abilities: pd.DataFrame
    items: pd.DataFrame
    U: np.ndarray
    V: np.ndarray
    b: np.ndarray
    sigma: float
    rank: int
    loss: float
    neg_log_likelihood: float
    loss_history: list[float]
    n_iter: int
    converged: bool
    seconds: float
    options: dict[str, Any]
    shape: tuple[int, int]
    n_observed: int
    raw: CBMMFit | None = field(default=None, repr=False)
    rank_selection: RankSelection | None = None
    penalty: GaussianPenalty = field(default_factory=lambda: GaussianPenalty.ridge(1e-2))
    normalisation: Normalisation | None = None
    prior_selection: PriorSelection | None = None
    matrix: ResponseMatrix | None = field(default=None, repr=False, compare=False)

    @property
    def model_ids(self) -> list[str]:
        return self.abilities["model"].tolist()

    @property
    def item_ids(self) -> list[str]:
        return self.items["item"].tolist()

    @property
    def theta(self) -> np.ndarray:
        """Abilities (first factor), shape (n_models,)."""
        return self.U[:, 0]

    @property
    def discrimination(self) -> np.ndarray:
        """Discriminations a (first factor), shape (n_items,)."""
        return self.V[:, 0]

    def logits(self) -> np.ndarray:
        """``(U V^T + b) / sigma``, shape (n_models, n_items)."""
        return logits(self.U, self.V, self.b, self.sigma)

    def predict_proba(
        self, models: Sequence[Any] | None = None, items: Sequence[Any] | None = None
    ) -> np.ndarray:
        """Fitted probability of a correct response for every (model, item) cell.

        Parameters
        ----------
        models, items : sequence of ids or integer positions, optional
            Restrict to these rows / columns (default: all).

        Returns
        -------
        ndarray of shape (n_models, n_items)
            Probabilities in (0, 1), observed and unobserved cells alike.
        """
        rows = _positions(models, self.model_ids, "model")
        cols = _positions(items, self.item_ids, "item")
        return probabilities(self.U[rows], self.V[cols], self.b[cols], self.sigma)

    def predict_cells(self, models: Sequence[Any], items: Sequence[Any]) -> np.ndarray:
        """Fitted probability of a correct response for the requested cells only.

        Cost and memory are proportional to the number of cells requested, never to
        ``n_models * n_items`` (use this instead of :meth:`predict_proba` on large sparse fits).

        Parameters
        ----------
        models, items : sequence of ids or integer positions, same length n
            Cell k is (models[k], items[k]).

        Returns
        -------
        ndarray of shape (n,)
        """
        rows = _positions(models, self.model_ids, "model")
        cols = _positions(items, self.item_ids, "item")
        if rows.shape != cols.shape:
            raise InputError(
                f"{rows.size} models and {cols.size} items; expected one of each per cell"
            )
        return predict_cells(self.U, self.V, self.b, rows, cols, self.sigma)

    def score_models(self, matrix: ResponseMatrix) -> pd.DataFrame:
        """Abilities of new models on the calibrated items, item parameters held fixed.

        Works with any subset of the calibrated items (a handful per model is enough to get an
        estimate; the standard error says how little it is worth). Items unknown to the fit
        are an error.

        Parameters
        ----------
        matrix : ResponseMatrix
            New models (rows) on items that were in the fit.

        Returns
        -------
        DataFrame
            ``model``, ``theta`` (on the fit's normalised scale), ``se`` (observed information
            at the estimate, penalty included, plus, for rank 1 when the result holds its
            matrix, the calibration's item-parameter uncertainty by the delta method),
            ``se_own`` (the model's own cells only), ``n_observed``, ``accuracy``.
        """
        lookup = {item: j for j, item in enumerate(self.item_ids)}
        unknown = [item for item in matrix.item_ids if item not in lookup]
        if unknown:
            raise InputError(
                f"{len(unknown)} item(s) were not in the fit (first: {unknown[0]!r}); expected "
                "items calibrated by this fit"
            )
        cols = np.array([lookup[item] for item in matrix.item_ids])
        U, hessian = fit_model_factors(
            matrix.scores,
            self.V[cols],
            self.b[cols],
            sigma=self.sigma,
            penalty=self.penalty.on_reported_scale(self.normalisation),
            return_hessian=True,
        )
        var_own = np.linalg.inv(hessian)[:, 0, 0]
        var_items = np.zeros_like(var_own)
        if self.rank == 1 and self.matrix is not None:
            var_items = self._item_variance_of_scores(matrix.scores, cols, U[:, 0], hessian)
        return pd.DataFrame(
            {
                "model": matrix.model_ids,
                "theta": U[:, 0],
                "se": np.sqrt(var_own + var_items),
                "se_own": np.sqrt(var_own),
                "n_observed": matrix.n_observed_per_model(),
                "accuracy": matrix.model_accuracy(),
            }
        )

    def _item_variance_of_scores(
        self, scores: np.ndarray, cols: np.ndarray, theta: np.ndarray, hessian: np.ndarray
    ) -> np.ndarray:
        """Variance of scored abilities from the calibration's item-parameter uncertainty.

        The score ``theta_i`` solves ``g_i = sum_j a_j (y_ij - p_ij) / sigma - prior'(theta_i)
        = 0``, so by the delta method ``d theta_i / d eta_j = (d g_i / d eta_j) / H_i`` for
        ``eta_j = (a_j, b_j)``; with the items' block covariances from :meth:`standard_errors`
        (independent across items) the added variance is
        ``sum_j d_ij^T Cov_j d_ij / H_i^2``.
        """
        items = self.standard_errors(scale_correction=False).items
        var_a = items["discrimination_se"].to_numpy(float)[cols] ** 2
        var_b = items["easiness_se"].to_numpy(float)[cols] ** 2
        cov_ab = items["cov_discrimination_easiness"].to_numpy(float)[cols]
        a, b, sigma = self.V[cols, 0], self.b[cols], self.sigma
        observed = ~np.isnan(scores)
        y = np.where(observed, scores, 0.0)
        p = sigmoid((np.outer(theta, a) + b) / sigma)
        w = p * (1 - p) * observed
        d_a = ((y - p) * observed) / sigma - w * a * theta[:, None] / sigma**2
        d_b = -w * a / sigma**2
        spread = (d_a**2 * var_a + 2 * d_a * d_b * cov_ab + d_b**2 * var_b).sum(axis=1)
        return np.asarray(spread / hessian[:, 0, 0] ** 2)

    def standard_errors(self, matrix: ResponseMatrix | None = None, **kwargs: Any) -> Uncertainty:
        """Plug-in standard errors; see :func:`latentbench.irt.inference.standard_errors`.

        ``matrix`` defaults to the matrix the result was fitted on.
        """
        from latentbench.irt.inference import standard_errors

        return standard_errors(self, matrix, **kwargs)

    def bootstrap(self, matrix: ResponseMatrix | None = None, **kwargs: Any) -> BootstrapResult:
        """Bootstrap replicates; see :func:`latentbench.irt.inference.bootstrap`."""
        from latentbench.irt.inference import bootstrap

        return bootstrap(self, matrix, **kwargs)

    def diagnostics(self, matrix: ResponseMatrix | None = None, **kwargs: Any) -> Diagnostics:
        """Item and model diagnostics; see :func:`latentbench.irt.diagnostics.diagnose`."""
        from latentbench.irt.diagnostics import diagnose

        return diagnose(self, matrix, **kwargs)

    def summary(self, top: int = 10) -> str:
        """Plain-text summary: shape, convergence, top models, most / least discriminating."""
        lines = [
            f"cBMM fit: {self.shape[0]} models x {self.shape[1]} items, rank {self.rank}, "
            f"sigma {self.sigma:g}, {self.n_observed} observed cells",
            f"  loss {self.loss:.6g} after {self.n_iter} sweeps ({self.seconds:.2f} s), "
            f"converged: {self.converged}",
        ]
        best = self.abilities.sort_values("theta", ascending=False).head(top)
        lines.append("  top models by theta: " + ", ".join(best["model"].astype(str)))
        return "\n".join(lines)

    def fit_info(self) -> dict[str, Any]:
        """JSON-serialisable record of the fit (shape, loss, iterations, options, ...)."""
        info: dict[str, Any] = {
            "n_models": self.shape[0],
            "n_items": self.shape[1],
            "n_observed": self.n_observed,
            "rank": self.rank,
            "sigma": self.sigma,
            "loss": self.loss,
            "neg_log_likelihood": self.neg_log_likelihood,
            "iterations": self.n_iter,
            "converged": self.converged,
            "seconds": self.seconds,
            "options": self.options,
            "normalisation": "theta mean 0, sd 1 (rank 1); factors centred (rank > 1)",
            "penalty": self.penalty.to_dict(),
        }
        if self.prior_selection is not None:
            sel = self.prior_selection
            info["prior_selection"] = {
                "a_sd": sel.a_sd,
                "b_mean": sel.b_mean,
                "b_sd": sel.b_sd,
                "grid": sel.grid,
                "heldout_log_loss": sel.heldout_log_loss,
            }
        if self.normalisation is not None:
            info["raw_shift"] = self.normalisation.shift.tolist()
            info["raw_scale"] = self.normalisation.scale
        if self.rank_selection is not None:
            info["rank_selection"] = {
                "ranks": self.rank_selection.ranks,
                "heldout_log_likelihood": self.rank_selection.heldout_log_likelihood,
                "chosen": self.rank_selection.chosen,
                "heldout_fraction": self.rank_selection.heldout_fraction,
            }
        record: dict[str, Any] = json.loads(json.dumps(info, default=float))
        return record

    _FILES: ClassVar[tuple[str, str, str]] = ("abilities.csv", "items.csv", "fit.json")

    def save(self, directory: str | Path) -> dict[str, Path]:
        """Write the fit directory: ``abilities.csv``, ``items.csv`` and ``fit.json``.

        The directory format is owned here; :meth:`load` reads it back.

        Returns
        -------
        dict
            ``{"abilities": path, "items": path, "fit": path}``.
        """
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        paths = {
            "abilities": out / "abilities.csv",
            "items": out / "items.csv",
            "fit": out / "fit.json",
        }
        self.abilities.to_csv(paths["abilities"], index=False)
        self.items.to_csv(paths["items"], index=False)
        paths["fit"].write_text(json.dumps(self.fit_info(), indent=2))
        return paths

    @classmethod
    def load(cls, directory: str | Path) -> IRTResult:
        """Rebuild a result from a directory written by :meth:`save` (``latentbench fit``).

        The raw (unnormalised) parameters are not saved, so ``raw`` is None, and neither is the
        matrix (pass it to :meth:`standard_errors` and friends). Directories written before the
        penalty was recorded get the ridge of their ``options["l2"]``.
        """
        directory = Path(directory)
        paths = {name: directory / name for name in cls._FILES}
        missing = [name for name, p in paths.items() if not p.exists()]
        if missing:
            raise InputError(
                f"{directory} lacks {', '.join(missing)}; expected the output of "
                "`latentbench fit --out DIR`"
            )
        abilities = pd.read_csv(paths["abilities.csv"], dtype={"model": str}, keep_default_na=False)
        items = pd.read_csv(paths["items.csv"], dtype={"item": str}, keep_default_na=False)
        info = json.loads(paths["fit.json"].read_text())
        rank = int(info.get("rank", 1))
        if rank == 1:
            U = abilities[["theta"]].to_numpy(float)
            V = items[["discrimination"]].to_numpy(float)
        else:
            U = abilities[[f"theta_{k + 1}" for k in range(rank)]].to_numpy(float)
            V = items[[f"discrimination_{k + 1}" for k in range(rank)]].to_numpy(float)
        options = dict(info.get("options", {}))
        penalty = (
            GaussianPenalty.from_dict(info["penalty"])
            if "penalty" in info
            else GaussianPenalty.ridge(float(options.get("l2", 1e-2)))
        )
        scale = None
        if "raw_shift" in info:
            scale = Normalisation(np.asarray(info["raw_shift"], float), float(info["raw_scale"]))
        return cls(
            abilities=abilities,
            items=items,
            U=U,
            V=V,
            b=items["easiness"].to_numpy(float),
            sigma=float(info.get("sigma", 1.0)),
            rank=rank,
            loss=float(info.get("loss", np.nan)),
            neg_log_likelihood=float(info.get("neg_log_likelihood", np.nan)),
            loss_history=[],
            n_iter=int(info.get("iterations", 0)),
            converged=bool(info.get("converged", False)),
            seconds=float(info.get("seconds", 0.0)),
            options=options,
            shape=(len(abilities), len(items)),
            n_observed=int(info.get("n_observed", 0)),
            penalty=penalty,
            normalisation=scale,
        )


def _positions(selection: Sequence[Any] | None, ids: list[str], kind: str) -> np.ndarray:
    if selection is None:
        return np.arange(len(ids))
    array = np.asarray(selection)
    if np.issubdtype(array.dtype, np.integer):
        return array.astype(np.int64)
    lookup = {name: i for i, name in enumerate(ids)}
    try:
        return np.array([lookup[str(name)] for name in array], dtype=np.int64)
    except KeyError as exc:
        raise InputError(f"unknown {kind} id {exc.args[0]!r}") from None


class TwoPL:
    """The 2PL (rank 1) or rank-r logistic IRT model, fitted by cBMM.

    ``P(y_ij = 1) = sigmoid((a_j theta_i + b_j) / sigma)`` with ``a_j >= 0`` (rank 1), or
    ``sigmoid((U_i . V_j + b_j) / sigma)`` with ``V >= 0`` (rank r). Missing cells are ignored;
    fractional scores in [0, 1] are soft labels of the Bernoulli likelihood.

    Dense or sparse path, chosen automatically (:meth:`uses_sparse_path`): a matrix with at
    least 25% of its cells observed is fitted with the dense fill-in majorizer (one streaming
    pass over all cells per sweep, fastest on complete matrices); a sparser matrix, or one
    that stores only its observed cells (:meth:`ResponseMatrix.from_cells`), with the
    observed-cells majorizer (:func:`latentbench.irt._sparse.fit_sparse`: cost and memory
    proportional to the observed cells, sweeps not growing with the missing fraction). Both
    minimise the same objective and reach the same optimum.

    Parameters
    ----------
    rank : int or "auto", default 1
        Number of latent factors. ``"auto"`` holds out 10% of the observed cells (seeded by
        ``random_state``), fits ranks 1..``max_rank`` on the rest, and picks the rank with the
        best mean held-out log-likelihood; the final fit then uses all cells.
    sigma : float, default 1.0
        Temperature of the link (fixed; not identifiable together with the scale of theta).
    prior : Prior, "auto" or None, default "auto"
        ``"auto"`` (= ``Prior()``): the MAP fit with Gaussian priors theta ~ N(0, 1),
        a ~ N(1, a_sd^2) truncated at 0 and b ~ N(b_mean, b_sd^2), hyperparameters from the
        data (a_sd by held-out log-loss, b from the item means); see
        :class:`~latentbench.irt.Prior`. It keeps every estimate finite and predicts held-out
        cells better than joint ML on matrices with tens of models. ``None``: joint maximum
        likelihood with the ridge ``l2`` (the cBMM paper's setting).
    l2 : float, default 1e-2
        Ridge on all parameters of the joint-ML fit (``prior=None`` only). It keeps abilities of
        all-correct / all-wrong models and intercepts of constant items finite (they have no
        finite joint-ML estimate); such rows and columns are flagged ``constant`` in the result.
        0 gives plain joint ML.
    tol : float, default 1e-6
        Relative objective change for stopping (``1e-4`` reproduces the paper's setting).
    max_iter : int, default 5000
    init : {"accuracy", "random"}, default "accuracy"
        Deterministic start from accuracies, or the reference random start (uses
        ``random_state``).
    accelerate : bool, default True
        Monotone over-relaxed MM steps.
    max_rank : int, default 5
        Largest rank tried by ``rank="auto"``.
    random_state : int or None
        Seed for ``init="random"`` and for the held-out split of ``rank="auto"``.
    device : str or None, default None
        ``None``: NumPy/numba kernels on the CPU. A PyTorch device (``"cuda"``, ``"cpu"``):
        the same algorithm on PyTorch tensors (extra ``torch``); estimates agree with the
        NumPy path to about 1e-5.

    Examples
    --------
    >>> from latentbench.synthetic import simulate_2pl
    >>> data = simulate_2pl(200, 100, random_state=0)
    >>> result = TwoPL().fit(data.matrix)
    >>> result.predict_proba().shape
    (200, 100)
    """

    def __init__(
        self,
        rank: int | Literal["auto"] = 1,
        sigma: float = 1.0,
        prior: Prior | Literal["auto"] | None = "auto",
        l2: float = 1e-2,
        tol: float = 1e-6,
        max_iter: int = 5000,
        init: Literal["accuracy", "random"] = "accuracy",
        accelerate: bool = True,
        max_rank: int = 5,
        random_state: int | None = None,
        device: str | None = None,
    ) -> None:
        self.rank = rank
        self.sigma = sigma
        self.prior = prior
        self.l2 = l2
        self.tol = tol
        self.max_iter = max_iter
        self.init = init
        self.accelerate = accelerate
        self.max_rank = max_rank
        self.random_state = random_state
        self.device = device

    #: Allowed values of every constructor parameter: name -> (check, description). Checked
    #: once at ``fit``; an error names the parameter, what is allowed and what was received.
    _constraints: ClassVar[dict[str, tuple[Callable[[Any], bool], str]]] = {
        "rank": (
            lambda v: (isinstance(v, str) and v == "auto") or _is_strict_int(v, 1),
            "an integer >= 1 or 'auto'",
        ),
        "sigma": (lambda v: _is_real(v) and v > 0, "a positive number"),
        "prior": (
            lambda v: v is None or isinstance(v, Prior) or (isinstance(v, str) and v == "auto"),
            "'auto', None or a latentbench.irt.Prior",
        ),
        "l2": (lambda v: _is_real(v) and v >= 0, "a nonnegative number"),
        "tol": (lambda v: _is_real(v) and 0 < v < 1, "a number in (0, 1)"),
        "max_iter": (lambda v: _is_int(v, 1), "an integer >= 1"),
        "init": (lambda v: v in ("accuracy", "random"), "'accuracy' or 'random'"),
        "accelerate": (lambda v: isinstance(v, (bool, np.bool_)), "True or False"),
        "max_rank": (lambda v: _is_int(v, 1), "an integer >= 1"),
        "random_state": (
            lambda v: v is None or _is_int(v, 0) or isinstance(v, np.random.Generator),
            "None, an integer >= 0 or a numpy Generator",
        ),
        "device": (
            lambda v: v is None or isinstance(v, str),
            "None or a PyTorch device string",
        ),
    }

    @classmethod
    def _param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return [name for name in signature.parameters if name != "self"]

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters, by name (derived from the ``__init__`` signature)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> TwoPL:
        """Set constructor parameters by name (validated at the next ``fit``); returns self."""
        names = self._param_names()
        for name, value in params.items():
            if name not in names:
                raise InputError(
                    f"TwoPL has no parameter {name!r}; expected one of {', '.join(names)}"
                )
            setattr(self, name, value)
        return self

    def _validate(self) -> None:
        for name in self._param_names():
            check, expected = self._constraints[name]
            value = getattr(self, name)
            if not check(value):
                raise InputError(f"{name}={value!r}; expected {expected}")

    def _resolve_penalty(
        self, scores: np.ndarray, rank: int
    ) -> tuple[GaussianPenalty, PriorSelection | None]:
        """The penalty of the fit: the ridge (``prior=None``) or the resolved prior."""
        if self.prior is None:
            return GaussianPenalty.ridge(float(self.l2)), None
        prior = Prior() if isinstance(self.prior, str) else self.prior

        def fit(train: np.ndarray, penalty: GaussianPenalty) -> tuple[Any, Any, Any]:
            raw = self._fit_arrays(train, rank, None, penalty, quiet=True)
            return raw.U, raw.V, raw.b

        # the held-out mask of the prior's choice is fixed (seed 0), whatever random_state
        # (which seeds only the random start): the same data give the same prior
        return resolve_prior(prior, scores, float(self.sigma), fit, 0)

    def _fit_arrays(
        self,
        scores: np.ndarray | ObservedCells,
        rank: int,
        callback: Callable[[int, float], None] | None,
        penalty: GaussianPenalty,
        quiet: bool = False,
    ) -> CBMMFit:
        with warnings.catch_warnings():
            if quiet:  # inner fits of a held-out search: only the final fit warns
                warnings.simplefilter("ignore", ConvergenceWarning)
            return self._fit_cbmm(scores, rank, callback, penalty)

    def _fit_cbmm(
        self,
        scores: np.ndarray | ObservedCells,
        rank: int,
        callback: Callable[[int, float], None] | None,
        penalty: GaussianPenalty,
    ) -> CBMMFit:
        if isinstance(scores, ObservedCells):
            return fit_sparse(
                scores,
                rank=rank,
                sigma=float(self.sigma),
                penalty=penalty,
                tol=float(self.tol),
                max_iter=int(self.max_iter),
                accelerate=self.accelerate,
                callback=callback,
            )
        return fit_cbmm(
            scores,
            rank=rank,
            sigma=float(self.sigma),
            penalty=penalty,
            tol=float(self.tol),
            max_iter=int(self.max_iter),
            init=self.init,
            random_state=self.random_state,
            accelerate=self.accelerate,
            callback=callback,
            device=self.device,
        )

    def select_rank(
        self,
        matrix: ResponseMatrix,
        heldout_fraction: float = 0.1,
        penalty: GaussianPenalty | None = None,
    ) -> RankSelection:
        """Choose the rank by held-out log-likelihood (see the ``rank`` parameter).

        ``penalty`` defaults to the estimator's (the prior resolved at rank 1, or the ridge).
        """
        scores = matrix.scores
        if penalty is None:
            penalty = self._resolve_penalty(scores, 1)[0]
        seed = 0 if self.random_state is None else self.random_state
        train, rows, cols = heldout_mask(scores, heldout_fraction, seed)
        truth = scores[rows, cols].astype(np.float64)
        ranks = list(range(1, int(self.max_rank) + 1))
        scores_by_rank = []
        for rank in ranks:
            raw = self._fit_arrays(train, rank, None, penalty, quiet=True)
            logit = (
                np.einsum("nk,nk->n", raw.U[rows], raw.V[cols]) + raw.b[cols]
            ) / self.sigma  # cellwise logits of the held-out cells only
            loglik = truth * logit - np.logaddexp(0.0, logit)
            scores_by_rank.append(float(loglik.mean()))
        chosen = ranks[int(np.argmax(scores_by_rank))]
        return RankSelection(ranks, scores_by_rank, chosen, heldout_fraction)

    def fit(
        self,
        matrix: ResponseMatrix,
        callback: Callable[[int, float], None] | None = None,
    ) -> IRTResult:
        """Fit the model to a response matrix.

        Parameters
        ----------
        matrix : ResponseMatrix
            Scores of shape (n_models, n_items), NaN = missing.
        callback : callable(iteration, loss), optional
            Progress hook called after every sweep.

        Returns
        -------
        IRTResult
            Also stored as ``self.result_``; the normalised parameters are available as
            ``ability_``, ``discrimination_``, ``intercept_`` and ``difficulty_``.
        """
        self._check_matrix(matrix)
        self._validate()
        start = time.perf_counter()
        selection = None
        rank = self.rank
        first = 1 if rank == "auto" else int(rank)
        penalty, prior_selection = self._resolve_penalty(matrix.scores, first)
        if rank == "auto":
            selection = self.select_rank(matrix, penalty=penalty)
            rank = selection.chosen
        raw = self._fit_arrays(self._fit_data(matrix), int(rank), callback, penalty)
        result = self._build_result(matrix, raw, int(rank), selection)
        result.penalty = penalty
        result.prior_selection = prior_selection
        result.seconds = time.perf_counter() - start
        self.result_ = result
        self.ability_ = result.U[:, 0].copy()
        self.discrimination_ = result.V[:, 0].copy()
        self.intercept_ = result.b.copy()
        self.difficulty_ = -result.b
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.loss_history_ = list(result.loss_history)
        return result

    @staticmethod
    def _check_matrix(matrix: Any) -> None:
        if not isinstance(matrix, ResponseMatrix):
            raise InputError(
                f"expected a ResponseMatrix, got {type(matrix).__name__}; build one with "
                "ResponseMatrix.from_long / from_wide / read"
            )

    def cross_validate(
        self,
        matrix: ResponseMatrix,
        heldout: float = 0.1,
        n_splits: int = 3,
        random_state: int | None = 0,
    ) -> CrossValidation:
        """Held-out evaluation against the additive baseline ``logit p = c_i + b_j``.

        For each split, a random fraction ``heldout`` of the observed cells is hidden, this
        estimator (with its own hyperparameter choices, made on the training cells only) and
        the additive model are fitted on the rest, and both are scored on the hidden cells.

        Parameters
        ----------
        matrix : ResponseMatrix
        heldout : float, default 0.1
            Fraction of observed cells hidden per split.
        n_splits : int, default 3
            Number of random splits (split k uses seed ``random_state + k``).
        random_state : int or None, default 0

        Returns
        -------
        CrossValidation
        """
        self._check_matrix(matrix)
        self._validate()
        if int(n_splits) != n_splits or n_splits < 1:
            raise InputError(f"n_splits={n_splits!r}; expected an integer >= 1")
        rows_out = []
        base = 0 if random_state is None else int(random_state)
        for k in range(int(n_splits)):
            train, rows, cols = heldout_mask(matrix.scores, heldout, base + k)
            truth = matrix.scores[rows, cols].astype(np.float64)
            sub = ResponseMatrix(train, matrix.model_ids, matrix.item_ids, source=matrix.source)
            clone = TwoPL(**self.get_params())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                fitted = clone.fit(sub)
            p_model = np.asarray(fitted.predict_proba())[rows, cols]
            c, b = fit_additive(train)
            p_add = sigmoid(c[rows] + b[cols])
            for name, p in (("model", p_model), ("additive", p_add)):
                s = predictive_scores(p, truth)
                rows_out.append(
                    {
                        "split": k,
                        "fit": name,
                        "log_loss": s.log_loss,
                        "brier": s.brier,
                        "auc": s.auc,
                        "n_cells": s.n_cells,
                    }
                )
        return CrossValidation(pd.DataFrame(rows_out), heldout)

    def uses_sparse_path(self, matrix: ResponseMatrix) -> bool:
        """Whether :meth:`fit` takes the observed-cells (sparse) path for ``matrix``.

        Sparse when the matrix stores only its observed cells, or when fewer than
        :data:`~latentbench.irt._sparse.SPARSE_DENSITY` (25%) of its cells are observed, on
        the CPU with the deterministic start; dense (fill-in majorizer) otherwise.
        """
        if self.device is not None or self.init != "accuracy":
            return False
        return matrix.is_sparse or matrix.observed_fraction < SPARSE_DENSITY

    def _fit_data(self, matrix: ResponseMatrix) -> np.ndarray | ObservedCells:
        return matrix.observed_cells() if self.uses_sparse_path(matrix) else matrix.scores

    def _build_result(
        self,
        matrix: ResponseMatrix,
        raw: CBMMFit,
        rank: int,
        selection: RankSelection | None,
    ) -> IRTResult:
        U, V, b, scale = normalise(raw.U, raw.V, raw.b)
        accuracy = matrix.model_accuracy()
        n_obs_models = matrix.n_observed_per_model()
        constant_models = np.zeros(matrix.n_models, dtype=bool)
        constant_models[matrix.constant_models()] = True
        abilities = pd.DataFrame(
            {
                "model": matrix.model_ids,
                "theta": U[:, 0],
                "accuracy": np.nan_to_num(accuracy, nan=0.0),
                "n_observed": n_obs_models,
                "rank_theta": rankdata(-U[:, 0], method="min").astype(int),
                "rank_accuracy": rankdata(-np.nan_to_num(accuracy, nan=-1.0), method="min").astype(
                    int
                ),
                "constant": constant_models,
            }
        )
        abilities["rank_shift"] = abilities["rank_accuracy"] - abilities["rank_theta"]
        constant_items = np.zeros(matrix.n_items, dtype=bool)
        constant_items[matrix.constant_items()] = True
        proportion_correct = matrix.item_accuracy()
        a = V[:, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            location = np.where((a > 0) & (rank == 1), -b / np.where(a > 0, a, 1.0), np.nan)
        items = pd.DataFrame(
            {
                "item": matrix.item_ids,
                "discrimination": V[:, 0],
                "easiness": b,
                "difficulty": -b,
                "location": location,
                "proportion_correct": np.nan_to_num(proportion_correct, nan=0.0),
                "n_observed": matrix.n_observed_per_item(),
                "constant": constant_items,
                "zero_discrimination": ~(V > 0).any(axis=1),
            }
        )
        if rank > 1:
            for k in range(rank):
                abilities[f"theta_{k + 1}"] = U[:, k]
                items[f"discrimination_{k + 1}"] = V[:, k]
        return IRTResult(
            abilities=abilities,
            items=items,
            U=U,
            V=V,
            b=b,
            sigma=float(self.sigma),
            rank=rank,
            loss=raw.loss,
            neg_log_likelihood=raw.neg_log_likelihood,
            loss_history=list(raw.loss_history),
            n_iter=raw.n_iter,
            converged=raw.converged,
            seconds=raw.seconds,
            options=self.get_params(),
            shape=matrix.shape,
            n_observed=int(matrix.n_observed_per_model().sum()),
            raw=raw,
            rank_selection=selection,
            penalty=GaussianPenalty.ridge(float(self.l2)),  # replaced by fit()
            normalisation=scale,
            matrix=matrix,
        )

    @property
    def result(self) -> IRTResult:
        """The last fit's result (raises :class:`NotFittedError` before ``fit``)."""
        if not hasattr(self, "result_"):
            raise NotFittedError("this TwoPL instance is not fitted yet; call fit(matrix) first")
        return self.result_


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def _is_int(value: Any, minimum: int) -> bool:
    return bool(_is_real(value) and float(value).is_integer() and value >= minimum)


def _is_strict_int(value: Any, minimum: int) -> bool:
    return bool(
        isinstance(value, (int, np.integer))
        and not isinstance(value, (bool, np.bool_))
        and value >= minimum
    )


@dataclass(frozen=True)
class CrossValidation:
    """Held-out scores of a fit and of the additive baseline, per split.

    Attributes
    ----------
    table : DataFrame
        One row per (split, fit): ``split``, ``fit`` (``"model"`` or ``"additive"``),
        ``log_loss``, ``brier``, ``auc`` (binary cells only; NaN if none), ``n_cells``.
    heldout : float
        Fraction of observed cells hidden per split.
    """

    table: pd.DataFrame
    heldout: float

    def summary(self) -> pd.DataFrame:
        """Mean over splits, one row per fit (``model`` first)."""
        means = self.table.groupby("fit", sort=False)[["log_loss", "brier", "auc"]].mean()
        return means.reset_index()

    def scores(self, fit: str = "model") -> HeldOutScores:
        """Mean scores of one fit over the splits."""
        part = self.table[self.table["fit"] == fit]
        return HeldOutScores(
            float(part["log_loss"].mean()),
            float(part["brier"].mean()),
            float(part["auc"].mean()),
            int(part["n_cells"].sum()),
        )
