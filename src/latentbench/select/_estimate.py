"""Score a new model from a few items: :func:`estimate` and :class:`EstimateResult`.

See ``docs/estimate.md``. The score interval is design-based (valid whatever the quality of the
IRT model); the rank restates it against the calibration models' scores and the ability is
built to imply the same ranks against their abilities, so the three never contradict each
other.
"""

from __future__ import annotations

import contextvars
import dataclasses
import inspect
import json
import math
import numbers
import os
import reprlib
import warnings
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from latentbench._checks import (
    as_path,
    bounded_scores,
    check_count,
    check_event,
    check_seed,
    is_integer,
    is_number,
    json_problem,
    user_stacklevel,
)
from latentbench._compat import TEXT, text_array
from latentbench._progress import ProgressCallback, notify
from latentbench._repr import html_block
from latentbench.exceptions import DataWarning, InputError
from latentbench.io._matrix_checks import same_id
from latentbench.irt.inference import FEW_MODELS
from latentbench.select._estimate_calibration import (
    Calibration,
    load_calibration,
    score_ability,
    score_ability_knots,
)
from latentbench.select._estimate_design import (
    SequentialEstimate,
    check_design_options,
    check_floor,
    draw_item,
)
from latentbench.select._estimate_weights import (
    ItemWeights,
    group_shares,
    is_weighted,
    read_weights,
    score_label,
    target_label,
)

if TYPE_CHECKING:
    import threading

    import pandas as pd

    from latentbench.io import ResponseMatrix
    from latentbench.irt import IRTResult

    CalibrationLike = Calibration | IRTResult | ResponseMatrix | str | os.PathLike[str]

__all__ = [
    "DEFAULT_MODEL_NAME",
    "EstimateResult",
    "EstimateSet",
    "check_tiny_options",
    "estimate",
    "estimate_many",
    "read_design",
    "read_responses",
    "tiny",
]

Proposal = Literal["residual", "information", "uniform"]
Proxy = Literal["ridge", "irt"]


def sized_for(precision: float | None, target: float | None) -> str | None:
    """What the run's confidence sequence was sized for (``options["sized_for"]``):
    ``precision`` (the requested half-width), ``budget`` (the half-width anticipated at the
    budget's end) or None (neither: the horizons' mixture alone)."""
    if target is None:
        return None
    return "precision" if precision is not None and target == precision else "budget"


def proxy_note(cal: Calibration, proxy: str, used: str) -> list[str]:
    """The warning when the ridge proxy was asked for but the calibration cannot give it."""
    if proxy == used:
        return []
    return [
        f"calibration {cal.source} carries no calibration responses (e.g. a fit directory); "
        "the predictions are the IRT model's alone (proxy 'irt' instead of 'ridge'): the "
        "interval is as valid, possibly wider"
    ]


def floor_note(proposal: str, floor: float) -> list[str]:
    """The warning when a ``floor`` was given with the uniform proposal, which does not use
    it (``pi_j = (1 - floor) / |U| + floor / |U|``, weighted alike: the same design whatever
    the floor); a floor left at its default (:data:`_DEFAULT_FLOOR`, the object) says
    nothing."""
    if proposal != "uniform" or floor is _DEFAULT_FLOOR:
        return []
    return [
        f"floor={floor!r} not used: proposal='uniform' draws the same design whatever the "
        "floor (every unrevealed item alike, or in proportion to its weight), the floor being "
        "the uniform share of the residual or information design; drop floor, or choose "
        "proposal='residual' or 'information'"
    ]


@dataclass(frozen=True)
class EstimateResult:
    """A new model's estimated full-benchmark score, ability and rank.

    Two results are equal (``==``) when every field but ``trajectory`` is; a result is
    hashable (its model, calibration, score, interval, counts, items and answers), so it can
    key a dict or join a set.

    Attributes
    ----------
    model : str
    score : float
        Estimated mean score over all ``n_items`` items (the number a full run would print).
    lower, upper : float
        Anytime-valid interval for that mean at ``level`` (design-based: valid whatever the
        calibration's quality).
    level : float
    n_evaluated, n_items : int
        Items revealed, items in the benchmark.
    theta, theta_lower, theta_upper : float
        Ability on the calibration's scale, coherent with the score and the rank: the interval
        is the hull of the score interval restated on the ability scale (a non-decreasing map
        sending the ``i``-th lowest calibration score to the ``i``-th lowest calibration
        ability) and the model-based (Laplace posterior) interval, so it holds every ability
        of a rank in ``[rank_lower, rank_upper]`` among the calibration models' abilities
        (and, where the model-based part is wider, more); ``theta`` is the model-based MAP
        moved to the nearest ability of rank ``rank`` in it (docs/estimate.md, Method 7).
    rank, rank_lower, rank_upper, n_ranked : int
        Where the score would rank among the calibration models' scores (1 = best) and the
        ranks that the score interval allows (``1 + #(scores > upper)`` to ``1 + #(scores >
        lower)``), out of ``n_ranked`` (the calibration models plus this one).
    stopped : {"precision", "budget", "exhausted", "items"}
    items : tuple of str
        Items evaluated, in order.
    answers : tuple of float
        Their scores.
    probabilities : tuple of float
        The probability with which each was drawn (its design weight is ``1 / (n pi)``).
    calibration_source, calibration_hash : str
    calibration_fit : str
        :attr:`Calibration.fit <latentbench.select.Calibration.fit>`: ``"matrix"`` (the
        low-rank fit made here from responses: ``theta`` on its own scale) or ``"fit"`` (a
        ``latentbench fit``: ``theta`` on its ``abilities.csv`` scale); empty when read from
        a record written before it.
    options : dict
        ``seed``, ``delta``, ``budget``, ``precision``, ``proposal``, ``floor``, ``design``;
        ``weights`` (``kind``, ``n_groups``, ``hash``, ``source``, ``n_positive``) for a
        weighted score (:func:`estimate`'s ``weights``).
    warnings : tuple of str
    trajectory : ndarray of shape (n_evaluated, 3)
        ``score, lower, upper`` after each item (read-only).
    n_calibrated : int
        Items of the calibration. More than ``n_items`` when the model answered only some of
        them: ``score`` is then its mean over those it answered, while the rank compares it
        with the calibration models' means over all ``n_calibrated`` (the summary says so).
        0 when read from a record written before it (``to_dict`` and ``to_frame``: missing).
    contradicted_at : int or None
        The item count after which the answers rejected every candidate score (the
        confidence sequence emptied: an event of probability at most ``1 - level`` when its
        assumptions hold); from then on ``[lower, upper]`` is the certain range that the
        answers leave, and a warning says so. None: never.
    target_weights : tuple of float
        Each evaluated item's weight in a weighted or macro target (``w``, summing to 1 over
        the ``n_items`` items; its draw weighs ``w / probability`` in the estimate); empty
        for the plain mean (no weights, or all equal) and for a record written before it.
    """

    model: str
    score: float
    lower: float
    upper: float
    level: float
    n_evaluated: int
    n_items: int
    theta: float
    theta_lower: float
    theta_upper: float
    rank: int
    rank_lower: int
    rank_upper: int
    n_ranked: int
    stopped: str
    items: tuple[str, ...]
    answers: tuple[float, ...]
    probabilities: tuple[float, ...]
    calibration_source: str
    calibration_hash: str
    options: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    trajectory: np.ndarray = field(
        default_factory=lambda: np.zeros((0, 3)), repr=False, compare=False
    )  # not in ==: an array (its == raised), and to_dict / from_dict leave it out
    n_calibrated: int = 0
    contradicted_at: int | None = None
    calibration_fit: str = ""
    target_weights: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        traj = np.array(self.trajectory, dtype=np.float64).reshape(-1, 3)
        traj.setflags(write=False)
        object.__setattr__(self, "trajectory", traj)
        object.__setattr__(self, "options", dict(self.options))

    def __hash__(self) -> int:
        """Hash of fields that ``==`` compares (not ``options``, a dict): equal results hash
        alike."""
        return hash(
            (self.model, self.calibration_source, self.calibration_hash, self.score,
             self.lower, self.upper, self.level, self.n_evaluated, self.n_items, self.stopped,
             self.items, self.answers)
        )  # fmt: skip

    @property
    def half_width(self) -> float:
        """Half the interval's width, ``(upper - lower) / 2``, on the score's scale."""
        return (self.upper - self.lower) / 2.0

    @property
    def n_full(self) -> int:
        """Items the full-benchmark score is over: the calibrated items (``n_calibrated``),
        or, for a weighted score, those of positive weight (``options["weights"]
        ["n_positive"]``: an item of weight 0 is none of the score's items)."""
        weights = self.options.get("weights")
        return int(weights.get("n_positive") or 0) if weights else int(self.n_calibrated)

    @property
    def answered_subset(self) -> bool:
        """Whether the model answered only some of the score's items (:attr:`n_full`): its
        score is then the (weighted) mean over those it answered, not the full-benchmark
        score."""
        return self.n_full > self.n_items

    def __repr__(self) -> str:
        """Short: the model, its summary line and why it stopped (the items and answers:
        ``items``, ``answers``; everything: :meth:`to_dict`)."""
        return f"EstimateResult({self.model!r}: {self.summary()}; stopped {self.stopped})"

    def _repr_html_(self) -> str:
        """A notebook's view: the model, its summary line and why it stopped."""
        return html_block(f"{self.model}: {self.summary()}\nstopped: {self.stopped}")

    def summary(self) -> str:
        """One line: ``score 0.612 [0.597, 0.627] after 140 of 12,032 items; would rank 7th
        (5th–9th) of 29``.

        Returns
        -------
        str
        """
        rank = f"would rank {_ordinal(self.rank)}"
        if self.rank_lower != self.rank_upper:
            rank += f" ({_ordinal(self.rank_lower)}\u2013{_ordinal(self.rank_upper)})"
        lower, upper = outward(self.lower, self.upper)
        # an interval of width 0 (every item revealed) is the exact mean: outward rounding
        # would print it as [0.906, 0.907]
        interval = "(exact)" if self.lower == self.upper else f"[{lower}, {upper}]"
        weights = self.options.get("weights")
        label = score_label(weights)
        full = self.n_full  # a weighted score: the items of positive weight
        if self.answered_subset:  # what the score and rank are over
            means = "weighted means" if is_weighted(weights) else "means"
            return (
                f"{label} {self.score:.3f} {interval} after {self.n_evaluated:,} of the "
                f"{self.n_items:,} items it answered (of {full:,}); {rank} of "
                f"{self.n_ranked} against the others' {means} on all {full:,}"
            )
        return (
            f"{label} {self.score:.3f} {interval} after "
            f"{self.n_evaluated:,} of {self.n_items:,} items; {rank} of {self.n_ranked}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (the content of ``estimate.json``).

        Returns
        -------
        dict of str to Any
        """
        out: dict[str, Any] = {
            "model": self.model,
            "score": self.score,
            "lower": self.lower,
            "upper": self.upper,
            "level": self.level,
            "n_evaluated": self.n_evaluated,
            "n_items": self.n_items,
            "theta": self.theta,
            "theta_lower": self.theta_lower,
            "theta_upper": self.theta_upper,
            "rank": self.rank,
            "rank_lower": self.rank_lower,
            "rank_upper": self.rank_upper,
            "n_ranked": self.n_ranked,
            "stopped": self.stopped,
            "items": list(self.items),
            "answers": list(self.answers),
            "probabilities": list(self.probabilities),
            "calibration": {
                "source": self.calibration_source,
                "hash": self.calibration_hash,
                "fit": self.calibration_fit,
                "theta_scale": _THETA_SCALE.get(self.calibration_fit, ""),
            },
            "options": dict(self.options),
            "warnings": list(self.warnings),
            "n_calibrated": self.n_calibrated or None,  # 0: a record without it (not a count)
            "contradicted_at": self.contradicted_at,
            "summary": self.summary(),
        }
        if self.target_weights:  # a weighted target only: a plain record is as before
            out["target_weights"] = list(self.target_weights)
        return out

    def save(self, out: str | os.PathLike[str]) -> Path:
        """Write ``estimate.json`` and its one-row ``estimates.csv`` into the directory ``out``
        (created), as ``latentbench estimate --out`` writes one model's; returns the path of
        ``estimate.json``.

        The folder then holds this estimate only: an earlier call's ``estimates.csv`` (of
        other models, say the checkpoints estimated before) is replaced, and its
        ``estimate_status.json`` removed (:meth:`EstimateSet.save`, which writes the files
        all together).

        Parameters
        ----------
        out : path-like
            The directory (created when absent).

        Returns
        -------
        Path
            ``out/estimate.json``.
        """
        return EstimateSet((self,), single=True).save(out)

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> EstimateResult:
        """The result a :meth:`to_dict` record (one entry of ``estimate.json``) describes;
        without its ``trajectory``, which the record does not hold.

        Parameters
        ----------
        record : mapping
            One record as :meth:`to_dict` writes it.

        Returns
        -------
        EstimateResult

        Raises
        ------
        InputError
            A record without the fields of one (the message names the missing field).
        """
        fields = {f.name for f in dataclasses.fields(cls)} - {"trajectory"}
        try:
            calibration = record["calibration"]
            values = {k: v for k, v in record.items() if k in fields}
            values.update(
                calibration_source=calibration["source"],
                calibration_hash=calibration["hash"],
                calibration_fit=str(calibration.get("fit") or ""),
            )
            for name in ("items", "answers", "probabilities", "warnings", "target_weights"):
                values[name] = _record_list(values, name)
            if values.get("n_calibrated") is None:  # a record written before it, or re-saved
                values["n_calibrated"] = 0
            _check_record_numbers(values, ints=(*_RECORD_INTS, "n_calibrated"))
            _check_record_ranges(values)
            _check_record_columns(values)
            return cls(**values)
        except (KeyError, TypeError) as exc:
            raise InputError(f"not an estimate record ({type(exc).__name__}: {exc})") from None


def _check_record_ranges(values: Mapping[str, Any], point: str = "score") -> None:
    """Refuse an edited record whose score or interval is no score (outside [0, 1]), whose
    interval is reversed or whose level is no level: they were read back as they were and
    drawn so (a score of 1.5, an interval from 0.9 to 0.1, a level of 2). ``point``:
    ``"difference"`` for a comparison's record (a difference of scores, in [-1, 1])."""
    low, what = (-1.0, "a difference of scores in [-1, 1]") if point == "difference" else (
        0.0, "a score in [0, 1]")  # fmt: skip
    for name in (point, "lower", "upper"):
        if name in values and not low <= values[name] <= 1.0:
            raise InputError(f"field {name!r} holds {values[name]!r}; expected {what}")
    if "lower" in values and "upper" in values and values["lower"] > values["upper"]:
        raise InputError(
            f"fields 'lower' and 'upper' hold {values['lower']!r} > {values['upper']!r}; "
            "expected lower <= upper"
        )
    if "level" in values and not 0.0 < values["level"] <= 1.0:  # 1.0: a delta under 1e-16
        raise InputError(f"field 'level' holds {values['level']!r}; expected 1 - delta in (0, 1]")


def _check_record_columns(values: Mapping[str, Any]) -> None:
    """Refuse a record whose per-item fields do not follow its ``items`` (an edited
    ``estimate.json``): ``answers`` one per item, ``probabilities`` and ``target_weights``
    one per item or none (a record written before them), ``target_weights`` finite numbers;
    the report's items table failed on them with a pandas ValueError traceback."""
    n = len(values["items"])
    for name in ("answers", "probabilities", "target_weights"):
        column = values[name]
        if len(column) != n and (name == "answers" or column):
            also = "" if name == "answers" else " or none"
            raise InputError(
                f"field {name!r} holds {len(column):,} values; expected {n:,}, one per item "
                f"of field 'items'{also}"
            )
    bad = [v for v in values["target_weights"] if not _finite_number(v)]
    if bad:
        raise InputError(
            f"field 'target_weights' holds {bad[0]!r} ({len(bad):,} such value(s)); expected "
            "a finite number for each item"
        )
    _check_item_values(values, "answers", "probabilities")


def _record_list(values: Mapping[str, Any], name: str) -> tuple[Any, ...]:
    """The record's list field ``name`` as a tuple (empty when absent); an edited record's
    text or object there is refused (a text was read as its characters, an object as its
    keys: items ``a``, ``a``, ... or answers ``'0'``, ``'1'``, ... read back silently)."""
    value = values.get(name, ())
    if isinstance(value, (str, bytes, Mapping)):
        raise InputError(
            f"field {name!r} holds {reprlib.repr(value)} (a {type(value).__name__}); expected a "
            "list"
        )
    return tuple(value)


def _check_item_values(values: Mapping[str, Any], *names: str) -> None:
    """Refuse an edited record's answer that is no score in [0, 1] or probability that is no
    finite number > 0 (a text, a null): it was read back, then shown as it was or failed with
    numpy's 'could not convert string to float' where the items table is made. ``names``: the
    fields, a name starting with ``answers`` holding scores."""
    for name in names:
        score = name.startswith("answers")
        bad = [
            v
            for v in values[name]
            if not _finite_number(v) or (not 0.0 <= v <= 1.0 if score else not v > 0.0)
        ]
        if bad:
            raise InputError(
                f"field {name!r} holds {bad[0]!r} ({len(bad):,} such value(s)); expected "
                + ("a score in [0, 1]" if score else "a finite number > 0")
                + " for each item"
            )


