"""Estimator layer: :class:`TwoPL` (validation, rank selection, fit, cross-validation).

Its result object, :class:`~latentbench.irt.IRTResult`, is in :mod:`latentbench.irt._result`.
"""

from __future__ import annotations

import inspect
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import pandas as pd

from latentbench._checks import check_seed, is_integer, user_stacklevel
from latentbench._progress import ProgressCallback, notify
from latentbench.exceptions import ConvergenceWarning, DataWarning, InputError, NotFittedError
from latentbench.io._cells import SPARSE_DENSITY, ObservedCells
from latentbench.io._matrix import ResponseMatrix
from latentbench.irt._cbmm import DEVICE_EXPECTED, CBMMFit, fit_cbmm, is_device
from latentbench.irt._counts import MIN_FRACTIONAL_SHARE, observed_values, trials_grid
from latentbench.irt._heldout import (
    fit_additive_converged,
    heldout_mask,
    predictive_scores,
)
from latentbench.irt._objective import (
    SIGMA_RANGE,
    GaussianPenalty,
    general_direction,
    normalise,
    sigmoid,
)
from latentbench.irt._priors import Prior, PriorSelection, resolve_prior
from latentbench.irt._reported import rank_abilities
from latentbench.irt._sparse import fit_sparse

if TYPE_CHECKING:
    pass

from latentbench.irt._result import CrossValidation, IRTResult, RankSelection

__all__ = ["CrossValidation", "IRTResult", "RankSelection", "TwoPL"]


_L2_MAX = 1e6
"""Largest ridge (beyond it every estimate is 0 to machine precision)."""

_L2_DEFAULT = 1e-2
"""The ridge of a joint-ML fit when none is given (``TwoPL(l2=...)``'s default; a fit with a
prior refuses another value)."""


