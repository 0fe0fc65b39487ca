"""Functional core: the constrained block majorization-minimization (cBMM) fit.

Model (slope-intercept form, rank r)::

    P(y_ij = 1) = sigmoid(x_ij / sigma),   X = U V^T + 1 b^T,   V >= 0 (optional)

with rank 1 being the 2PL (U = theta, V = a, b = easiness intercept). The objective is the
Bernoulli negative log-likelihood with soft labels y in [0, 1], summed over observed cells, plus
a Gaussian penalty (:class:`~latentbench.irt._objective.GaussianPenalty`; by default the ridge
``l2 / 2 * (|U|^2 + |V|^2 + |b|^2)``) that keeps every estimate finite (an all-correct row or
column otherwise has no finite joint-ML estimate). The penalty's value, curvature and linear
terms come from :mod:`latentbench.irt._objective`; this module only adds them to the blocks.

Each sweep minimises the quadratic majorizer ``(1 / (8 sigma^2)) |Z - X|^2`` (Böhning's bound,
curvature 1/(4 sigma^2)) with the working response ``Z = X + 4 sigma (y - p)``; unobserved
cells are filled with the current fit (``Z = X`` there), which is still a majorizer, so every
update is in dense closed form: the joint (V, b) block, then the U block. Both blocks exactly
minimise the same surrogate, so the objective never increases (Razaviyayn, Hong & Luo 2013).
Acceleration: adaptive over-relaxation of the MM step with a monotone safeguard (an
extrapolated point is accepted only if its objective is not above the last accepted one;
otherwise the plain MM point is taken and the step resets).

No function here does I/O or prints; everything takes and returns arrays.
"""

from __future__ import annotations

import re
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol

import numpy as np

from latentbench._checks import check_flag, is_integer, is_number, user_stacklevel
from latentbench.exceptions import (
    IdentifiabilityWarning,
    InputError,
)
from latentbench.io._margins import dense_margins
from latentbench.irt._blas import single_threaded_blas
from latentbench.irt._kernels import batched_nnls, residual_pass, residual_times_factors
from latentbench.irt._model_factors import model_newton_step
from latentbench.irt._objective import GaussianPenalty, as_scores, logit
from latentbench.irt._squarem import MMRun, run_mm

__all__ = [
    "CBMMFit",
    "fit_cbmm",
    "initial_parameters",
    "log_likelihood",
]


@dataclass(eq=False)  # arrays: == by identity, not a ValueError
class CBMMFit:
    """Raw output of :func:`fit_cbmm`.

    Attributes
    ----------
    U : ndarray of shape (N, r)
        Model factors (abilities theta when r = 1), raw (not normalised).
    V : ndarray of shape (J, r)
        Item factors (discriminations a when r = 1), nonnegative when ``nonneg``.
    b : ndarray of shape (J,)
        Item intercepts (easiness).
    loss : float
        Final objective: negative log-likelihood over observed cells plus the ridge.
    loss_history : list of float
        Objective at the start and after every iteration (non-increasing): with
        ``accelerate`` an iteration is two MM sweeps and the SQUAREM point (or the second
        sweep's), so it has about ``n_iter / 2 + 1`` entries, else ``n_iter + 1``.
    n_iter : int
        Number of MM sweeps (two per accelerated iteration).
    n_passes : int
        Number of passes of the fused kernel over the matrix (a measure of work).
    converged : bool
        Whether the tolerance was met before ``max_iter``.
    seconds : float
        Wall-clock time of the fit.
    neg_log_likelihood : float
        The negative log-likelihood part of ``loss`` (the penalty left out).
    restarted : bool
        Whether the given start collapsed to an intercept-only model and the fit was
        restarted from the accuracy-based start (warned; this is the restarted fit).
    """

    U: np.ndarray
    V: np.ndarray
    b: np.ndarray
    loss: float
    loss_history: list[float] = field(default_factory=list)
    n_iter: int = 0
    n_passes: int = 0
    converged: bool = False
    seconds: float = 0.0
    neg_log_likelihood: float = float("nan")
    restarted: bool = False

    def __repr__(self) -> str:
        # one line: the dataclass's printed every array and the whole loss history (66 kB
        # for 1,500 sweeps on AlpacaEval in a notebook cell)
        state = "converged" if self.converged else "not converged"
        return (
            f"CBMMFit({self.U.shape[0]:,} models x {self.V.shape[0]:,} items, rank "
            f"{self.U.shape[1] if self.U.ndim == 2 else 1}; loss {self.loss:.6g}, {state} "
            f"after {self.n_iter:,} sweeps ({self.n_passes:,} passes) in {self.seconds:.2f} s"
            f"{', restarted' if self.restarted else ''})"
        )

    @classmethod
    def from_run(cls, run: MMRun, start: float) -> CBMMFit:
        """The fit of an MM run (:func:`latentbench.irt._squarem.run_mm`) begun at ``start``.

        Parameters
        ----------
        run : MMRun
            The run's outcome: its last point ``(U, V, b)``, loss and counts.
        start : float
            A ``time.perf_counter()`` reading taken when the run began (for ``seconds``).

        Returns
        -------
        CBMMFit
        """
        U, V, b = run.point
        return cls(
            U=U,
            V=V,
            b=b,
            loss=run.loss,
            loss_history=run.history,
            n_iter=run.sweeps,
            n_passes=run.passes,
            converged=run.converged,
            seconds=time.perf_counter() - start,
            neg_log_likelihood=run.neg_log_likelihood,
        )