def _finite_number(value: Any) -> bool:
    """``value`` is a finite real number (not a bool, a text or None), as ``to_dict``
    writes a record's numbers."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


_RECORD_FLOATS = ("score", "lower", "upper", "level", "theta", "theta_lower", "theta_upper")
_RECORD_INTS = ("n_evaluated", "n_items", "rank", "rank_lower", "rank_upper", "n_ranked")


def _check_record_numbers(
    values: Mapping[str, Any],
    floats: tuple[str, ...] = _RECORD_FLOATS,
    ints: tuple[str, ...] = _RECORD_INTS,
) -> None:
    """Refuse a record whose numbers are not numbers (an edited ``estimate.json``: ``null``,
    ``NaN``, ``"0.5"``), naming the field, the value and what was expected: they were taken
    as they were, and the report's page failed on them with a TypeError traceback.
    ``to_dict`` writes finite numbers only (``estimate.json`` is written with
    ``allow_nan=False``), as ``compare.json`` is (``floats`` and ``ints``: its fields)."""
    for name in floats:
        value: Any = values.get(name)
        if name in values and not (is_number(value) and math.isfinite(value)):
            raise InputError(f"field {name!r} holds {value!r}; expected a finite number")
    for name in ints:
        value = values.get(name)
        if name in values and (isinstance(value, bool) or not isinstance(value, numbers.Integral)):
            raise InputError(f"field {name!r} holds {value!r}; expected a whole number")


_THETA_SCALE = {
    "matrix": "the low-rank fit made from the calibration's responses (calibration models: "
    "mean 0, sd 1 at rank 1); not the scale of a `latentbench fit` of the same cells",
    "fit": "the abilities.csv scale of the `latentbench fit` given as the calibration",
}
"""What ``theta`` is measured on, by :attr:`Calibration.fit` (``estimate.json``'s
``calibration.theta_scale``)."""


def record_file(path: str | os.PathLike[str], name: str) -> Path:
    """The saved record ``name`` (``estimate.json``, ``compare.json``) that ``path`` gives:
    the file itself, or ``path/name`` for the folder holding it; an :class:`InputError`
    naming it when there is none."""
    file = as_path(path, "path")
    if file.is_dir():
        file = file / name
    if not file.is_file():
        article = "an" if name[:1] in "aeiou" else "a"
        raise InputError(f"{file}: no such file; expected {article} {name}")
    return file


def write_json(out: str | os.PathLike[str], name: str, data: Any) -> Path:
    """Write ``data`` as ``out/name`` (the folder created; NaN refused); returns its path."""
    from latentbench.io import check_destination

    folder = as_path(out, "out")
    # a file there, or a folder at out/name: said, not FileExistsError or IsADirectoryError
    check_destination(folder, "dir", flag="out=", files=[name])
    from latentbench.io._outputs import replace_whole

    text = json.dumps(data, indent=2, allow_nan=False)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    replace_whole(path, text)  # another call writing it at once never interleaves with it
    return path


def _write_json_file(path: Path, data: Any) -> None:
    """Write ``data`` as JSON at ``path`` (NaN refused), for
    :func:`~latentbench.io._outputs.write_directory`."""
    path.write_text(json.dumps(data, indent=2, allow_nan=False))


def outward(lower: float, upper: float, fmt: str = ".3f") -> tuple[str, str]:
    """``lower`` and ``upper`` printed with ``fmt``'s decimals, rounded outward (down, up), so
    that the printed interval holds the computed one (rounding to nearest narrowed it by up to
    half a unit of the last digit)."""
    digits = int(fmt.rstrip("f").lstrip("+").lstrip(".") or 0)
    unit = 10.0**digits
    # 1e-9 of a unit absorbs representation error only (0.874 stored as 0.87399999999999)
    down = math.floor(lower * unit + 1e-9) / unit
    up = math.ceil(upper * unit - 1e-9) / unit
    # a bound rounded to 0 keeps its sign: -0.0003 shows as -0.000, not +0.000
    down, up = (-0.0 if r == 0 and v < 0 else r + 0.0 for r, v in ((down, lower), (up, upper)))
    return format(down, fmt), format(up, fmt)


def _ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


# ------------------------------------------------------------------------------ answers


#: The name of a model whose answers carry none (a table without a ``model`` column, a
#: mapping, an array, an unnamed Series), whatever the container: the name seeds the draws,
#: so the same answers give the same estimate in any of them.
DEFAULT_MODEL_NAME = "model"

_MODEL_LOOKALIKES = frozenset({"model", "model_name", "model_id", "models", "name", "system"})
"""Column names (lower case) a results file may give its model column instead of ``model``."""


def _default_range(index: pd.Index) -> bool:
    """Whether ``index`` is pandas' default ``0, 1, ...`` (it holds nothing of the user's)."""
    import pandas as pd

    return isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1


def _models_index(frame: pd.DataFrame) -> bool:
    """Whether ``frame`` is a wide pivot with the model ids as its index (as
    ``ResponseMatrix.from_wide`` reads it): no ``model``, ``item`` or score column, and an
    index named ``model`` (or ``model_id``, ``name``, ...: :data:`_MODEL_LOOKALIKES`), or an
    unnamed one that is not integers (a row position such as ``full.iloc[[5]]``'s ``5`` is
    not a model id: integer ids need the index named; a table of scores indexed by item ids
    has a score column)."""
    import pandas as pd

    from latentbench.io._matrix_checks import _SCORE_COLUMNS

    headers = {str(c) for c in frame.columns}
    if headers & {"model", "item", *_SCORE_COLUMNS}:
        return False
    index = frame.index
    if str(index.name).lower().replace("-", "_") in _MODEL_LOOKALIKES:  # named: any ids
        return True
    return index.name is None and not (
        pd.api.types.is_integer_dtype(index.dtype) or pd.api.types.is_bool_dtype(index.dtype)
    )


def read_responses(
    path: str | os.PathLike[str] | pd.DataFrame,
    *,
    source: str = "table",
    metric: str | Mapping[str, str] | None = None,
    filter: str | Mapping[str, str] | None = None,
    split: str | None = None,
    group: str | None = None,
    duplicates: str | None = None,
    models: Sequence[str] | None = None,
) -> dict[str, pd.Series]:
    """A new model's (or several models') results from a file or a table (a DataFrame laid
    out as a file), or from a tool's result files, one Series per model.

    Long layout: columns ``item`` and ``score`` (or ``correct`` / ``is_correct``), plus
    ``model`` when the file holds several models (without it, the model is named after the
    file; ``"model"`` for a DataFrame, as for every in-memory input). The store's key columns
    (``latentbench export``) are read as
    :meth:`ResponseMatrix.read <latentbench.io.ResponseMatrix.read>` reads them: several
    ``metric``, ``filter`` or ``split`` values are an error, several ``benchmark`` values too
    when they share an item id (disjoint ones are said in a DataWarning), and the trials of
    one (model, item) are averaged (said). Wide layout: a ``model`` column (in a file, else
    the first column when it holds text, as :meth:`ResponseMatrix.read
    <latentbench.io.ResponseMatrix.read>` reads it) and one column per item; a DataFrame
    may hold the model ids as its index instead (the pivot
    ``frame.pivot(index="model", columns="item", values="score")``, as
    :meth:`ResponseMatrix.from_wide <latentbench.io.ResponseMatrix.from_wide>` reads it).
    An empty cell (or a missing marker such as ``NA``) is not answered; anything else must be
    a score in [0, 1] and every id a string or an integer, else the error names the file, the
    row or column and the value.

    Parameters
    ----------
    path : path-like or DataFrame
        The results: a table file or DataFrame (``source="table"``), or a tool's result file
        or folder.
    source : str
        ``"table"`` (default), or the tool that wrote ``path``: any source of
        :func:`latentbench.io.formats.read_results` (``"lm-eval"``, ``"lighteval"``,
        ``"helm"``, ``"inspect"``, ``"opencompass"``, ``"eee"``), read as ``latentbench ingest
        SOURCE PATH`` reads it; the results must then be of one benchmark.
    metric, filter, split, group : str, optional
        With a tool's ``source``: the metric, filter and (HELM) split to read, and the name
        under which several tasks are read as one benchmark (items ``TASK/ID``), as
        :func:`~latentbench.io.formats.read_results` takes them (a metric or filter also as a
        mapping task -> name): read the new model's results with the ``group`` its
        calibration was ingested with.
    duplicates : {"error", "latest", "mean"}, optional
        With a tool's ``source``: one answer given different scores by two files (a task run
        twice into one folder) is an error naming both (the default), or the latest run's
        score, or the mean, as :func:`~latentbench.io.formats.read_results` takes it.
    models : list of str, optional
        With a table file holding a ``model`` column: read only these models' rows (a Parquet
        file's others are not read, a CSV's are dropped chunk by chunk), so that one model of
        a leaderboard's file does not take the whole file's memory. A name the file lacks,
        or a defect in the rows read, reads the whole file (whose error names what is there).

    Returns
    -------
    dict
        ``model -> Series`` of scores indexed by item id (NaN = not answered).
    """
    import pandas as pd

    from latentbench.select._estimate_calibration import _said_while

    def read(only: list[str] | None, by_rows: list[bool] | None = None) -> dict[str, pd.Series]:
        return _read_responses(
            path,
            source=source,
            metric=metric,
            filter=filter,
            split=split,
            group=group,
            duplicates=duplicates,
            models=only,
            by_rows=by_rows,
        )

    def some_or_all() -> dict[str, pd.Series]:
        if models is None or isinstance(path, pd.DataFrame) or source != "table":
            return read(None)
        by_rows: list[bool] = []  # whether the file was read by rows (else it was read whole)
        caught: list[warnings.WarningMessage] = []

        def say() -> None:  # a by-rows read's warnings, once it stands; a whole read's
            for w in caught:
                warnings.warn(w.message, w.category, stacklevel=user_stacklevel())

        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                answers = read([str(m) for m in models], by_rows)
        except InputError:  # said as the whole file's read says it (its line, its models)
            if not by_rows:  # the file was read whole: its error and warnings stand
                say()
                raise
            return read(None)
        if by_rows and not all(str(m) in answers for m in models):
            return read(None)  # a name the rows lack: the whole file's models are named
        say()
        return answers

    answers, said = _said_while(some_or_all)
    if said:  # said once here, and kept with each model's result (estimate.json's warnings)
        for series in answers.values():
            series.attrs["read_notes"] = tuple(_Said(message) for _, message in said)
    return answers


class _Said(str):
    """A note already said as a warning where it arose (reading the answers): kept in the
    result's ``warnings`` without being said again."""

    __slots__ = ()


def _read_responses(
    path: str | os.PathLike[str] | pd.DataFrame,
    *,
    source: str,
    metric: str | Mapping[str, str] | None,
    filter: str | Mapping[str, str] | None,
    split: str | None,
    group: str | None,
    duplicates: str | None,
    models: list[str] | None = None,
    by_rows: list[bool] | None = None,
) -> dict[str, pd.Series]:
    """:func:`read_responses`, its warnings said as they come; ``models``: read only their
    rows where the file allows it (``True`` appended to ``by_rows`` when it did; else the
    file was read whole)."""
    import pandas as pd

    from latentbench.io._matrix_checks import (
        _SCORE_COLUMNS,
        _holds_numbers,
        refuse_case_lookalikes,
        refuse_long_without_item,
        refuse_long_without_score,
    )

    if source == "table":
        chosen = (
            ("metric", metric),
            ("filter", filter),
            ("split", split),
            ("group", group),
            ("duplicates", duplicates),
        )
        given = [f"{k}={v!r}" for k, v in chosen if v is not None]
        if given:
            raise InputError(
                f"{', '.join(given)}: applies to a tool's results; expected source= the tool "
                "that wrote the results (lm-eval, ...), or a table holding one metric"
            )
        frame, file, stem = _responses_frame(path, models, by_rows)
    else:
        options = {
            "metric": metric,
            "filter": filter,
            "split": split,
            "group": group,
            "duplicates": duplicates,
        }
        frame, file, stem = _tool_results(path, source, options)
    columns = [str(c) for c in frame.columns]
    if len(frame) == 0:
        raise InputError(f"in {file}: the table has no rows; expected a model's answers")
    if {"item", "order", "probability"} <= set(columns) and not set(columns) & set(_SCORE_COLUMNS):
        raise InputError(
            f"{file}: a fixed design (columns {', '.join(columns[:7])}: the output of "
            "`latentbench tiny`), not a model's answers; give it as the design (items=FILE) "
            "and the model's results on its items as the responses"
        )
    score = next((c for c in _SCORE_COLUMNS if c in columns), None)
    # a 'Model' column alone is estimate's to judge (one name: the model's, said)
    refuse_case_lookalikes(columns, f"in {file}: ", model=False)
    refuse_long_without_score(columns, f"in {file}", _SCORE_COLUMNS, model=None)
    refuse_long_without_item(frame, f"in {file}", _SCORE_COLUMNS)
    if "item" in columns and score is not None:
        in_memory = isinstance(path, pd.DataFrame)
        answers = _long_responses(frame, columns, score, file, stem, in_memory)
        if source != "table":  # how they were read, for the advice when they do not match
            for series in answers.values():
                series.attrs["read"] = {"tool": source, "group": group}
        return answers
    if "model" in columns:
        return _wide_responses(frame, columns, file)
    if not isinstance(path, pd.DataFrame) and score is None and len(columns) > 1:
        first = frame.columns[0]
        if not _holds_numbers(frame[first]):  # ids in the first column, as ResponseMatrix.read
            return _wide_responses(frame.rename(columns={first: "model"}), columns, file)
    hint = ""
    if isinstance(path, pd.DataFrame) and not _default_range(path.index):
        hint = (
            " (the index was not read: item ids in it? frame.reset_index(names='item'); "
            "model ids in it? frame.rename_axis('model'))"
        )
    raise InputError(
        f"{file}: no 'item' and 'score' columns (long layout) nor a 'model' column (wide "
        f"layout); found columns {columns[:8]}{hint}"
    )


def _tool_results(
    path: str | os.PathLike[str] | pd.DataFrame,
    source: str,
    options: dict[str, Any],
) -> tuple[pd.DataFrame, str, str]:
    """A tool's result files (``read_results(source, path)``) as a results table of one
    benchmark, what messages call them, and the file's stem."""
    import pandas as pd

    from latentbench.io._arrival import unpacked_path
    from latentbench.io.formats import read_results

    if isinstance(path, pd.DataFrame):
        raise InputError(
            f"source={source!r} reads a tool's result files; expected a path, not a DataFrame "
            "(a DataFrame is read as a results table: leave source at 'table')"
        )
    if not Path(path).exists():
        raise InputError(f"responses {path}: no such file or folder")
    chosen = {k: v for k, v in options.items() if v is not None}
    frame, report = read_results(source, Path(path), **chosen)
    if not len(frame):  # every record dropped (say, --split of no run): say why
        why = "; ".join(f"{reason}: {n:,}" for reason, n in report.dropped.items())
        raise InputError(
            f"{path}: {source} results of {len(report.files):,} file(s) gave no answers "
            f"({why or 'no records'}); expected a model's answers"
        )
    benchmarks = sorted(map(str, frame["benchmark"].unique()))
    if len(benchmarks) > 1:
        shown = ", ".join(repr(b) for b in benchmarks[:5]) + (
            ", ..." if len(benchmarks) > 5 else ""
        )
        raise InputError(
            f"{path}: {source} results of {len(benchmarks)} benchmarks ({shown}); expected one "
            "benchmark's results: for a calibration of one of them (item ids its doc ids), "
            "give that benchmark's result file(s) only; for a calibration ingested with "
            "group=NAME (item ids TASK/ID), read them with the same group=NAME"
        )
    return frame.reset_index(drop=True), str(path), unpacked_path(path).stem


def _responses_frame(
    path: str | os.PathLike[str] | pd.DataFrame,
    models: list[str] | None = None,
    by_rows: list[bool] | None = None,
) -> tuple[pd.DataFrame, str, str]:
    """The answers table with a fresh index (a wide pivot's model index made its ``model``
    column), what messages call it, and the name of a model that the table does not name;
    with ``models``, a file's rows of those models only where the file allows it
    (:func:`~latentbench.io._files.read_table_rows`; ``True`` then appended to ``by_rows``),
    else all."""
    import pandas as pd

    from latentbench.io._arrival import unpacked_path
    from latentbench.io._files import read_table_file, read_table_rows

    if isinstance(path, pd.DataFrame):  # a table in memory: named so in the messages
        if _models_index(path):
            # a wide pivot with the models as its index (as ResponseMatrix.from_wide reads it)
            return (
                path.rename_axis("model").reset_index(),
                "the responses table",
                DEFAULT_MODEL_NAME,
            )
        return path.reset_index(drop=True), "the responses table", DEFAULT_MODEL_NAME
    stem = unpacked_path(path).stem  # RESP.csv.gz: the model 'RESP'
    near: list[str] = []  # the near twins of the models read, whose rows are not kept
    rows = None if models is None else read_table_rows(Path(path), "model", models, near=near)
    frame = read_table_file(Path(path)) if rows is None else rows
    if rows is not None and by_rows is not None:
        by_rows.append(True)
    elsewhere = _NAMED_ELSEWHERE.get()  # named by the caller for another use (compare)
    for name in models if models is not None and rows is not None else ():
        twins = [t for t in near if same_id(t) == same_id(name) and t not in elsewhere]
        if twins:
            note = _twins_not_used(name, twins, str(path))
            warnings.warn(note, DataWarning, stacklevel=user_stacklevel())
    return frame.reset_index(drop=True), str(path), stem


_NAMED_ELSEWHERE: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "latentbench_named_elsewhere", default=()
)
"""Model ids the caller of a file's read names for another use (the other side of
:func:`compare`): a near twin among them is no model left out (:func:`_responses_frame`)."""


def _twins_not_used(name: str, twins: list[str], where: str | None = None) -> str:
    """The note naming the near twins of model ``name`` (ids that differ from it only by
    case, surrounding spaces or Unicode normalisation, escaped as :func:`ascii` writes them)
    whose answers were not used (in ``where``, a file read for ``name``'s rows)."""
    shown = " and ".join(map(ascii, twins[:5])) + (
        f" (and {len(twins) - 5} more)" if len(twins) > 5 else ""
    )
    whose = f"the rows of {shown} in {where}" if where else f"the answers of {shown}"
    return (
        f"model {name!r}: {whose} (ids that differ from it only by case, surrounding spaces "
        "or Unicode normalisation) were not used: ids are matched exactly, so each is a "
        "model of its own; name it if it is the one meant, or write them alike in the file "
        "if they are one"
    )


def _long_responses(
    frame: pd.DataFrame, columns: list[str], score: str, file: str, stem: str, in_memory: bool
) -> dict[str, pd.Series]:
    """The answers of a long table (columns ``item``, ``score`` and maybe ``model``), one
    Series per model; ``in_memory``: the table was a DataFrame (said in a warning)."""
    values = _long_scores(frame, columns, score, file)
    lookalike = _model_lookalikes(frame, columns, file)
    frame, values, labels = _reduce_key_columns(frame, values, file, stem, score)
    if "model" not in columns:  # one model, named after the file, unless ...
        _refuse_several_unnamed(frame, values, file, lookalike)
        if lookalike:
            named = (
                f"named {stem!r}, the name of answers that carry none"
                if in_memory
                else f"named after the file {stem!r}"
            )
            warnings.warn(
                f"in {file}: no 'model' column (it is read as one model's answers, "
                f"{named}); if {lookalike[0]!r} holds the model's name, name it 'model'",
                DataWarning,
                stacklevel=user_stacklevel(),
            )
    return _answers_by_model(frame, values, labels, columns, file, stem)


def _long_scores(frame: pd.DataFrame, columns: list[str], score: str, file: str) -> np.ndarray:
    """The scores of a long answers table (NaN = not answered), its ids checked: a score that
    is not a number or is outside [0, 1], or a bad item or model id, is refused."""
    from latentbench.io._matrix_checks import (
        _row,
        _show,
        numeric_scores,
        refuse_bad_ids,
        score_advice,
    )

    def whose(k: int) -> str:
        """`` (model 'B', item 'q3')``: whose row ``k`` is (with --model M, another model's
        row may be the file's first defect, named so)."""
        model = f"model {str(frame['model'].iloc[k])!r}, " if "model" in columns else ""
        return f" ({model}item {str(frame['item'].iloc[k])!r})"

    values, bad = numeric_scores(frame[score])
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"in {file}: column {score!r}, {_row(file, k)}{whose(k)}: value "
            f"{_show(frame[score].iloc[k])} is not numeric; expected a score in [0, 1] "
            f"(empty = not answered){score_advice(frame[score].iloc[k])}"
        )
    refuse_bad_ids(frame["item"], "item", file, "item")
    if "model" in columns:
        refuse_bad_ids(frame["model"], "model", file, "model")
    values, outside = bounded_scores(values)  # inf too; a rounding past 0 or 1 is the bound
    if outside.any():
        k = int(np.flatnonzero(outside)[0])
        raise InputError(
            f"in {file}: column {score!r}, {_row(file, k)}{whose(k)}: score "
            f"{_show(values[k])} is outside [0, 1]; expected a score in [0, 1] (empty = not "
            "answered)"
            f"{score_advice(frame[score].iloc[k], values)}"
        )
    return values


def _model_lookalikes(frame: pd.DataFrame, columns: list[str], file: str) -> list[str]:
    """The columns named like a model column (:data:`_MODEL_LOOKALIKES`); without a ``model``
    column, one holding several names is refused (looked at before trials are averaged: rows
    of two models under a misnamed column are not two trials of one model)."""
    lookalike = [c for c in columns if c.lower().replace("-", "_") in _MODEL_LOOKALIKES]
    n_names = {c: int(frame[c].nunique(dropna=True)) for c in lookalike}
    varied = [c for c in lookalike if n_names[c] > 1]
    if "model" not in columns and varied:  # several models without their column
        raise InputError(
            f"in {file}: no 'model' column and column {varied[0]!r} holds "
            f"{n_names[varied[0]]} names; a file of several models needs their ids in a "
            f"column named 'model': rename {varied[0]!r} to 'model'"
        )
    return lookalike


