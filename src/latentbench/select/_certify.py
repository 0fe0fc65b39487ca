"""The stop rule of a best-arm certificate, shared by the policies, the run loop and its result.

A recommendation ``leader`` is certified within ``epsilon`` of the best when its lower bound
exceeds every other arm's upper bound minus ``epsilon`` (``epsilon = 0``: the best itself).
An arm whose every cell is revealed has an exact mean; when the leader's mean is exact too,
such a rival needs no bound: the leader is the argmax of the estimates, so its exact mean is
at least the rival's. That is what lets a run whose leaders are tied exactly stop once both
are fully evaluated and every other arm is separated from them (the recommendation is then
*a* best arm: its mean is the largest), instead of evaluating every other cell too.
"""

from __future__ import annotations

import numpy as np

__all__ = ["certifies", "certifies_differences"]


def _rivals(n_arms: int, leader: int, exact: np.ndarray | None) -> np.ndarray:
    """Arms whose bounds the leader must clear: all but the leader, and, when the leader's
    mean is exact, all but the exactly evaluated arms (their exact means are at most its)."""
    rivals = np.ones(n_arms, dtype=bool)
    rivals[leader] = False
    if exact is not None and bool(exact[leader]):
        rivals &= ~np.asarray(exact, dtype=bool)
    return rivals


def certifies(
    lower: np.ndarray,
    upper: np.ndarray,
    leader: int,
    *,
    epsilon: float = 0.0,
    exact: np.ndarray | None = None,
    tie: float = 0.0,
) -> bool:
    """Whether ``leader``'s lower bound exceeds every rival's upper bound minus ``epsilon``.

    Parameters
    ----------
    lower, upper : ndarray of shape (n_arms,)
        One-sided bounds (a certificate's) or simultaneous intervals.
    leader : int
        The recommendation (the argmax of the estimates).
    epsilon : float, default 0.0
        Tolerance in score units (0: the best itself).
    exact : ndarray of bool, shape (n_arms,), optional
        Arms whose every cell is revealed (exact means); see the module docstring.
    tie : float, default 0.0
        Margin by which the lower bound must clear (rounding of padded bounds).

    Returns
    -------
    bool
    """
    rivals = _rivals(lower.size, leader, exact)
    if not rivals.any():
        return True
    return bool(lower[leader] > np.asarray(upper)[rivals].max() - epsilon + tie)


def certifies_differences(
    lead: np.ndarray, leader: int, *, epsilon: float = 0.0, exact: np.ndarray | None = None
) -> bool:
    """Whether every lower bound on ``mu_leader - mu_j`` (``lead``, shape (n_arms,), any
    value at ``leader``) of the rivals (as in :func:`certifies`) is above ``-epsilon``."""
    rivals = _rivals(lead.size, leader, exact)
    return bool(np.all(np.asarray(lead)[rivals] > -epsilon))