def start_point(
    shape: tuple[int, int],
    rank: int,
    init: str | tuple[np.ndarray, np.ndarray, np.ndarray],
    fixed_items: tuple[np.ndarray, np.ndarray] | None,
    initial: Callable[[int], tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The start (U0, V0, b0) of a fit of an (N, J) matrix: the given tuple ``init`` (checked),
    else ``initial(rank)``; with ``fixed_items`` (V, b) their rank and values replace V0, b0.
    Shapes (N, r), (J, r), (J,), U0 and V0 C-contiguous."""
    n, m = shape
    if fixed_items is not None:
        V_fixed, b_fixed = fixed_item_arrays(fixed_items, m)
        rank = V_fixed.shape[1]
    if isinstance(init, tuple):
        U, V, b = (np.array(x, dtype=float) for x in init)
        U, V = U.reshape(n, -1), V.reshape(m, -1)
        if U.shape[1] != V.shape[1] or b.shape != (m,):
            raise InputError(
                f"init has shapes {U.shape}, {V.shape}, {b.shape}; expected ({n}, r), ({m}, r), "
                f"({m},)"
            )
    else:
        U, V, b = initial(rank)
    if fixed_items is not None:
        V, b = V_fixed, b_fixed
        if U.shape[1] != rank:
            U = np.zeros((n, rank))
    return np.ascontiguousarray(U), np.ascontiguousarray(V), b


def initial_parameters(
    Y: np.ndarray,
    rank: int,
    sigma: float,
    init: Literal["accuracy", "random"] = "accuracy",
    random_state: int | np.random.Generator | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Starting values (U0, V0, b0).

    ``"accuracy"`` (default, deterministic): theta0 = standardised logit of the row accuracy,
    a0 = sigma, b0 = sigma * logit(column accuracy), accuracies clipped away from 0 and 1. Since
    a >= 0 makes accuracy increase with theta, the start points the right way (no sign trap).
    Further factors (r > 1) come from the leading singular vectors of the double-centred,
    zero-filled residual, with small positive item loadings.

    ``"random"``: the reference implementation's start (theta0 ~ N(0, 1), a0 = exp(N(0, 1)),
    b0 ~ N(0, 1), all divided by sqrt(max|X0| / 10) when max|X0| > 10), for parity runs.
    """
    n, m = Y.shape
    if init == "random":
        rng = np.random.default_rng(random_state)
        U = rng.normal(size=(n, rank))
        V = np.exp(rng.normal(size=(m, rank)))
        b: np.ndarray = np.asarray(rng.normal(size=(m,)), dtype=float)
        peak = np.abs(U @ V.T + b).max()
        if peak > 10:
            s = float(np.sqrt(peak / 10))
            return U / s, V / s, b / s
        return U, V, b
    if init != "accuracy":
        raise InputError(f"init={init!r}; expected 'accuracy' or 'random'")
    margins = dense_margins(Y)  # one pass (parallel at leaderboard sizes)

    def residual(row_acc: np.ndarray, col_acc: np.ndarray, grand: float) -> np.ndarray:
        # rank > 1 only: the double-centred residual on the observed cells
        centred = (row_acc[:, None] + col_acc[None, :] - grand).astype(np.float32)
        return np.where(np.isnan(Y), np.float32(0), Y - centred)

    return accuracy_start(
        margins.row_count,
        margins.col_count,
        margins.row_sum,
        margins.col_sum,
        rank,
        sigma,
        residual,
    )


def accuracy_start(
    n_row: np.ndarray,
    n_col: np.ndarray,
    row_sum: np.ndarray,
    col_sum: np.ndarray,
    rank: int,
    sigma: float,
    residual: Callable[[np.ndarray, np.ndarray, float], Any],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``"accuracy"`` start of :func:`initial_parameters` from the observed counts and
    score sums per row and column (shapes (N,), (J,)); ``residual(row_acc, col_acc, grand)``
    gives the double-centred residual with zeros in unobserved cells (a dense array or a
    SciPy sparse matrix), used for rank > 1 only."""
    n, m = n_row.size, n_col.size
    grand = row_sum.sum() / max(n_row.sum(), 1)
    row_acc = np.where(n_row > 0, row_sum / np.maximum(n_row, 1), grand)
    col_acc = np.where(n_col > 0, col_sum / np.maximum(n_col, 1), grand)
    eps_r = 0.5 / (n_row + 1)
    eps_c = 0.5 / (n_col + 1)
    theta = logit(np.clip(row_acc, eps_r, 1 - eps_r))
    sd = theta.std()
    theta = (theta - theta.mean()) / sd if sd > 0 else np.zeros(n)
    U = np.zeros((n, rank))
    V = np.zeros((m, rank))
    U[:, 0] = theta
    V[:, 0] = sigma
    b = sigma * logit(np.clip(col_acc, eps_c, 1 - eps_c))
    if rank > 1:
        resid = residual(row_acc, col_acc, grand)
        k = rank - 1
        flat = resid if isinstance(resid, np.ndarray) else resid.data
        if not np.any(flat):
            # no structure beyond the margins (e.g. every observed score equal, a saturated
            # benchmark's first batch): the extra factors start at 0 (ARPACK fails on it)
            return U, V, b
        if k < min(n, m) - 1:
            from scipy.sparse.linalg import ArpackError, svds  # slow to import: rank > 1 only

            try:
                left, values, right = svds(resid, k=k, random_state=0)
            except ArpackError:  # a degenerate residual: the extra factors start at 0
                return U, V, b
            order = np.argsort(values)[::-1]
            left, values, right = left[:, order], values[order], right[order]
        else:
            dense = resid if isinstance(resid, np.ndarray) else resid.toarray()
            left, values, right = np.linalg.svd(dense, full_matrices=False)
        del resid
        for c in range(k):
            if c >= values.size or values[c] <= 0:
                break
            vec = right[c]
            sign = 1.0 if vec.sum() >= 0 else -1.0
            u_col = sign * left[:, c]
            sd_c = u_col.std()
            U[:, c + 1] = (u_col - u_col.mean()) / sd_c if sd_c > 0 else 0.0
            loading = np.clip(sign * vec / np.abs(vec).max(), 0.0, None)
            V[:, c + 1] = sigma * (0.05 + 0.45 * loading)
    return U, V, b


def log_likelihood(
    scores: np.ndarray, U: np.ndarray, V: np.ndarray, b: np.ndarray, sigma: float = 1.0
) -> float:
    """Bernoulli log-likelihood (soft labels) summed over observed cells."""
    Y = as_scores(scores)
    R = np.empty_like(Y)
    loss, _ = residual_pass(Y, np.atleast_2d(U.T).T, np.atleast_2d(V.T).T, b, sigma, R)
    return -loss


class _PenaltyTerms(NamedTuple):
    """The penalty's constant block terms at one rank, made once per fit (not per sweep:
    on small matrices building them was a tenth of a sweep)."""

    item_target: np.ndarray  # (r + 1, 1)
    item_curvature: np.ndarray  # (r + 1, r + 1)
    model_target: np.ndarray  # (1, r)
    model_curvature: np.ndarray  # (r, r)

    @classmethod
    def of(cls, penalty: GaussianPenalty, r: int) -> _PenaltyTerms:
        return cls(
            penalty.item_target(r)[:, None],
            penalty.item_curvature(r),
            penalty.model_target(r)[None, :],
            penalty.model_curvature(r),
        )


def _item_block(
    U: np.ndarray,
    V: np.ndarray,
    b: np.ndarray,
    atr: np.ndarray,
    sigma: float,
    penalty: GaussianPenalty,
    nonneg: bool,
    terms: _PenaltyTerms | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact minimiser of the surrogate over (V, b) given U (closed form / batched NNLS);
    ``terms``: the penalty's block terms at U's rank (made here when not given)."""
    n, r = U.shape
    terms = _PenaltyTerms.of(penalty, r) if terms is None else terms
    c = 1.0 / (4.0 * sigma * sigma)
    A = np.empty((n, r + 1))
    A[:, :r] = U
    A[:, r] = 1.0
    AtA = A.T @ A
    W_old = np.empty((r + 1, V.shape[0]))
    W_old[:r] = V.T
    W_old[r] = b
    rhs = c * (AtA @ W_old) + atr / sigma + terms.item_target  # (r + 1, J)
    G = c * AtA + terms.item_curvature
    if penalty.precision_b == 0:
        G[r, r] = max(float(G[r, r]), 1e-12)
    W = np.linalg.solve(G, rhs)
    if nonneg:
        if r == 1:
            negative = W[0] < 0
            if negative.any():
                W[0, negative] = 0.0
                W[1, negative] = rhs[1, negative] / G[1, 1]
        else:
            # only the items whose unconstrained solution breaks V >= 0 need the NNLS
            bad = (W[:r] < 0).any(axis=0)
            if bad.any():
                start = np.maximum(W_old[:, bad], 0)
                start[r] = W_old[r, bad]
                W[:, bad] = batched_nnls(G, rhs[:, bad], start, r)
    return np.ascontiguousarray(W[:r].T), W[r].copy()


def _model_block(
    U_old: np.ndarray,
    V_old: np.ndarray,
    b_old: np.ndarray,
    V: np.ndarray,
    b: np.ndarray,
    RV: np.ndarray,
    sigma: float,
    penalty: GaussianPenalty,
    terms: _PenaltyTerms | None = None,
) -> np.ndarray:
    """Exact minimiser of the surrogate over U given the new (V, b); ``terms`` as in
    :func:`_item_block`."""
    r = V.shape[1]
    terms = _PenaltyTerms.of(penalty, r) if terms is None else terms
    c = 1.0 / (4.0 * sigma * sigma)
    rhs = c * (U_old @ (V_old.T @ V)) + c * ((b_old - b) @ V)[None, :] + RV / sigma
    rhs += terms.model_target
    G = c * (V.T @ V) + terms.model_curvature
    try:
        return np.linalg.solve(G, rhs.T).T
    except np.linalg.LinAlgError:
        return np.asarray(np.linalg.lstsq(G, rhs.T, rcond=None)[0].T)


class _Engine(Protocol):
    """The elementwise passes of a sweep (NumPy/numba or PyTorch)."""

    def residual_pass(
        self, U: np.ndarray, V: np.ndarray, b: np.ndarray
    ) -> tuple[float, np.ndarray]: ...

    def residual_times_factors(self, V: np.ndarray) -> np.ndarray: ...


class _NumpyEngine:
    """Elementwise passes on the CPU (numba kernels); keeps the residual buffer R."""

    def __init__(self, Y: np.ndarray, sigma: float) -> None:
        self.Y = Y
        self.sigma = sigma
        self.R = np.empty_like(Y)

    def residual_pass(
        self, U: np.ndarray, V: np.ndarray, b: np.ndarray
    ) -> tuple[float, np.ndarray]:
        return residual_pass(self.Y, U, V, b, self.sigma, self.R)

    def residual_times_factors(self, V: np.ndarray) -> np.ndarray:
        return residual_times_factors(self.R, V)


DEVICE_TYPES = (
    "cpu", "cuda", "mps", "xpu", "ipu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
    "fpga", "maia", "xla", "lazy", "vulkan", "meta", "hpu", "mtia", "privateuseone",
)  # fmt: skip
"""The device types PyTorch's device strings start with (``torch.device``'s own list, most used
first), each alone or with ``:`` and an index (``cuda:1``)."""

_DEVICE = re.compile(rf"(?:{'|'.join(DEVICE_TYPES)})(?::(?:0|[1-9][0-9]*))?")

DEVICE_EXPECTED = (
    f"None (the NumPy kernels) or a PyTorch device: {', '.join(DEVICE_TYPES)}, alone or with "
    "an index (cuda:1)"
)
"""What ``device=`` takes, as its error says it."""


_OTHER_DEVICE = re.compile(r"[a-z_][a-z0-9_]*(?::(?:0|[1-9][0-9]*))?")


def _torch_with_plugins() -> Any:
    """PyTorch, imported now, where an installed plugin registers a backend when PyTorch is
    imported (an entry point of the group ``torch.backends``, which PyTorch loads unless
    ``TORCH_DEVICE_BACKEND_AUTOLOAD`` is not 1): that backend's name is known only then (the
    fit imported PyTorch and took it before the early check); else None, nothing imported."""
    import os
    from importlib.metadata import entry_points

    if os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") != "1":
        return None
    if not entry_points(group="torch.backends"):
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch


def is_device(value: object) -> bool:
    """Whether ``value`` is a well-formed ``device=``: None, or a string ``torch.device``
    parses (a type of :data:`DEVICE_TYPES`, alone or ``TYPE:N``), checked without importing
    PyTorch (whether the device is there is known only to PyTorch, when the fit starts).

    Another name of that form is asked of PyTorch when the process has already imported it
    (a backend a plugin registered under its own name, e.g. ``npu``), or when an installed
    plugin registers one as PyTorch is imported (PyTorch is then imported for it); otherwise
    it is refused.
    """
    if value is None:
        return True
    if not isinstance(value, str):
        return False
    if _DEVICE.fullmatch(value) is not None:
        return True
    if _OTHER_DEVICE.fullmatch(value) is None:
        return False
    torch = sys.modules["torch"] if "torch" in sys.modules else _torch_with_plugins()
    if torch is None:
        return False
    try:
        torch.device(value)
    except (RuntimeError, ValueError, TypeError):
        return False
    return True


def _is_torch_device(value: object) -> bool:
    """Whether ``value`` is a ``torch.device`` (only where PyTorch is imported can it be)."""
    kind = getattr(sys.modules.get("torch"), "device", None)
    return isinstance(kind, type) and isinstance(value, kind)


def check_device(device: object) -> None:
    """Refuse a ``device`` that cannot be a device (a typo), before any data is read and
    without importing PyTorch, naming the value and what is expected (a ``torch.device``
    object, which :func:`fit_cbmm` passes to PyTorch as it is, is taken)."""
    if not (is_device(device) or _is_torch_device(device)):
        raise InputError(f"device={device!r}; expected {DEVICE_EXPECTED}")


def _torch_engine(Y: np.ndarray, sigma: float, device: str) -> _Engine:
    from latentbench.irt._torch_backend import TorchEngine

    return TorchEngine(Y, sigma, device)


def check_options(
    rank: int, sigma: float, l2: float, penalty: GaussianPenalty | None
) -> GaussianPenalty:
    """Check the fit options; the penalty (the ridge of ``l2`` when none is given)."""
    if not is_integer(rank) or rank < 1:  # "2" or 2.5: named, not a TypeError
        raise InputError(f"rank={rank!r}; expected an integer >= 1")
    if not (is_number(sigma) and sigma > 0):
        raise InputError(f"sigma={sigma!r}; expected a positive number")
    if penalty is None:
        if not (is_number(l2) and l2 >= 0):
            raise InputError(f"l2={l2!r}; expected a nonnegative number")
        penalty = GaussianPenalty.ridge(l2)
    return penalty


def fixed_item_arrays(
    fixed_items: tuple[np.ndarray, np.ndarray], m: int
) -> tuple[np.ndarray, np.ndarray]:
    """Item parameters held fixed, as float64 arrays of shape (m, r) and (m,), checked."""
    V_fixed = np.ascontiguousarray(np.atleast_2d(np.asarray(fixed_items[0], float).T).T)
    b_fixed = np.asarray(fixed_items[1], dtype=float).copy()
    if V_fixed.shape[0] != m or b_fixed.shape != (m,):
        raise InputError(
            f"fixed_items have shapes {V_fixed.shape} and {b_fixed.shape}; expected ({m}, r) "
            f"and ({m},)"
        )
    return V_fixed, b_fixed


@single_threaded_blas
def fit_cbmm(
    scores: np.ndarray,
    *,
    rank: int = 1,
    sigma: float = 1.0,
    l2: float = 1e-2,
    penalty: GaussianPenalty | None = None,
    tol: float = 1e-6,
    max_iter: int = 5000,
    nonneg: bool = True,
    init: Literal["accuracy", "random"] | tuple[np.ndarray, np.ndarray, np.ndarray] = "accuracy",
    random_state: int | np.random.Generator | None = None,
    fixed_items: tuple[np.ndarray, np.ndarray] | None = None,
    accelerate: bool = True,
    check_monotone: bool = False,
    callback: Callable[[int, float], None] | None = None,
    device: str | None = None,
) -> CBMMFit:
    """Fit the rank-r logistic (2PL when r = 1) model by cBMM.

    Parameters
    ----------
    scores : ndarray of shape (N, J)
        Scores in [0, 1]; NaN = missing. Fractional scores are soft labels.
    rank : int, default 1
        Number of latent factors r.
    sigma : float, default 1.0
        Temperature of the link, P = sigmoid((U V^T + b) / sigma). Fixed, not estimated.
    l2 : float, default 1e-2
        Ridge on U, V and b; keeps all-correct / all-wrong rows and columns finite. 0 gives
        plain joint maximum likelihood. Ignored when ``penalty`` is given.
    penalty : GaussianPenalty, optional
        The penalty (Gaussian priors) on the raw parameters; default
        ``GaussianPenalty.ridge(l2)``.
    tol : float, default 1e-6
        Stop when the estimated relative distance of the objective from its limit (the last
        decrease, inflated by the observed linear rate: ``d rho / (1 - rho)``) is below ``tol``
        and the largest parameter change relative to the parameter scale is below
        ``sqrt(tol)``.
    max_iter : int, default 5000
        Cap on MM sweeps; reaching it emits a :class:`ConvergenceWarning`.
    nonneg : bool, default True
        Constrain V >= 0 (a >= 0 for the 2PL), which fixes the sign of the factors.
    init : {"accuracy", "random"} or tuple (U0, V0, b0)
        Starting point; see :func:`initial_parameters`.
    random_state : int, Generator or None
        Used by ``init="random"`` only.
    fixed_items : tuple (V, b), optional
        Keep item parameters fixed and fit only U.
    accelerate : bool, default True
        Adaptive over-relaxation with a monotone safeguard.
    check_monotone : bool, default False
        Debug mode: raise ``AssertionError`` if any plain MM sweep increases the objective.
    callback : callable(iteration, loss), optional
        Called after every accepted sweep (e.g. a progress bar).
    device : str, optional
        ``None`` (default): the NumPy/numba kernels on the CPU. A PyTorch device string
        (``"cuda"``, ``"cuda:1"``, ``"cpu"``) or a ``torch.device``: the same algorithm with
        the elementwise passes and matrix products on PyTorch tensors (needs the ``torch``
        extra); the small block solves stay in NumPy float64.

    Returns
    -------
    CBMMFit

    Raises
    ------
    InputError
        A ``device`` PyTorch could not parse (checked first, without importing PyTorch), an
        option outside its range, or a ``device`` that PyTorch lacks or does not see.
    """
    start = time.perf_counter()
    check_device(device)  # a typo costs nothing: before the scores are read
    nonneg = check_flag(nonneg, "nonneg")  # "no" ran as True
    accelerate = check_flag(accelerate, "accelerate")
    check_monotone = check_flag(check_monotone, "check_monotone")
    Y = as_scores(scores)
    n, m = Y.shape
    penalty = check_options(rank, sigma, l2, penalty)
    U, V, b = start_point(
        (n, m),
        rank,
        init,
        fixed_items,
        lambda r: initial_parameters(Y, r, sigma, init, random_state),  # type: ignore[arg-type]
    )
    engine: _Engine = _NumpyEngine(Y, sigma) if device is None else _torch_engine(Y, sigma, device)
    terms = _PenaltyTerms.of(penalty, U.shape[1])

    def evaluate(U_: np.ndarray, V_: np.ndarray, b_: np.ndarray) -> tuple[float, float, np.ndarray]:
        nll_, atr_ = engine.residual_pass(U_, V_, b_)
        return nll_ + penalty.value(U_, V_, b_), nll_, atr_

    def mm_map(
        U_: np.ndarray, V_: np.ndarray, b_: np.ndarray, atr_: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # one MM sweep from a point whose residuals are in the engine's buffer and atr_
        if fixed_items is None:
            V_new, b_new = _item_block(U_, V_, b_, atr_, sigma, penalty, nonneg, terms)
        else:
            V_new, b_new = V_, b_
        RV = engine.residual_times_factors(V_new)
        return _model_block(U_, V_, b_, V_new, b_new, RV, sigma, penalty, terms), V_new, b_new

    def block_optimal(point: tuple[np.ndarray, np.ndarray, np.ndarray]) -> bool:
        # with the items fixed, one Newton step on the model factors must not move them (the
        # objective can flatten where there is no optimum)
        U_, V_, b_ = point
        newton = 0.0
        if fixed_items is None:
            newton = float(np.abs(model_newton_step(Y, U_, V_, b_, sigma, penalty)).max())
        scale = 1.0 + max(float(np.abs(U_).max()), float(np.abs(V_).max()))
        return newton <= 10.0 * float(np.sqrt(tol)) * scale

    run = run_mm(
        (U, V, b),
        lambda x: evaluate(*x),
        lambda x, atr_: mm_map(*x, atr_),
        tol=tol,
        max_iter=max_iter,
        accelerate=accelerate,
        nonneg=nonneg and fixed_items is None,
        check_monotone=check_monotone,
        callback=callback,
        block_optimal=block_optimal,
    )
    U, V, b = run.point
    collapsed = fixed_items is None and float(np.abs(U).max() * np.abs(V).max()) < 1e-6 * sigma
    if collapsed and not (isinstance(init, str) and init == "accuracy"):
        # a start pointing against the data can drive every a_j to 0 and then theta to 0
        # (a saddle point); the accuracy-based start cannot, so restart from it
        warnings.warn(
            "the fit collapsed to an intercept-only model (all discriminations ~0) from the "
            "given start; restarting from the accuracy-based start",
            IdentifiabilityWarning,
            stacklevel=user_stacklevel(),
        )
        fit = fit_cbmm(
            scores,
            rank=rank,
            sigma=sigma,
            penalty=penalty,
            tol=tol,
            max_iter=max_iter,
            nonneg=nonneg,
            init="accuracy",
            accelerate=accelerate,
            check_monotone=check_monotone,
            callback=callback,
            device=device,
        )
        fit.restarted = True
        return fit
    if collapsed:
        warnings.warn(
            "every item discrimination is ~0: the fit is an intercept-only model (the data may "
            "carry no signal about model differences)",
            IdentifiabilityWarning,
            stacklevel=user_stacklevel(),
        )
    return CBMMFit.from_run(run, start)