def _refuse_several_unnamed(
    frame: pd.DataFrame, values: np.ndarray, file: str, lookalike: list[str]
) -> None:
    """Refuse a table without a ``model`` column that gives an item again with another score
    (answers of several models; the same row twice is collapsed later)."""
    import pandas as pd

    from latentbench.io._matrix_checks import _row

    pairs = pd.DataFrame({"i": frame["item"].astype(TEXT).to_numpy(), "v": values})
    again = (pairs["i"].duplicated() & ~pairs.duplicated()).to_numpy()
    if again.any():
        k = int(np.flatnonzero(again)[0])
        advice = f": rename {lookalike[0]!r} to 'model'" if lookalike else ""
        raise InputError(
            f"in {file}: no 'model' column and item {str(frame['item'].iloc[k])!r} is on "
            f"{_row(file, k)} again with another score; a file of several models needs their "
            f"ids in a column named 'model'{advice}"
        )


def _answers_by_model(
    frame: pd.DataFrame,
    values: np.ndarray,
    labels: dict[str, str],
    columns: list[str],
    file: str,
    stem: str,
) -> dict[str, pd.Series]:
    """One Series of scores per model, indexed by item id, from a long table's rows (a
    (model, item) repeated with the same score collapsed, said; with another, refused); the
    table's labels go in each Series' ``attrs``."""
    import pandas as pd

    from latentbench.io._matrix_checks import _row, refuse_long_summary_ids

    models = (
        frame["model"].astype(TEXT)
        if "model" in columns
        else pd.Series([stem] * len(frame), index=frame.index)
    )
    items = frame["item"].astype(TEXT)
    for ids, kind in ((models, "model"), (items, "item")):
        if kind == "item" or "model" in columns:
            refuse_long_summary_ids(ids, kind, kind, f"in {file}: ", lambda k: _row(file, k))
    exact = _repeated_answers(models, items, values, file)
    if exact.any():
        models, items, values = models[~exact], items[~exact], values[~exact]
    out: dict[str, pd.Series] = {}
    for name, idx in models.groupby(models, sort=False).groups.items():
        series = pd.Series(values[models.index.get_indexer(idx)], index=items.loc[idx].to_numpy())
        if labels:  # the file's benchmark / metric / filter / split, compared with the
            series.attrs["labels"] = dict(labels)  # calibration's in the estimate
            series.attrs["source"] = file
        out[str(name)] = series
    return out


def _repeated_answers(
    models: pd.Series, items: pd.Series, values: np.ndarray, file: str
) -> np.ndarray:
    """The mask of rows repeating an earlier (model, item) with the same score (warned: they
    are collapsed, as the matrix reader does); one with another score is an error naming both
    rows."""
    import pandas as pd

    from latentbench.io._matrix_checks import _row, _show

    keyed = pd.DataFrame({"m": models.to_numpy(), "i": items.to_numpy(), "v": values})
    exact = keyed.duplicated(keep="first").to_numpy()
    clash = keyed[~exact].duplicated(["m", "i"], keep=False).to_numpy()
    if clash.any():
        rows = np.flatnonzero(~exact)[clash]
        m, i = keyed["m"][rows[0]], keyed["i"][rows[0]]
        a, b = np.flatnonzero(((keyed["m"] == m) & (keyed["i"] == i)).to_numpy() & ~exact)[:2]
        raise InputError(
            f"in {file}: {_row(file, int(a))} and {_row(file, int(b))} both give model "
            f"{m!r}, item {i!r}, with different scores {_show(values[a])} and "
            f"{_show(values[b])}; expected one score per (model, item)"
        )
    if exact.any():
        warnings.warn(
            f"in {file}: {int(exact.sum())} repeated (model, item) rows with identical "
            "scores were collapsed",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    return exact


def _wide_responses(frame: pd.DataFrame, columns: list[str], file: str) -> dict[str, pd.Series]:
    """The answers of a wide table (a ``model`` column, one column per item), one Series per
    model; a model on two rows, or a cell that is not a score in [0, 1], is refused."""
    import pandas as pd

    from latentbench.io._matrix_checks import (
        _row,
        _show,
        numeric_scores,
        refuse_bad_ids,
        refuse_wide_non_items,
        score_advice,
    )

    refuse_bad_ids(frame["model"], "model", file, "model")
    names = frame["model"].astype(TEXT)
    repeated = names.duplicated(keep=False).to_numpy()
    if repeated.any():
        first, second = np.flatnonzero(repeated & (names == names[repeated].iloc[0]))[:2]
        raise InputError(
            f"in {file}: model {names.iloc[first]!r} is on {_row(file, int(first))} and "
            f"{_row(file, int(second))}; expected one row per model (wide layout), or a "
            "long table with columns 'item' and 'score' (or 'correct' / 'is_correct'); "
            f"found columns {columns[:8]}"
        )
    cells = frame.drop(columns="model")
    refuse_wide_non_items(cells, names.tolist(), f"in {file}: ", lambda k: _row(file, k))
    item_ids = [str(c) for c in cells.columns]
    flat = pd.Series(cells.to_numpy(dtype=object).ravel())
    values, bad = numeric_scores(flat)
    values = values.reshape(len(cells), len(item_ids))
    values, outside = bounded_scores(values)  # inf too; a rounding past 0 or 1 is the bound
    for mask, what in ((bad.reshape(values.shape), "is not numeric"), (outside, None)):
        if mask.any():
            row, col = (int(v) for v in np.argwhere(mask)[0])
            shown = _show(flat.iloc[row * len(item_ids) + col])
            raise InputError(
                f"in {file}: model {names.iloc[row]!r} ({_row(file, row)}), column "
                f"{item_ids[col]!r}: value {shown} {what or 'is outside [0, 1]'}; expected a "
                "score in [0, 1] (empty = not answered)"
                f"{score_advice(flat.iloc[row * len(item_ids) + col], values)}"
            )
    return {names.iloc[k]: pd.Series(values[k], index=item_ids) for k in range(len(names))}


def _reduce_key_columns(
    frame: pd.DataFrame, values: np.ndarray, file: str, stem: str, score: str
) -> tuple[pd.DataFrame, np.ndarray, dict[str, str]]:
    """The canonical key columns of a long answers table read as ``Store.matrix`` reads them
    (:func:`latentbench.io._long_keys.check_key_columns`): several metrics, filters or splits,
    or benchmarks sharing an item id, are refused; disjoint benchmarks are said; the trials of
    one (model, item) become their mean (said, with the count). Also returns the table's
    labels (its one benchmark, metric, filter, split)."""
    import pandas as pd

    from latentbench.io._long_keys import (
        check_key_columns,
        mean_over_trials,
        text_labels,
        trial_notes,
    )
    from latentbench.io._matrix_checks import _row

    where = f"in {file}: "
    models = (
        frame["model"].astype(TEXT)
        if "model" in frame.columns
        else pd.Series([stem] * len(frame), index=frame.index)
    )
    items = frame["item"].astype(TEXT)
    keys = check_key_columns(frame, where, model=models, item=items, used=("model", "item", score))
    for note in keys.notes:
        warnings.warn(f"{where}{note}", DataWarning, stacklevel=user_stacklevel())
    if keys.trial is None:
        return frame, values, keys.labels
    # the observed trials only (an empty score is a trial not answered: the cell is the mean
    # of the others, and a cell with none stays unanswered, as an absent row)
    seen = np.flatnonzero(np.isfinite(values))
    first, means, n_averaged, most, n_collapsed = mean_over_trials(
        models.iloc[seen].reset_index(drop=True),
        items.iloc[seen].reset_index(drop=True),
        text_labels(frame[keys.trial]).iloc[seen].reset_index(drop=True),
        values[seen],
        where,
        lambda k: _row(file, int(seen[k])),
    )
    for note in trial_notes(n_collapsed, n_averaged, most, keys.trial):
        if note:
            warnings.warn(f"{where}{note}", DataWarning, stacklevel=user_stacklevel())
    return frame.iloc[seen[first]].reset_index(drop=True), means, keys.labels


def _answers(
    cal: Calibration,
    responses: Any,
    model: str | None,
    keyword: str = "model",
    skip: tuple[str | None, ...] = (),
    label: str | None = None,
) -> tuple[str, np.ndarray, list[str]]:
    """The model's id and its answers on the calibrated items (NaN = none), shape (n,);
    ``keyword`` is the caller's argument that names the model (in messages). A named model's
    near twins among the responses (``'A '``, ``'a'`` for ``'A'``) are not used, and said in
    a note, except those in ``skip`` (the other side of a comparison); ``label`` (checked),
    when given, is the id instead of the one the answers carry."""
    import pandas as pd

    notes: list[str] = []
    if model is not None and not isinstance(model, str):
        raise InputError(f"{keyword}={model!r}; expected a model id (a str) or None")
    name = model or DEFAULT_MODEL_NAME
    # a file or a matrix: the one model, or the named one (a file's rows of it only; a near
    # twin of it there that skip names is not said as left out)
    named = _NAMED_ELSEWHERE.set(tuple(str(m) for m in skip if m is not None))
    try:
        source, by_model = _by_model(responses, None if model is None else [model])
    finally:
        _NAMED_ELSEWHERE.reset(named)
    if by_model:
        ids = list(by_model)
        if model is None and len(ids) != 1 and label is not None:
            raise InputError(_label_refusal(label, f"{source} holds", ids))
        if model is None and len(ids) != 1:
            raise InputError(
                f"the responses hold {len(ids)} models ({', '.join(ids[:5])}...); "
                f"name one ({keyword}=...)"
                + (" or use estimate_many" if keyword == "model" else "")
            )
        name = ids[0] if model is None else name
        if name not in by_model:
            raise InputError(
                f"model {name!r} is not in the responses (models: "
                f"{', '.join(repr(m) for m in ids[:5])}{', ...' if len(ids) > 5 else ''})"
                f"{_near_models(name, by_model)}"
            )
        if model is not None:  # its near twins: other models, not used (said)
            key = same_id(name)
            twins = [m for m in by_model if m != name and m not in skip and same_id(m) == key]
            if twins:
                notes.append(_twins_not_used(name, twins))
        responses = by_model[name]
    elif model is None and isinstance(responses, pd.Series):
        name = _series_name(responses) or name  # a named Series is that model's answers
    if label is not None:  # the model's name from here on: its notes, draws and records
        name = label
    if isinstance(responses, Mapping):
        responses = pd.Series(dict(responses), dtype=object)
    if isinstance(responses, pd.Series):
        notes.extend(responses.attrs.get("read_notes", ()))  # said when read: kept, not again
        responses, repeated = _one_score_per_item(responses, name)
        if repeated:
            notes.append(
                f"model {name!r}: {repeated:,} item(s) given more than once with the same "
                "score are counted once"
            )
        ids = [str(i) for i in responses.index.tolist()]  # not the Index: slow to iterate
        pos = cal.positions(ids)
        unknown = np.flatnonzero(pos < 0)
        hint = _spelling_hint([ids[int(k)] for k in unknown], cal.item_ids)
        if ids and unknown.size == len(ids):
            hint = hint or _group_hint(ids, cal, responses.attrs)
            raise InputError(
                f"model {name!r} answered none of the {cal.n_items:,} calibrated items: none "
                f"of its {len(ids):,} item ids is one (its first {ids[0]!r}; the calibration's "
                f"first {cal.item_ids[0]!r}); expected the calibration's item ids{hint}"
            )
        if unknown.size:
            notes.append(
                f"model {name!r}: {unknown.size:,} answered item(s) are not in the calibration "
                f"and are ignored (e.g. {ids[int(unknown[0])]!r}){hint}"
            )
        notes.extend(
            _label_mismatch(
                cal,
                name,
                responses.attrs.get("labels") or {},
                responses.attrs.get("source"),
                responses.attrs.get("read"),
            )
        )
        y = np.full(cal.n_items, np.nan)
        values = _series_scores(responses, name)
        y[pos[pos >= 0]] = values[pos >= 0]
    else:
        y = _score_vector(responses, cal.n_items)
        if y.shape != (cal.n_items,):
            raise InputError(
                f"responses have shape {y.shape}; expected ({cal.n_items},), one score per "
                "calibrated item in the calibration's order (NaN = not answered)"
            )
        y = y.copy()
    y, bad = bounded_scores(y)  # inf too (not missing); a rounding past 0 or 1 is the bound
    if bad.any():
        from latentbench.io._matrix_checks import score_advice

        k = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"model {name!r}, item {cal.item_ids[k]!r}: score {float(y[k])!r} is outside "
            "[0, 1]; expected a value in [0, 1] (NaN = not answered)"
            + score_advice(float(y[k]), y)  # a 0-100 scale: divide by 100
        )
    return name, y, notes


def _answered_none(name: str, n_items: int, responses: Any = None) -> str:
    """Why model ``name`` with no score on any calibrated item cannot be estimated (its
    calibrated items' scores all missing: empty or NaN), naming its file when ``responses``
    is one: ``'A' in new.csv answered none of ...``."""
    where = f" in {responses}" if isinstance(responses, str | os.PathLike) else ""
    return (
        f"{name!r}{where} answered none of the {n_items:,} calibrated items: every score "
        "it gives for them is missing (empty or NaN; a missing score is no answer, never a 0); "
        "expected at least one score in [0, 1]"
    )


def _check_label(label: Any) -> str | None:
    """``label`` checked: None, or a model name (a str not blank)."""
    if label is not None and not (isinstance(label, str) and label.strip()):
        raise InputError(
            f"label={label!r}; expected the model's name (a non-empty str); leave it out "
            "for the name its answers carry"
        )
    return label


def _label_refusal(label: str, whose: str, ids: Sequence[str]) -> str:
    """Why ``label`` is refused for several models (``ids``; ``whose``: ``FILE holds``)."""
    listed = ", ".join(repr(m) for m in ids[:5]) + (", ..." if len(ids) > 5 else "")
    return (
        f"label={label!r} names one model, and {whose} {len(ids):,} models "
        f"({listed}); expected one: choose the one it names with model=NAME, or drop the label"
    )


def _score_vector(responses: Any, n_items: int) -> np.ndarray:
    """Answers given as an array or a list, as floats (``pd.NA`` / None: not answered);
    anything else (None, a list of records) refused naming its type, not a numpy TypeError."""
    import pandas as pd

    expected = (
        f"expected the new model's answers: a file, a table, a Series indexed by item, or "
        f"{n_items} scores in the calibration's item order (NaN = not answered)"
    )
    if responses is None:
        raise InputError(f"responses=None; {expected}")
    try:
        array = np.asarray(responses)
        if array.dtype == object:
            array = np.where(pd.isna(array), np.nan, array)
        return np.asarray(array, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"responses of type {type(responses).__name__} are not scores ({exc}); {expected}"
        ) from None


def _near_id(name: str, ids: list[str]) -> str:
    """``; did you mean '  padded  '?`` when an id differs from ``name`` only by spaces or
    case, else empty."""
    near = [m for m in ids if m != name and same_id(m) == same_id(name)]
    return f"; did you mean {near[0]!r}?" if near else ""


def _near_models(name: str, answers: Mapping[str, Any]) -> str:
    """What to say when no model is named ``name`` but some differ from it only by case or
    surrounding spaces (``'A '``, ``'a'`` for ``'A'``): each of them, with its number of
    answers (a Series' non-missing cells; ``None`` where not known), and that names are
    matched exactly; empty when there is none. Matching stays exact: a near name is another
    model (a file's ``'A '`` may be a typo, or a second run kept apart on purpose)."""
    near = [m for m in answers if m != name and same_id(m) == same_id(name)]
    if not near:
        return ""
    shown = near[:5]
    counts = [
        f"{m!r}: {int(a.notna().sum()):,} answer(s)"
        for m, a in ((m, answers[m]) for m in shown)
        if a is not None
    ]
    more = f" (and {len(near) - len(shown)} more)" if len(near) > len(shown) else ""
    return (
        f"; did you mean {' or '.join(repr(m) for m in shown)}{more}? "
        f"{'They differ' if len(near) > 1 else 'It differs'} from {name!r} only by case or "
        f"surrounding spaces{' (' + ', '.join(counts) + ')' if counts else ''}; model names "
        "are matched exactly: give the one meant as it is written"
    )


def _series_name(responses: pd.Series) -> str | None:
    """The model a Series' ``name`` names: a text name other than a score column's (the
    ``score`` of ``frame.set_index('item').score`` is not a model), else None."""
    from latentbench.io._matrix_checks import _SCORE_COLUMNS

    named = responses.name
    if isinstance(named, str) and named.strip() and named not in _SCORE_COLUMNS:
        return named
    return None


def _series_scores(responses: pd.Series, name: str) -> np.ndarray:
    """A Series' scores as floats, read as a file's are (``True``/``False``, and missing
    markers such as ``''``, ``'NA'``, ``None`` as not answered); a value that is not a number
    (e.g. ``'correct'``) is an error naming the item and the value, not a silent NaN."""
    from latentbench.io._matrix_checks import _show, numeric_scores

    values, bad = numeric_scores(responses.reset_index(drop=True))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"model {name!r}, item {str(responses.index[k])!r}: value "
            f"{_show(responses.iloc[k])} is not numeric ({int(bad.sum()):,} such value(s)); "
            "expected a score in [0, 1] (NaN or None = not answered)"
        )
    return values


def _one_score_per_item(responses: pd.Series, name: str) -> tuple[pd.Series, int]:
    """The Series with one entry per item id (as text), and how many repeated entries were
    dropped: a repeat with the same score (or none) is collapsed, as a file's repeated row;
    two different scores for one item are an error naming the item and both scores."""
    import pandas as pd

    from latentbench.io._matrix_checks import _show, numeric_scores

    keys = pd.Index([str(i) for i in responses.index.tolist()])  # an Arrow Index: slow to iterate
    if keys.is_unique:
        return responses, 0
    values, _ = numeric_scores(responses.reset_index(drop=True))
    frame = pd.DataFrame({"key": keys, "value": values})
    answered = frame[np.isfinite(values)]
    spread = answered.groupby("key", sort=False)["value"].agg(["min", "max"])
    conflict = spread[spread["min"] != spread["max"]]
    if len(conflict):
        item = str(conflict.index[0])
        raise InputError(
            f"model {name!r}, item {item!r}: given {int((keys == item).sum())} times with "
            f"different scores {_show(conflict['min'].iloc[0])} and "
            f"{_show(conflict['max'].iloc[0])} ({len(conflict):,} such item(s)); expected one "
            "score per item"
        )
    # keep an answered entry where there is one (a repeat without a score adds nothing)
    order = np.argsort(~np.isfinite(values), kind="stable")
    keep = np.sort(order[~keys[order].duplicated()])
    return responses.iloc[keep], len(responses) - len(keep)


def _label_mismatch(
    cal: Calibration,
    name: str,
    labels: Mapping[str, str],
    source: str | None = None,
    read: Mapping[str, Any] | None = None,
) -> list[str]:
    """Compare the labels of the answers' file (``benchmark``, ``metric``, ``filter``,
    ``split``) with the calibration's: items are matched by id alone, and ids such as
    ``0, 1, 2`` are shared by many benchmarks. Another ``benchmark`` is an error (the answers
    are to other items); another metric, filter or split is a note (the same items, maybe
    scored otherwise). Both name the file, the column, its value and the calibration's."""
    theirs = dict(getattr(cal, "labels", None) or {})
    differ = [k for k in ("benchmark", "metric", "filter", "split")
              if k in labels and k in theirs and labels[k] != theirs[k]]  # fmt: skip
    if not differ:
        return []
    where = f"in {source}: " if source else ""
    said = ", ".join(f"{k} {labels[k]!r} (calibration: {theirs[k]!r})" for k in differ)
    if "benchmark" in differ:
        others = [k for k in differ if k != "benchmark"]
        also = (
            " (also "
            + ", ".join(f"{k} {labels[k]!r}, calibration {theirs[k]!r}" for k in others)
            + ")"
            if others
            else ""
        )
        what = f"column 'benchmark' is {labels['benchmark']!r}"
        advice = (
            f"write {theirs['benchmark']!r} in that column (or drop it)"
            if read is None
            else _tool_advice(theirs["benchmark"], read, grouped=_grouped_ids(cal.item_ids))
        )
        if read is not None:
            what = f"{read['tool']} results of benchmark {labels['benchmark']!r}"
        raise InputError(
            f"{where}{what} for model {name!r}; expected "
            f"the calibration's benchmark {theirs['benchmark']!r} ({cal.source}){also}: items "
            "are matched by id alone and ids such as '0', '1' are shared by many benchmarks, so "
            "these answers would be scored as other items. If they are the calibration's items "
            f"under another name, {advice}"
        )
    return [
        f"{where}model {name!r}: its answers are labelled {said}; items are matched by id "
        "alone, so check that they are the calibration's items scored the same way"
    ]