_DENSE_CHECK_CELLS = 20_000_000
"""Largest dense array (cells) a sparse matrix's joint-ML held-out check builds (80 MB)."""


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
        ``random_state``), fits ranks 1..``max_rank`` (at most the smaller side of the
        matrix) on the rest, and picks the smallest rank whose mean held-out log-likelihood
        is within one standard error of the best (paired over the held-out cells; a tie keeps
        the smaller rank), every rank under the prior chosen at rank 1; the final fit then
        uses all cells, as ``rank=chosen`` does (its prior chosen at that rank). The choice
        is compared with the additive model ``logit p = c_i + b_j`` on the same held-out
        cells (:class:`RankSelection`), and a chosen rank that predicts worse than it by more
        than one standard error is said with a :class:`~latentbench.exceptions.DataWarning`
        (joint ML, ``prior=None``, overfits every rank at tens of models).
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
        0 gives plain joint ML. Another value than the default with a prior is refused
        (a prior replaces the ridge).
    tol : float, default 1e-6
        Relative objective change for stopping (``1e-4`` reproduces the paper's setting).
    max_iter : int, default 5000
    init : {"accuracy", "random"}, default "accuracy"
        Deterministic start from accuracies, or the reference random start (uses
        ``random_state``).
    accelerate : bool, default True
        Monotone over-relaxed MM steps.
    max_rank : int, default 5
        Largest rank tried by ``rank="auto"`` (capped at ``min(n_models, n_items)``).
    random_state : int or None
        Seed for ``init="random"`` and for the held-out split of ``rank="auto"``.
    device : str or None, default None
        ``None``: NumPy/numba kernels on the CPU. A PyTorch device (``"cuda"``, ``"cuda:1"``,
        ``"cpu"``, ``"mps"``; a string PyTorch could not parse is refused by :meth:`validate`,
        without importing PyTorch): the same algorithm on PyTorch tensors (extra ``torch``;
        a device that is not there is said when the fit starts); estimates agree with the
        NumPy path within the stopping rule's bound (``10 sqrt(tol)`` times the abilities'
        scale; about 1e-5 on large matrices, up to 1e-3 on small ones at the default tol).
    trials : int or "auto", default "auto"
        Bernoulli trials behind every cell: a score ``k / K`` is ``k`` successes in ``K``
        trials (pass@1 over K samples, K judges), and the likelihood is binomial,
        ``K [y log p + (1 - y) log(1 - p)]`` per cell. The fit is the MAP of that likelihood
        (the same as the soft-label fit with the prior's precisions divided by K), and the
        intervals use its information (K times a single trial's). 1: every cell one trial
        (fractional scores are then soft labels). ``"auto"`` (as ``latentbench fit``):
        K from the scores' grid (:func:`~latentbench.irt.detect_trials`; 1 for binary or
        continuous scores), with a :class:`~latentbench.exceptions.DataWarning` when K > 1;
        the fit's ``options["trials"]`` records the K used.

    Attributes
    ----------
    result_ : IRTResult
        The last fit's result (what :meth:`fit` returns; also :attr:`result`, which raises
        :class:`~latentbench.NotFittedError` before a fit).
    ability_ : ndarray of shape (n_models,)
        ``result_.theta``: abilities along the items' mean loading (rank 1: theta).
    discrimination_ : ndarray of shape (n_items,)
        ``result_.discrimination`` (rank 1: a).
    intercept_ : ndarray of shape (n_items,)
        ``result_.b``, the intercepts (easiness).
    difficulty_ : ndarray of shape (n_items,)
        ``-b``, as the ``difficulty`` column of ``result_.items``.
    n_iter_ : int
        MM sweeps of the fit.
    converged_ : bool
        Whether the stopping rule held before ``max_iter``.
    loss_history_ : list of float
        ``result_.loss_history``.

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
        l2: float = _L2_DEFAULT,
        tol: float = 1e-6,
        max_iter: int = 5000,
        init: Literal["accuracy", "random"] = "accuracy",
        accelerate: bool = True,
        max_rank: int = 5,
        random_state: int | None = None,
        device: str | None = None,
        trials: int | Literal["auto"] = "auto",
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
        self.trials = trials

    _own_check: bool = True
    """A joint-ML fit runs its own held-out check (:meth:`_joint_ml_check`); False for the
    fits that :meth:`cross_validate` makes, which are that check."""

    #: Allowed values of every constructor parameter: name -> (check, description). Checked
    #: once at ``fit``; an error names the parameter, what is allowed and what was received.
    _constraints: ClassVar[dict[str, tuple[Callable[[Any], bool], str]]] = {
        "rank": (
            lambda v: (isinstance(v, str) and v == "auto") or _is_int(v, 1),
            "an integer >= 1 or 'auto'",
        ),
        "sigma": (
            lambda v: _is_real(v) and SIGMA_RANGE[0] <= v <= SIGMA_RANGE[1],
            f"a number in [{SIGMA_RANGE[0]:g}, {SIGMA_RANGE[1]:g}]",
        ),
        "prior": (
            lambda v: v is None or isinstance(v, Prior) or (isinstance(v, str) and v == "auto"),
            "'auto', None or a latentbench.irt.Prior",
        ),
        "l2": (
            lambda v: _is_real(v) and 0 <= v <= _L2_MAX,
            f"a number in [0, {_L2_MAX:g}]",
        ),
        "tol": (lambda v: _is_real(v) and 0 < v < 1, "a number in (0, 1)"),
        "max_iter": (lambda v: _is_int(v, 1), "an integer >= 1"),
        "init": (lambda v: v in ("accuracy", "random"), "'accuracy' or 'random'"),
        "accelerate": (lambda v: isinstance(v, (bool, np.bool_)), "True or False"),
        "max_rank": (lambda v: _is_int(v, 1), "an integer >= 1"),
        "random_state": (
            lambda v: v is None or _is_int(v, 0) or isinstance(v, np.random.Generator),
            "None, an integer >= 0 or a numpy Generator",
        ),
        "device": (is_device, DEVICE_EXPECTED),
        "trials": (
            lambda v: (isinstance(v, str) and v == "auto") or _is_int(v, 1),
            "an integer >= 1 or 'auto'",
        ),
    }

    @classmethod
    def _param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return [name for name in signature.parameters if name != "self"]

    def __repr__(self) -> str:
        """``TwoPL(rank=2, prior=None)``: the parameters that differ from their defaults, as
        scikit-learn shows an estimator."""
        signature = inspect.signature(type(self).__init__)
        shown = []
        for name in self._param_names():
            value, default = getattr(self, name, None), signature.parameters[name].default
            same = value is default
            if not same:
                try:
                    same = bool(value == default) and type(value) is type(default)
                except (TypeError, ValueError):
                    same = False
            if not same:
                shown.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters, by name (derived from the ``__init__`` signature).

        Returns
        -------
        dict of str to Any
            Each parameter's current value, in signature order.
        """
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> TwoPL:
        """Set constructor parameters by name (their values are checked at the next ``fit``).

        Parameters
        ----------
        **params
            Constructor parameters by name.

        Returns
        -------
        TwoPL
            ``self``.

        Raises
        ------
        InputError
            A name that is not a constructor parameter.
        """
        names = self._param_names()
        for name, value in params.items():
            if name not in names:
                raise InputError(
                    f"TwoPL has no parameter {name!r}; expected one of {', '.join(names)}"
                )
            setattr(self, name, value)
        return self

    def validate(self) -> TwoPL:
        """Check every parameter now (``fit`` does too), e.g. before a costly load; returns
        ``self``.

        Returns
        -------
        TwoPL
            ``self``.

        Raises
        ------
        InputError
            Naming the first parameter outside its range and what was expected.
        """
        self._validate()
        return self

    def _validate(self) -> None:
        for name in self._param_names():
            check, expected = self._constraints[name]
            value = getattr(self, name)
            if not check(value):
                raise InputError(f"{name}={value!r}; expected {expected}")
        if self.prior is not None and self.l2 != _L2_DEFAULT:  # ignored silently before
            raise InputError(
                f"l2={self.l2!r} with prior={self.prior!r}: the ridge l2 is the penalty of the "
                "joint-ML fit only, and a prior replaces it; expected prior=None with l2= "
                f"(joint ML), or no l2 (default {_L2_DEFAULT:g})"
            )

    def _resolve_penalty(
        self,
        scores: np.ndarray | ObservedCells,
        rank: int,
        progress: ProgressCallback | None = None,
        ids: tuple[list[str], list[str]] | None = None,
    ) -> tuple[GaussianPenalty, PriorSelection | None]:
        """The penalty of the fit: the ridge (``prior=None``) or the resolved prior.

        ``scores``: what the fit itself receives (:meth:`_fit_data`): the observed cells on the
        sparse path, so that resolving the prior never builds the dense array. ``ids``: the
        matrix's (model ids, item ids), the order the held-out cells are drawn in."""
        if self.prior is None:
            return GaussianPenalty.ridge(float(self.l2)), None
        prior = Prior() if isinstance(self.prior, str) else self.prior
        done = [0]

        def fit(
            train: np.ndarray | ObservedCells, penalty: GaussianPenalty
        ) -> tuple[Any, Any, Any]:
            total = max(len(prior.a_sd_grid), done[0] + 1)  # (more past a grid edge)
            notify(progress, "choosing the prior (held-out fits)", done[0], total)
            raw = self._fit_arrays(train, rank, None, penalty, quiet=True)
            done[0] += 1
            return raw.U, raw.V, raw.b

        # the held-out mask of the prior's choice is fixed (seed 0), whatever random_state
        # (which seeds only the random start), and drawn in the order of the ids, not of
        # the positions: the same data give the same prior, in any order of rows or columns
        return resolve_prior(prior, scores, float(self.sigma), fit, 0, ids)

    def _fit_arrays(
        self,
        scores: np.ndarray | ObservedCells,
        rank: int,
        callback: Callable[[int, float], None] | None,
        penalty: GaussianPenalty,
        quiet: bool = False,
    ) -> CBMMFit:
        """One engine fit: the sparse engine on observed cells, the dense cBMM otherwise."""
        # K trials per cell: K NLL + penalty has the minimiser of NLL + penalty / K
        options: dict[str, Any] = {
            "rank": rank,
            "sigma": float(self.sigma),
            "penalty": penalty.scaled(1.0 / int(self.trials)),
            "tol": float(self.tol),
            "max_iter": int(self.max_iter),
            "accelerate": self.accelerate,
            "callback": callback,
        }
        with warnings.catch_warnings():
            if quiet:  # inner fits of a held-out search: only the final fit warns
                warnings.simplefilter("ignore", ConvergenceWarning)
            if isinstance(scores, ObservedCells):
                return fit_sparse(scores, **options)
            return fit_cbmm(
                scores,
                init=self.init,
                random_state=self.random_state,
                device=self.device,
                **options,
            )

    def select_rank(
        self,
        matrix: ResponseMatrix,
        heldout_fraction: float = 0.1,
        penalty: GaussianPenalty | None = None,
        progress: ProgressCallback | None = None,
    ) -> RankSelection:
        """Choose the rank by held-out log-likelihood (see the ``rank`` parameter).

        Parameters
        ----------
        matrix : ResponseMatrix
            The responses.
        heldout_fraction : float, default 0.1
            Share of the observed cells held out (seeded by ``random_state``).
        penalty : GaussianPenalty, optional
            Default: the estimator's (the prior resolved at rank 1, or the ridge).
        progress : callable(phase, done, total), optional
            Told each rank as it is fitted.

        Returns
        -------
        RankSelection
            The ranks tried (1 to ``max_rank``, capped by the matrix), their held-out
            log-likelihoods and the chosen rank.

        Raises
        ------
        InputError
            ``matrix`` is not a :class:`~latentbench.ResponseMatrix`, a parameter of the
            estimator is out of range (as :meth:`validate` checks), ``heldout_fraction`` is not
            a number in (0, 1) or ``penalty`` not a ``GaussianPenalty``.
        """
        self._check_matrix(matrix)
        # as fit does: prior="none" ran the default prior, max_rank=2.5 tried ranks 1-2 and
        # l2= beside a prior was ignored, all without a word
        self._validate()
        if not (_is_real(heldout_fraction) and 0 < heldout_fraction < 1):
            raise InputError(
                f"heldout_fraction={heldout_fraction!r}; expected a number in (0, 1), e.g. 0.1"
            )
        if penalty is not None and not isinstance(penalty, GaussianPenalty):
            raise InputError(
                f"penalty of type {type(penalty).__name__}; expected a GaussianPenalty or None "
                "(the estimator's prior, or its ridge with prior=None)"
            )
        if self.trials == "auto":  # called on its own: K from this matrix, as fit does
            self.trials = _detected_trials(matrix, warn=False)
            try:
                return self.select_rank(matrix, heldout_fraction, penalty, progress)
            finally:
                self.trials = "auto"
        scores = matrix.scores
        if penalty is None:
            penalty = self._resolve_penalty(scores, 1, ids=_ids(matrix))[0]
        seed = 0 if self.random_state is None else self.random_state
        train, rows, cols = heldout_mask(scores, heldout_fraction, seed, _ids(matrix))
        truth = scores[rows, cols].astype(np.float64)
        # never more factors than a rank the fit itself accepts (the smaller side)
        ranks = list(range(1, min(int(self.max_rank), *matrix.shape) + 1))
        logliks = []
        for done, rank in enumerate(ranks):
            notify(progress, "choosing the rank (held-out fits)", done, len(ranks))
            raw = self._fit_arrays(train, rank, None, penalty, quiet=True)
            logit = (
                np.einsum("nk,nk->n", raw.U[rows], raw.V[cols]) + raw.b[cols]
            ) / self.sigma  # cellwise logits of the held-out cells only
            logliks.append(truth * logit - np.logaddexp(0.0, logit))
        scores_by_rank = [float(loglik.mean()) for loglik in logliks]
        chosen = ranks[_smallest_within_noise(np.stack(logliks))]
        # the reference every rank must beat: the additive model on the same cells (joint ML
        # at tens of models overfits every rank, and the smallest rank was then reported as
        # the choice without a word, at -0.77 per cell where a constant 0.5 scores -0.69)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            c, b, _ = fit_additive_converged(train)
        additive_logit = c[rows] + b[cols]
        additive = truth * additive_logit - np.logaddexp(0.0, additive_logit)
        _warn_worse_than_additive(
            logliks[chosen - 1], additive, chosen, matrix.shape, self.prior is None
        )
        return RankSelection(
            ranks, scores_by_rank, chosen, heldout_fraction, float(additive.mean())
        )

    def fit(
        self,
        matrix: ResponseMatrix,
        callback: Callable[[int, float], None] | None = None,
        progress: ProgressCallback | None = None,
    ) -> IRTResult:
        """Fit the model to a response matrix.

        Parameters
        ----------
        matrix : ResponseMatrix
            Scores of shape (n_models, n_items), NaN = missing.
        callback : callable(iteration, loss), optional
            Progress hook called after every sweep.
        progress : callable(phase, done, total), optional
            Told the phase as it starts (``"choosing the prior (held-out fits)"`` with fits
            done of total, ``"choosing the rank (held-out fits)"``, ``"fitting"`` with the
            sweep count); see :mod:`latentbench._progress`. The library never prints.

        Returns
        -------
        IRTResult
            Also stored as ``self.result_``; the normalised parameters are available as
            ``ability_``, ``discrimination_``, ``intercept_`` and ``difficulty_``.

        Raises
        ------
        InputError
            ``matrix`` is not a :class:`~latentbench.ResponseMatrix`, a parameter is out of range
            (checked as :meth:`validate` does), or ``rank`` exceeds what the matrix can identify.
        """
        self._check_matrix(matrix)
        self._validate()
        for name, hook, signature in (
            ("callback", callback, "callback(iteration, loss)"),
            ("progress", progress, "progress(phase, done, total)"),
        ):
            if hook is not None and not callable(hook):  # a TypeError after the prior search
                raise InputError(f"{name}={hook!r}; expected a function {signature} or None")
        if self.trials == "auto":  # resolved for this fit; the parameter stays "auto"
            self.trials = _detected_trials(matrix)
            try:
                return self.fit(matrix, callback, progress)
            finally:
                self.trials = "auto"
        disconnected = _warn_disconnected(matrix)
        _warn_off_grid(matrix, int(self.trials))
        n_models, n_items = matrix.shape
        if self.rank != "auto" and int(self.rank) > min(n_models, n_items):
            raise InputError(
                f"rank={self.rank} for a matrix of {n_models} models x {n_items} items; "
                f"expected at most {min(n_models, n_items)} (the smaller side)"
            )
        start = time.perf_counter()
        selection = None
        rank = self.rank
        first = 1 if rank == "auto" else int(rank)
        data = self._fit_data(matrix)
        penalty, prior_selection = self._resolve_penalty(data, first, progress, _ids(matrix))
        if rank == "auto":
            selection = self.select_rank(matrix, penalty=penalty, progress=progress)
            rank = selection.chosen
            if self.prior is not None and rank != first:
                # the final fit's prior chosen for the rank it has, as rank=chosen does (the
                # rank-1 prior was kept: `fit --rank auto`, which refits at the chosen rank,
                # and TwoPL(rank="auto") gave abilities up to 0.34 apart on the shared data)
                penalty, prior_selection = self._resolve_penalty(
                    data, int(rank), progress, _ids(matrix)
                )
        sweep = callback
        if progress is not None:
            notify(progress, "fitting", 0, None)

            def sweep(iteration: int, loss: float) -> None:
                if callback is not None:
                    callback(iteration, loss)
                notify(progress, "fitting", iteration, None)

        joint_check = (
            self._joint_ml_check(data, int(rank), penalty, matrix)
            if self.prior is None and selection is None and self._own_check
            else None
        )
        raw = self._fit_arrays(data, int(rank), sweep, penalty)
        result = self._build_result(matrix, raw, int(rank), selection)
        result.penalty = penalty
        result.prior_selection = prior_selection
        result.joint_ml_check = joint_check
        result.disconnected = disconnected
        result.seconds = time.perf_counter() - start
        self.result_ = result
        self.ability_ = result.theta.copy()
        self.discrimination_ = result.discrimination.copy()
        self.intercept_ = result.b.copy()
        self.difficulty_ = -result.b
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.loss_history_ = list(result.loss_history)
        return result

    def _joint_ml_check(
        self,
        data: np.ndarray | ObservedCells,
        rank: int,
        penalty: GaussianPenalty,
        matrix: ResponseMatrix,
    ) -> dict[str, float] | None:
        """The joint-ML fit's own held-out check (``prior=None`` at a fixed rank): the cells the
        default prior's choice holds out (10%, seed 0), predicted by this fit made without
        them and by the additive model ``logit p = c_i + b_j``, as the default fit's
        ``heldout_check`` does; warned when the fit predicts worse (it overfits tens of
        models, unsaid before). Matrices of at most ``Prior().heldout_max_models`` models
        (beyond, the data outweigh the ridge); a sparse one (few cells observed) is checked on
        its dense array when that holds at most :data:`_DENSE_CHECK_CELLS` cells, else None."""
        limit = Prior().heldout_max_models
        if matrix.n_models > limit:
            return None
        if not isinstance(data, np.ndarray):  # the sparse path: 90% missing at 30 x 60
            if matrix.n_models * matrix.n_items > _DENSE_CHECK_CELLS:
                return None
            data = np.asarray(matrix.scores)
        fraction = Prior().heldout_fraction
        train, rows, cols = heldout_mask(data, fraction, 0, _ids(matrix))
        truth = data[rows, cols].astype(np.float64)
        if truth.size < 2:
            return None
        with warnings.catch_warnings():  # a held-out fit's warnings are the full fit's
            warnings.simplefilter("ignore")
            raw = self._fit_arrays(train, rank, None, penalty, quiet=True)
            c, b, _ = fit_additive_converged(train)
        logit = (np.einsum("nk,nk->n", raw.U[rows], raw.V[cols]) + raw.b[cols]) / self.sigma
        ours = truth * logit - np.logaddexp(0.0, logit)
        additive_logit = c[rows] + b[cols]
        theirs = truth * additive_logit - np.logaddexp(0.0, additive_logit)
        _warn_worse_than_additive(ours, theirs, rank, matrix.shape, True, fixed=True)
        return {
            "log_loss": float(-ours.mean()),
            "additive_log_loss": float(-theirs.mean()),
            "difference": float(theirs.mean() - ours.mean()),
        }

    @staticmethod
    def _check_matrix(matrix: Any) -> None:
        if not isinstance(matrix, ResponseMatrix):
            raise InputError(
                f"expected a ResponseMatrix, got {type(matrix).__name__}; build one with "
                "ResponseMatrix.from_long / from_wide / read"
            )
        if matrix.n_models < 2:  # a selection of one row (m[["a"], :]) gets past the reader
            shown = f" ({matrix.model_ids[0]!r})" if matrix.n_models else ""
            raise InputError(
                f"a matrix of {matrix.n_models} model(s){shown}; expected at least 2 models: "
                "IRT places models against each other (to score one new model against a "
                "calibration, use latentbench.estimate)"
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

        Raises
        ------
        InputError
            When ``n_splits`` is not an integer >= 1.
        """
        self._check_matrix(matrix)
        self._validate()
        if int(n_splits) != n_splits or n_splits < 1:
            raise InputError(f"n_splits={n_splits!r}; expected an integer >= 1")
        rows_out = []
        base = 0 if random_state is None else check_seed(random_state, "random_state")
        params = self.get_params()
        if params["trials"] == "auto":  # K of the whole matrix for every split
            params["trials"] = _detected_trials(matrix)
        for k in range(int(n_splits)):
            train, rows, cols = heldout_mask(matrix.scores, heldout, base + k, _ids(matrix))
            truth = matrix.scores[rows, cols].astype(np.float64)
            sub = ResponseMatrix(train, matrix.model_ids, matrix.item_ids, source=matrix.source)
            clone = TwoPL(**params)
            clone._own_check = False  # this is the held-out check: not one inside each split
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                fitted = clone.fit(sub)
            p_model = np.asarray(fitted.predict_proba())[rows, cols]
            c, b, converged = fit_additive_converged(train)
            p_add = sigmoid(c[rows] + b[cols])
            for name, p, done in (
                ("model", p_model, fitted.converged),
                ("additive", p_add, converged),
            ):
                s = predictive_scores(p, truth)
                rows_out.append(
                    {
                        "split": k,
                        "fit": name,
                        "log_loss": s.log_loss,
                        "brier": s.brier,
                        "auc": s.auc,
                        "n_cells": s.n_cells,
                        "converged": bool(done),
                    }
                )
        return CrossValidation(pd.DataFrame(rows_out), heldout)

    def uses_sparse_path(self, matrix: ResponseMatrix) -> bool:
        """Whether :meth:`fit` takes the observed-cells (sparse) path for ``matrix``.

        Sparse when the matrix stores only its observed cells, or when fewer than
        :data:`~latentbench.io._cells.SPARSE_DENSITY` (25%) of its cells are observed, on
        the CPU with the deterministic start; dense (fill-in majorizer) otherwise.

        Parameters
        ----------
        matrix : ResponseMatrix
            The matrix :meth:`fit` would be given, of shape (n_models, n_items).

        Returns
        -------
        bool
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
        accuracy = matrix.model_accuracy()
        U, V, b, scale = normalise(raw.U, raw.V, raw.b, accuracy=accuracy)
        # the ability for any rank: along the items' mean loading (rank 1: the factor)
        w = general_direction(V)
        theta, a = U @ w, V @ w
        n_obs_models = matrix.n_observed_per_model()
        constant_models = np.zeros(matrix.n_models, dtype=bool)
        constant_models[matrix.constant_models()] = True
        abilities = pd.DataFrame(
            {
                "model": matrix.model_ids,
                "theta": theta,
                "accuracy": accuracy,  # NaN for a model with no observed cell, never 0
                "n_observed": n_obs_models,
                # a model with no observed cell is not ranked (NA): its theta is the prior's
                "rank_theta": rank_abilities(theta, n_obs_models > 0),
                # unmeasured models are not ranked (NA), rather than ranked last
                "rank_accuracy": pd.Series(-accuracy).rank(method="min").astype("Int64"),
                "constant": constant_models,
            }
        )
        abilities["rank_shift"] = abilities["rank_accuracy"] - abilities["rank_theta"]
        constant_items = np.zeros(matrix.n_items, dtype=bool)
        constant_items[matrix.constant_items()] = True
        proportion_correct = matrix.item_accuracy()
        with np.errstate(divide="ignore", invalid="ignore"):
            location = np.where((a > 0) & (rank == 1), -b / np.where(a > 0, a, 1.0), np.nan)
        items = pd.DataFrame(
            {
                "item": matrix.item_ids,
                "discrimination": a,
                "easiness": b,
                "difficulty": -b,
                "location": location,
                "proportion_correct": proportion_correct,  # NaN when nobody answered
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
            restarted=raw.restarted,
            seconds=raw.seconds,
            options=self._used_options(),
            shape=matrix.shape,
            n_observed=int(matrix.n_observed_per_model().sum()),
            raw=raw,
            rank_selection=selection,
            penalty=GaussianPenalty.ridge(float(self.l2)),  # replaced by fit()
            normalisation=scale,
            matrix=matrix,
        )

    def _used_options(self) -> dict[str, Any]:
        """The parameters as a fit records them (``IRTResult.options``, fit.json): ``l2`` is
        None under a prior, which the ridge does not enter."""
        options = self.get_params()
        if options.get("prior") is not None:
            options["l2"] = None
        return options

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
    """An integer (Python's or numpy's, never a bool or a float such as ``50.0``: one rule
    with :func:`~latentbench._checks.check_count`) of at least ``minimum``."""
    return is_integer(value) and value >= minimum


def disconnected_models(matrix: ResponseMatrix) -> tuple[int, list[str]]:
    """How many groups of models the observed cells link (two models are linked when they
    share an item, directly or through others), and the models outside the largest group.

    Models without an observed cell are left out (they are flagged ``no_data``). Abilities in
    different groups are compared only through the priors, never through the data.

    Returns
    -------
    n_groups : int
    outside : list of str
        Models of every group but the largest (empty when ``n_groups <= 1``).
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n, m = matrix.shape
    if matrix.is_sparse:
        cells = matrix.observed_cells()
        rows, cols = cells.row_index(), cells.row_cols.astype(np.int64) + n
    else:  # plain NumPy: no kernel compiled for a small first fit
        observed = ~np.isnan(matrix.scores)
        if _one_group(observed):
            return 1, []
        rows, cols = np.nonzero(observed)
        cols = cols + n
    graph = coo_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(n + m, n + m))
    _, labels = connected_components(graph, directed=False)
    has_data = np.bincount(rows, minlength=n) > 0
    model_labels = labels[:n][has_data]
    groups, sizes = np.unique(model_labels, return_counts=True)
    if groups.size <= 1:
        return int(groups.size), []
    largest = groups[np.argmax(sizes)]
    ids = np.asarray(matrix.model_ids, dtype=object)[has_data]
    return int(groups.size), [str(m) for m in ids[model_labels != largest]]


def _one_group(observed: np.ndarray, steps: int = 4) -> bool:
    """Whether every model with an observed cell is linked to the others, found by a few
    steps of a breadth-first search over whole rows and columns of the mask (dense passes,
    no graph built; the usual case). False means "not shown in ``steps``": the caller then
    builds the graph."""
    has_data = observed.any(axis=1)
    n_data = int(np.count_nonzero(has_data))
    if n_data == 0:
        return False
    # start from the most answered item: its models, then items they answered, and so on
    models = observed[:, int(np.argmax(np.count_nonzero(observed, axis=0)))].copy()
    for _ in range(steps):
        reached = int(np.count_nonzero(models))
        if reached == n_data:
            return True
        items = observed[models].any(axis=0)
        grown = (observed & items).any(axis=1)
        if int(np.count_nonzero(grown)) == reached:
            return False  # closed: a second group exists
        models = grown
    return int(np.count_nonzero(models)) == n_data


def _ids(matrix: ResponseMatrix) -> tuple[list[str], list[str]]:
    """The (model ids, item ids) the held-out draws follow (:func:`heldout_mask`)."""
    return list(matrix.model_ids), list(matrix.item_ids)


_RANK_TIE = 1e-6
"""Held-out mean log-likelihoods this close (relative) are equal for ``rank="auto"``."""


def _smallest_within_noise(logliks: np.ndarray) -> int:
    """The first (smallest) rank whose mean held-out log-likelihood is within one standard
    error of the best one's (the one-standard-error rule; the standard error of the paired
    per-cell differences): a larger rank must predict the held-out cells better than noise
    does, and a tie (equal scores) keeps the smaller rank.

    Parameters
    ----------
    logliks : ndarray of shape (n_ranks, n_heldout)
        Held-out log-likelihood of every cell under each rank, ranks in increasing order.

    With a single held-out cell, nothing measures the noise: the smallest rank.

    Returns
    -------
    int
        Row of the chosen rank.
    """
    means = logliks.mean(axis=1)
    best = int(np.argmax(means))
    n = logliks.shape[1]
    if n < 2:  # one held-out cell measures no noise: no larger rank is shown to be better
        return 0
    diff = logliks[best] - logliks  # (n_ranks, n_heldout), row best all 0
    se = diff.std(axis=1, ddof=1) / np.sqrt(n)
    # plus the fits' own precision (tol 1e-6 relative): equal scores up to it are a tie
    slack = se + _RANK_TIE * max(1.0, abs(float(means[best])))
    return int(np.flatnonzero(means >= means[best] - slack)[0])


def _warn_worse_than_additive(
    chosen_loglik: np.ndarray,
    additive_loglik: np.ndarray,
    chosen: int,
    shape: tuple[int, int],
    joint_ml: bool,
    fixed: bool = False,
) -> None:
    """A :class:`DataWarning` when the chosen rank predicts the held-out cells worse than the
    additive model ``logit p = c_i + b_j``, by more than one standard error of the paired
    per-cell difference or below the ``log 0.5`` of a constant 0.5 (an overfitted fit's few
    confidently wrong cells inflate that standard error): then no rank tried is supported
    by the data, and the choice must not be reported as if it were."""
    diff = additive_loglik - chosen_loglik
    n = diff.size
    if n < 2:
        return
    gap = float(diff.mean())
    se = float(diff.std(ddof=1) / np.sqrt(n))
    ours, theirs = float(chosen_loglik.mean()), float(additive_loglik.mean())
    coin = float(np.log(0.5))
    if not (gap > se or (gap > 0 and ours < coin)):
        return
    below_coin = f", below the {coin:.4f} of a constant 0.5" if ours < coin else ""
    n_models, n_items = shape
    cause = (
        f"at {n_models} models x {n_items} items the joint-ML fit (prior=None) overfits "
        + ("" if fixed else "every rank ")
        + "(its estimates are kept finite only by the ridge l2); the default prior "
        "(prior='auto') keeps them finite, and its fits predict held-out cells better on "
        "matrices of tens of models"
        if joint_ml
        else "the rank-r model adds nothing to the models' and items' mean scores here"
    )
    what, verdict = (
        (f"prior=None: the joint-ML fit at rank {chosen}", "its abilities and items overfit")
        if fixed
        else (f"rank='auto': the chosen rank {chosen}", "no rank tried is supported by the data")
    )
    warnings.warn(
        f"{what} predicts the held-out cells worse than the additive model logit p = c_i + "
        f"b_j (mean log-likelihood per cell {ours:.4f} against {theirs:.4f}{below_coin}; the "
        f"gap {gap:.4f}, standard error {se:.4f}): {verdict}; {cause}",
        DataWarning,
        stacklevel=user_stacklevel(),
    )


def _detected_trials(matrix: ResponseMatrix, warn: bool = True) -> int:
    """``trials="auto"``: K from the scores' grid (:func:`detect_trials`), said when K > 1,
    and said when a grid is seen on too few fractional cells to be read as K trials."""
    grid = trials_grid(matrix)  # its observed cells: never a sparse matrix's dense grid
    count = grid.trials if grid.enough else 1
    share = f"{grid.n_fractional:,} of {grid.n_observed:,} observed cells are fractional"
    if warn and count > 1:
        warnings.warn(
            f"every score lies on a grid of 1/{count} ({share}): read as {count} trials per "
            "cell (binomial likelihood); trials=1 (fit --trials 1) reads them as single soft "
            "labels",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    elif warn and grid.trials > 1:
        warnings.warn(
            f"{share} (a grid of 1/{grid.trials}): too few (under "
            f"{MIN_FRACTIONAL_SHARE:.0%}) for {grid.trials} trials per cell, read as 1 trial "
            f"(fractions are soft labels); trials={grid.trials} (fit --trials {grid.trials}) "
            f"reads every cell as {grid.trials} trials",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    return count


def _warn_off_grid(matrix: ResponseMatrix, trials: int) -> None:
    """``trials=K`` with scores that are not multiples of 1/K: said (they enter as fractional
    successes, which is not K trials' likelihood)."""
    if trials <= 1:
        return
    values, rows, cols = observed_values(matrix)
    scaled = values * trials
    off = np.abs(scaled - np.round(scaled)) > 1e-4 * trials
    if not off.any():
        return
    k = int(np.argmax(off))
    warnings.warn(
        f"trials={trials}: {int(off.sum()):,} of {values.size:,} observed scores "
        f"are not multiples of 1/{trials} (e.g. {values[k]:g} for model "
        f"{matrix.model_ids[rows[k]]!r}, item {matrix.item_ids[cols[k]]!r}); they enter as "
        f"fractional successes of {trials} trials",
        DataWarning,
        stacklevel=user_stacklevel(),
    )


def _warn_disconnected(matrix: ResponseMatrix) -> dict[str, Any] | None:
    """One warning when the models fall in groups that share no item; returns
    ``{"n_groups", "outside"}`` then (:attr:`IRTResult.disconnected`), else None."""
    n_groups, outside = disconnected_models(matrix)
    if n_groups <= 1:
        return None
    names = ", ".join(repr(m) for m in outside[:3]) + (", ..." if len(outside) > 3 else "")
    warnings.warn(
        f"the observed cells split the models into {n_groups} groups that share no item "
        f"({len(outside)} model(s) outside the largest: {names}): abilities in different "
        "groups are compared only through the priors, not the data, and their intervals "
        "do not show it; check the item ids, or fit each group separately",
        DataWarning,
        stacklevel=user_stacklevel(),
    )
    return {"n_groups": int(n_groups), "outside": [str(m) for m in outside]}
