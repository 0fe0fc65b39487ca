"""The fitted-model result of the IRT estimator: :class:`IRTResult` (parameters, scoring, the
fit-directory format) and the small records of rank selection and cross-validation."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from latentbench._compat import TEXT
from latentbench._repr import html_block
from latentbench.exceptions import InputError
from latentbench.io._matrix import ResponseMatrix
from latentbench.irt._cbmm import CBMMFit
from latentbench.irt._heldout import (
    HeldOutScores,
)
from latentbench.irt._objective import (
    GaussianPenalty,
    Normalisation,
    general_direction,
    logits,
    probabilities,
)
from latentbench.irt._priors import ADDITIVE_DENSE_CELLS, PriorSelection
from latentbench.irt._random_items import ModelJackknife, RandomItemsFit
from latentbench.irt._sparse import predict_cells

if TYPE_CHECKING:
    from latentbench.irt.diagnostics import Diagnostics
    from latentbench.irt.inference import BootstrapResult, Uncertainty


__all__ = ["CrossValidation", "IRTResult", "RankSelection"]


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
        The smallest rank whose held-out log-likelihood is within one standard error of the
        best (the one-standard-error rule; ties keep the smaller rank).
    heldout_fraction : float
        Fraction of observed cells masked for validation.
    additive_log_likelihood : float
        Mean held-out log-likelihood per cell of the additive model ``logit p = c_i + b_j``
        fitted on the same training cells (NaN when not computed): the reference a chosen
        rank should beat (a constant 0.5 scores ``log 0.5 = -0.693``).
    """

    ranks: list[int]
    heldout_log_likelihood: list[float]
    chosen: int
    heldout_fraction: float
    additive_log_likelihood: float = float("nan")