def _grouped_ids(ids: Sequence[str]) -> bool:
    """Whether item ids look like a group's ``TASK/ID`` (``latentbench ingest --group``)."""
    return any("/" in str(i) for i in ids[:100])


def _tool_advice(theirs: str, read: Mapping[str, Any], *, grouped: bool) -> str:
    """What to do when a tool's results (read as ``read`` says: ``tool``, ``group``) name
    another benchmark ``theirs`` than the calibration's: they carry no column to rewrite;
    ``grouped``: the calibration's ids are a group's ``TASK/ID``."""
    if grouped:  # the group name the calibration was ingested with
        return f"read them with that group name (group={theirs!r})"
    return (
        "read them as the calibration's were (a task ingested under another name): "
        f"`latentbench ingest {read['tool']} PATH --store new.duckdb --benchmark {theirs}`, "
        "`latentbench export new.csv --store new.duckdb`, and give new.csv"
    )


def _group_hint(ids: Sequence[str], cal: Calibration, attrs: Mapping[str, Any]) -> str:
    """When none of a tool's answers match and the ids differ only by a group's ``TASK/``
    prefix (results read without the calibration's ``group``, or with one it lacks), say so."""
    read = attrs.get("read")
    bench = (attrs.get("labels") or {}).get("benchmark")
    if read is None or bench is None:
        return ""
    known = set(cal.item_ids)
    theirs = (getattr(cal, "labels", None) or {}).get("benchmark") or "NAME"
    if read.get("group") is None and any(f"{bench}/{i}" in known for i in ids[:1000]):
        return (
            f"; the calibration's ids are TASK/ID ({bench}/{ids[0]}): its tasks were ingested "
            f"as one benchmark; read these results the same way (group={theirs!r})"
        )
    stripped = [i.split("/", 1)[1] for i in ids[:1000] if "/" in i]
    if read.get("group") is not None and any(i in known for i in stripped):
        return (
            f"; these were read as a group's TASK/ID ids ({ids[0]!r}) but the calibration's "
            f"are one task's own ({cal.item_ids[0]!r}): read them without group="
        )
    return ""


def _digits(text: str) -> str:
    """An id without the leading zeros of a number (``'0007'`` -> ``'7'``), else itself."""
    stripped = text.strip()
    return stripped.lstrip("0") or "0" if stripped.isdigit() else stripped


def _spelling_hint(unknown: Sequence[str], known: Sequence[str]) -> str:
    """When ids that match no calibrated item would match one without leading zeros or
    surrounding spaces, say so (a file written with zero-padded ids, or read as numbers by
    one tool and as text by another): ``''`` otherwise."""
    if not unknown:
        return ""
    plain = {_digits(k): k for k in known}
    matched = [(u, plain[_digits(u)]) for u in unknown if _digits(u) in plain]
    if not matched:
        return ""
    u, k = matched[0]
    return (
        f"; {len(matched):,} of them match a calibrated item once leading zeros or spaces are "
        f"dropped (e.g. {u!r} and {k!r}): the two files spell the ids differently; write them "
        "the same way"
    )


# ------------------------------------------------------------------------------ the loop
def _calibration_twins(cal: Calibration, name: str, y: np.ndarray) -> list[str]:
    """The calibration models other than ``name`` whose answers are ``y``, cell for cell
    (the same items answered, the same scores: the model's results given again under another
    name, most likely); empty when none or when the calibration keeps no responses (a fit
    directory). One comparison of ``y`` with every calibration row (a namesake is said
    already, by the rank's rule)."""
    Y = cal.responses
    seen = np.isfinite(y)
    if Y is None or not seen.any():
        return []
    if Y.dtype == np.int8:  # 0/1 responses, -1 not observed: a fractional answer is no twin
        if not bool(np.all((y[seen] == 0.0) | (y[seen] == 1.0))):
            return []
        row = np.where(seen, y, -1.0).astype(np.int8)
    else:  # float32, NaN not observed: the answers as float32 store them
        row = y.astype(np.float32)

    def same(block: np.ndarray, want: np.ndarray) -> np.ndarray:
        if Y.dtype == np.int8:
            return np.asarray((block == want).all(axis=1))
        return np.asarray(((block == want) | (np.isnan(block) & np.isnan(want))).all(axis=1))

    # the rows that agree on the first 64 items, then those on every item (a row in full
    # for the few candidates only: the check costs K x 64 cells a model, not K x n)
    rows = np.flatnonzero(same(Y[:, :64], row[:64]))
    if rows.size:
        rows = rows[same(Y[rows], row)]
    return [cal.model_ids[k] for k in rows.tolist() if cal.model_ids[k] != name]


def _twins_said(name: str, twins: list[str], y: np.ndarray) -> str:
    """``model 'copy' gave the same answers as calibration model 'm5' on every item (40
    answered; the same results under another name?)``: the start of a twin note."""
    shown = ", ".join(repr(m) for m in twins[:3]) + (", ..." if len(twins) > 3 else "")
    return (
        f"model {name!r} gave the same answers as calibration model"
        f"{'s' if len(twins) > 1 else ''} {shown} on every item "
        f"({int(np.isfinite(y).sum()):,} answered; the same results under another name?)"
    )


def _calibration_twin_note(cal: Calibration, name: str, y: np.ndarray) -> list[str]:
    """The note saying that the new model's answers are a calibration model's, cell for
    cell (:func:`_calibration_twins`), empty otherwise. The estimate does not use it (only
    the items drawn are read); the rank then counts the model's own copy."""
    twins = _calibration_twins(cal, name, y)
    if not twins:
        return []
    return [
        f"{_twins_said(name, twins, y)}: its score is then known without an estimate, and it "
        "is ranked against its own copy; if it is that model, give it that name "
        f"(label={twins[0]!r}) to leave the copy out of the rank"
    ]


def _rng(seed: int, model: str) -> np.random.Generator:
    """The model's own random stream: the same for a model whoever else is in the call."""
    return np.random.default_rng([int(seed), zlib.crc32(model.encode())])


def _ability(
    cal: Calibration,
    seq: SequentialEstimate,
    ranked: np.ndarray,
    scores: tuple[float, float, float],
    rank: int,
    model_scores: np.ndarray | None = None,
) -> tuple[float, float, float]:
    """``theta, theta_lower, theta_upper``, coherent with the score and rank statements.

    The interval is the hull of the score interval restated on the ability scale
    (:func:`score_ability`, valid whenever the score interval is; it implies exactly the ranks
    ``[rank_lower, rank_upper]`` among the ``ranked`` calibration models' abilities where
    those are distinct, and every one of them where some are tied: its ends then step past
    the tie) and the model-based Laplace interval; ``theta`` is the model-based (MAP) ability
    moved to the nearest one of rank ``rank`` inside that interval (to ``A(score)`` when a tie
    leaves that rank no ability). docs/estimate.md, Method 7. A weighted score
    (``model_scores``: the calibration models' weighted scores) is restated with the weighted
    test characteristic curve and ranked against those.
    """
    score, lower, upper = scores
    weighted = model_scores is not None
    knots = score_ability_knots(
        cal,
        seq.population,
        ranked,
        weights=seq.W if weighted else None,
        model_scores=model_scores,
    )
    a_score, a_lower, a_upper = score_ability(knots, [score, lower, upper]).tolist()
    centre, sd = seq.theta()
    # 1 - delta/2 is 1.0 for a delta below 1e-16: the lower tail then (delta/2 at least the
    # smallest float: 5e-324 / 2 is 0)
    half = max(seq.delta / 2.0, math.ulp(0.0))
    z = NormalDist().inv_cdf(1.0 - half) if 1.0 - half < 1.0 else -NormalDist().inv_cdf(half)
    th = np.sort(np.asarray(cal.abilities, dtype=np.float64)[ranked])
    k = th.size

    def band(r: int, a: float) -> tuple[float, float]:
        """The abilities with exactly ``r - 1`` calibration abilities above (``a`` is one)."""
        lo = float(th[k - r]) if r <= k else -math.inf
        hi = float(np.nextafter(th[k - r + 1], -math.inf)) if r > 1 else math.inf
        return (lo, hi) if lo <= a <= hi else (a, a)  # tied abilities: no room around a

    # calibration models sharing an ability (the same answers) leave the ranks inside their
    # tie without an ability of their own, where A(x) cannot have #(th > A(x)) == #(s > x):
    # the ends then step past the tie, so that the interval still implies every rank of the
    # rank interval (a no-op wherever the abilities are distinct: the count is exact there)
    s_all = cal.model_scores if model_scores is None else model_scores
    s_ranked = np.asarray(s_all, dtype=np.float64)[ranked]
    above_lower = int((s_ranked > lower).sum())  # rank_upper - 1
    above_upper = int((s_ranked > upper).sum())  # rank_lower - 1
    if above_lower >= 1:  # at least rank_upper - 1 abilities above the lower end
        a_lower = min(a_lower, float(np.nextafter(th[k - above_lower], -math.inf)))
    if above_upper < k:  # at most rank_lower - 1 abilities above the upper end
        a_upper = max(a_upper, float(th[k - above_upper - 1]))
    # the hull: valid for the restated score A(mu) whenever the score interval is, and for the
    # model-based ability whenever the Laplace interval is (not cut to the rank band: that
    # held the full-answer ability in 0.754 of BFCL's held-out runs at 300 items)
    theta_lower = min(a_lower, centre - z * sd)
    theta_upper = max(a_upper, centre + z * sd)
    mid = band(rank, a_score)
    theta = min(max(centre, mid[0], theta_lower), mid[1], theta_upper)
    return float(theta), float(theta_lower), float(theta_upper)


_GO_ON = {
    "budget": "; raise the budget for a narrower interval",
    "capped": "; resumed, the live run goes on towards it (raise [run] spend_cap first)",
    "interrupted": "; resumed, the live run goes on towards it",
    "failed": "; resumed, the live run goes on towards it",
    "waiting": "; resumed, the live run goes on towards it",
}
"""How a run that stopped short of its precision goes on, by why it stopped: only a budget is
raised (a live run stopped early, with no budget given or short of it, said "raise the
budget" too)."""


def _finish(
    cal: Calibration,
    seq: SequentialEstimate,
    model: str,
    stopped: str,
    probs: list[float],
    options: dict[str, Any],
    notes: list[str],
    model_scores: np.ndarray | None = None,
) -> EstimateResult:
    lower, upper = seq.interval
    score = seq.score
    scores = cal.model_scores if model_scores is None else model_scores
    ranked = np.asarray([m != model for m in cal.model_ids], dtype=bool)
    named = not ranked.all()
    ranked &= np.isfinite(scores)
    if named:  # its namesake leaves the ranking, whatever the answers: said, with a way out
        notes.append(
            f"model {model!r} is in the calibration: the calibration model of that name is "
            f"left out of the rank (ranked among the other {int(ranked.sum()):,}); if this "
            "is another model (a checkpoint, a revision or a fine-tune of it), give it a name "
            "of its own"
        )
    others = np.asarray(scores, dtype=np.float64)[ranked]
    rank = 1 + int((others > score).sum())
    rank_lower = 1 + int((others > upper).sum())
    rank_upper = 1 + int((others > lower).sum())
    theta, theta_lower, theta_upper = _ability(
        cal, seq, ranked, (score, lower, upper), rank, model_scores
    )
    # the models ranked against: a weighted score is NaN for a model that answered no item of
    # positive weight, which then neither ranks nor restates theta
    n_scale = int(np.isfinite(scores).sum())
    if n_scale < FEW_MODELS:
        by = "" if model_scores is None else " with a weighted score"
        notes.append(
            f"theta is on the reporting scale of {n_scale} calibration model(s){by}, fewer than "
            f"{FEW_MODELS}, where ability intervals were measured to under-cover "
            "(docs/model.md, 'Few models'): read theta's interval as approximate; the score, "
            "its interval and the rank do not rest on it"
        )
    precision = options.get("precision")
    if precision is not None and (upper - lower) / 2.0 > precision:
        notes.append(
            f"model {model!r}: precision {precision:g} not reached: half-width "
            f"{(upper - lower) / 2.0:.3g} when the run stopped ({stopped}) after "
            f"{len(seq.order):,} items{_GO_ON.get(stopped, '')}"
        )
    contradicted = seq.cs.contradicted_at
    if contradicted is not None:  # kept valid (the certain bounds), and said
        notes.append(
            f"model {model!r}: the answers contradicted the confidence sequence at item "
            f"{contradicted:,} (every candidate score rejected, which happens with probability "
            f"at most delta={seq.delta:.15g}); the interval is the certain range the answers "
            f"leave, [{lower:.3g}, {upper:.3g}], wider than before"
        )
    trajectory = np.asarray(seq.trajectory, dtype=np.float64).reshape(-1, 3)
    for note in notes:
        if not isinstance(note, _Said):
            warnings.warn(note, DataWarning, stacklevel=user_stacklevel())
    return EstimateResult(
        model=model,
        score=float(score),
        lower=float(lower),
        upper=float(upper),
        level=1.0 - seq.delta,
        n_evaluated=len(seq.order),
        n_items=seq.n,
        theta=float(theta),
        theta_lower=float(theta_lower),
        theta_upper=float(theta_upper),
        rank=rank,
        rank_lower=rank_lower,
        rank_upper=rank_upper,
        n_ranked=int(others.size) + 1,
        stopped=stopped,
        items=tuple(cal.item_ids[int(seq.population[j])] for j in seq.order),
        answers=tuple(seq.answers),
        probabilities=tuple(probs),
        calibration_source=cal.source,
        calibration_hash=cal.hash,
        options=options,
        warnings=(*(message for _, message in cal.fit_warnings), *notes),
        trajectory=trajectory,
        n_calibrated=cal.n_items,
        contradicted_at=contradicted,
        calibration_fit=cal.fit,
        # each evaluated item's w (W mean 1 over the n items: w = W / n); the plain mean none
        target_weights=tuple((seq.W[np.asarray(seq.order, dtype=np.int64)] / seq.n).tolist())
        if seq.weighted
        else (),
    )


def run_sequential(
    seq: SequentialEstimate,
    answer: Callable[[int], float],
    rng: np.random.Generator,
    *,
    budget: int | None,
    precision: float | None,
    probs: list[float] | None = None,
    observed: Callable[[], None] | None = None,
) -> tuple[str, list[float]]:
    """Draw, ask and update until the precision, the budget or the items run out.

    ``answer(j)`` returns the score of population item ``j``. Returns why it stopped and the
    draw probability of each revealed item (appended to ``probs`` when given, so that a caller
    whose ``answer`` raises keeps those of the items already revealed). ``observed()``, when
    given, is called after each answer is taken in (a live run's progress snapshot); it reads
    ``seq``, never changes it.
    """
    probs = [] if probs is None else probs
    while True:
        if seq.exhausted:
            return "exhausted", probs
        lower, upper = seq.interval
        if precision is not None and seq.order and (upper - lower) / 2.0 <= precision:
            return "precision", probs
        if budget is not None and len(seq.order) >= budget:
            return "budget", probs
        j, pi = seq.choose(rng)
        y = float(answer(j))
        probs.append(float(pi[j]))
        seq.observe(j, y, pi)
        if observed is not None:
            observed()


class _Default(int):
    """An integer option's default as :func:`estimate`'s signature holds it: the same number,
    but told apart (by identity) from the same value passed by a caller, so that a fixed
    design (``items=``) refuses a ``budget`` or ``seed`` it would not use instead of
    ignoring it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return int.__repr__(self)


class _DefaultFloat(float):
    """A float option's default, told apart (by identity) from the same value passed by a
    caller, as :class:`_Default` is (``floor=0.5`` with a fixed design is refused, as the
    command refuses ``--floor`` with ``--items``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return float.__repr__(self)


class _DefaultText(str):
    """A text option's default, told apart (by identity) from the same text passed by a
    caller, as :class:`_Default` is."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str.__repr__(self)


_DEFAULT_BUDGET = _Default(100)
_DEFAULT_SEED = _Default(0)
_DEFAULT_FLOOR = _DefaultFloat(0.5)
_DEFAULT_PROPOSAL: Any = _DefaultText("residual")


def precision_budget(budget: int | None, precision: float | None) -> int | None:
    """The budget a run takes: None (until the precision, or the items run out) when a
    ``precision`` is asked and ``budget`` is the default's own object (not given), else
    ``budget``. A precision alone stopped at the default's 100 items, short of it (BFCL:
    half-width 0.128 for an asked 0.03, reached after 595 items)."""
    return None if precision is not None and budget is _DEFAULT_BUDGET else budget


_MIN_DELTA = 1e-16
"""The smallest ``delta`` taken: below about 5.6e-17 the level ``1 - delta`` is 1.0 in
floating point, which the records' ``level`` (and the legend's ``100%``) would say was a
certainty; 1e-16 is a round bound above it (its interval is already about as wide)."""


def _check_delta(delta: Any) -> bool:
    """Refuse a ``delta`` that is not a number in [:data:`_MIN_DELTA`, 1) (a string, a bool:
    the error names it, not a TypeError); returns False for a good one."""
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not 0 < float(delta) < 1:
        raise InputError(f"delta={delta!r}; expected a value in (0, 1)")
    if float(delta) < _MIN_DELTA:
        raise InputError(
            f"delta={delta!r}; expected a value in [{_MIN_DELTA:g}, 1): below it the level "
            "1 - delta rounds to 1.0 in floating point, which the result's level (and "
            "estimate.json, compare.json) would record as a 100% interval; "
            f"{_MIN_DELTA:g} gives the most confident interval"
        )
    return False


def _check_options(
    budget: int | None, precision: float | None, delta: float, *, need_stop: bool = True
) -> None:
    """Refuse a bad budget, precision or delta (and, with ``need_stop``, neither a budget nor
    a precision)."""
    if budget is not None and not (is_integer(budget) and budget >= 1):
        # 0 items gave a score and a rank from no evidence (the calibration's spread)
        raise InputError(
            f"budget={budget!r}; expected a positive integer (items to evaluate)"
            + (", or None with a precision" if need_stop else "")
        )
    if precision is not None and not (is_number(precision) and 0 < precision < 0.5):
        # a score interval in [0, 1] has half-width 0.5 before any item: 0.5 or more asks
        # for nothing
        raise InputError(
            f"precision={precision!r}; expected a half-width in (0, 0.5) on the score's scale"
        )
    _check_delta(delta)
    if need_stop and budget is None and precision is None:
        raise InputError("give a budget, a precision or both (else every item is asked)")


def _check_call(
    budget: int | None,
    precision: float | None,
    delta: float,
    items: Any,
    floor: float,
    proposal: str,
    point: str,
    proxy: str,
    seed: Any = None,
    weights: Any = None,
) -> None:
    """:func:`estimate`'s options, checked before any calibration or answer is read (a
    ``budget`` or ``seed`` other than the defaults' own objects was passed by the caller)."""
    if items is None:
        _check_options(budget, precision, delta)
    elif _check_delta(delta):
        pass
    elif precision is not None:
        raise InputError(
            f"precision={precision!r} with a fixed design (items=): every design item is "
            "scored, so the run cannot stop at a precision; drop precision, or run adaptively"
        )
    elif proposal is not _DEFAULT_PROPOSAL or floor is not _DEFAULT_FLOOR:
        # passed by the caller, even at the default's value (as --floor is refused)
        given = (
            f"proposal={proposal!r}" if proposal is not _DEFAULT_PROPOSAL else f"floor={floor!r}"
        )
        raise InputError(
            f"{given} with a fixed design (items=): the design's own probabilities are used "
            "(drawn by tiny, its floor in the items table); drop it, or run adaptively"
        )
    elif budget is not _DEFAULT_BUDGET:
        raise InputError(
            f"budget={budget!r} with a fixed design (items=): every design item is scored; "
            "make a smaller design (tiny(k=...)), cut its last rows, or drop items= to run "
            "adaptively"
        )
    elif seed is not _DEFAULT_SEED:
        raise InputError(
            f"seed={seed!r} with a fixed design (items=): the items were drawn by tiny with "
            "the design's own seed (its 'seed' column); drop seed, or make another design "
            "with tiny(seed=...)"
        )
    check_design_options(floor, proposal, point, proxy)


