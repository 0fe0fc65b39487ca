"""The stop rule of a best-arm certificate, shared by the policies, the run loop and its result.

A recommendation ``leader`` is certified within ``epsilon`` of the best when its lower bound
exceeds every other arm's upper bound minus ``epsilon`` (``epsilon = 0``: the best itself).

An arm whose every cell is revealed has an exact mean (the mean of its revealed cells). When
the leader's row is fully revealed too, a fully revealed rival whose exact mean is at most the
leader's needs no bound: the comparison of the two is known. That is what lets a run whose
leaders are tied exactly stop once both are fully evaluated and every other arm is separated
from them (the recommendation is then *a* best arm: its mean is the largest), instead of
evaluating every other cell too. The exact means are passed in and compared here, so the rule
does not rest on how a policy's estimates treat full rows.

Validity (``docs/selection.md``, "What is guaranteed"): fix one true best ``i*``. A certified
``b`` with ``mu_b < mu_{i*} - epsilon`` needs ``i*``'s upper bound or ``b``'s lower bound to
fail, or ``i*`` to be skipped as an exact rival; the last needs both rows fully revealed and
``mu_{i*} <= mu_b``, a contradiction.
"""

from __future__ import annotations

import math

import numpy as np

from latentbench.exceptions import InputError

__all__ = ["EPSILON_MAX", "certifies", "certifies_differences", "check_epsilon", "rivals"]

EPSILON_MAX = 0.5
"""Largest tolerance accepted (scores are in [0, 1]; half the range certifies nearly anything)."""

_ROUNDING = 1e-12
"""Exact means of two fully revealed rows compared up to the rounding of their sums."""


def check_epsilon(epsilon: object) -> float:
    """``epsilon`` as a float in [0, :data:`EPSILON_MAX`], or an :class:`InputError` that
    names the value (strings and booleans are refused, not converted)."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.integer, np.floating)):
        value = math.nan
    else:
        value = float(epsilon)
    if not 0.0 <= value <= EPSILON_MAX:
        raise InputError(
            f"epsilon={epsilon!r}; expected a tolerance in [0, {EPSILON_MAX:g}] in score "
            "units (0: certify the best itself; e.g. 0.01: a model within 0.01 of the best)"
        )
    return value


def rivals(
    leader: int, exact: np.ndarray | None, means: np.ndarray | None, n_arms: int
) -> np.ndarray:
    """Arms whose bounds the leader must clear, shape (n_arms,) of bool: all but the leader,
    less (when the leader's row is fully revealed) the fully revealed arms whose exact means
    are at most the leader's."""
    rivals = np.ones(n_arms, dtype=bool)
    rivals[leader] = False
    if exact is not None and means is not None and bool(exact[leader]):
        exact = np.asarray(exact, dtype=bool)
        means = np.asarray(means, dtype=np.float64)
        rivals &= ~(exact & (means <= means[leader] + _ROUNDING))
    return rivals


def certifies(
    lower: np.ndarray,
    upper: np.ndarray,
    leader: int,
    *,
    epsilon: float = 0.0,
    exact: np.ndarray | None = None,
    means: np.ndarray | None = None,
    tie: float = 0.0,
) -> bool:
    """Whether ``leader``'s lower bound exceeds every rival's upper bound minus ``epsilon``.

    Parameters
    ----------
    lower, upper : ndarray of shape (n_arms,)
        One-sided bounds (a certificate's) or simultaneous intervals.
    leader : int
        The recommendation.
    epsilon : float, default 0.0
        Tolerance in score units (0: the best itself).
    exact : ndarray of bool, shape (n_arms,), optional
        Arms whose every cell is revealed.
    means : ndarray of shape (n_arms,), optional
        Their exact means (read only where ``exact``); with ``exact``, fully revealed rivals
        at or below a fully revealed leader need no bound (module docstring).
    tie : float, default 0.0
        Margin by which the lower bound must clear (rounding of padded bounds).

    Returns
    -------
    bool
    """
    rivals_ = rivals(leader, exact, means, len(lower))
    if not rivals_.any():
        return True
    return bool(lower[leader] > np.asarray(upper)[rivals_].max() - epsilon + tie)


def certifies_differences(
    lead: np.ndarray,
    leader: int,
    *,
    epsilon: float = 0.0,
    exact: np.ndarray | None = None,
    means: np.ndarray | None = None,
) -> bool:
    """Whether every lower bound on ``mu_leader - mu_j`` (``lead``, shape (n_arms,), any value
    at ``leader``) of the rivals (as in :func:`certifies`) is above ``-epsilon``."""
    rivals_ = rivals(leader, exact, means, len(lead))
    return bool(np.all(np.asarray(lead)[rivals_] > -epsilon))
