"""Item weights of a weighted full-benchmark score (``estimate(..., weights=...)``).

Many leaderboards do not print the plain mean over items: MMLU's is the mean of its subjects'
accuracies, an lm-eval group with ``weight_by_size: false`` averages its tasks. A weights table
names every calibrated item once with either a ``weight`` (non-negative, any scale, normalised
to sum 1) or a ``group`` (macro: every group weighs the same in total, its items equally); the
target of the estimate is then ``sum_j w_j y_j`` (``docs/estimate.md``, "Weighted scores").
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from latentbench._checks import user_stacklevel
from latentbench.exceptions import DataWarning, InputError
from latentbench.select._estimate_calibration import Calibration, observed_weighted_scores

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ItemWeights", "read_weights", "weighted_model_scores"]

_SHOWN = 5
"""Item ids a message names at most."""

_FITTED_BLOCK = 1 << 21
"""Cells of fitted probabilities computed at once (16 MB of float64)."""


@dataclass(frozen=True)
class ItemWeights:
    """Checked item weights over a calibration's items.

    Attributes
    ----------
    weights : ndarray of shape (n_items,)
        Normalised weights (sum 1) in the calibration's item order; 0 for an item left out.
    kind : {"items", "groups"}
        From a ``weight`` column (``items``) or a ``group`` column (``groups``, macro).
    n_groups : int or None
        Number of groups (``groups`` only).
    hash : str
        SHA-256 (first 16 hex digits) of the item ids and their normalised weights.
    source : str
        What the messages call the weights (a path, ``weights (DataFrame)``, ...).
    calibration_hash : str
        The calibration they were checked against.
    equal : bool
        Every calibrated item has the same weight (the plain mean: the unweighted estimate).
    model_scores : ndarray of shape (K,) or None
        The calibration models' weighted scores (:func:`weighted_model_scores`), computed once
        here; None when ``equal`` (their plain scores are used).
    observed : bool
        Whether ``model_scores`` are observed (False: fitted, a calibration without
        responses).
    note : str or None
        What reading them said (integer values with 0 in a Series or mapping: read as
        weights, not group codes), also warned; None when nothing.
    group_codes : ndarray of int, shape (n_items,), or None
        Each calibrated item's group, an index into ``group_names`` (``groups`` only): what
        says how the groups weigh when only some of their items are scored.
    group_names : tuple of str
        The group names, sorted (``groups`` only; empty otherwise).
    """

    weights: np.ndarray = field(repr=False)
    kind: str
    n_groups: int | None
    hash: str
    source: str
    calibration_hash: str
    equal: bool
    model_scores: np.ndarray | None = field(default=None, repr=False)
    observed: bool = True
    note: str | None = None
    group_codes: np.ndarray | None = field(default=None, repr=False)
    group_names: tuple[str, ...] = ()

    @property
    def n_positive(self) -> int:
        """Calibrated items of positive weight."""
        return int((self.weights > 0).sum())

    def record(
        self, population: np.ndarray | None = None, scored: str = "answered"
    ) -> dict[str, Any]:
        """What ``estimate.json``'s ``options["weights"]`` holds.

        Parameters
        ----------
        population : ndarray of int, shape (n,), optional
            The calibrated items the target is over (some of those of positive weight,
            answered or in a configuration): a macro target whose groups then no longer
            weigh the same records how (``n_groups_answered``, ``weighed_by_share``).
            None: every item of positive weight.
        scored : str, default "answered"
            How those items were scored, as the record says it (``both answered``, ``in
            the configuration``).

        Returns
        -------
        dict of str to Any
            ``kind``, ``n_groups``, ``hash``, ``source``, ``n_positive``, ``equal`` (every
            calibrated item weighs the same: the target is the plain mean); ``note`` when
            reading them said something; for a macro target over ``population``,
            ``n_groups_answered`` (the groups with an item there, when some have none) and
            ``weighed_by_share`` (``scored``, when the groups keep unequal shares of their
            items: each then weighs in proportion to its share, no longer the same).
        """
        record: dict[str, Any] = {
            "kind": self.kind,
            "n_groups": self.n_groups,
            "hash": self.hash,
            "source": self.source,
            "n_positive": self.n_positive,
            "equal": self.equal,
        }
        if self.note:
            record["note"] = self.note
        if (
            population is not None
            and self.kind == "groups"
            and self.group_codes is not None
            and not self.equal
        ):
            sizes = np.bincount(self.group_codes, minlength=len(self.group_names))
            kept = np.bincount(self.group_codes[population], minlength=len(self.group_names))
            present = kept > 0
            if not present.all():  # a group with no item there is left out of the target
                record["n_groups_answered"] = int(present.sum())
            share = kept[present] / sizes[present]
            if (share != share[0]).any():  # as group_shares says it in the warning
                record["weighed_by_share"] = scored
        return record


def is_weighted(record: Mapping[str, Any] | None) -> bool:
    """Whether ``options["weights"]`` makes the target another score than the plain mean
    (False: no weights, or weights all equal)."""
    return bool(record) and not (record or {}).get("equal", False)


def score_label(record: Mapping[str, Any] | None) -> str:
    """What a summary calls the score: ``score`` (no weights, or all equal: the plain
    mean), ``weighted score`` or ``macro score over 14 groups`` (from
    ``options["weights"]``); ``macro score over 13 of 14 groups`` when a group has no item
    answered, ``score over 14 groups (each weighed by the share of its items answered)``
    when the groups keep unequal shares of their items (:meth:`ItemWeights.record`)."""
    if not record or not is_weighted(record):
        return "score"
    if record.get("kind") == "groups":
        groups = f"{int(record.get('n_groups') or 0):,} groups"
        if record.get("n_groups_answered") is not None:  # some left out: over the others
            groups = f"{int(record['n_groups_answered']):,} of {groups}"
        if record.get("weighed_by_share"):  # no longer a macro score: said how they weigh
            return (
                f"score over {groups} (each weighed by the share of its items "
                f"{record['weighed_by_share']})"
            )
        return f"macro score over {groups}"
    return "weighted score"


def target_label(record: Mapping[str, Any] | None) -> str:
    """What a score targets, as ``estimates.csv``'s and a design's ``target`` column says it:
    ``mean`` (no weights, or all equal), ``weighted`` or ``macro over 14 groups`` (from
    ``options["weights"]`` / :meth:`ItemWeights.record`); as :func:`score_label` says it,
    ``macro over 13 of 14 groups`` when a group has no item answered and ``over 14 groups
    (each weighed by the share of its items answered)`` when the groups keep unequal shares
    of their items (a design's record has neither)."""
    if not record or not is_weighted(record):
        return "mean"
    if record.get("kind") == "groups":
        groups = f"{int(record.get('n_groups') or 0)} groups"
        if record.get("n_groups_answered") is not None:  # some left out: over the others
            groups = f"{int(record['n_groups_answered'])} of {groups}"
        if record.get("weighed_by_share"):  # no longer a macro target (as the line says)
            scored = record["weighed_by_share"]
            return f"over {groups} (each weighed by the share of its items {scored})"
        return f"macro over {groups}"
    return "weighted"


def group_shares(checked: ItemWeights, pop: np.ndarray, scored: str) -> str:
    """What the renormalised macro weights become over the items ``pop`` (some of every
    group's): unless each group keeps the same share of its items, the groups no longer
    weigh the same (each in proportion to its share, the smallest and largest named), and a
    group with none of its items ``scored`` is left out; empty for item weights, or when
    every group keeps the same share (a macro difference still)."""
    codes = checked.group_codes
    if checked.kind != "groups" or codes is None:
        return ""
    names = checked.group_names
    sizes = np.bincount(codes, minlength=len(names))
    kept = np.bincount(codes[pop], minlength=len(names))
    share = kept / sizes
    said = ""
    present = np.flatnonzero(kept > 0)
    if (share[present] != share[present[0]]).any():
        lo, hi = present[np.argmin(share[present])], present[np.argmax(share[present])]
        said += (
            f"; the groups no longer weigh the same, each in proportion to the share of its "
            f"items {scored} (from {kept[lo]:,} of {sizes[lo]:,} items ({names[lo]!r}) to "
            f"{kept[hi]:,} of {sizes[hi]:,} ({names[hi]!r}))"
        )
    absent = np.flatnonzero(kept == 0)
    if absent.size:
        shown = ", ".join(repr(names[k]) for k in absent[:5]) + (", ..." if absent.size > 5 else "")
        has, it = ("has", "it is") if absent.size == 1 else ("have", "they are")
        said += (
            f"; {absent.size:,} of the {len(names):,} groups {has} no item {scored} "
            f"({shown}): {it} left out"
        )
    return said


def _shown(value: Any) -> str:
    """A value as a message shows it: ``-2.0``, ``'abc'``, never ``np.float64(-2.0)``."""
    from latentbench.io._matrix_checks import _show as show_value

    return show_value(value)


def _show(ids: list[str]) -> str:
    head = ", ".join(repr(i) for i in ids[:_SHOWN])
    return head + (", ..." if len(ids) > _SHOWN else "")


def _frame(weights: Any) -> tuple[pd.DataFrame, str, Path | None]:
    """The weights as a table with an ``item`` column, what messages call them, and the file
    they were read from (None: given in memory)."""
    import pandas as pd

    if isinstance(weights, pd.DataFrame):
        return weights, "weights (DataFrame)", None
    if isinstance(weights, pd.Series | Mapping):
        series = pd.Series(weights) if isinstance(weights, Mapping) else weights
        what = "Series" if isinstance(weights, pd.Series) else "mapping"
        text = series.dtype == object or isinstance(series.dtype, pd.CategoricalDtype)
        text = text or pd.api.types.is_string_dtype(series.dtype)
        column = "group" if text else "weight"
        frame = pd.DataFrame({"item": series.index.astype(str), column: series.to_numpy()})
        source = f"weights ({what} item -> {column})"
        values = series.to_numpy()
        if (
            pd.api.types.is_integer_dtype(series.dtype)
            and not pd.api.types.is_bool_dtype(series.dtype)
            and bool((values == 0).any())
        ):  # 0, 1, 2, ... may be group codes: group 0 would silently leave the target
            n_zero = int((values == 0).sum())
            frame.attrs["note"] = (
                f"{source}: integer values with 0 are read as weights, not group codes: "
                f"{n_zero:,} item(s) of weight 0 leave the target; for a macro score over "
                "groups pass text labels (.astype(str)) or a DataFrame with a 'group' "
                "column, and floats (.astype(float)) to keep these weights without this warning"
            )
        return frame, source, None
    if isinstance(weights, str | os.PathLike):
        return (*_read_file(Path(weights)), Path(weights))
    raise InputError(
        f"weights={str(weights)[:40]!r}: a {type(weights).__name__}; expected a CSV/Parquet "
        "path, a DataFrame with columns item and weight (or group), or a Series / mapping "
        "item -> weight (or group)"
    )


def _read_file(path: Path) -> tuple[pd.DataFrame, str]:
    import pandas as pd

    source = f"weights {path}"
    if not path.exists():
        raise InputError(f"{source}: no such file")
    if path.is_dir():
        raise InputError(f"{source}: is a directory; expected a CSV or Parquet file")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            return pd.read_parquet(path), source
        return pd.read_csv(path, dtype={"item": str, "group": str}, keep_default_na=False,
                           na_values={"weight": ["", "nan", "NaN", "NA"]}), source  # fmt: skip
    except Exception as exc:  # pandas and pyarrow raise many types for a damaged file
        raise InputError(
            f"{source}: could not be read ({type(exc).__name__}: {exc}); expected a CSV or "
            "Parquet file with columns item and weight (or group)"
        ) from None


def read_weights(cal: Calibration, weights: Any) -> ItemWeights:
    """Check ``weights`` against the calibration's items and normalise them.

    Parameters
    ----------
    cal : Calibration
        The calibration whose items the weights must list, each once.
    weights : path, DataFrame, Series, mapping or ItemWeights
        A CSV/Parquet file or a table with columns ``item`` and one of ``weight``
        (non-negative, finite, not all 0; any scale) or ``group`` (macro: each group weighs
        the same); a Series / mapping item -> weight (numbers) or item -> group (text);
        an :class:`ItemWeights` already checked against this calibration.

    Returns
    -------
    ItemWeights

    Warns
    -----
    DataWarning
        A Series / mapping of integers with 0: read as weights (its items of weight 0 leave
        the target), not as group codes; also in :attr:`ItemWeights.note`.

    Raises
    ------
    InputError
        A missing or doubled column, a calibrated item not listed (the message names the
        first ones and the count), an item the calibration does not hold, an item listed
        twice, a negative, NaN or infinite weight, all weights 0, an empty group.
    """
    import pandas as pd

    if isinstance(weights, ItemWeights):
        if weights.calibration_hash != cal.hash:
            raise InputError(
                f"{weights.source}: checked against calibration {weights.calibration_hash[:12]}; "
                f"expected this calibration's ({cal.hash[:12]})"
            )
        return weights
    frame, source, path = _frame(weights)
    note = frame.attrs.get("note")

    def row(k: int) -> str:
        """Where row ``k`` is: ``line 5`` of a CSV file, ``row 4`` of a table."""
        from latentbench.io._matrix_checks import _row

        return _row(str(path) if path is not None else None, k)

    columns = [str(c) for c in frame.columns]
    if "item" not in columns:
        raise InputError(
            f"{source}: no column 'item'; expected columns item and weight (or group), "
            f"found {columns[:8]}"
        )
    has = [c for c in ("weight", "group") if c in columns]
    if len(has) != 1:
        said = "both 'weight' and 'group'" if has else "neither 'weight' nor 'group'"
        raise InputError(
            f"{source}: {said}; expected exactly one: weight (a number per item) or group "
            f"(macro: every group weighs the same), found {columns[:8]}"
        )
    kind = has[0]
    # blank too: a CSV's empty cell is read as '' (keep_default_na=False), not NaN
    blank = frame["item"].isna().to_numpy(bool) | (
        frame["item"].astype(str).str.strip() == ""
    ).to_numpy(bool)
    if blank.any():
        k = int(np.flatnonzero(blank)[0])
        raise InputError(f"{source}: field 'item' is empty on {row(k)}; expected an item id")
    items = frame["item"].astype(str).to_numpy()
    dup = pd.Index(items).duplicated()
    if dup.any():
        raise InputError(
            f"{source}: item {items[int(np.flatnonzero(dup)[0])]!r} listed "
            f"{int((items == items[int(np.flatnonzero(dup)[0])]).sum())} times; expected each "
            "calibrated item once"
        )
    pos = cal.positions(list(items))
    unknown = [str(i) for i in items[pos < 0]]
    if unknown:
        raise InputError(
            f"{source}: {len(unknown):,} item(s) the calibration does not hold ({_show(unknown)}); "
            f"expected the calibration's {cal.n_items:,} item ids"
        )
    listed = np.zeros(cal.n_items, dtype=bool)
    listed[pos] = True
    if not listed.all():
        absent = [cal.item_ids[j] for j in np.flatnonzero(~listed)]
        raise InputError(
            f"{source}: {len(absent):,} of the calibration's {cal.n_items:,} items not listed "
            f"({_show(absent)}); expected every calibrated item (weight 0 leaves one out)"
        )
    w = np.zeros(cal.n_items)
    n_groups: int | None = None
    group_codes: np.ndarray | None = None
    group_names: tuple[str, ...] = ()
    if kind == "weight":
        raw = pd.to_numeric(frame["weight"], errors="coerce").to_numpy(np.float64)
        text = frame["weight"].to_numpy()
        bad = ~np.isfinite(raw) | (raw < 0)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            # as written (-2, 'abc'), not NumPy's repr (np.float64(-2.0)); a file's NaN is a
            # blank cell
            shown = "empty" if path is not None and pd.isna(text[k]) else _shown(text[k])
            raise InputError(
                f"{source}: field 'weight' of item {items[k]!r} ({row(k)}) is {shown}; expected "
                "a finite number >= 0"
            )
        if not (raw > 0).any():
            raise InputError(
                f"{source}: field 'weight' is 0 for every item; expected some positive weight"
            )
        w[pos] = raw
        w = w / float(w.sum())
    else:
        groups = frame["group"]
        empty = groups.isna().to_numpy(bool) | (groups.astype(str).str.strip() == "").to_numpy(bool)
        if empty.any():
            k = int(np.flatnonzero(empty)[0])
            raise InputError(
                f"{source}: field 'group' of item {items[k]!r} ({row(k)}) is empty; expected a "
                "group name"
            )
        codes, names = pd.factorize(groups.astype(str), sort=True)
        n_groups = len(names)
        sizes = np.bincount(codes, minlength=n_groups)
        w[pos] = 1.0 / (n_groups * sizes[codes])
        group_codes = np.empty(cal.n_items, dtype=np.int64)
        group_codes[pos] = codes
        group_names = tuple(str(name) for name in names)
    if note:  # said once, where they are read (estimate_many reads them once for all)
        warnings.warn(note, DataWarning, stacklevel=user_stacklevel())
    equal = bool((w == w[0]).all())
    scores, observed = (None, True) if equal else weighted_model_scores(cal, w)
    digest = hashlib.sha256()
    digest.update("\x00".join(cal.item_ids).encode())
    digest.update(np.ascontiguousarray(w, dtype="<f8").tobytes())
    return ItemWeights(
        weights=w,
        kind="items" if kind == "weight" else "groups",
        n_groups=n_groups,
        hash=digest.hexdigest()[:16],
        source=source,
        calibration_hash=cal.hash,
        equal=equal,
        model_scores=scores,
        observed=observed,
        note=note,
        group_codes=group_codes,
        group_names=group_names,
    )


def weighted_model_scores(cal: Calibration, w: np.ndarray) -> tuple[np.ndarray, bool]:
    """The calibration models' weighted scores, shape (K,), and whether they are observed.

    Over each model's observed cells, ``sum w y / sum w`` (NaN for a model that observed no
    item of positive weight), as the plain score is the mean over the observed cells; a
    calibration without responses (a fit directory) gives the fitted scores instead
    (``sum w p`` with ``p`` the fit's probabilities) and False.

    Parameters
    ----------
    cal : Calibration
    w : ndarray of shape (n_items,)
        Non-negative weights, summing to 1.

    Returns
    -------
    scores : ndarray of shape (K,)
    observed : bool
    """
    if cal.responses is not None:
        return observed_weighted_scores(cal.responses, w), True
    return fitted_weighted_scores(cal, w), False


def fitted_weighted_scores(cal: Calibration, w: np.ndarray) -> np.ndarray:
    """The calibration models' fitted weighted scores ``sum_j w_j p_kj``, shape (K,).

    By blocks of rows of the fit's probabilities (16 MB of float64 a block), never the
    models x items array (2,000 x 20,000: 320 MB, and its temporaries).

    Parameters
    ----------
    cal : Calibration
    w : ndarray of shape (n_items,)
        Non-negative weights.

    Returns
    -------
    ndarray of float64 of shape (K,)
    """
    from latentbench.select._estimate_calibration import _fitted

    U = np.asarray(cal.model_factors, dtype=np.float64)
    K, n = U.shape[0], cal.n_items
    out = np.empty(K)
    step = max(1, _FITTED_BLOCK // max(n, 1))
    for a in range(0, K, step):  # a loop over blocks of rows, not over models
        out[a : a + step] = _fitted(U[a : a + step], cal.V, cal.b, cal.sigma) @ w
    return out