def estimate(
    calibration: CalibrationLike,
    responses: Any,
    *,
    model: str | None = None,
    label: str | None = None,
    budget: int | None = _DEFAULT_BUDGET,
    precision: float | None = None,
    delta: float = 0.05,
    seed: int = _DEFAULT_SEED,
    proposal: Proposal = _DEFAULT_PROPOSAL,
    floor: float = _DEFAULT_FLOOR,
    point: Literal["composite", "dr", "model"] = "dr",
    items: str | os.PathLike[str] | pd.DataFrame | None = None,
    rank: int = 1,
    cache: bool | str | os.PathLike[str] = True,
    proxy: Proxy = "irt",
    weights: Any = None,
) -> EstimateResult:
    """Estimate one new model's full-benchmark score from a few adaptively chosen items.

    Items are drawn one at a time with known probabilities (proportional to the predicted
    residual standard deviation, or the Fisher information, mixed with a uniform ``floor``);
    each round gives a doubly robust estimate of the mean over all calibrated items, unbiased
    whatever the calibration's quality, and the rounds give an anytime-valid interval
    (``docs/estimate.md``). Only the items asked for are read from ``responses``.

    Parameters
    ----------
    calibration : path, IRTResult, ResponseMatrix or Calibration
        A fit directory, a response-matrix file (fitted once at ``rank`` and cached), a fit or
        a matrix in memory.
    responses : path, DataFrame, ResponseMatrix, Series, mapping or ndarray of shape (n_items,)
        The new model's answers (replay): a results file or a DataFrame laid out as one
        (:func:`read_responses`), a matrix (``model`` names the row
        when it holds several), a Series / mapping item -> score, or a vector in the
        calibration's item order. NaN or absent = not answered: the target is then the mean
        over the answered calibrated items (a warning says so).
    model : str, optional
        The model's name (its row in a multi-model file). Answers that carry no name (a
        table without a ``model`` column, a mapping, an array, an unnamed Series) are named
        ``"model"`` (:data:`DEFAULT_MODEL_NAME`) in every container; a file's model is named
        after the file. The name seeds the draws.
    label : str, optional
        The model's name instead of the one its answers carry (the file's stem or ``model``
        column, a Series' name): ``estimate(cal, "results/run_17.parquet",
        label="my-ckpt-1000")``. It *is* the model's name: the record's ``model``, the notes,
        the rank's namesake rule and the draws follow it (the same answers under another
        label draw other items; under label ``m`` the items a file naming the model ``m``
        draws). Refused when the responses hold several models and ``model`` names none.
    budget : int or None, default 100
        Most items to evaluate (refused with ``items=``, which scores every design item).
        With a ``precision`` and no budget given, none: the run goes on until it reaches the
        precision (or the items run out; it stopped at 100 items before it, with a warning).
        Without a ``precision`` it sizes the confidence sequence for the half-width
        anticipated after ``budget`` items (fixed before the first draw: docs/estimate.md,
        Method 4; ``options["sized_for"]``); the draws do not depend on it.
    precision : float, optional
        Stop when the interval's half-width is at most this. It also sizes one capital
        process of the confidence sequence for that half-width (fixed before the first draw,
        so the interval stays valid; the draws and the point estimate do not depend on it).
    delta : float, default 0.05
        Miscoverage: the interval has level ``1 - delta`` at every step simultaneously.
    seed : int, default 0
        Seed; a model's draws depend on the seed and its name only. Refused with ``items=``:
        the design's own seed drew its items (``options["seed"]`` is then the design's).
    proposal : {"residual", "information", "uniform"}, default "residual"
    floor : float, default 0.5
        Uniform share of the design; ``proposal="uniform"`` does not use it (a floor given
        with it is warned of, and kept in the result's ``warnings``).
    point : {"dr", "composite", "model"}, default "dr"
        The point estimate, always inside the interval: the design-based mean of the rounds
        (``dr``, the default: the only one never less accurate than the tinyBenchmarks-style
        baselines on the shared matrices, ``benchmarks/RESULTS_estimate.md``), the model-based
        one (``model``: revealed scores plus predictions, as p-IRT), or their positive-part
        shrinkage combination (``composite``).
    items : path or DataFrame, optional
        A fixed design written by :func:`tiny` (a CSV or parquet file, or its table): the
        model answered exactly these items; the same kind of interval is given for that
        design. The draw is replayed from the design's ``seed``, ``floor`` and this
        calibration, and a row whose item is not the one drawn at its order is refused (a
        design without a ``seed`` column, written by an earlier version, is read with a
        warning that its items cannot be checked). Every design item is scored: ``budget``,
        ``seed``, ``precision``, ``proposal`` and ``floor`` are refused whenever passed
        (even at their defaults' values); ``point`` applies. Answers to calibrated items
        outside the design are not used, said in a :class:`DataWarning` (kept in
        ``warnings``).
    rank : int, default 1
        Rank of the fit when ``calibration`` is a matrix.
    cache : bool or path, default True
        Where a matrix's fit is cached (see :func:`load_calibration`).
    proxy : {"irt", "ridge"}, default "irt"
        The predictions the rounds and the design use: the IRT posterior predictive alone
        (``irt``), or corrected by a ridge regression of the revealed residuals on item
        features from the calibration models' responses (``ridge``). Either keeps the interval
        valid. ``ridge`` is not the default: in the leave-one-model-out comparison
        (``benchmarks/RESULTS_estimate.md``) it was better on BFCL, about equal on AlpacaEval 1
        and slightly worse at 100 items on AlpacaEval 2. A calibration without responses (a fit
        directory) runs ``irt``, with a warning; ``options["proxy"]`` says which ran.
    weights : path, DataFrame, Series or mapping, optional
        Estimate a weighted score instead of the plain mean: a CSV/Parquet file or a table
        with columns ``item`` and ``weight`` (non-negative, any scale, normalised to sum 1)
        or ``group`` (macro: every group weighs the same, its items equally), or a Series /
        mapping item -> weight (numbers) or item -> group (text). Every calibrated item must
        be listed once (weight 0 leaves one out). The target becomes ``sum_j w_j y_j``, the
        design draws in proportion to ``w_j`` times the predicted residual sd (its floor in
        proportion to ``w_j``), and the rank compares the calibration models' weighted
        scores. Equal weights give the unweighted estimate exactly. ``options["weights"]``
        records the kind, the number of groups and a hash. With ``items=``, the design must
        have been drawn for these weights (``tiny(..., weights=)``: its ``weights_hash``);
        a weighted design without them, or a plain one with weights not all equal, is
        refused.

    Returns
    -------
    EstimateResult

    Raises
    ------
    InputError
        The calibration, the responses or an option is unusable (no such file or model,
        answers to none of the calibrated items, a ``budget`` / ``precision`` / ``delta`` out
        of range, an ``items`` design drawn from another calibration, unusable ``weights``,
        ...); the message names the input, the value and what was expected.
    """
    _check_call(budget, precision, delta, items, floor, proposal, point, proxy, seed, weights)
    budget = precision_budget(budget, precision)
    seed = check_seed(seed, "seed")
    label = _check_label(label)
    cal = load_calibration(calibration, rank=rank, cache=cache)
    checked = None if weights is None else read_weights(cal, weights)
    name, y, notes = _answers(cal, responses, model, label=label)
    notes.extend(_calibration_twin_note(cal, name, y))
    options: dict[str, Any] = {
        "seed": int(seed),
        "delta": float(delta),
        "budget": budget,
        "precision": precision,
        "proposal": proposal,
        "floor": float(floor),
        "point": point,
        "proxy": proxy,
    }
    if items is not None:
        return _estimate_fixed(cal, name, y, items, delta, options, notes, checked)
    available = np.flatnonzero(np.isfinite(y))
    if available.size == 0:
        raise InputError(f"model {_answered_none(name, cal.n_items, responses)}")
    model_scores = None
    if checked is None:
        w_pop = None
        if available.size < cal.n_items:
            notes.append(
                f"model {name!r} answered {available.size:,} of {cal.n_items:,} calibrated "
                "items; the score is the mean over those it answered, and its rank compares "
                f"that mean with the calibration models' means over all {cal.n_items:,}; if "
                "they are the items of a `latentbench tiny` design, pass the design "
                "(items=DESIGN) to estimate the full-benchmark score"
            )
    else:
        available, w_pop, model_scores = _weighted(cal, checked, name, available, notes)
        options["weights"] = checked.record(available, "answered")
    seq = SequentialEstimate(
        cal,
        available,
        delta=delta,
        floor=floor,
        proposal=proposal,
        point=point,
        proxy=proxy,
        target=precision,  # fixed before the first draw: the whole run is this one call
        weights=w_pop,
    )
    if precision is None and budget is not None:  # sized for the budget's end instead
        seq.set_target(seq.budget_target(budget))
    notes.extend(proxy_note(cal, proxy, seq.proxy_used))
    notes.extend(floor_note(proposal, floor))
    options["proxy"] = seq.proxy_used
    options["target"] = seq.cs.target
    options["sized_for"] = sized_for(precision, seq.cs.target)
    values = y[available]
    stopped, probs = run_sequential(
        seq, lambda j: float(values[j]), _rng(seed, name), budget=budget, precision=precision
    )
    options["design"] = "adaptive"
    return _finish(cal, seq, name, stopped, probs, options, notes, model_scores)