@dataclass(eq=False)  # arrays and tables: == by identity, not a ValueError
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
        One row per model: ``model``, ``theta`` (rank > 1: along the items' mean loading,
        :attr:`direction`), ``accuracy`` (mean observed
        score), ``n_observed``, ``rank_theta`` and ``rank_accuracy`` (1 = best; ties share the
        lowest rank; NA for a model without an observed cell, whose theta is the prior's),
        ``rank_shift`` (rank_accuracy - rank_theta), ``constant`` (all observed
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
        Normalised model factors (read-only, as ``V`` and ``b``: ``.copy()`` to edit).
    V : ndarray of shape (n_items, rank)
        Normalised item factors (discriminations).
    b : ndarray of shape (n_items,)
        Normalised item intercepts.
    sigma : float
    rank : int
    loss : float
        Final objective (negative log-likelihood over observed cells plus :attr:`penalty`'s
        value: the ridge, or the Gaussian priors).
    neg_log_likelihood : float
        Its negative log-likelihood part (the penalty left out; NaN for a result loaded from
        a ``fit.json`` without it).
    loss_history : list of float
        The objective at the start and after every iteration (see
        :class:`~latentbench.irt.CBMMFit`: with acceleration, one entry per two sweeps).
    n_iter : int
        MM sweeps of the final fit.
    converged : bool
        Whether the stopping rule held before ``max_iter`` (else a
        :class:`~latentbench.ConvergenceWarning` was emitted).
    seconds : float
        Wall-clock time of the fit.
    restarted : bool
        Whether the given start collapsed to an intercept-only model and the fit restarted
        from the accuracy-based start (warned by the fit; saved in ``fit.json``).
    joint_ml_check : dict or None
        A joint-ML fit's (``prior=None``, fixed rank) held-out check: ``log_loss`` of the
        cells the default prior's choice holds out, predicted by the fit made without them,
        ``additive_log_loss`` of the additive model on them and ``difference`` (positive:
        the fit predicts worse; then warned). In ``fit_info()["heldout_check"]`` and
        ``fit.json``. None for a MAP fit (its check is :attr:`prior_selection`'s), above
        ``Prior().heldout_max_models`` models, or for a sparse matrix of more than 20 million
        cells.
    options : dict
        The estimator's parameters.
    shape : (int, int)
        ``(n_models, n_items)`` of the fitted matrix.
    n_observed : int
        Observed cells of the fitted matrix.
    raw : CBMMFit or None
        The fit before the reporting normalisation (None for a result loaded from disk).
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
    random_items : RandomItemsFit or None
        The abilities by marginal likelihood over the items, computed (once) by
        :meth:`standard_errors` for a rank-1 MAP fit of at most
        :data:`~latentbench.irt.inference.RANDOM_ITEMS_MAX_MODELS` models.
    model_jackknife : ModelJackknife or None
        The delete-one jackknife over the models of that fit, computed (once) by
        :meth:`score_models` on calibrations of at most
        :data:`~latentbench.irt._fitted.MODEL_JACKKNIFE_MAX_MODELS` models (not saved).
    disconnected : dict or None
        When the observed cells split the models into groups that share no item:
        ``n_groups`` and ``outside`` (the models of every group but the largest), whose
        abilities are compared with the others' only through the priors. Saved in
        ``fit.json`` and said in the report's findings. None when the models are linked.
    saved_abilities : DataFrame or None
        For a result loaded from a fit directory: its ``abilities.csv`` as written (the
        reported ``theta`` with ``se``, ``lower``, ``upper``), which a report made without
        the responses shows; None for a fresh fit.
    saved_intervals : dict or None
        For a result loaded from a fit directory: ``fit.json``'s ``ability_intervals`` (the
        method, fallback, caveat and checks of those intervals), which such a report says;
        None for a fresh fit or a fit.json without it.
    uncertainty_cache : tuple or None
        ``(matrix, {options: Uncertainty})``: the :meth:`standard_errors` of the last
        :class:`~latentbench.io.ResponseMatrix` asked for (read-only arrays; the cache keeps a
        reference to it), one per options, returned (a copy) when asked again for the same
        matrix object with the same options, so the saved tables, the printed ones and a
        report's sections share one computation; under ``("items", level)``, the items'
        table alone that :func:`~latentbench.irt.diagnostics.uninformative_items` computes.
        Not an argument.
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
    random_items: RandomItemsFit | None = field(default=None, repr=False, compare=False)
    model_jackknife: ModelJackknife | None = field(default=None, repr=False, compare=False)
    disconnected: dict[str, Any] | None = field(default=None, compare=False)
    saved_abilities: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    saved_intervals: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    restarted: bool = field(default=False, compare=False)
    joint_ml_check: dict[str, float] | None = field(default=None, repr=False, compare=False)
    uncertainty_cache: tuple[Any, dict[tuple[Any, ...], Any]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        # U, V and b are the result's own (the tables, the cached uncertainty and every
        # prediction derive from them): read-only, so that an edit in place raises instead of
        # leaving them silently out of step; ``.copy()`` gives a writeable array
        self._own_factors()

    def __setstate__(self, state: dict[str, Any]) -> None:
        # pickle (a worker process) and deepcopy rebuild the arrays writeable
        self.__dict__.update(state)
        self._own_factors()

    def _own_factors(self) -> None:
        for name in ("U", "V", "b"):
            value = np.asarray(getattr(self, name))
            if value.flags.writeable:  # the result's own copy: the caller's array stays theirs
                value = value.copy()
                value.setflags(write=False)
            object.__setattr__(self, name, value)

    @property
    def model_ids(self) -> list[str]:
        """The fitted models' ids, in the matrix's order (``abilities["model"]``)."""
        return self.abilities["model"].tolist()

    @property
    def item_ids(self) -> list[str]:
        """The fitted items' ids, in the matrix's order (``items["item"]``)."""
        return self.items["item"].tolist()

    @property
    def direction(self) -> np.ndarray:
        """The ability direction ``w`` in factor space, shape (rank,): ``[1]`` for rank 1; for
        rank > 1 the items' mean loading (:func:`~latentbench.irt._objective.general_direction`)."""
        return general_direction(self.V)

    @property
    def theta(self) -> np.ndarray:
        """Abilities, shape (n_models,): ``U w`` (:attr:`direction`; rank 1: ``U[:, 0]``), the
        models' positions along the items' mean loading, never a single factor of a rank-r fit."""
        return np.asarray(self.U @ self.direction)

    @property
    def intercept_only(self) -> bool:
        """Whether every item discrimination is ~0 (``max |U| * max |V| < 1e-6 sigma``, the
        engine's test, which warned it with an ``IdentifiabilityWarning``): the fit is an
        intercept-only model, and its abilities carry nothing from the data."""
        if self.U.size == 0 or self.V.size == 0:
            return False
        return bool(np.abs(self.U).max() * np.abs(self.V).max() < 1e-6 * self.sigma)

    @property
    def discrimination(self) -> np.ndarray:
        """Discriminations along :attr:`direction`, ``V w``, shape (n_items,) (rank 1: ``a``)."""
        return np.asarray(self.V @ self.direction)

    def logits(self) -> np.ndarray:
        """``(U V^T + b) / sigma``, shape (n_models, n_items).

        Returns
        -------
        ndarray of shape (n_models, n_items)
        """
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
        ndarray of shape (len(models), len(items))
            Probabilities in (0, 1), observed and unobserved cells alike; (n_models, n_items)
            by default.
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

        Raises
        ------
        InputError
            When ``rows`` and ``cols`` do not have one shape.
        """
        rows = _positions(models, self.model_ids, "model")
        cols = _positions(items, self.item_ids, "item")
        if rows.shape != cols.shape:
            raise InputError(
                f"{rows.size} models and {cols.size} items; expected one of each per cell"
            )
        return predict_cells(self.U, self.V, self.b, rows, cols, self.sigma)

    def score_models(self, matrix: ResponseMatrix | pd.DataFrame | pd.Series) -> pd.DataFrame:
        """Abilities of new models on the calibrated items, with intervals.

        Any subset of the calibrated items will do, down to one model and one item; every
        new model is scored on its own (its result never depends on the others of the call).

        Parameters
        ----------
        matrix : ResponseMatrix, DataFrame or Series
            New models (rows) on items of the fit: a :class:`~latentbench.ResponseMatrix`, a
            wide DataFrame (index: model ids, columns: item ids, NaN = not answered) or a
            Series (one model: index = item ids, ``name`` = the model id).

        Returns
        -------
        DataFrame
            One row per new model: ``model``, ``theta`` (on the fit's reported scale),
            ``se``, ``lower``, ``upper`` (``theta -/+ 1.96 se``), ``theta_fit`` (the score
            with the items held at their estimates), ``se_own``, ``n_observed``,
            ``accuracy``, ``no_data``, ``constant`` and ``detached``. How ``theta`` and
            ``se`` are computed (and when the calibration's uncertainty is added):
            :func:`latentbench.irt._scoring.score_models`.

        Raises
        ------
        InputError
            An item the fit does not know, or answers that are not scores in [0, 1].
        """
        from latentbench.irt._scoring import score_models

        return score_models(self, matrix)

    def standard_errors(self, matrix: ResponseMatrix | None = None, **kwargs: Any) -> Uncertainty:
        """Standard errors and intervals; see :func:`latentbench.irt.standard_errors`.

        Parameters
        ----------
        matrix : ResponseMatrix, optional
            Default: the matrix the result was fitted on (a result loaded from disk keeps
            none: pass it).
        **kwargs
            ``level``, ``normalisation``, ``scale_correction``, as
            :func:`latentbench.irt.standard_errors` takes them.

        Returns
        -------
        Uncertainty
        """
        from latentbench.irt.inference import standard_errors

        return standard_errors(self, matrix, **kwargs)

    def bootstrap(self, matrix: ResponseMatrix | None = None, **kwargs: Any) -> BootstrapResult:
        """Bootstrap replicates; see :func:`latentbench.irt.bootstrap`.

        Parameters
        ----------
        matrix : ResponseMatrix, optional
            Default: the matrix the result was fitted on.
        **kwargs
            ``n_boot``, ``method``, ``level``, ``n_jobs``, ``tol``, ``random_state``,
            ``progress``, as :func:`latentbench.irt.bootstrap` takes them.

        Returns
        -------
        BootstrapResult
        """
        from latentbench.irt.inference import bootstrap

        return bootstrap(self, matrix, **kwargs)

    def diagnostics(self, matrix: ResponseMatrix | None = None, **kwargs: Any) -> Diagnostics:
        """Item and model diagnostics; see :func:`latentbench.irt.diagnose`.

        Parameters
        ----------
        matrix : ResponseMatrix, optional
            Default: the matrix the result was fitted on.
        **kwargs
            ``top``, as :func:`latentbench.irt.diagnose` takes it.

        Returns
        -------
        Diagnostics
        """
        from latentbench.irt.diagnostics import diagnose

        return diagnose(self, matrix, **kwargs)

    def __repr__(self) -> str:
        """Short: shape, rank, penalty, loss and convergence (the tables: :meth:`summary`,
        ``abilities``, ``items``)."""
        kind = "joint ML" if self.options.get("prior", "auto") is None else "MAP (priors)"
        state = "converged" if self.converged else "NOT converged"
        return (
            f"IRTResult({self.shape[0]:,} models x {self.shape[1]:,} items, "
            f"{self.n_observed:,} observed cells; rank {self.rank}, {kind}; loss "
            f"{self.loss:.6g}, {state} after {self.n_iter:,} sweeps in {self.seconds:.2f} s)"
        )

    def _repr_html_(self) -> str:
        """A notebook's view: the one-line repr, then the models by ability (best first)."""
        return html_block(repr(self), self._ranked_abilities, whole=".abilities", row_header=True)

    def _ranked_abilities(self) -> pd.DataFrame:
        shown = [
            c
            for c in ("model", "theta", "accuracy", "n_observed", "rank_theta", "rank_accuracy")
            if c in self.abilities.columns
        ]
        frame = self.abilities[shown]
        if "rank_theta" in frame.columns:
            frame = frame.sort_values("rank_theta", na_position="last", kind="stable")
        return frame

    def summary(self, top: int = 10) -> str:
        """Plain-text summary: shape, loss and convergence, and the top models by theta.

        Parameters
        ----------
        top : int, default 10
            How many of the best models to name.

        Returns
        -------
        str
            Three lines.
        """
        lines = [
            f"cBMM fit: {self.shape[0]} models x {self.shape[1]} items, rank {self.rank}, "
            f"sigma {self.sigma:g}, {self.n_observed} observed cells",
            f"  loss {self.loss:.6g} after {self.n_iter} sweeps ({self.seconds:.2f} s), "
            f"converged: {self.converged}",
        ]
        best = self.abilities.sort_values("theta", ascending=False).head(top)
        lines.append("  top models by theta: " + ", ".join(best["model"].astype(TEXT)))
        return "\n".join(lines)

    def fit_info(self) -> dict[str, Any]:
        """JSON-serialisable record of the fit (shape, loss, iterations, options, ...).

        Returns
        -------
        dict of str to Any
        """
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
            "normalisation": "theta mean 0, sd 1 over the models that set the scale, every "
            "model not in off_scale_models (rank 1); "
            "factors centred, theta = U w along the items' mean loading w (rank > 1)",
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
                "additive_log_loss": sel.additive_log_loss,
            }
            if sel.edge is not None or sel.extended:  # said only where it happened
                info["prior_selection"].update(
                    edge=sel.edge,
                    edge_z=sel.edge_z,
                    extended=sel.extended,
                    edge_note="the chosen a_sd is at this end of the grid; edge_z: how much "
                    "better it predicts the held-out cells than its neighbour, in paired "
                    "standard errors (the grid is extended past an edge above 2)",
                )
            elif not sel.grid:
                info["prior_selection"]["note"] = (
                    "a_sd not chosen on held-out cells (the grid's middle): a fixed a_sd, or "
                    "more models than Prior.heldout_max_models, where the data outweigh it"
                )
            if sel.heldout_log_loss:  # (a joint-ML fit's own check: joint_ml_check)
                best = min(sel.heldout_log_loss)
                info["heldout_check"] = {
                    "log_loss": best,
                    "additive_log_loss": sel.additive_log_loss,
                    "difference": best - sel.additive_log_loss,
                    "note": "10% of the observed cells held out (seed 0), the chosen prior's "
                    "fit against the additive model logit p = c_i + b_j on the same cells",
                }
                if not np.isfinite(sel.additive_log_loss):
                    info["heldout_check"]["additive_missing"] = (
                        "the additive model was not fitted: a sparse matrix of more than "
                        f"{ADDITIVE_DENSE_CELLS:,} cells (models x items), the dense array it "
                        "is fitted on"
                    )
                if not sel.additive_converged:  # warned by the fit; said where it happened
                    info["prior_selection"]["additive_converged"] = False
                    info["heldout_check"]["additive_note"] = (
                        "the additive model stopped at its iteration limit before converging "
                        "(its log-loss is from the last iterate)"
                    )
        if self.joint_ml_check is not None:  # prior=None: the same cells, its own fit
            info["heldout_check"] = dict(
                self.joint_ml_check,
                note="10% of the observed cells held out (seed 0), the joint-ML fit (prior=None) "
                "made without them against the additive model logit p = c_i + b_j on the "
                "same cells",
            )
        if self.normalisation is not None:
            info["raw_shift"] = self.normalisation.shift.tolist()
            info["raw_scale"] = self.normalisation.scale
            ids = self.model_ids
            # the models not in the reporting scale's reference (ids): the detached ones,
            # those at the floor or the ceiling and those without an observed cell
            # (irt._objective.reference_models); only the first are detached
            sets = self.normalisation.mask(len(ids))
            off = [m for m, k in zip(ids, sets, strict=True) if not k]
            not_detached = np.zeros(len(ids), dtype=bool)
            if "constant" in self.abilities:
                not_detached |= self.abilities["constant"].to_numpy(dtype=bool)
            if "n_observed" in self.abilities:
                not_detached |= self.abilities["n_observed"].to_numpy() == 0
            info["detached_models"] = [
                m for m, k, x in zip(ids, sets, not_detached, strict=True) if not (k or x)
            ]
            info["off_scale_models"] = off
        if self.disconnected:
            info["disconnected"] = dict(self.disconnected)
        if self.intercept_only:  # warned by the fit; kept with it
            info["intercept_only"] = (
                "every item discrimination is ~0: the fit is an intercept-only model (the data "
                "may carry no signal about model differences)"
            )
        if self.restarted:  # warned by the fit; kept with it
            info["restarted"] = (
                "the fit collapsed to an intercept-only model (all discriminations ~0) from the "
                "given start; restarted from the accuracy-based start"
            )
        if self.rank_selection is not None:
            info["rank_selection"] = {
                "ranks": self.rank_selection.ranks,
                "heldout_log_likelihood": self.rank_selection.heldout_log_likelihood,
                "chosen": self.rank_selection.chosen,
                "heldout_fraction": self.rank_selection.heldout_fraction,
                # None (JSON null) when not computed, never a bare NaN in fit.json
                "additive_log_likelihood": (
                    None
                    if np.isnan(self.rank_selection.additive_log_likelihood)
                    else self.rank_selection.additive_log_likelihood
                ),
            }
        record: dict[str, Any] = json.loads(json.dumps(info, default=float))
        return record

    def save(
        self,
        directory: str | Path,
        matrix: ResponseMatrix | None = None,
        *,
        info: Mapping[str, Any] | None = None,
        tables: Mapping[str, pd.DataFrame] | None = None,
    ) -> dict[str, Path]:
        """Write the fit directory: ``abilities.csv``, ``items.csv`` and ``fit.json``.

        As ``latentbench fit --out`` writes it; :meth:`load` reads it back. The format and
        the details: :func:`latentbench.irt._fitdir.save_fit`.

        Parameters
        ----------
        directory : path-like
            Created when absent; the files are overwritten (all moved in together,
            ``fit.json`` last).
        matrix : ResponseMatrix, optional
            The fitted matrix (default: the one the result keeps). With one,
            ``abilities.csv`` gains ``se``, ``lower`` and ``upper`` (95% intervals) and
            ``no_data``; without any, a :class:`~latentbench.DataWarning` says they are
            left out.
        info : mapping, optional
            Extra JSON-ready entries for ``fit.json`` (e.g. ``input``).
        tables : mapping of str to DataFrame, optional
            Extra tables, each written as ``<name>.csv``.

        Returns
        -------
        dict of str to Path
            ``{"abilities": path, "items": path, "fit": path}``, plus ``random_items`` and
            one entry per extra table when written.
        """
        from latentbench.irt._fitdir import save_fit

        return save_fit(self, directory, matrix, info=info, tables=tables)

    @classmethod
    def load(cls, directory: str | Path) -> IRTResult:
        """Rebuild a result from a fit directory written by :meth:`save` (``latentbench fit``).

        Parameters
        ----------
        directory : path-like
            The fit directory (``fit.json``, ``abilities.csv``, ``items.csv``).

        Returns
        -------
        IRTResult
            Without ``raw`` and without the matrix (pass it to :meth:`standard_errors` and
            friends); see :func:`latentbench.irt._fitdir.load_fit`.
        """
        from latentbench.irt._fitdir import load_fit

        return load_fit(cls, directory)


def _positions(selection: Sequence[Any] | None, ids: list[str], kind: str) -> np.ndarray:
    if selection is None:
        return np.arange(len(ids))
    if isinstance(selection, str | int | np.integer | np.str_):
        raise InputError(
            f"{kind}s={selection!r}: one id; expected a list of ids ({kind}s=[{selection!r}]) "
            "or positions"
        )
    array = np.asarray(selection)
    if np.issubdtype(array.dtype, np.integer):
        return array.astype(np.int64)
    lookup = {name: i for i, name in enumerate(ids)}
    try:
        return np.array([lookup[str(name)] for name in array], dtype=np.int64)
    except KeyError as exc:
        raise InputError(f"unknown {kind} id {exc.args[0]!r}") from None


@dataclass(frozen=True, eq=False)  # a table: == by identity, not a ValueError
class CrossValidation:
    """Held-out scores of a fit and of the additive baseline, per split.

    Attributes
    ----------
    table : DataFrame
        One row per (split, fit): ``split``, ``fit`` (``"model"`` or ``"additive"``),
        ``log_loss``, ``brier``, ``auc`` (binary cells only; NaN if none), ``n_cells``,
        ``converged`` (False: that fit stopped at its iteration limit; its scores are from
        the last iterate).
    heldout : float
        Fraction of observed cells hidden per split.
    """

    table: pd.DataFrame
    heldout: float

    def summary(self) -> pd.DataFrame:
        """Mean over splits, one row per fit (``model`` first).

        Returns
        -------
        DataFrame
            Columns ``fit``, ``log_loss``, ``brier`` and ``auc``.
        """
        means = self.table.groupby("fit", sort=False)[["log_loss", "brier", "auc"]].mean()
        return means.reset_index()

    def scores(self, fit: str = "model") -> HeldOutScores:
        """Mean scores of one fit over the splits.

        Parameters
        ----------
        fit : {"model", "additive"}, default "model"
            Which fit's rows of :attr:`table`.

        Returns
        -------
        HeldOutScores
            Mean log-loss, Brier score and AUC over the splits; ``n_cells`` summed.
        """
        part = self.table[self.table["fit"] == fit]
        return HeldOutScores(
            float(part["log_loss"].mean()),
            float(part["brier"].mean()),
            float(part["auc"].mean()),
            int(part["n_cells"].sum()),
        )
