"""The fitted-model result of the IRT estimator: :class:`IRTResult` (parameters, scoring, the
fit-directory format) and the small records of rank selection and cross-validation."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from latentbench.exceptions import InputError
from latentbench.io._matrix import ResponseMatrix
from latentbench.irt._cbmm import CBMMFit
from latentbench.irt._heldout import (
    HeldOutScores,
)
from latentbench.irt._model_factors import fit_model_factors
from latentbench.irt._objective import (
    GaussianPenalty,
    Normalisation,
    logits,
    probabilities,
    sigmoid,
)
from latentbench.irt._priors import PriorSelection
from latentbench.irt._random_items import RandomItemsFit, fit_random_items
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
    random_items : RandomItemsFit or None
        The abilities by marginal likelihood over the items, computed (once) by
        :meth:`standard_errors` for a rank-1 MAP fit of at most
        :data:`~latentbench.irt.inference.RANDOM_ITEMS_MAX_MODELS` models.
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
            ``model``, ``theta`` (on the fit's normalised scale, the items at their
            estimates), ``center``, ``se``, ``lower``, ``upper`` (the 95% interval
            ``center -/+ 1.96 se``), ``se_own`` (the model's own cells only, items fixed),
            ``n_observed``, ``accuracy``.

            For a rank-1 MAP fit (the default) that holds its matrix, with at most
            :data:`~latentbench.irt.inference.RANDOM_ITEMS_MAX_MODELS` calibration and new
            models together: ``center`` and ``se`` come from the marginal likelihood over the
            items of the calibration's and the new models' cells together, the scale fixed
            by the calibration models (:mod:`latentbench.irt._random_items`), so the interval
            includes the calibration's uncertainty. Otherwise ``center`` is ``theta`` and
            ``se`` the observed information at it, penalty included, plus, for rank 1 when
            the result holds its matrix, the variance the calibration passes on: for a MAP
            fit with at most 1000 models its joint Laplace covariance, abilities, items and
            the reporting scale together, see
            :func:`latentbench.irt._laplace.scoring_variance`; otherwise the items' block
            covariances by the delta method.
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
        centre, se = U[:, 0].copy(), np.sqrt(var_own)
        if self._scores_with_random_items(matrix.n_models):
            centre, se = self._random_item_scores(matrix.scores, cols, U[:, 0])
        elif self.rank == 1 and self.matrix is not None:
            var_items = self._calibration_variance(matrix.scores, cols, U[:, 0], hessian)
            se = np.sqrt(var_own + var_items)
        z = 1.959963984540054
        return pd.DataFrame(
            {
                "model": matrix.model_ids,
                "theta": U[:, 0],
                "center": centre,
                "se": se,
                "lower": centre - z * se,
                "upper": centre + z * se,
                "se_own": np.sqrt(var_own),
                "n_observed": matrix.n_observed_per_model(),
                "accuracy": matrix.model_accuracy(),
            }
        )

    def _scores_with_random_items(self, n_new: int) -> bool:
        """Whether :meth:`score_models` uses the random-item likelihood (see there)."""
        from latentbench.irt.inference import _uses_random_items

        return (
            self.rank == 1
            and self.prior_selection is not None
            and self.matrix is not None
            and _uses_random_items(self.shape[0] + n_new, self.shape[1])
        )

    def _random_item_scores(
        self, scores: np.ndarray, cols: np.ndarray, theta: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Scored abilities and SEs by marginal likelihood over the items, calibration kept.

        The calibration's and the new models' cells together, the items integrated out
        against a law estimated from all of them, the reporting scale fixed by the
        calibration models (mean 0, sd 1 over them): the SEs include the calibration's
        uncertainty about the items and about its own scale.
        """
        assert self.matrix is not None
        calibration = self.matrix.scores
        new = np.full((scores.shape[0], calibration.shape[1]), np.nan)
        new[:, cols] = scores
        # start from the calibration's random-item abilities when computed, else its fit
        known = self.random_items.theta if self.random_items is not None else self.U[:, 0]
        start = np.concatenate([known, theta])
        reference = np.r_[np.ones(calibration.shape[0], bool), np.zeros(scores.shape[0], bool)]
        joint = fit_random_items(
            np.vstack([calibration, new]),
            start,
            self.V[:, 0],
            self.b,
            float(self.sigma),
            reference=reference,
        )
        return joint.theta[~reference], joint.se[~reference]

    def _calibration_variance(
        self, scores: np.ndarray, cols: np.ndarray, theta: np.ndarray, hessian: np.ndarray
    ) -> np.ndarray:
        """Variance the calibration adds to scored abilities (rank 1, matrix kept).

        MAP fits with at most :data:`~latentbench.irt.inference.JOINT_MAX_MODELS` models: the
        joint Laplace covariance of the calibration's abilities and items, including the
        re-standardisation of the reporting scale
        (:func:`latentbench.irt._laplace.scoring_variance`); otherwise the items' block
        covariances by the delta method.
        """
        from latentbench.irt._laplace import joint_laplace, scoring_variance
        from latentbench.irt.inference import JOINT_MAX_MODELS

        if self.prior_selection is None or self.matrix is None or self.shape[0] > JOINT_MAX_MODELS:
            return self._item_variance_of_scores(scores, cols, theta, hessian)
        scale = self.normalisation
        mu = float(scale.shift[0]) if scale is not None else 0.0
        s = scale.scale if scale is not None else 1.0
        A0 = np.array([[1.0 / s, 0.0], [-mu / s, 1.0]])
        laplace = joint_laplace(
            self.matrix.scores,
            self.U[:, 0],
            self.V[:, 0],
            self.b,
            self.sigma,
            float(self.penalty.model_curvature(1)[0, 0]) * s * s,
            A0.T @ self.penalty.item_curvature(1) @ A0,
        )
        return scoring_variance(
            laplace, self.V[:, 0], scores, cols, theta, self.b, self.sigma, hessian[:, 0, 0]
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
        """Standard errors and intervals; see :func:`latentbench.irt.inference.standard_errors`.

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

    def save(
        self,
        directory: str | Path,
        matrix: ResponseMatrix | None = None,
        *,
        info: Mapping[str, Any] | None = None,
        tables: Mapping[str, pd.DataFrame] | None = None,
    ) -> dict[str, Path]:
        """Write the fit directory: ``abilities.csv``, ``items.csv`` and ``fit.json``.

        The directory format is owned here; :meth:`load` reads it back.

        Parameters
        ----------
        directory : path-like
            Created when absent; the files are overwritten. They are written all together:
            into a staging folder beside it, then moved in with ``fit.json`` last, so an
            interruption never leaves new tables beside a stale ``fit.json``. Model and item
            ids that a spreadsheet would run as formulas get a leading apostrophe (undone by
            :meth:`load`).
        matrix : ResponseMatrix, optional
            The fitted matrix: ``abilities.csv`` then gains ``center``, ``se``, ``lower`` and
            ``upper`` (95% intervals, :func:`latentbench.irt.standard_errors`) after ``theta``.
        info : mapping, optional
            Extra JSON-ready entries for ``fit.json`` (e.g. the CLI's ``input``: path, SHA-256
            and layout of the responses), after the package version and :meth:`fit_info`.
        tables : mapping of str to DataFrame, optional
            Extra tables, each written as ``<name>.csv`` (e.g. ``heldout``).

        Returns
        -------
        dict
            ``{"abilities": path, "items": path, "fit": path}`` plus one entry per extra table.
        """
        from latentbench._version import __version__
        from latentbench.io._outputs import escape_spreadsheet, write_directory

        out = Path(directory)
        paths = {
            "abilities": out / "abilities.csv",
            "items": out / "items.csv",
            "fit": out / "fit.json",
        }
        abilities = self.abilities.copy()
        if matrix is not None:
            from latentbench.irt.inference import standard_errors

            uncertainty = standard_errors(self, matrix)
            unc = uncertainty.abilities
            at = list(abilities.columns).index("theta") + 1
            for offset, column in enumerate(("center", "se", "lower", "upper")):
                abilities.insert(int(at) + offset, column, unc[column].to_numpy())
        abilities = escape_spreadsheet(abilities, ("model",))
        items = escape_spreadsheet(self.items, ("item",))
        record: dict[str, Any] = {"latentbench_version": __version__, **self.fit_info()}
        record.update(info or {})
        if matrix is not None:
            record["ability_intervals"] = (
                f"95% intervals ({uncertainty.method}), columns center/se/lower/upper: "
                "lower/upper = center -/+ 1.96 se"
            )
        writers: dict[str, Callable[[Path], object]] = {
            "abilities.csv": lambda path: abilities.to_csv(path, index=False),
            "items.csv": lambda path: items.to_csv(path, index=False),
        }
        for name, table in (tables or {}).items():
            paths[name] = out / f"{name}.csv"
            writers[f"{name}.csv"] = partial(table.to_csv, index=False)
        # strict JSON (RFC 8259): a non-finite number is written as null, never as NaN/Infinity
        strict = _finite_or_null(record)
        writers["fit.json"] = lambda path: path.write_text(
            json.dumps(strict, indent=2, allow_nan=False)
        )
        # all together: a staging folder beside ``out``, fit.json moved in last
        write_directory(out, writers, last="fit.json")
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
        try:
            return cls._load(paths)
        except InputError:
            raise
        except (ValueError, KeyError, TypeError, IndexError, OSError) as exc:
            # a malformed file: say which one (the error names its file when it can)
            raise InputError(
                f"{directory}: cannot read the fit ({exc}); expected the output of "
                "`latentbench fit --out DIR`"
            ) from None

    @classmethod
    def _load(cls, paths: dict[str, Path]) -> IRTResult:
        from latentbench.io._outputs import unescape_spreadsheet

        def table(name: str, id_column: str, numeric: tuple[str, ...]) -> pd.DataFrame:
            path = paths[name]
            try:
                frame = pd.read_csv(path, dtype={id_column: str}, keep_default_na=False)
            except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
                raise InputError(f"{path}: not a readable CSV table ({exc})") from None
            missing = [c for c in (id_column, *numeric) if c not in frame.columns]
            if missing:
                raise InputError(
                    f"{path}: lacks the column(s) {', '.join(missing)}; expected the table "
                    "`latentbench fit` writes"
                )
            frame[id_column] = unescape_spreadsheet(frame[id_column])
            for column in frame.columns:  # empty cells of number columns are NaN (never "")
                if column == id_column or pd.api.types.is_numeric_dtype(frame[column]):
                    continue
                text = frame[column].astype(str)
                values = pd.to_numeric(text.where(text != ""), errors="coerce")
                wrong = values.isna() & (text != "")
                if not wrong.any():
                    frame[column] = values
                elif column in numeric:
                    raise InputError(
                        f"{path}: column {column!r} holds {text[wrong].iloc[0]!r}; expected numbers"
                    )
            return frame

        try:
            info = json.loads(paths["fit.json"].read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"{paths['fit.json']}: not JSON ({exc})") from None
        if not isinstance(info, dict):
            raise InputError(f"{paths['fit.json']}: expected a JSON object")
        try:
            rank = int(info.get("rank", 1))
        except (TypeError, ValueError):
            raise InputError(
                f"{paths['fit.json']}: rank={info.get('rank')!r}; expected an integer"
            ) from None
        if rank < 1:
            raise InputError(f"{paths['fit.json']}: rank={rank}; expected an integer >= 1")
        thetas = ("theta",) if rank == 1 else tuple(f"theta_{k + 1}" for k in range(rank))
        discs = (
            ("discrimination",)
            if rank == 1
            else tuple(f"discrimination_{k + 1}" for k in range(rank))
        )
        abilities = table("abilities.csv", "model", thetas)
        items = table("items.csv", "item", (*discs, "easiness"))
        U = abilities[list(thetas)].to_numpy(float)
        V = items[list(discs)].to_numpy(float)
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


def _finite_or_null(value: Any) -> Any:
    """``value`` with every NaN or infinite float (at any depth) replaced by ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite_or_null(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_or_null(item) for item in value]
    return value