def _weighted(
    cal: Calibration,
    checked: ItemWeights,
    name: str,
    available: np.ndarray,
    notes: list[str],
    holds: str = "",
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """A weighted estimate's population (the answered items of positive weight), their
    weights (None when all equal: the plain mean) and the calibration models' weighted
    scores to rank against (None when every calibrated item weighs the same: their plain
    scores, so that equal weights change nothing). ``holds`` replaces ``model NAME
    answered`` in the messages (a live run: ``the configuration holds``)."""
    w = checked.weights
    if checked.note:  # warned where the weights were read: recorded, not said again
        notes.append(_Said(checked.note))
    positive = int((w > 0).sum())
    pop = available[w[available] > 0]
    label = score_label(checked.record())
    who = holds or f"model {name!r} answered"
    over = "it holds" if holds else "it answered"
    if pop.size == 0:
        raise InputError(
            f"{who} none of the {positive:,} items of positive weight in "
            f"{checked.source}; expected {'them to hold' if holds else 'answers to'} some "
            "of them"
        )
    if pop.size < positive:
        notes.append(
            f"{who} {pop.size:,} of the {positive:,} items of positive "
            f"weight; the {label} is over those {over} (their weights renormalised), and "
            "its rank compares it with the calibration models' over all of them"
            + group_shares(checked, pop, "in the configuration" if holds else "answered")
        )
    if checked.equal:
        return pop, None, None
    notes.extend(_fitted_scores_note(cal, checked))
    return pop, w[pop], checked.model_scores


def _fitted_scores_note(cal: Calibration, checked: ItemWeights) -> list[str]:
    """The note of a weighted score ranked against the calibration models' fitted weighted
    scores (a calibration without responses), or none."""
    if checked.observed:
        return []
    return [
        f"the calibration ({cal.source}) holds no responses: the rank compares the "
        f"{score_label(checked.record())} with the calibration models' fitted weighted "
        "scores, not their observed ones (calibrate on the response matrix for those)"
    ]


TABLE_COLUMNS = (
    "model",
    "score",
    "lower",
    "upper",
    "level",
    "n_evaluated",
    "n_items",
    "n_calibrated",
    "theta",
    "theta_lower",
    "theta_upper",
    "rank",
    "rank_lower",
    "rank_upper",
    "n_ranked",
    "stopped",
    "calibration_hash",
    "warnings",
)
"""Columns of ``estimates.csv`` (:meth:`EstimateSet.to_frame`), one row per model; a table
with a weighted score appends ``target`` (:data:`TARGET_COLUMN`)."""

TARGET_COLUMN = "target"
"""The column ``estimates.csv`` appends when some score was given ``weights=``: what each
row's score is, ``mean``, ``weighted`` or ``macro over 14 groups`` (``macro over 13 of 14
groups``, ``over 14 groups (each weighed by the share of its items answered)`` as the
summary line says it). A table of plain means
has no such column (its columns as before weights)."""


@dataclass(frozen=True)
class EstimateSet:
    """The estimates of several new models, each made independently, and the failures.

    Equal (``==``) field by field; hashable (its results, ``single`` and ``not_estimated``).

    Attributes
    ----------
    results : tuple of EstimateResult
        One per model estimated, in the responses' order.
    failures : dict
        ``model -> message`` for each model that could not be estimated (its answers were
        unusable); the other models' estimates do not depend on it.
    single : bool
        One model was estimated (the responses held one, or one was named): :meth:`to_dict`
        and ``estimate.json`` are then that model's record rather than a list.
    not_estimated : tuple of str
        The models the call did not reach because it was stopped (``stop_event``, Ctrl-C in
        the command) after the model in flight; empty for a complete call. The results of
        the models before are complete: re-run with ``models=not_estimated`` for the rest.
    """

    results: tuple[EstimateResult, ...]
    failures: Mapping[str, str] = field(default_factory=dict)
    single: bool = False
    not_estimated: tuple[str, ...] = ()

    STATUS_FILE: ClassVar[str] = "estimate_status.json"
    """Written beside ``estimate.json`` when the call did not estimate every model."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "results", tuple(self.results))
        object.__setattr__(self, "failures", dict(self.failures))
        object.__setattr__(self, "not_estimated", tuple(self.not_estimated))

    def __hash__(self) -> int:
        """Hash of fields that ``==`` compares (not ``failures``, a dict)."""
        return hash((self.results, self.single, self.not_estimated))

    def __iter__(self) -> Iterator[EstimateResult]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, key: int | str) -> EstimateResult:
        """The ``key``-th result, or the result of the model named ``key``."""
        if isinstance(key, str):
            for r in self.results:
                if r.model == key:
                    return r
            raise KeyError(key)
        return self.results[key]

    def __repr__(self) -> str:
        """Short: how many models, and which were not estimated (each result's repr is short
        too)."""
        missed = len(self.failures) + len(self.not_estimated)
        return (
            f"EstimateSet({len(self.results):,} model(s) estimated"
            + (f", {missed:,} not" if missed else "")
            + (f": {self.results[0]!r}" if len(self.results) == 1 else "")
            + ")"
        )

    def _repr_html_(self) -> str:
        """A notebook's view: the one-line repr, the models not estimated and why, then the
        table of estimates."""
        lines = [repr(self)]
        lines += [f"{model}: not estimated ({why})" for model, why in self.failures.items()]
        if self.not_estimated:
            rest = self.not_estimated
            lines.append(
                f"interrupted: {len(rest):,} model(s) not estimated ("
                f"{', '.join(rest[:5])}{', ...' if len(rest) > 5 else ''})"
            )
        return html_block("\n".join(lines), self.to_frame, whole=".to_frame()", row_header=True)

    def summary(self) -> str:
        """One line per model (prefixed by its name when there are several).

        Returns
        -------
        str
            The lines, joined by newlines.
        """
        if self.single:
            return "\n".join(r.summary() for r in self.results)
        lines = [f"{r.model}: {r.summary()}" for r in self.results]
        if self.not_estimated:
            rest = self.not_estimated
            done = len(self.results) + len(self.failures)
            lines.append(
                f"stopped after {done:,} of {done + len(rest):,} models; not estimated: "
                f"{', '.join(rest[:5])}{', ...' if len(rest) > 5 else ''}"
            )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any] | list[dict[str, Any]]:
        """The content of ``estimate.json`` (and of ``estimate --json``).

        One record (:attr:`single`), or a list of records when every model asked for was
        estimated. A call that did not estimate every model (:attr:`complete` is False: a
        model failed, or the call was stopped) gives an object instead, so that the file
        itself says it is partial: ``{"complete": false, "estimates": [records],
        "not_estimated": [{"model", "reason", "message"}]}``, ``reason`` being ``"failed"``
        (``message``: why) or ``"interrupted"`` (the call stopped before the model).

        Returns
        -------
        dict of str to Any, or list of dict of str to Any
        """
        records = [r.to_dict() for r in self.results]
        if self.single and records:
            return records[0]
        if self.complete:
            return records
        return {
            "complete": False,
            "estimates": records,
            "not_estimated": self.not_estimated_records(),
        }

    def not_estimated_records(self) -> list[dict[str, str]]:
        """``{"model", "reason", "message"}`` for each model asked for and not estimated: the
        :attr:`failures` (``reason`` ``"failed"``), then the models a stop did not reach
        (:attr:`not_estimated`, ``reason`` ``"interrupted"``).

        Returns
        -------
        list of dict of str to str
        """
        rows = [
            {"model": m, "reason": "failed", "message": str(message)}
            for m, message in self.failures.items()
        ]
        rows += [
            {
                "model": m,
                "reason": "interrupted",
                "message": "not reached: the call was stopped (Ctrl-C) before this model",
            }
            for m in self.not_estimated
        ]
        return rows

    def to_frame(self) -> pd.DataFrame:
        """One row per model: :data:`TABLE_COLUMNS` (the tidy ``estimates.csv``), then
        ``target`` (``mean``, ``weighted``, ``macro over 14 groups``) when some score is
        weighted (``weights=``).

        Returns
        -------
        DataFrame of shape (n_estimated, len(TABLE_COLUMNS)), or one more column
        """
        import pandas as pd

        rows = []
        weighted = any(r.options.get("weights") for r in self.results)
        for r in self.results:
            record = r.to_dict()
            row = {c: record[c] for c in TABLE_COLUMNS[:-2]}  # n_calibrated None: missing
            row["calibration_hash"] = r.calibration_hash
            row["warnings"] = " | ".join(r.warnings)
            if weighted:
                row[TARGET_COLUMN] = target_label(r.options.get("weights"))
            rows.append(row)
        columns = [*TABLE_COLUMNS, *([TARGET_COLUMN] if weighted else [])]
        return pd.DataFrame(rows, columns=columns)

    @property
    def complete(self) -> bool:
        """Every model asked for was estimated (none stopped before, none failed)."""
        return not self.not_estimated and not self.failures

    def save(self, out: str | os.PathLike[str]) -> Path:
        """Write ``estimate.json`` and ``estimates.csv`` (:meth:`to_frame`) into the directory
        ``out`` (created); returns the path of ``estimate.json``.

        A set that is not :attr:`complete` also writes ``estimate_status.json``
        (``complete``, ``not_estimated``, ``failures``), which :meth:`read` reads back; a
        complete one removes a ``estimate_status.json`` left there by an earlier call.

        Parameters
        ----------
        out : path-like
            The directory (created when absent).

        Returns
        -------
        Path
            ``out/estimate.json``.
        """
        from functools import partial

        from latentbench.io import check_destination
        from latentbench.io._outputs import write_directory
        from latentbench.irt._fitdir import write_csv

        folder = as_path(out, "out")
        check_destination(folder, "dir", flag="out=")  # a file there: said, not FileExistsError
        # all together, estimate.json last (write_directory): another call writing the same
        # folder at once, or an interruption, never leaves one call's table beside another's
        writers: dict[str, Callable[[Path], object]] = {
            "estimates.csv": partial(write_csv, self.to_frame()),
            "estimate.json": partial(_write_json_file, data=self.to_dict()),
        }
        if not self.complete:
            writers[self.STATUS_FILE] = partial(_write_json_file, data={
                "complete": False,
                "not_estimated": list(self.not_estimated),
                "failures": dict(self.failures),
            })  # fmt: skip
        # a complete set removes the status file an earlier, incomplete call left there
        remove = [] if not self.complete else [self.STATUS_FILE]
        write_directory(folder, writers, last="estimate.json", remove=remove)
        return folder / "estimate.json"

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> EstimateSet:
        """The estimates saved in ``path`` (an ``estimate.json``, or the directory of
        ``latentbench estimate --out DIR``), without their trajectories (not saved). The
        models not estimated and the failures of an incomplete call are read from the
        ``estimate_status.json`` beside it.

        Parameters
        ----------
        path : path-like
            An ``estimate.json``, or the directory holding one.

        Returns
        -------
        EstimateSet

        Raises
        ------
        InputError
            A missing or unreadable file, or one that is not such a record, named.
        """
        file = record_file(path, "estimate.json")
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (ValueError, RecursionError) as exc:  # a huge integer, too deep too
            raise InputError(f"{file}: not JSON ({json_problem(exc)})") from None
        partial = isinstance(data, dict) and "estimates" in data and "model" not in data
        records = data["estimates"] if partial else [data] if isinstance(data, dict) else data
        if not isinstance(records, list):
            raise InputError(f"{file}: expected an estimate record or a list of them")
        try:
            results = tuple(EstimateResult.from_dict(r) for r in records)
        except InputError as exc:
            raise InputError(f"{file}: {exc}") from None
        rest: tuple[str, ...] = ()
        failures: dict[str, str] = {}
        if partial:  # the file says which models it lacks, and why
            rows = data.get("not_estimated") or []
            for row in rows if isinstance(rows, list) else [rows]:
                if not (isinstance(row, dict) and "model" in row and "reason" in row):
                    raise InputError(
                        f"{file}: field 'not_estimated' holds {row!r}; expected records with "
                        "'model' and 'reason' ('failed' or 'interrupted')"
                    )
                if row["reason"] == "failed":
                    failures[str(row["model"])] = str(row.get("message", ""))
                else:
                    rest += (str(row["model"]),)
        status = file.parent / cls.STATUS_FILE
        if status.is_file():
            try:
                state = json.loads(status.read_text(encoding="utf-8"))
                rest = tuple(str(m) for m in state.get("not_estimated") or ())
                failures = {str(k): str(v) for k, v in (state.get("failures") or {}).items()}
            except (ValueError, RecursionError, AttributeError, TypeError) as exc:
                raise InputError(
                    f"{status}: not an estimate status ({json_problem(exc)}); expected the "
                    "estimate_status.json that latentbench estimate --out writes"
                ) from None
        single = isinstance(data, dict) and not partial
        return cls(results, failures, single=single, not_estimated=rest)


def estimate_many(
    calibration: CalibrationLike,
    responses: Any,
    *,
    models: Sequence[str] | None = None,
    label: str | None = None,
    errors: Literal["raise", "collect"] = "raise",
    rank: int = 1,
    cache: bool | str | os.PathLike[str] = True,
    progress: ProgressCallback | None = None,
    stop_event: threading.Event | None = None,
    **kwargs: Any,
) -> EstimateSet:
    """:func:`estimate` for every model of a responses file or matrix, each independently.

    The calibration is loaded (and a matrix fitted) once; each model's items, interval and
    rank depend on its own answers, the calibration and the seed only, never on the other
    models of the call.

    Parameters
    ----------
    calibration : path, IRTResult, ResponseMatrix or Calibration
        As in :func:`estimate`.
    responses : path, DataFrame, dict of Series, ResponseMatrix, Series, mapping or ndarray
        Several models' answers (a file or a DataFrame laid out as one, ``read_responses``'
        dict, a matrix), or one model's.
    models : sequence of str, optional
        Estimate only these models (each must be in ``responses``).
    label : str, optional
        The name of the one model estimated, instead of the one its answers carry
        (``latentbench estimate --label``; :func:`estimate`'s ``label``: the draws follow
        it). Refused, before anything is estimated, when the responses hold several models
        and ``models`` (or ``model``) selects none or several.
    errors : {"raise", "collect"}
        What an unusable model's answers do: stop the call (``"raise"``), or record the message
        in :attr:`EstimateSet.failures` and go on with the others (``"collect"``; a call with
        one model raises either way). Errors in the calibration or the options always raise.
    rank, cache
        As in :func:`estimate`.
    progress : callable, optional
        ``progress(phase, None, None)`` when reading a responses file and when loading (or
        first fitting) a calibration that is not a :class:`Calibration` already, then
        ``progress("models", done, total)`` after each model of several (a
        :data:`~latentbench._progress.ProgressCallback`).
    stop_event : threading.Event, optional
        When set (from another thread or a signal handler), the call stops after the model
        in flight and returns the models finished so far; the others are listed in
        :attr:`EstimateSet.not_estimated` (and its summary's last line).
    **kwargs
        As in :func:`estimate` (``budget``, ``precision``, ``delta``, ``seed``, ...).

    Returns
    -------
    EstimateSet

    Raises
    ------
    InputError
        An unusable calibration or option, ``models`` not in ``responses``, or (with
        ``errors="raise"``) a model's unusable answers.
    TypeError
        A keyword that :func:`estimate` does not take.
    """
    check_event(stop_event)
    if errors not in ("raise", "collect"):
        raise InputError(f"errors={errors!r}; expected 'raise' or 'collect'")
    models = _selected_models(models, kwargs)
    label = _check_label(label)
    try:  # the options once, before any model: their errors stop the call
        bound = inspect.signature(estimate).bind(calibration, None, **kwargs)
    except TypeError as exc:
        raise TypeError(f"estimate_many: {exc}") from None
    bound.apply_defaults()
    given = bound.arguments
    _check_call(*(given[k] for k in ("budget", "precision", "delta", "items", "floor",
                                     "proposal", "point", "proxy", "seed", "weights")))  # fmt: skip
    check_seed(given["seed"], "seed")
    if isinstance(responses, str | os.PathLike):  # seconds for a leaderboard's file
        notify(progress, "reading the answers")
    source, by_model = _by_model(responses, models)
    if by_model is None:  # one model's answers (a Series, a mapping, a vector)
        if models is not None and len(models) != 1:
            raise InputError(f"models={list(models)}: the responses hold one model's answers")
        one = estimate(
            calibration,
            responses,
            model=models[0] if models else None,
            label=label,
            rank=rank,
            cache=cache,
            **kwargs,
        )
        return EstimateSet((one,), single=True)
    names = list(by_model) if models is None else [str(m) for m in models]
    if not names:
        raise InputError(f"{source}: no model to estimate (the responses hold none)")
    if label is not None and len(names) != 1:  # before the calibration is loaded
        whose = f"{source} holds" if models is None else "models=[...] selects"
        raise InputError(_label_refusal(label, whose, names))
    absent = [m for m in names if m not in by_model]
    if absent:
        raise InputError(
            f"{source}: no model {absent[0]!r} (models: "
            f"{', '.join(repr(m) for m in list(by_model)[:5])}"
            f"{', ...' if len(by_model) > 5 else ''}){_near_models(absent[0], by_model)}"
        )
    if not isinstance(calibration, Calibration):  # a matrix's first fit takes a minute at
        # leaderboard scale: the phase is said, not a bare "starting"
        notify(progress, "calibration (a matrix is fitted once, then cached)")
    cal = load_calibration(calibration, rank=rank, cache=cache)  # once: its errors stop all
    weights = None
    if given["weights"] is not None:  # read and checked once for all models
        kwargs["weights"] = weights = read_weights(cal, given["weights"])
    if given["items"] is not None:  # a design no model can be scored on stops all, said once
        design_notes: list[str] = []
        checked = _checked_design(cal, given["items"], given["floor"], design_notes, weights)
        # and is not read and replayed again for each model (k draws over every item: 50 ms
        # a model at 20,000 items, a third of a fixed-design call)
        kwargs["items"] = _CheckedItems(
            given["items"], cal.hash, given["floor"], checked, tuple(design_notes),
            None if weights is None else weights.hash,
        )  # fmt: skip
    near: dict[str, list[str]] = {}  # named models' near twins among the others
    if models is not None:
        keys, named = {same_id(m) for m in names}, set(names)
        for m in by_model:  # the ids, not the cells
            if m not in named and same_id(m) in keys:
                near.setdefault(same_id(m), []).append(m)
    copies = _copies_in_call(names, by_model)
    results: list[EstimateResult] = []
    failures: dict[str, str] = {}
    for done, name in enumerate(names, start=1):
        twins = near.get(same_id(name), [])
        # with its twins, estimate says they were not used (as for one model named)
        answers = {m: by_model[m] for m in (name, *twins)} if twins else by_model[name]
        try:
            result = estimate(cal, answers, model=name, label=label, **kwargs)
            if name in copies:
                result = _said_copy(result, copies[name], by_model[name])
            results.append(result)
        except InputError as exc:
            if errors == "raise" or len(names) == 1:
                raise
            failures[name] = str(exc)
        notify(progress, "models", done, len(names))
        if stop_event is not None and stop_event.is_set() and done < len(names):
            rest = tuple(names[done:])  # the summary says so
            return EstimateSet(tuple(results), failures, single=False, not_estimated=rest)
    return EstimateSet(tuple(results), failures, single=len(names) == 1)


def _copies_in_call(names: list[str], by_model: dict[str, pd.Series]) -> dict[str, str]:
    """The models of ``names`` whose answers are an earlier one's of the call, item for item
    (the same items answered, the same scores: the same results under two names, most
    likely), each with the first model that gave them."""
    first: dict[tuple[Any, ...], str] = {}
    copies: dict[str, str] = {}
    for name in names:  # one sort and one hash a model, beside a whole estimate each
        answered = by_model[name].dropna()
        if answered.empty:
            continue
        try:
            values = np.asarray(answered, dtype=np.float64)
        except (TypeError, ValueError):  # not numbers: estimate says so, for this model only
            continue
        ids = np.asarray(answered.index.astype(str), dtype=object)
        order = np.argsort(ids, kind="stable")  # by the ids as strings (ints and strs mixed)
        key = (tuple(ids[order]), values[order].tobytes())
        copies_of = first.setdefault(key, name)
        if copies_of != name:
            copies[name] = copies_of
    return copies


def _said_copy(result: EstimateResult, original: str, answers: pd.Series) -> EstimateResult:
    """``result`` with the note that its model's answers are ``original``'s (warned too)."""
    note = (
        f"model {result.model!r} gave the same answers as model {original!r} of this call on "
        f"every item ({int(answers.notna().sum()):,} answered; the same results under another "
        "name?): each is estimated alone from its own draws, so their estimates and intervals "
        "differ though their full-benchmark scores are the same"
    )
    warnings.warn(note, DataWarning, stacklevel=user_stacklevel())
    return replace(result, warnings=(*result.warnings, note))


def _selected_models(models: Sequence[str] | None, kwargs: dict[str, Any]) -> list[str] | None:
    """``estimate_many``'s model selection (``estimate``'s ``model=`` popped from ``kwargs``
    counts as one), checked: a list of distinct names, or None for all."""
    if "model" in kwargs:  # estimate's spelling for one model
        one = kwargs.pop("model")
        if models is not None and one is not None:
            raise InputError("give models=[...] or model=..., not both")
        models = None if one is None else [one]
    if models is None:
        return None
    if isinstance(models, str):
        raise InputError(f"models={models!r}; expected a list of model names, e.g. [{models!r}]")
    names = [str(m) for m in models]
    if not names:
        raise InputError("models=[]: no model to estimate; expected at least one name")
    repeated = sorted({m for m in names if names.count(m) > 1})
    if repeated:
        raise InputError(f"models: {repeated[0]!r} is named twice; expected each once")
    return names


def _by_model(
    responses: Any, models: list[str] | None = None
) -> tuple[str, dict[str, pd.Series] | None]:
    """Where the responses come from, and their answers by model (a file or a matrix of
    several models); None when they are one model's answers (a Series, a mapping, a vector).
    ``models``: the models wanted, whose rows alone a table file's read keeps."""
    import pandas as pd

    from latentbench.io import ResponseMatrix

    source = "the responses"
    if isinstance(responses, str | os.PathLike):
        source = str(responses)
        if not Path(responses).exists():
            raise InputError(f"responses {responses}: no such file")
        responses = read_responses(responses, models=models)
    elif isinstance(responses, pd.DataFrame):  # a long or wide table, as in a file
        source = "the responses table"
        responses = read_responses(responses)
    if isinstance(responses, ResponseMatrix):
        scores = np.asarray(responses.scores, dtype=np.float64)
        responses = {
            m: pd.Series(scores[k], index=responses.item_ids)
            for k, m in enumerate(responses.model_ids)
        }
    if isinstance(responses, dict) and all(isinstance(v, pd.Series) for v in responses.values()):
        return source, responses
    return source, None


# ------------------------------------------------------------------------------ fixed designs
_DEFAULT_K = _Default(100)


