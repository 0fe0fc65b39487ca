"""PyTorch backend of the cBMM elementwise passes (optional extra ``torch``).

Same quantities as :mod:`latentbench.irt._kernels`: residuals ``R = y - sigmoid(x / sigma)``
(0 where missing), the soft-label Bernoulli loss summed in float64 over observed cells, and
``[U, 1]^T R``; then ``R @ V``. Scores and residuals are float32 tensors on the device; the
products are single-precision matrix multiplications and the results come back as float64
NumPy arrays for the small block solves, which stay in :mod:`latentbench.irt._cbmm`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from latentbench.exceptions import InputError

__all__ = ["TorchEngine"]


class TorchEngine:
    """Residual passes on a PyTorch device.

    Parameters
    ----------
    Y : ndarray of shape (N, J), float32
        Scores in [0, 1], NaN = missing.
    sigma : float
    device : str
        A PyTorch device string, e.g. ``"cuda"`` or ``"cpu"``.

    Raises
    ------
    InputError
        When PyTorch is not installed, or ``device`` is not available to it.
    """

    def __init__(self, Y: np.ndarray, sigma: float, device: str) -> None:
        try:
            import torch
        except ImportError:
            raise InputError(
                f"device={device!r} needs PyTorch: pip install 'latentbench[torch]'"
            ) from None
        self.torch = torch
        try:
            self.device = torch.device(device)
            scores = torch.tensor(np.asarray(Y, dtype=np.float32), device=self.device)
        except (RuntimeError, AssertionError) as exc:
            raise InputError(f"device={device!r} is not available to PyTorch ({exc})") from None
        self.observed = ~torch.isnan(scores)
        self.y = torch.nan_to_num(scores, nan=0.0)
        del scores
        self.inv_sigma = 1.0 / sigma
        self.R = torch.empty_like(self.y)

    def _tensor(self, array: np.ndarray) -> Any:
        return self.torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32)).to(self.device)

    def residual_pass(
        self, U: np.ndarray, V: np.ndarray, b: np.ndarray
    ) -> tuple[float, np.ndarray]:
        """Loss and ``[U, 1]^T R`` at (U, V, b); the residuals stay on the device.

        Parameters
        ----------
        U : ndarray of shape (N, r)
            Model factors.
        V : ndarray of shape (J, r)
            Item loadings.
        b : ndarray of shape (J,)
            Item intercepts.

        Returns
        -------
        loss : float
            The negative log-likelihood of the observed cells.
        atr : ndarray of float64 of shape (r + 1, J)
            ``[U, 1]^T R``, R the residuals ``y - p`` (0 where unobserved).
        """
        torch = self.torch
        U_t = self._tensor(U * self.inv_sigma)
        V_t = self._tensor(V)
        b_t = self._tensor(np.asarray(b) * self.inv_sigma)
        logits = torch.addmm(b_t.unsqueeze(0), U_t, V_t.T)
        cell = torch.nn.functional.softplus(logits) - self.y * logits
        loss = float(torch.where(self.observed, cell, 0.0).sum(dtype=torch.float64))
        del cell
        torch.sigmoid(logits, out=logits)
        torch.sub(self.y, logits, out=self.R)
        del logits
        self.R.masked_fill_(~self.observed, 0.0)
        A_t = torch.cat([self._tensor(U), torch.ones(U.shape[0], 1, device=self.device)], dim=1)
        atr = (A_t.T @ self.R).double().cpu().numpy()
        return loss, atr

    def residual_times_factors(self, V: np.ndarray) -> np.ndarray:
        """``R @ V`` as a float64 (N, r) array.

        Parameters
        ----------
        V : ndarray of shape (J, r)
            Item loadings.

        Returns
        -------
        ndarray of float64 of shape (N, r)
            The residuals of the last :meth:`residual_pass` times ``V``.
        """
        return np.asarray((self.R @ self._tensor(V)).double().cpu().numpy())