def check_tiny_options(
    k: int = _DEFAULT_K,
    *,
    precision: float | None = None,
    delta: float | None = None,
    floor: float = 0.5,
    rank: int = 1,
    seed: int = 0,
) -> None:
    """Refuse an option of :func:`tiny` whose value is wrong whatever the data, before any
    file is read or written.

    :func:`tiny` runs it first (after the options given together that do not go together);
    ``latentbench tiny`` runs it before it looks at ``--out`` or the calibration, so that an
    option out of range is said before a file that exists. The checks run in the order of the
    parameters; the first one refused is said.

    Parameters
    ----------
    k : int, default 100
        Items to draw, as :func:`tiny`'s: an integer >= 1 (its upper bound, the calibration's
        items, needs the calibration).
    precision : float, optional
        Target half-width, in (0, 0.5). None: not given.
    delta : float, optional
        Miscoverage the precision is predicted at, in [1e-16, 1). None: not given.
    floor : float, default 0.5
        Uniform share of the design, in (0, 1].
    rank : int, default 1
        Rank of the fit of a matrix calibration, an integer >= 1.
    seed : int, default 0
        Seed of the draw, an integer >= 0.

    Raises
    ------
    InputError
        Naming the first option out of its range, its value and what is expected.
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise InputError(f"k={k!r}; expected an integer >= 1 (the number of items to draw)")
    _check_options(None, precision, 0.05 if delta is None else delta, need_stop=False)
    check_floor(floor)
    check_count(rank, "rank")
    check_seed(seed, "seed")


def tiny(
    calibration: CalibrationLike,
    k: int = _DEFAULT_K,
    *,
    precision: float | None = None,
    delta: float | None = None,
    responses: ResponseMatrix | str | os.PathLike[str] | None = None,
    seed: int = 0,
    floor: float = 0.5,
    rank: int = 1,
    cache: bool | str | os.PathLike[str] = True,
    weights: Any = None,
) -> pd.DataFrame:
    """A fixed set of ``k`` items to pre-register, with known design probabilities.

    Items are drawn in order with probabilities proportional to the calibration's predicted
    residual standard deviation for a typical model (mixed with a uniform ``floor``), fixed
    before any answer; :func:`estimate` with ``items=`` then gives a valid interval for the
    full-benchmark mean from the answers to exactly these items. The Python twin of
    ``latentbench tiny`` (which writes this table as ``items.csv``).

    With ``precision``, ``k`` is chosen: the smallest size (to within 2%, one item below 50)
    whose interval half-width at ``delta``, median over the calibration models, is at most
    ``precision``. Each calibration model's own answers are replayed on the design as
    :func:`estimate` with ``items=`` scores them; in-sample (those answers made the
    calibration), so a new model unlike them may need more items (docs/estimate.md,
    "Sizing a design for a half-width").

    Parameters
    ----------
    calibration : path, IRTResult, ResponseMatrix or Calibration
        As :func:`estimate`'s; a store benchmark's (``latentbench tiny --store S --benchmark
        B``) is ``load_calibration(store, benchmark=B)``.
    k : int, default 100
        Items to draw, in [1, the calibration's items]; chosen instead with ``precision``
        (give one of ``k`` and ``precision``, not both).
    precision : float, optional
        Target half-width of the interval, in (0, 0.5): ``k`` is chosen for it.
    delta : float, optional
        Miscoverage of the interval the precision is for (``estimate --delta``); default
        0.05, with ``precision`` only.
    responses : ResponseMatrix or path, optional
        With ``precision``: the calibration models' answers (a matrix or its file:
        ``latentbench tiny --responses``); default the calibration's own when it is a matrix
        (a file, a ``ResponseMatrix``, an ``IRTResult`` that keeps its matrix). Models and
        items are matched by id. Refused without ``precision`` (nothing would read it).
    seed : int, default 0
        Seed of the draw (an integer >= 0).
    floor : float, default 0.5
        Uniform share of the design, in (0, 1].
    rank : int, default 1
        Rank of the fit when ``calibration`` is a matrix.
    cache : bool or path, default True
        As :func:`load_calibration`'s.
    weights : path, DataFrame, Series or mapping, optional
        A design for a weighted score (:func:`estimate`'s ``weights``: item weights, or
        ``group`` for a macro score): the draw is in proportion to ``w_j`` times the typical
        model's residual sd, its floor in proportion to ``w_j``, and an item of weight 0 is
        never drawn (``k`` at most the items of positive weight). The table then records the
        weights (``target``, ``weights_hash``), and :func:`estimate` with ``items=`` needs
        the same weights. With ``precision``, the half-width predicted is the weighted
        score's (each calibration model replayed as :func:`estimate` with ``items=`` and
        ``weights=`` scores it). Equal weights draw the unweighted design, written as without
        weights (8 columns; a warning says so).

    Returns
    -------
    DataFrame of shape (k, 8), or more columns with ``weights`` or ``precision``
        One row per item in draw order: ``item``, ``order`` (1-based), ``probability`` (of
        its draw), ``weight`` (``1 / (N pi)``, N the calibration's items; ``w_j / pi`` with
        ``weights``, ``w`` summing to 1), ``floor``, ``seed``,
        ``calibration_hash`` and ``k`` (the registered size: :func:`estimate` sizes the
        interval for it, so a design cut after ``k'`` rows gives the interval the whole design
        had after ``k'`` items). What the draw depends on (the calibration, ``floor`` and
        ``seed``; the first ``k'`` items of a ``k``-item design are the ``k'``-item design) is
        recorded, so that :func:`estimate` with ``items=`` replays the draw and refuses a row
        whose item is not the one drawn at its order. Save it with ``to_csv`` (as
        ``latentbench tiny`` does) or ``to_parquet``: ``items=`` reads either. With
        ``weights``, two more columns: ``target`` (``weighted`` or ``macro over 14 groups``)
        and ``weights_hash`` (:attr:`ItemWeights.hash`). With ``precision``, also
        ``precision``, ``delta``, ``predicted_half_width`` (the median over the calibration
        models), ``predicted_half_width_p90`` (their 90th percentile) and
        ``predicted_models`` (how many answered every design item), the same on every row.

    Raises
    ------
    InputError
        ``k`` not an integer in [1, n_items] (the items of positive weight with
        ``weights``), ``k`` and ``precision`` given together, ``precision`` or ``delta``
        outside their ranges, ``delta`` or ``responses`` without ``precision``, no answers
        to replay (a fit directory without ``responses``), unusable ``weights``, or an
        unusable calibration or option.
    """
    import pandas as pd

    if precision is None:
        if delta is not None:
            raise InputError(
                f"delta={delta!r} without precision: delta is the level the precision is "
                "predicted at; give precision=, or drop delta (estimate's delta= sets the "
                "interval's own)"
            )
        if responses is not None:
            shown = (
                repr(os.fspath(responses))
                if isinstance(responses, (str, os.PathLike))
                else f"<{type(responses).__name__}>"
            )
            raise InputError(
                f"responses={shown} without precision: the responses are replayed "
                "only to choose k for a precision; give precision=, or drop responses"
            )
    elif k is not _DEFAULT_K:
        raise InputError(
            f"k={k!r} and precision={precision!r}: give one (k items, or the k chosen for "
            "the precision)"
        )
    # before the calibration is read (its item count bounds k from above, below)
    check_tiny_options(k, precision=precision, delta=delta, floor=floor, rank=rank, seed=seed)
    seed = int(seed)
    cal = load_calibration(calibration, rank=rank, cache=cache)
    checked = None if weights is None else read_weights(cal, weights)
    size = None
    stream, n_drawable = _draw_stream(cal, floor, seed, checked)
    if precision is not None:
        answers = _calibration_answers(calibration, responses, cal)
        from latentbench.select._tiny_precision import size_design

        level = 0.05 if delta is None else float(delta)
        size = size_design(
            cal,
            answers,
            precision=float(precision),
            engine=lambda: _design_engine(cal, floor, level, weights=checked),
            draws=lambda m: np.asarray([j for j, _ in stream(m)], dtype=np.int64),
            weighted=checked is not None and not checked.equal,
        )
        k = size.k
    k = int(k)
    if not 1 <= k <= n_drawable:
        of = (
            ""
            if checked is None or n_drawable == cal.n_items
            else f" (of positive weight in {checked.source})"
        )
        raise InputError(f"k={k!r}; expected an integer in [1, {n_drawable}]{of}")
    drawn = stream(k)
    picks = [j for j, _ in drawn]
    probs = [p for _, p in drawn]
    w = _design_item_weights(checked, cal.n_items)
    frame = pd.DataFrame(
        {
            "item": text_array([cal.item_ids[j] for j in picks]),
            "order": np.arange(1, k + 1),
            "probability": probs,
            "weight": 1.0 / (cal.n_items * np.asarray(probs))
            if w is None
            else w[picks] / np.asarray(probs),
            "floor": float(floor),
            "seed": seed,
            "calibration_hash": text_array([cal.hash] * k),
            "k": k,
        }
    )
    if checked is not None and checked.equal:  # the plain design: written as without them
        warnings.warn(
            f"{checked.source}: every calibrated item has the same weight, so the weighted "
            "score is the plain mean and the design is the plain one, written without "
            "'target' and 'weights_hash' (estimate --items scores it with these weights or "
            "without, and compare --items takes it)",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    elif checked is not None:  # the weights the design is for: estimate(items=) checks them
        frame["target"] = text_array([target_label(checked.record())] * k)
        frame["weights_hash"] = text_array([checked.hash] * k)
    if size is not None and precision is not None:  # (size is set with a precision only)
        frame["precision"] = float(precision)
        frame["delta"] = 0.05 if delta is None else float(delta)
        frame["predicted_half_width"] = size.median
        frame["predicted_half_width_p90"] = size.p90
        frame["predicted_models"] = size.n_models
    return frame


def _draw_stream(
    cal: Calibration, floor: float, seed: int, weights: ItemWeights | None = None
) -> tuple[Callable[[int], list[tuple[int, float]]], int]:
    """``first(k)``: the first ``k`` draws (calibration position, probability) of the
    design of ``cal`` with ``floor``, ``seed`` and ``weights``, in order; drawn once, extended
    on demand (the first ``k'`` draws of a ``k``-item design are the ``k'``-item design); and
    how many items can be drawn (those of positive weight)."""
    seq = _fixed_sequence(cal, floor, weights=weights)
    rng = _design_rng(seed)
    out: list[tuple[int, float]] = []

    def first(k: int) -> list[tuple[int, float]]:
        while len(out) < min(k, seq.n):
            pi = seq.probabilities()
            j = draw_item(pi, seq.unrevealed, rng, seq.draw_order)
            seq.unrevealed[j] = False
            out.append((int(seq.population[j]), float(pi[j])))
        return out[:k]

    return first, seq.n


def _calibration_answers(calibration: Any, responses: Any, cal: Calibration) -> np.ndarray:
    """The calibration models' scores on ``cal``'s items, shape (models, n_items), NaN where
    missing: from ``responses`` (a ResponseMatrix or its file) or the calibration's own
    matrix; refused when neither has any."""
    from latentbench.io import ResponseMatrix
    from latentbench.irt import IRTResult

    matrix = responses
    if matrix is None:
        if isinstance(calibration, ResponseMatrix):
            matrix = calibration
        elif isinstance(calibration, IRTResult) and calibration.matrix is not None:
            matrix = calibration.matrix
        elif isinstance(calibration, str | os.PathLike) and Path(calibration).is_file():
            matrix = calibration
        else:
            raise InputError(
                f"precision with calibration {cal.source}: the half-width is predicted by "
                "replaying the calibration models' answers, which it does not keep (a fit "
                "directory or a calibration carries parameters only); give the matrix the "
                "fit was made from (responses=MATRIX), calibrate on the matrix file or a "
                "store's benchmark (load_calibration(STORE, benchmark=NAME)) instead, or "
                "choose k by hand (k=)"
            )
    if isinstance(matrix, str | os.PathLike):
        matrix = ResponseMatrix.read(matrix)
    if not isinstance(matrix, ResponseMatrix):
        raise InputError(
            f"responses of type {type(matrix).__name__}; expected a ResponseMatrix or its file"
        )
    rows = {str(m): i for i, m in enumerate(matrix.model_ids)}
    cols = {str(j): i for i, j in enumerate(matrix.item_ids)}
    keep = [rows[m] for m in cal.model_ids if m in rows]
    if not keep:
        raise InputError(
            f"responses: none of its {len(rows):,} models is a calibration model "
            f"({', '.join(repr(m) for m in cal.model_ids[:3])}, ...); expected the matrix "
            "the calibration was made from"
        )
    at = np.fromiter((cols.get(j, -1) for j in cal.item_ids), dtype=np.int64, count=cal.n_items)
    absent = np.flatnonzero(at < 0)
    if absent.size:  # read as never answered, it stopped every replay at that item
        named = ", ".join(repr(str(cal.item_ids[j])) for j in absent[:3])
        raise InputError(
            f"responses{'' if matrix.source is None else f' ({matrix.source})'}: "
            f"{absent.size:,} of the calibration's {cal.n_items:,} items are not in it "
            f"({named}{', ...' if absent.size > 3 else ''}); expected the matrix the "
            "calibration was made from (its items matched by id, in any order)"
        )
    if len(keep) < len(cal.model_ids):  # the prediction is over fewer models: said
        gone = [str(m) for m in cal.model_ids if m not in rows]
        warnings.warn(
            f"responses{'' if matrix.source is None else f' ({matrix.source})'}: "
            f"{len(gone):,} of the calibration's {len(cal.model_ids):,} models are not in it "
            f"({', '.join(repr(m) for m in gone[:3])}{', ...' if len(gone) > 3 else ''}): "
            f"the half-width is predicted from the other {len(keep):,} "
            "(predicted_models); expected the matrix the calibration was made from",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    Y = np.asarray(matrix.scores, dtype=np.float64)[keep]
    out = np.where(at >= 0, Y[:, np.maximum(at, 0)], np.nan)
    return np.asarray(out, dtype=np.float64)


def _design_engine(
    cal: Calibration,
    floor: float,
    delta: float,
    proxy: str = "irt",
    point: str = "dr",
    weights: ItemWeights | None = None,
) -> SequentialEstimate:
    """A model's estimate on a fixed design before its first answer, as ``estimate(items=)``
    runs it (and ``tiny(precision=)`` replays the calibration models with it): the fixed
    design's engine (:func:`_fixed_sequence`) with an unsized sequence at ``delta``."""
    from latentbench.select._estimate_cs import WeightedBettingCS

    seq = _fixed_sequence(cal, floor, proxy, point, weights)
    seq.delta = float(delta)
    seq.cs = WeightedBettingCS(delta)
    return seq


def _design_rng(seed: int) -> np.random.Generator:
    """The random stream of :func:`tiny`'s draw (replayed by ``estimate(items=)``)."""
    return np.random.default_rng([int(seed), 0x7199])


def _fixed_sequence(
    cal: Calibration,
    floor: float,
    proxy: str = "irt",
    point: str = "dr",
    weights: ItemWeights | None = None,
) -> SequentialEstimate:
    """The engine of a fixed design: its probabilities depend on the calibration, ``floor``
    and the items already drawn only (the typical model's predictions), never on answers.
    With ``weights`` (not all equal) its population is the items of positive weight and
    the draw is in proportion to their weights (:func:`design_probabilities`); equal
    weights give the unweighted design bit for bit."""
    pop = np.arange(cal.n_items)
    w = None
    if weights is not None and not weights.equal:
        pop = np.flatnonzero(weights.weights > 0)
        w = weights.weights[pop]
    f0 = cal.population_prediction()
    return SequentialEstimate(
        cal,
        pop,
        delta=0.05,
        floor=floor,
        design_prediction=f0[pop],
        proxy=proxy,
        point=point,
        weights=w,
    )


def _design_item_weights(weights: ItemWeights | None, n_items: int) -> np.ndarray | None:
    """The normalised item weights a design's ``weight`` column (``w_j / pi_j``) uses, over
    the calibration's items; None for the plain mean (``1 / (N pi_j)``, as before weights)."""
    if weights is None or weights.equal:
        return None
    return np.asarray(weights.weights, dtype=np.float64).reshape(n_items)


_DESIGN_COLUMNS = "item, order, probability, weight, floor, seed, calibration_hash, k"
"""The columns :func:`tiny` writes (in messages)."""


def _short(value: Any, width: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def lm_eval_samples(
    items: str | os.PathLike[str] | pd.DataFrame, task: str | None = None
) -> dict[str, list[int]]:
    """A fixed design's items as lm-eval's ``--samples`` mapping ``{task: [doc ids]}``.

    Run the harness on exactly the design's items (``lm-eval run ... --tasks T --samples
    samples.json --log_samples``), then score its logs with ``latentbench estimate CALIBRATION
    OUT --source lm-eval --items items.csv``.

    Parameters
    ----------
    items : path-like or DataFrame
        A design from :func:`tiny` (``latentbench tiny --out items.csv``).
    task : str, optional
        The lm-eval task of a benchmark whose item ids are doc ids (``12``). Leave it unset for
        a benchmark ingested with ``group=`` (``latentbench ingest --group``), whose ids are
        ``TASK/ID`` (``mmlu_anatomy/12``): each id then names its task.

    Returns
    -------
    dict of str to list of int
        Each task's doc ids, **sorted**: lm-eval (0.4.9-0.4.13) evaluates the listed docs in
        the dataset's order and logs the k-th as the list's k-th id, so an unsorted list would
        mislabel its logs. Tasks sorted by name, as the live bridge's plans list them. A doc
        id written otherwise than lm-eval logs it (``007``, ``٣``) is refused: the harness
        would log it as ``7``, which the design's item ``007`` never matches.
    """
    import re

    from latentbench.select.oracles._lm_eval import _check_doc

    frame = read_design(items)
    if task is not None and (not isinstance(task, str) or not task.strip()):
        raise InputError(f"task={task!r}; expected the lm-eval task name")
    docs: dict[str, set[int]] = {}
    for item in frame["item"]:
        if task is not None:
            if not item.isdigit():
                hint = " (a TASK/ID of a group: leave task unset)" if "/" in item else ""
                raise InputError(
                    f"items: item {item!r} is not an lm-eval doc id{hint}; expected doc ids "
                    f"(0, 1, ...) of task {task!r}"
                )
            _check_doc(item, item)
            docs.setdefault(task, set()).add(int(item))
            continue
        match = re.fullmatch(r"(.+)/(\d+)", item)
        if match is None:
            raise InputError(
                f"items: item {item!r} names no task; expected TASK/ID ids (a benchmark ingested "
                "with group=), or give the lm-eval task of the benchmark (task=)"
            )
        _check_doc(item, match.group(2))
        docs.setdefault(match.group(1), set()).add(int(match.group(2)))
    return {name: sorted(docs[name]) for name in sorted(docs)}


def read_design(items: str | os.PathLike[str] | pd.DataFrame) -> pd.DataFrame:
    """Read a fixed design (``latentbench tiny --out items.csv``, or :func:`tiny`'s table
    saved as CSV or parquet), checked: at least one row, orders ``1, 2, ...`` (after sorting),
    each item once, and one ``floor``, ``seed`` and ``calibration_hash`` for all rows (the
    columns a design written before ``seed`` was recorded lacks are not required).

    Returns
    -------
    DataFrame
        The rows sorted by ``order``, ``item`` as text.
    """
    import pandas as pd

    from latentbench.io._matrix_checks import _row, _show

    frame, source = _design_frame(items)
    missing = [c for c in ("item", "order", "probability") if c not in frame.columns]
    if missing:
        found = [str(c) for c in frame.columns]
        raise InputError(
            f"{source}: lacks column(s) {', '.join(missing)}; expected the "
            f"output of `latentbench tiny` ({_DESIGN_COLUMNS}); found columns {found[:8]}"
            f"{f' ({len(found)} columns)' if len(found) > 8 else ''}"
        )
    if len(frame) == 0:
        raise InputError(
            f"{source}: no rows; expected the output of `latentbench tiny` (k >= 1 rows of "
            f"{_DESIGN_COLUMNS})"
        )
    empty = frame["item"].isna().to_numpy(bool)
    if empty.any():  # not an item 'nan' of another calibration
        k = int(np.flatnonzero(empty)[0])
        order = frame["order"].iloc[k]
        at = "" if pd.isna(order) else f" (order {_show(order)})"
        blank = bool(frame.iloc[k].isna().all())  # every cell: a spreadsheet's empty row
        raise InputError(
            f"{source}: column 'item' is empty on {_row(source, k)}{at}; expected the item id "
            "tiny drew at that order"
            + (" (the row is empty, as a spreadsheet may leave: delete it)" if blank else "")
        )
    frame = frame.assign(item=frame["item"].astype(TEXT))
    frame = frame.sort_values("order", kind="stable").reset_index(drop=True)
    _check_draws(frame, source)
    _check_constant_columns(frame, source)
    return frame


def _design_frame(items: str | os.PathLike[str] | pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The design's table as given (a DataFrame, or read from its file) and what messages
    call it."""
    import pandas as pd

    if isinstance(items, pd.DataFrame):
        return items, "items"
    if not isinstance(items, str | os.PathLike):
        raise InputError(
            f"items={_short(items)}: a {type(items).__name__}; expected a fixed design written "
            "by tiny (its CSV/parquet path or its DataFrame: item, order, probability), made "
            "with tiny(calibration, k=...); to let the estimate choose the items, drop items="
        )
    return _read_design_file(Path(items))


def _check_draws(frame: pd.DataFrame, source: str) -> None:
    """Refuse a design (sorted by ``order``) whose orders are not ``1, 2, ...`` or that draws
    an item twice."""
    import pandas as pd

    from latentbench.io._matrix_checks import _show

    order = pd.to_numeric(frame["order"], errors="coerce").to_numpy(dtype=np.float64)
    expected = np.arange(1, len(frame) + 1)
    if not np.array_equal(order, expected):  # a row deleted, repeated or renumbered by hand
        k = int(np.flatnonzero(order != expected)[0])
        raise InputError(
            f"{source}: column 'order' holds {_show(frame['order'].iloc[k])} where "
            f"{k + 1} is expected (row {k + 1} of {len(frame)} after sorting); a design is "
            "its draws 1, 2, ... in order: a middle row deleted or repeated breaks it (cutting "
            "the last rows keeps a valid, shorter design)"
        )
    ids = frame["item"].tolist()
    repeated = pd.Series(ids).duplicated().to_numpy()
    if repeated.any():
        k = int(np.flatnonzero(repeated)[0])
        raise InputError(
            f"{source}: item {ids[k]!r} is drawn twice (orders {ids.index(ids[k]) + 1} and "
            f"{k + 1}); a design draws each item once"
        )


_DESIGN_VALUES = {
    "floor": "the floor tiny drew the design with, a number in (0, 1]",
    "seed": "the integer >= 0 tiny drew the design with",
    "calibration_hash": "the SHA-256 of the calibration tiny drew from",
    "k": "the integer k that `latentbench tiny --k` drew",
    "target": "the score tiny drew the design for (weighted, macro over N groups, or mean)",
    "weights_hash": "the hash of the weights tiny drew the design for (tiny --weights)",
}
"""What a design's one-value columns hold (for the messages that refuse them)."""


def _check_constant_columns(frame: pd.DataFrame, source: str) -> None:
    """Refuse a design whose ``floor``, ``seed`` or ``calibration_hash`` (where present)
    differ between rows, or whose seed is no integer >= 0."""
    import pandas as pd

    from latentbench.io._matrix_checks import _show

    for column in _DESIGN_VALUES:  # one value for the whole design
        if column not in frame.columns:
            continue
        empty = frame[column].isna().to_numpy(bool)
        if empty.any():  # NaN differs from NaN: an emptied column is not two designs
            raise InputError(
                f"{source}: column {column!r} is empty at order {int(np.flatnonzero(empty)[0]) + 1}"
                f"; expected {_DESIGN_VALUES[column]}, which tiny writes on every row"
            )
        values = frame[column].astype(TEXT)
        if column in ("floor", "seed", "k"):  # 0.5 and 0.50 are one floor
            numeric = pd.to_numeric(frame[column], errors="coerce")
            values = numeric.astype(TEXT).where(numeric.notna(), frame[column].astype(TEXT))
        other = np.flatnonzero((values != values.iloc[0]).to_numpy())
        if other.size:
            k = int(other[0])
            raise InputError(
                f"{source}: column {column!r} holds {_show(frame[column].iloc[k])} at order "
                f"{k + 1} but {_show(frame[column].iloc[0])} at order 1; a design has one "
                f"{column} for all its rows (rows from two designs, or edited by hand)"
            )
    if "floor" in frame.columns:
        floor = pd.to_numeric(frame["floor"], errors="coerce").iloc[0]
        if not (np.isfinite(floor) and 0 < floor <= 1):
            raise InputError(
                f"{source}: column 'floor' holds {_show(frame['floor'].iloc[0])}; expected "
                f"{_DESIGN_VALUES['floor']}"
            )
    if "seed" in frame.columns:
        seed = pd.to_numeric(frame["seed"], errors="coerce").iloc[0]
        if not (np.isfinite(seed) and seed >= 0 and float(seed).is_integer()):
            raise InputError(
                f"{source}: column 'seed' holds {_show(frame['seed'].iloc[0])}; expected the "
                "integer >= 0 that `latentbench tiny` drew the design with"
            )


def _design_seed(value: Any) -> int:
    """A design's seed as the exact integer (``read_design`` checked it: an integer >= 0,
    possibly written ``12.0`` by a spreadsheet)."""
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        return int(float(text))


def _read_design_file(path: Path) -> tuple[pd.DataFrame, str]:
    """A design file's table (CSV, or parquet by its suffix) and its name in messages."""
    import pandas as pd

    source = f"items {path}"
    if not path.exists():
        raise InputError(f"{source}: no such file")
    if path.is_dir():
        raise InputError(
            f"{source}: is a directory; expected the design file that `latentbench tiny` "
            "writes (items.csv)"
        )
    if path.suffix.lower() in (".parquet", ".pq"):
        try:
            return pd.read_parquet(path), source
        except Exception as exc:  # pyarrow raises many types for a damaged file
            raise InputError(
                f"{source}: could not be read as parquet ({type(exc).__name__}: {exc}); "
                "expected a design written by tiny (a .csv, or a .parquet)"
            ) from None
    try:
        from latentbench.io._files import read_csv_ids

        # the seed as text too: a seed above 2**53 read as a float was rounded (another draw)
        # the hashes as text: a hex digest of digits only would be read as a number
        return read_csv_ids(path, ("item", "seed", "calibration_hash", "weights_hash")), source
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        said = "is empty" if isinstance(exc, pd.errors.EmptyDataError) else "is not a CSV file"
        raise InputError(
            f"{source}: {said} ({type(exc).__name__}); expected the CSV file that "
            f"`latentbench tiny` writes ({_DESIGN_COLUMNS}), or a .parquet of tiny's table"
        ) from None


_OTHER_CODE = (
    "or made by other latentbench code: a response-matrix calibration is refitted by each "
    "version (a fit directory's parameters are fixed: pre-register a design made from one)"
)
"""The other cause of a design its own calibration (same hash) refuses."""

_PROBABILITY_RTOL = 1e-5
"""Relative tolerance on a design's recorded probabilities: they are re-derived from the
calibration (the recomputed ones are used), so the check only has to catch an edit; 1e-5
accepts a file rounded to 6 significant digits (a spreadsheet's round-trip)."""


@dataclass(frozen=True)
class _Design:
    """A fixed design checked against a calibration (:func:`_checked_design`)."""

    frame: pd.DataFrame
    where: str
    floor: float
    seed: int | None
    positions: np.ndarray
    registered: int
    probabilities: tuple[float, ...]
    draws: np.ndarray
    """The design's items as indices in its sequence's population (:func:`_fixed_sequence`:
    ``positions`` itself unless weighted)."""


@dataclass(frozen=True)
class _CheckedItems:
    """A fixed design as :func:`estimate_many` checked it once against the calibration
    ``calibration_hash`` with ``floor`` (passed to each model's :func:`estimate` as its
    ``items``): the same :class:`_Design` and notes as checking it again."""

    items: Any
    calibration_hash: str
    floor: float
    design: _Design
    notes: tuple[str, ...]
    weights_hash: str | None = None


def _checked_design(
    cal: Calibration,
    items: Any,
    default_floor: float,
    notes: list[str],
    weights: ItemWeights | None = None,
    command: str = "estimate",
) -> _Design:
    """Read the fixed design ``items`` and check it against ``cal`` with no model's answers:
    its hash, its weights (those it was drawn for must be ``weights``), its items, its
    registered ``k``, and its draws and probabilities replayed (they depend on the
    calibration, the weights, the floor and the items drawn before, never on answers).
    Raises :class:`InputError` for a design that no model can be scored on, so that
    :func:`estimate_many` refuses it once rather than once per model; ``command`` names the
    command in the messages."""
    import pandas as pd

    design = read_design(items)
    where = "items" if isinstance(items, pd.DataFrame) else f"items {items}"
    floor = float(design["floor"].iloc[0]) if "floor" in design else default_floor
    if "calibration_hash" in design:
        _check_design_hash(str(design["calibration_hash"].iloc[0]), cal, where)
    _check_design_weights(design, where, weights, command)
    seed = _design_seed(design["seed"].iloc[0]) if "seed" in design else None
    pos = cal.positions(design["item"].tolist())
    if (pos < 0).any():
        bad = design["item"].iloc[int(np.flatnonzero(pos < 0)[0])]
        why = (
            "this calibration's hash is the design's, so the item was edited: use the file "
            "tiny wrote"
            if "calibration_hash" in design
            else "the design was made from another calibration, or edited"
        )
        raise InputError(
            f"{where}: item {bad!r} is not in the calibration{_near_id(bad, list(cal.item_ids))}"
            f"; {why}"
        )
    if seed is None:
        notes.append(
            f"{where}: no 'seed' column (a design written before tiny recorded its seed, or "
            "with the column removed): its probabilities are checked but not that its items "
            "are the ones tiny drew; make the design again with `latentbench tiny` to have "
            "its items checked"
        )
    # the design's probabilities only: no answer needed
    seq = _fixed_sequence(cal, floor, weights=weights)
    draws = _population_index(seq, cal.n_items)[pos]
    if (draws < 0).any():  # an item of weight 0: never drawn for these weights
        bad = design["item"].iloc[int(np.flatnonzero(draws < 0)[0])]
        raise InputError(
            f"{where}: item {bad!r} has weight 0 in {weights.source if weights else 'weights'}"
            ", and a design for these weights never draws it; the design's items were edited "
            "(use the file tiny wrote)"
        )
    registered = _registered_size(design, where, seq.n, notes, seq.n < cal.n_items)
    rng = _design_rng(seed) if seed is not None else None
    recorded = pd.to_numeric(design["probability"], errors="coerce").to_numpy(dtype=np.float64)
    probs: list[float] = []
    names = [cal.item_ids[int(i)] for i in seq.population]  # by population index
    for k, (j, p) in enumerate(zip(draws.tolist(), recorded.tolist(), strict=True)):
        pi = seq.probabilities()
        if rng is not None:  # the draw replayed: the item at order k + 1 is the one drawn
            drawn = draw_item(pi, seq.unrevealed, rng, seq.draw_order)
            if drawn != j:
                raise InputError(
                    f"{where}: the row of order {k + 1} holds item {names[j]!r}, but "
                    f"the item drawn at order {k + 1} by seed {seed} (floor {floor:g}, this "
                    f"calibration) is {names[drawn]!r}; the design's items were edited "
                    "(a pre-registered design is tiny's draws, in order): use the file tiny "
                    f"wrote, or cut only its last rows; {_OTHER_CODE}"
                    + ("" if weights is not None else _weighted_hint(design, cal.n_items))
                )
        if not math.isclose(pi[j], p, rel_tol=_PROBABILITY_RTOL):
            rel = abs(p - float(pi[j])) / float(pi[j]) if math.isfinite(p) else math.inf
            from latentbench.io._matrix_checks import _show

            shown = repr(p) if math.isfinite(p) else _show(design["probability"].iloc[k])
            raise InputError(
                f"{where}: item {names[j]!r} (order {k + 1}) has probability {shown} but "
                f"this calibration gives {float(pi[j])!r} (relative difference {rel:.2g}, more "
                f"than the {_PROBABILITY_RTOL:g} that rounding to 6 significant digits "
                "makes); its probability or floor was edited, or the design was made from "
                f"another calibration or floor; {_OTHER_CODE}"
                + ("" if weights is not None else _weighted_hint(design, cal.n_items))
            )
        probs.append(float(pi[j]))
        seq.unrevealed[j] = False
    return _Design(design, where, floor, seed, pos, registered, tuple(probs), draws)


def _weighted_hint(design: pd.DataFrame, n_items: int) -> str:
    """What to add to the refusal of a design read as plain (no ``weights_hash``) whose
    ``weight`` column is not ``1 / (n_items x probability)`` on most rows, as tiny writes it
    for the plain mean: tiny --weights writes ``w / probability`` there, so it may be a
    weighted design whose ``target`` and ``weights_hash`` columns were removed; empty
    otherwise (a plain design, one with a few weights edited, one without the columns)."""
    import pandas as pd

    if "weight" not in design.columns or "probability" not in design.columns:
        return ""
    weight = pd.to_numeric(design["weight"], errors="coerce").to_numpy(dtype=np.float64)
    prob = pd.to_numeric(design["probability"], errors="coerce").to_numpy(dtype=np.float64)
    with np.errstate(all="ignore"):
        plain = np.isclose(weight * prob * n_items, 1.0, rtol=10 * _PROBABILITY_RTOL, atol=0.0)
    if 2 * int(plain.sum()) >= plain.size:
        return ""
    return (
        f"; its 'weight' column is not 1 / ({n_items:,} x probability) on "
        f"{plain.size - int(plain.sum()):,} of its {plain.size:,} rows, as tiny writes it for "
        "the plain mean: if tiny --weights drew it (weight = w / probability), its 'target' "
        "and 'weights_hash' columns were removed: use the file tiny wrote, with the same "
        "weights (weights=)"
    )


def _population_index(seq: SequentialEstimate, n_items: int) -> np.ndarray:
    """Each calibrated item's index in ``seq``'s population, -1 for one outside it, shape
    (n_items,)."""
    index = np.full(n_items, -1, dtype=np.int64)
    index[seq.population] = np.arange(seq.n)
    return index


def _check_design_weights(
    design: pd.DataFrame, where: str, weights: ItemWeights | None, command: str
) -> None:
    """Refuse a design drawn for other weights than ``weights``: a weighted design (its
    ``weights_hash``) scored without them or with others, or a plain design scored with
    weights that are not all equal (equal weights are the plain mean, drawn alike)."""
    recorded = str(design["weights_hash"].iloc[0]) if "weights_hash" in design else None
    if recorded is None and "target" in design:  # half of what tiny --weights writes
        raise InputError(
            f"{where}: column 'target' ({design['target'].iloc[0]}) says the design was drawn "
            "by tiny --weights, but it has no 'weights_hash' column (removed?); expected both, "
            "as tiny --weights writes them (the hash names the weights its probabilities are "
            "for), or neither for a plain design: use the file tiny wrote, with the same "
            "weights (weights=)"
        )
    said = (
        f"target: {design['target'].iloc[0]}, weights {recorded}"
        if recorded is not None and "target" in design
        else f"weights {recorded}"
    )
    if recorded is None:
        if weights is None or weights.equal:
            return
        raise InputError(
            f"{where}: drawn for the plain mean (no 'weights_hash' column), not for "
            f"{weights.source} (target: {target_label(weights.record())}, weights {weights.hash})"
            "; make the design with tiny(..., weights=) for a weighted score, or drop "
            "weights=" + _weighted_hint(design, weights.weights.size)
        )
    if weights is None:
        raise InputError(
            f"{where}: drawn by tiny --weights for a weighted score ({said}); pass the same "
            "weights (weights=): without them the design's probabilities are "
            f"not the plain mean's, and {command}'s target would be the plain mean, which a "
            "design that never draws an item of weight 0 does not cover"
        )
    if weights.hash != recorded:
        raise InputError(
            f"{where}: drawn for weights {recorded}, not for {weights.source} "
            f"(target: {target_label(weights.record())}, weights {weights.hash}); pass the "
            "weights the design was drawn for, or make the design again with these"
        )


def _estimate_fixed(
    cal: Calibration,
    name: str,
    y: np.ndarray,
    items: Any,
    delta: float,
    options: dict[str, Any],
    notes: list[str],
    weights: ItemWeights | None = None,
) -> EstimateResult:
    import pandas as pd

    if (
        isinstance(items, _CheckedItems)
        and items.calibration_hash == cal.hash
        and items.floor == options["floor"]
        and items.weights_hash == (None if weights is None else weights.hash)
    ):  # checked once by estimate_many for all its models
        checked = items.design
        notes.extend(items.notes)
        items = items.items
    else:
        if isinstance(items, _CheckedItems):
            items = items.items
        checked = _checked_design(cal, items, options["floor"], notes, weights)
    design, where, floor, seed, pos = (
        checked.frame,
        checked.where,
        checked.floor,
        checked.seed,
        checked.positions,
    )
    # the design's options: its seed drew the items (None: a design that does not say)
    options.update(design="fixed", budget=None, precision=None, floor=floor, seed=seed,
                   proposal="residual")  # fmt: skip
    notes.extend(_design_delta_note(design, where, delta, "estimate"))
    of = "the design" if isinstance(items, pd.DataFrame) else str(items)
    _check_design_answered(cal, name, y, pos, of)
    unused = int(np.isfinite(y).sum()) - pos.size  # every design item answered (checked)
    if unused:
        notes.append(f"{name!r}: " + _unused_note(unused, pos.size, of, "estimate"))
    seq = _design_engine(cal, floor, delta, options["proxy"], options["point"], weights)
    model_scores = None
    if weights is not None:  # the weighted target (equal weights: the plain mean's bits)
        options["weights"] = weights.record()
        if not weights.equal:
            model_scores = weights.model_scores
            notes.extend(_fitted_scores_note(cal, weights))
    notes.extend(proxy_note(cal, options["proxy"], seq.proxy_used))
    options["proxy"] = seq.proxy_used
    # the design's registered size is its budget, fixed before any answer: sized for its end
    # (a design cut after k' rows keeps the registered k: a point on the registered run)
    registered = checked.registered
    seq.set_target(seq.budget_target(registered))
    options.update(target=seq.cs.target, sized_for=sized_for(None, seq.cs.target), k=registered)
    # the draws and probabilities were checked (_checked_design)
    for j, i in zip(checked.draws.tolist(), pos.tolist(), strict=True):
        seq.observe(j, float(y[i]), seq.probabilities())
    w = _design_item_weights(weights, cal.n_items)
    notes.extend(_weight_note(design, cal.n_items, where, None if w is None else w[pos]))
    return _finish(
        cal, seq, name, "items", list(checked.probabilities), options, notes, model_scores
    )


def _design_delta_note(design: pd.DataFrame, where: str, delta: float, command: str) -> list[str]:
    """What :func:`estimate` and :func:`~latentbench.select.compare` say when a design sized by
    ``tiny --precision`` (its ``delta`` column) is scored at another ``delta``: its predicted
    half-width was for an interval at the design's delta. Nothing for an unsized design
    (no ``delta`` column) or the same delta (equal to 6 significant digits)."""
    import pandas as pd

    if "delta" not in design or not len(design):
        return []
    sized = float(pd.to_numeric(design["delta"], errors="coerce").iloc[0])
    # the same delta to the 6 digits said below (a float32 0.05 is 0.0500000007): the line
    # never names two equal-looking deltas, and no interval moves by such a difference
    if not math.isfinite(sized) or f"{sized:g}" == f"{delta:g}":
        return []
    row = design.iloc[0]
    predicted = pd.to_numeric(
        pd.Series([row.get("predicted_half_width"), row.get("precision")]), errors="coerce"
    )
    said = []
    if predicted.notna().all():
        said.append(
            f"median predicted half-width {predicted.iloc[0]:.3f} for precision "
            f"{predicted.iloc[1]:g}"
        )
    if command == "compare":
        said.append("for one model's score, not a difference")
    what = f" ({', '.join(said)})" if said else ""
    return [
        f"{where}: sized by tiny --precision for an interval at delta {sized:g}{what}, scored "
        f"here at delta {delta:g}: the interval is {'wider' if delta < sized else 'narrower'} "
        f"than predicted; score it with delta={sized:g}, or size a design at this "
        f"delta (tiny(..., precision=H, delta={delta:g}))"
    ]


def _unused_note(n: int, k: int, of: str, command: str, per_model: str = "") -> str:
    """What :func:`estimate` and :func:`~latentbench.select.compare` say when a fixed design
    leaves ``n`` answers unused: the answers to calibrated items outside the design's ``k``
    items (``of`` names the design; ``per_model``, when given, the count of each model)."""
    from latentbench._text import counted

    return (
        f"{counted(n, 'answer')} outside the {k:,} items of {of} "
        f"{'was' if n == 1 else 'were'} not used{per_model}: a fixed design is scored on the "
        "items it drew alone (with their probabilities: what keeps its interval valid); "
        f"without --items (items=) {command} chooses its items from all the answers"
    )


def _check_design_answered(
    cal: Calibration, name: str, y: np.ndarray, pos: np.ndarray, of: str
) -> None:
    """Refuse a model that did not answer every item of a fixed design (``pos``, the design's
    items' indices in ``cal`` in their order; ``y`` the model's answers over ``cal``'s items,
    NaN where missing; ``of`` names the design in the message)."""
    missing = [k for k, j in enumerate(pos.tolist()) if not np.isfinite(y[j])]
    if not missing:
        return
    shown = ", ".join(f"{cal.item_ids[pos[k]]!r} (order {k + 1})" for k in missing[:5])
    done = missing[0]  # answered orders 1..done and none after: a run that stopped
    cut = (
        f"; it answered its first {done:,}: keep only the design's rows of order 1 to "
        f"{done:,} (cutting the last rows keeps a valid design)"
        if done and missing == list(range(done, pos.size))
        else ""
    )
    raise InputError(
        f"model {name!r} did not answer {len(missing)} of the {pos.size} items of "
        f"{of}: {shown}{', ...' if len(missing) > 5 else ''}; a fixed design needs an "
        "answer to every one of its items: run the model on exactly these (e.g. lm-eval "
        f"--samples){cut}"
    )


def _weight_note(
    design: pd.DataFrame, n_items: int, where: str, item_weights: np.ndarray | None = None
) -> list[str]:
    """A note when the design's ``weight`` column (written by tiny for reading, ``1 / (N
    probability)``, ``w_j / probability`` for a weighted design's ``item_weights`` ``w`` of
    its items; not read back) disagrees with its probabilities: an edit the estimate did
    not follow, said rather than ignored."""
    import pandas as pd

    if "weight" not in design.columns:
        return []
    weight = pd.to_numeric(design["weight"], errors="coerce").to_numpy(dtype=np.float64)
    prob = pd.to_numeric(design["probability"], errors="coerce").to_numpy(dtype=np.float64)
    expected = 1.0 / (n_items * prob) if item_weights is None else item_weights / prob
    off = np.flatnonzero(~np.isclose(weight, expected, rtol=10 * _PROBABILITY_RTOL, atol=0.0))
    if not off.size:
        return []
    k = int(off[0])
    from latentbench.io._matrix_checks import _show

    return [
        f"{where}: column 'weight' disagrees with "
        + (f"1 / ({n_items:,} x probability)" if item_weights is None else "w / probability")
        + " in "
        f"{off.size:,} row(s) (e.g. order {k + 1}: {_show(design['weight'].iloc[k])}, expected "
        f"{expected[k]:.6g}); the weight is not read (the estimate weighs each item by its "
        "probability), so the edit was not followed"
    ]


def _registered_size(
    design: pd.DataFrame, where: str, n_items: int, notes: list[str], weighted: bool = False
) -> int:
    """The design's registered ``k`` (its rows for a design written before ``k`` was
    recorded, said in ``notes``); more rows than ``k``, or a ``k`` above the calibration's
    ``n_items`` (more than tiny can draw; ``weighted``: the items of positive weight), is an
    :class:`InputError`."""
    import pandas as pd

    from latentbench.io._matrix_checks import _show

    if "k" not in design.columns:
        notes.append(
            f"{where}: no 'k' column (a design written before tiny recorded its k, or with the "
            f"column removed): its interval is sized for its {len(design):,} rows, not for the "
            "k registered; make the design again with `latentbench tiny` to have it sized for "
            "its k"
        )
        return len(design)
    value = pd.to_numeric(design["k"], errors="coerce").iloc[0]
    if not (np.isfinite(value) and float(value).is_integer() and len(design) <= value <= n_items):
        raise InputError(
            f"{where}: column 'k' holds {_show(design['k'].iloc[0])} for a design of {len(design)} "
            "rows; expected the integer k that `latentbench tiny --k` drew, at least the rows "
            f"(a design's rows can be cut, not added) and at most the {n_items:,} "
            + ("items of positive weight" if weighted else "calibrated items")
        )
    return int(value)


def _check_design_hash(recorded: str, cal: Calibration, where: str) -> None:
    """Refuse a design whose ``calibration_hash`` is not ``cal``'s, saying why it may be."""
    if recorded == cal.hash:
        return
    if recorded and len(recorded) < len(cal.hash) and cal.hash.startswith(recorded):
        raise InputError(
            f"{where}: column 'calibration_hash' holds {recorded!r}, the first "
            f"{len(recorded)} of the {len(cal.hash)} characters of this calibration's hash "
            f"{cal.hash!r}: the column was truncated (edited by hand or by a spreadsheet); "
            "restore it from the file tiny wrote"
        )
    shown = 12 if recorded[:12] != cal.hash[:12] else len(cal.hash)  # enough to differ
    raise InputError(
        f"{where}: made from calibration {recorded[:shown]!r}"
        f"{'...' if len(recorded) > shown else ''}, not this one ({cal.hash[:shown]!r}"
        f"{'...' if len(cal.hash) > shown else ''}); pass the fit directory or file the "
        "design was made from, or make the design with this calibration (the same responses "
        "fitted at another rank, read from a store instead of a file, or passed in Python as "
        "a ResponseMatrix or IRTResult instead of the file's path, are another calibration: a "
        "file is identified by its bytes (a compressed one by its decompressed bytes), a "
        "matrix in memory by its content; a fit directory by its files' bytes, so a refit of "
        "the same responses, by this latentbench version or another, is another calibration: "
        "a pre-registered design keeps its fit directory)"
    )
