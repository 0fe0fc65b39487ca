"""Two models, one question: is A's full-benchmark score higher than B's? (:func:`compare`)

Paired: every drawn item is answered by both models, and the target is the mean difference
``mu_A - mu_B`` over the calibrated items. Round ``t`` draws item ``J`` from the unrevealed
items ``U`` with probability ``pi_j = (1 - floor) q_j / sum_U q + floor / |U|``, where
``q_j = sqrt(fA_j (1 - fA_j) + fB_j (1 - fB_j))`` is the predicted standard deviation of the
difference on item ``j`` (the items where the models are most likely to differ), and forms

    D_t = (1/n) [ sum_R d + sum_U g + (d_J - g_J) / pi_J ],   d = yA - yB,  g = fA - fB,

unbiased for ``mu_A - mu_B`` whatever the predictions. The rounds, mapped to [0, 1] by
``(D + 1) / 2``, feed the same anytime-valid betting confidence sequence as :func:`estimate`.
It stops when the interval excludes 0 (the sign is certified at ``delta``), when it lies within
``[-margin, margin]`` (the scores are equivalent within the margin), at the budget, or when the
items run out.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from latentbench._checks import check_seed, json_problem, user_stacklevel
from latentbench.exceptions import InputError, LiveStop
from latentbench.select._estimate import (
    _DEFAULT_FLOOR,
    _DEFAULT_SEED,
    _answered_none,
    _answers,
    _calibration_twins,
    _check_design_answered,
    _check_item_values,
    _check_options,
    _check_record_numbers,
    _check_record_ranges,
    _checked_design,
    _Default,
    _Design,
    _design_delta_note,
    _finite_number,
    _fixed_sequence,
    _record_list,
    _rng,
    _Said,
    _twins_said,
    _unused_note,
    _weight_note,
    _write_json_file,
    outward,
    proxy_note,
    record_file,
)
from latentbench.select._estimate_calibration import Calibration, load_calibration
from latentbench.select._estimate_cs import WeightedBettingCS
from latentbench.select._estimate_design import (
    _VARIANCE_FLOOR,
    SequentialEstimate,
    _mean_one,
    _paired_design,
    _paired_round,
    draw_item,
)
from latentbench.select._estimate_weights import (
    ItemWeights,
    group_shares,
    read_weights,
    score_label,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    import pandas as pd

__all__ = ["CompareResult", "compare"]

ITEMS_FILE = "compare_items.csv"
"""The per-item table :meth:`CompareResult.save` writes beside ``compare.json``."""

_DEFAULT_COMPARE_BUDGET = _Default(500)


@dataclass(frozen=True)
class CompareResult:
    """Paired comparison of two models' full-benchmark scores.

    Two results are equal (``==``) when every field is; a result is hashable (its models,
    calibration, difference, interval, counts, items and answers), so it can key a dict or
    join a set.

    Attributes
    ----------
    model_a, model_b : str
    difference, lower, upper : float
        Estimated ``mu_A - mu_B`` and its anytime-valid interval at ``level`` (with
        ``weights``, of the weighted or macro scores: ``options["weights"]``).
    level : float
    n_evaluated, n_items : int
        Items both models answered in the run; items in the target (with ``weights``,
        those of positive weight only).
    stopped : {"sign", "equivalent", "budget", "exhausted", "items"}
        Why the run ended; ``"items"``: every item of a fixed design (``items=``) was scored
        (``"equivalent"`` then when the final interval lies within the margin).
    higher : str or None
        The model certified higher (the interval excludes 0), else None.
    items : tuple of str
    answers_a, answers_b, probabilities : tuple of float
    calibration_source, calibration_hash : str
    options : dict
    warnings : tuple of str
    n_calibrated : int
        Items of the calibration; more than ``n_items`` when the two share answers on only
        some of them: the difference and the verdict are then over those (said in the
        summary). With ``weights`` the items of positive weight
        (``options["weights"]["n_positive"]``) take its place. 0 when read from a record
        written before it (``to_dict``: null).
    contradicted_at : int or None
        The item after which the answers contradicted the confidence sequence (every
        candidate difference rejected, an event of probability at most ``delta``): the
        interval is then the certain range the answers leave (said in ``warnings``). None
        when they never did.
    rounds : dict of str to tuple
        Each evaluated item's round, in draw order, by column of :meth:`to_frame`
        (``design_weight``, ``prediction_a``, ``prediction_b``, ``baseline``,
        ``round_estimate``, ``round_variance``, ``difference``, ``lower``, ``upper``; and
        ``target_weight``, with ``group`` for a macro target, when the weights are not all
        equal). Empty when read from a record written before it.
    """

    model_a: str
    model_b: str
    difference: float
    lower: float
    upper: float
    level: float
    n_evaluated: int
    n_items: int
    stopped: str
    higher: str | None
    items: tuple[str, ...]
    answers_a: tuple[float, ...]
    answers_b: tuple[float, ...]
    probabilities: tuple[float, ...]
    calibration_source: str
    calibration_hash: str
    options: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    n_calibrated: int = 0
    contradicted_at: int | None = None
    rounds: Mapping[str, Sequence[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rounds", {k: tuple(v) for k, v in self.rounds.items()})

    def __hash__(self) -> int:
        """Hash of fields that ``==`` compares (not ``options``, a dict): equal results hash
        alike."""
        return hash(
            (self.model_a, self.model_b, self.calibration_source, self.calibration_hash,
             self.difference, self.lower, self.upper, self.level, self.n_evaluated,
             self.n_items, self.stopped, self.items, self.answers_a, self.answers_b)
        )  # fmt: skip

    def __repr__(self) -> str:
        """Short: the pair and the summary line (the items and answers: ``items``,
        ``answers_a``, ``answers_b``; everything: :meth:`to_dict`)."""
        return f"CompareResult({self.model_a!r} vs {self.model_b!r}: {self.summary()})"

    def summary(self) -> str:
        """One line, e.g. ``A - B = +0.032 [+0.011, +0.054] after 240 of 12,032 items; A is
        higher`` (``of the N items both answered (of M)`` when the difference is over the
        items both answered; a live comparison's: ``of the N items of the configuration (of
        M)``).

        Returns
        -------
        str
        """
        if self.higher is not None:
            verdict = f"{self.higher} is higher"
            if min(abs(self.lower), abs(self.upper)) < 5e-4:  # the end shown as 0.000
                verdict += " (a difference of 0 is itself excluded)"
        elif self.stopped == "equivalent":
            verdict = f"equivalent within +-{self.options.get('margin')}"
        else:
            verdict = "not certified"
            if self.n_evaluated and self.answers_a == self.answers_b:
                verdict += (
                    " (the two answered the one evaluated item identically)"
                    if self.n_evaluated == 1
                    else f" (the two answered all {self.n_evaluated:,} evaluated items identically)"
                )
        lower, upper = outward(self.lower, self.upper, "+.3f")
        # an interval of width 0 (every shared item revealed) is the exact difference
        interval = "(exact)" if self.lower == self.upper else f"[{lower}, {upper}]"
        of = f"{self.n_items:,} items"
        weights = self.options.get("weights")
        # the items of the target: those of positive weight with weights
        full = int(weights.get("n_positive") or 0) if weights else self.n_calibrated
        if full > self.n_items:  # the difference is over the shared items only
            # (live, both are asked: the items are the configuration's, not those answered)
            shared = "of the configuration" if self._live() else "both answered"
            of = f"the {self.n_items:,} items {shared} (of {full:,})"
            verdict += " on those" if self.higher is not None else ""
        # what the difference is: ``weighted difference`` / ``macro difference over 14 groups``
        # before a weighted one (weights all equal: the plain mean's, said as before)
        label = score_label(weights).replace("score", "difference")
        said = "" if label == "difference" else f"{label} "
        return (
            f"{said}{self.model_a} - {self.model_b} = {self.difference:+.3f} "
            f"{interval} after {self.n_evaluated:,} of {of}; {verdict}"
        )

    def _live(self) -> bool:
        """A live comparison's (``compare --live``): its items are the configuration's."""
        return isinstance(self.options.get("live"), dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (``compare.json``).

        Returns
        -------
        dict of str to Any
        """
        out = {
            k: (list(v) if isinstance(v, tuple) else v)
            for k, v in self.__dict__.items()
            if k not in ("calibration_source", "calibration_hash")
        }
        out["rounds"] = {k: list(v) for k, v in self.rounds.items()}
        out["n_calibrated"] = self.n_calibrated or None  # 0: a record without it, not a count
        out["calibration"] = {"source": self.calibration_source, "hash": self.calibration_hash}
        out["summary"] = self.summary()
        return out

    def to_frame(self) -> pd.DataFrame:
        """One row per evaluated item, in draw order (the tidy ``compare_items.csv``).

        Columns ``order`` (1, 2, ...), ``item``, ``probability`` (the draw's), ``design_weight``
        (``w / probability``, ``w`` the item's target weight: ``1 / (n_items x
        probability)`` for the plain difference), ``target_weight`` and, for a macro
        target, ``group`` (only when the weights are not all equal: ``w``, summing to 1
        over the ``n_items`` items of the target), ``score_a``, ``score_b``,
        ``prediction_a``, ``prediction_b`` (each model's predicted score there, from the
        answers before it), ``baseline`` (the difference predicted before the answer:
        ``sum_R w d + sum_U w g``, ``d = score_a - score_b`` over the items answered before,
        ``g = prediction_a - prediction_b`` over the others), ``round_estimate`` (``baseline
        + design_weight (d - g)`` at this item, unbiased for the difference),
        ``round_variance`` (its predicted variance) and ``difference``, ``lower``, ``upper``
        after the item. :attr:`difference` is the mean of the round estimates weighted by
        ``1 / round_variance``, kept within the last row's ``[lower, upper]`` (the exact
        difference, ``sum w d / sum w``, once every item is drawn); docs/estimate.md,
        "Two models". A result read from a record written before the rounds were kept
        has only ``order``, ``item``, ``probability``, ``score_a`` and ``score_b``.

        Returns
        -------
        pandas.DataFrame
            Shape (n_evaluated, columns).
        """
        import pandas as pd

        from latentbench._compat import text_array

        columns: dict[str, Any] = {
            "order": np.arange(1, len(self.items) + 1, dtype=np.int64),
            "item": text_array(list(self.items)),
            "probability": np.asarray(self.probabilities, dtype=np.float64),
        }
        rounds = self.rounds
        for name in ("design_weight", "target_weight"):
            if name in rounds:
                columns[name] = np.asarray(rounds[name], dtype=np.float64)
        if "group" in rounds:
            columns["group"] = text_array([str(g) for g in rounds["group"]])
        columns["score_a"] = np.asarray(self.answers_a, dtype=np.float64)
        columns["score_b"] = np.asarray(self.answers_b, dtype=np.float64)
        for name in _ROUND_COLUMNS[1:]:
            if name in rounds:
                columns[name] = np.asarray(rounds[name], dtype=np.float64)
        return pd.DataFrame(columns)

    def save(self, out: str | os.PathLike[str]) -> Path:
        """Write ``compare.json`` and its per-item ``compare_items.csv`` (:meth:`to_frame`)
        into the directory ``out`` (created), all together (``compare.json`` last); returns
        the path of ``compare.json``.

        Parameters
        ----------
        out : path-like
            The directory (created when absent).

        Returns
        -------
        Path
            ``out/compare.json``.
        """
        from functools import partial

        from latentbench._checks import as_path
        from latentbench.io import check_destination
        from latentbench.io._outputs import write_directory
        from latentbench.irt._fitdir import write_csv

        folder = as_path(out, "out")
        check_destination(folder, "dir", flag="out=")  # a file there: said, not FileExistsError
        writers: dict[str, Callable[[Path], object]] = {
            ITEMS_FILE: partial(write_csv, self.to_frame()),
            "compare.json": partial(_write_json_file, data=self.to_dict()),
        }
        write_directory(folder, writers, last="compare.json")
        return folder / "compare.json"

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> CompareResult:
        """The comparison saved in ``path`` (a ``compare.json``, or the directory of
        ``latentbench compare --out DIR``).

        Parameters
        ----------
        path : path-like
            A ``compare.json``, or the directory holding one.

        Returns
        -------
        CompareResult

        Raises
        ------
        InputError
            A missing or unreadable file, or one that is not such a record, named.
        """
        file = record_file(path, "compare.json")
        try:
            record = json.loads(file.read_text(encoding="utf-8"))
        except (ValueError, RecursionError) as exc:
            raise InputError(
                f"{file}: not a compare.json ({type(exc).__name__}: {json_problem(exc)})"
            ) from None
        try:
            return cls.from_dict(record)
        except InputError as exc:
            raise InputError(f"{file}: {exc}") from None

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> CompareResult:
        """The comparison of a :meth:`to_dict` record (a ``compare.json``'s content, or a
        live comparison's stored decision).

        Parameters
        ----------
        record : dict of str to Any

        Returns
        -------
        CompareResult

        Raises
        ------
        InputError
            A record that is not a comparison's, or a field of the wrong kind, named.
        """
        try:
            fields = {f.name for f in dataclasses.fields(cls)}
            values = {k: v for k, v in record.items() if k in fields}
            values.update(
                calibration_source=record["calibration"]["source"],
                calibration_hash=record["calibration"]["hash"],
            )
            for name in ("items", "answers_a", "answers_b", "probabilities", "warnings"):
                values[name] = _record_list(values, name)
            values["rounds"] = {str(k): tuple(v) for k, v in (values.get("rounds") or {}).items()}
            if values.get("n_calibrated") is None:  # a record written before it, or re-saved
                values["n_calibrated"] = 0
        except InputError:  # a field named (_record_list)
            raise
        except (ValueError, RecursionError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(
                f"not a compare.json ({type(exc).__name__}: {json_problem(exc)})"
            ) from None
        # an edited file's null or text for a number: named, not a TypeError later
        _check_record_numbers(
            values,
            ("difference", "lower", "upper", "level"),
            ("n_evaluated", "n_items", "n_calibrated"),
        )
        _check_record_ranges(values, "difference")  # (a reversed interval, a level of 2)
        for name in ("answers_a", "answers_b", "probabilities"):  # as the items (or none)
            column, n = values[name], len(values["items"])
            if len(column) != n and (name != "probabilities" or column):
                raise InputError(
                    f"field {name!r} holds {len(column):,} values; expected {n:,}, one per "
                    "item of field 'items'"
                )
        # a text or null answer or probability: named, not numpy's ValueError at save
        _check_item_values(values, "answers_a", "answers_b", "probabilities")
        for name, column in values["rounds"].items():  # one value per evaluated item
            if len(column) != len(values["items"]):
                raise InputError(
                    f"field 'rounds' holds {len(column):,} values of {name!r}; expected "
                    f"{len(values['items']):,}, one per item of field 'items'"
                )
            # an edited file's text or null for a number: named, not a ValueError when the
            # items table is made (to_frame, save, the report's page)
            bad = [v for v in column if not _finite_number(v)] if name != "group" else ()
            if bad:
                raise InputError(
                    f"field 'rounds' holds {bad[0]!r} in {name!r} ({len(bad):,} such "
                    "value(s)); expected a finite number for each item"
                )
        try:
            return cls(**values)
        except TypeError as exc:
            raise InputError(f"not a compare.json (TypeError: {exc})") from None


def compare(
    calibration: Any,
    responses_a: Any,
    responses_b: Any = None,
    *,
    model_a: str | None = None,
    model_b: str | None = None,
    budget: int | None = _DEFAULT_COMPARE_BUDGET,
    margin: float | None = None,
    delta: float = 0.05,
    seed: int = _DEFAULT_SEED,
    floor: float = _DEFAULT_FLOOR,
    rank: int = 1,
    proxy: Literal["irt", "ridge"] = "irt",
    items: Any = None,
    weights: Any = None,
) -> CompareResult:
    """Certify which of two models has the higher full-benchmark score, from paired items.

    Parameters
    ----------
    calibration : path, IRTResult, ResponseMatrix or Calibration
        As :func:`estimate`'s; a store benchmark's (``latentbench compare --store S
        --benchmark B``) is ``load_calibration(store, benchmark=B)``.
    responses_a, responses_b : as ``responses`` of :func:`estimate`
        The two models' answers (the same file twice with ``model_a`` / ``model_b`` naming
        its rows is fine). ``responses_b`` defaults to ``responses_a`` (one file or table of
        both models, as ``latentbench compare`` reads one file).
    model_a, model_b : str, optional
        The models' names in their answers; with one source of exactly two models, a name
        left out is the other model (both left out: the two in the source's order). Two
        files naming the same model (two checkpoints) are labelled by their files, ``m
        (ckpt1000)`` and ``m (ckpt2000)`` (by their paths when the stems are the same), as
        ``latentbench compare`` labels them.
    budget : int or None, default 500
        Most items (each answered by both models).
    margin : float, optional
        Also stop when the interval lies within ``[-margin, margin]``; a number in (0, 1).
    delta : float, default 0.05
        The sign is wrong, or the interval misses, with probability at most ``delta``.
    seed, floor, rank
        As in :func:`estimate`. The draw depends on the seed and the unordered pair of
        names: ``compare(B, A)`` draws the same items as ``compare(A, B)`` and mirrors it.
    proxy : {"irt", "ridge"}, default "irt"
        Each model's predictions, as in :func:`estimate`.
    items : path or DataFrame, optional
        A fixed design from :func:`tiny` (``latentbench tiny``) that both models answered
        (both run on exactly those items, e.g. with ``lm-eval --samples``): every design item
        is scored, and the difference of the two full-benchmark scores is estimated from
        them with the same kind of interval, sized for the design's ``k``, as
        :func:`estimate` scores one model with ``items=``. Without it, two models that
        answered only some items are compared on those items alone. ``budget``, ``seed``
        and ``floor`` are the design's (refused when given, even at their defaults' values);
        answers outside the design are not used, said in a :class:`DataWarning` with each
        model's count (kept in ``warnings``); with ``margin``, the two are called equivalent
        when the final interval lies within it.
    weights : path, DataFrame, Series or mapping, optional
        Compare weighted or macro scores instead of the plain means: the weights of
        :func:`estimate`'s ``weights`` (a table of ``item`` and ``weight``, or ``item`` and
        ``group`` for a macro score where every group weighs the same), read and checked
        alike. The target becomes ``sum_j w_j (y_Aj - y_Bj)`` over the items of positive
        weight (those both answered, their weights renormalised, when they share only
        some), each round is weighted as :func:`estimate`'s weighted round (drawn in
        proportion to ``w_j`` times the predicted sd of the difference, the floor in
        proportion to ``w_j``), and ``options["weights"]`` records the target's kind,
        groups and hash. Equal weights give the plain comparison exactly. With ``items``,
        the design must have been drawn for these weights (``tiny(..., weights=)``: its
        ``weights_hash``); a weighted design without them, or a plain one with weights not
        all equal, is refused.

    Returns
    -------
    CompareResult

    Raises
    ------
    InputError
        The same model twice, two models with no answered calibrated item (of positive
        weight) in common, unusable ``weights``, a design drawn for other weights, or an
        unusable calibration, responses or option (as in :func:`estimate`).
    """
    if items is not None:  # before the seed is checked (a default told apart by identity)
        _check_fixed(budget, seed, floor, delta)
    seed = check_seed(seed, "seed")
    _check_margin(margin)
    if items is None:
        _check_options(budget, None, delta, need_stop=False)
    cal = load_calibration(calibration, rank=rank)
    checked = None if weights is None else read_weights(cal, weights)
    if responses_b is None:
        responses_a = responses_b = _as_models(responses_a)
        model_a, model_b = _pair(model_a, model_b, responses_a)
    # each side's near twin may be the other side, named (in one source or both): not said
    name_a, ya, notes = _answers(cal, responses_a, model_a, "model_a", (model_b,))
    name_b, yb, notes_b = _answers(cal, responses_b, model_b, "model_b", (model_a,))
    notes += [note for note in notes_b if note not in notes]  # one file read: said once
    if name_a == name_b and _two_files(responses_a, responses_b):
        # one model name in two files (checkpoints of one model), as `latentbench compare`
        # labels them: each side by its file's stem (by its path when the stems are the same)
        name_a, name_b = _checkpoint_labels(name_a, Path(responses_a), Path(responses_b))
    if name_a == name_b:
        raise InputError(
            f"model_a and model_b are both {name_a!r}; expected two models (two checkpoints "
            "of one model: give them two names, a Series' name or model_a= / model_b= for "
            "answers without a model column, or pass the two files' paths, each then "
            "labelled by its file)"
        )
    for name, y in ((name_a, ya), (name_b, yb)):  # one note each (estimate's check)
        notes.extend(_compare_twin_note(cal, name, y))
    fixed: _Design | None = None
    if items is not None:  # every design item, answered by both; the target all cal's items
        fixed = _checked_design(cal, items, floor, notes, checked, command="compare")
        notes.extend(_design_delta_note(fixed.frame, fixed.where, delta, "compare"))
        for name, answers in ((name_a, ya), (name_b, yb)):
            _check_design_answered(cal, name, answers, fixed.positions, _design_name(items))
        # the design's population (_fixed_sequence's): every calibrated item, or those of
        # positive weight
        weighted = checked is not None and not checked.equal
        both = np.arange(cal.n_items)
        if checked is not None and weighted:
            both = np.flatnonzero(checked.weights > 0)
        shared = fixed.positions
        counts = [int(np.isfinite(v).sum()) - shared.size for v in (ya, yb)]
        if sum(counts):  # every design item answered by both (checked): the rest unused
            notes.append(_unused_note(
                sum(counts), shared.size, _design_name(items), "compare",
                f" ({name_a!r}: {counts[0]:,}, {name_b!r}: {counts[1]:,})"))  # fmt: skip
        w = None if checked is None or checked.equal else checked.weights[fixed.positions]
        notes.extend(_weight_note(fixed.frame, cal.n_items, fixed.where, w))  # as estimate says
    else:
        both = shared = np.flatnonzero(np.isfinite(ya) & np.isfinite(yb))
        if both.size == 0:
            sides = ((name_a, ya, responses_a), (name_b, yb, responses_b))
            for name, answers, source in sides:
                if not np.isfinite(answers).any():  # not "in common": this one has none
                    raise InputError(_answered_none(name, cal.n_items, source))
            raise InputError(f"{name_a!r} and {name_b!r} answered no calibrated item in common")
        if checked is not None:
            both = shared = _weighted_pair(checked, both, name_a, name_b, notes)
        elif both.size < cal.n_items:
            notes.append(
                f"the models share answers on {both.size:,} of {cal.n_items:,} calibrated "
                "items; the difference is over those; if they are the items of a `latentbench "
                "tiny` design, pass the design (items=DESIGN) to compare "
                "the full-benchmark scores"
            )
    if np.array_equal(ya[shared], yb[shared]) and fixed is not None:  # a data check
        # the full-benchmark difference is not known to be 0: only the design's items are
        notes.append(
            f"{name_a!r} and {name_b!r} have the same answer on every one of the "
            f"{shared.size:,} items of the design (the same results twice?): the estimated "
            "difference is 0, but the full-benchmark difference is only bounded by the interval"
            + ("" if margin is not None else "; pass margin=M to call them equivalent")
        )
    elif np.array_equal(ya[shared], yb[shared]):  # a data check, not part of the estimate
        notes.append(
            f"{name_a!r} and {name_b!r} have the same answer on every one of the {shared.size:,} "
            "items they share (the same results twice?): their difference is exactly 0, which "
            "no finite sample certifies"
            + ("" if margin is not None else "; pass margin=M to stop when they are equivalent")
        )
    # the draw is the unordered pair's: the models in sorted order, the result mirrored
    # back, so that compare(A, B) and compare(B, A) draw the same items and mirror each other
    swap = name_b < name_a
    x, y = (yb, ya) if swap else (ya, yb)
    rng = _rng(seed, "\x00".join(sorted((name_a, name_b))))
    xb, yb_both = x[both], y[both]

    def answer(j: int) -> tuple[float, float]:
        return float(xb[j]), float(yb_both[j])

    run = _paired(cal, both, answer, rng, budget, margin, delta, floor, proxy,
                  fixed=fixed, weights=checked)  # fmt: skip
    margin = None if margin is None else float(margin)
    budget = None if budget is None else int(budget)
    options: dict[str, Any] = {"seed": int(seed), "delta": float(delta), "budget": budget,
                               "margin": margin, "floor": float(floor),
                               "proxy": run.proxy_used}  # fmt: skip
    if fixed is not None:  # the design's own seed (None: one that does not say) and floor
        options.update(seed=fixed.seed, budget=None, floor=fixed.floor, design="fixed",
                       k=fixed.registered)  # fmt: skip
    if checked is not None:  # the target's kind, groups and hash, as estimate.json records
        options["weights"] = checked.record(both, "both answered")
    return _compare_result(cal, both, run, name_a, name_b, swap, delta, proxy, options, notes)


def _compare_twin_note(cal: Calibration, name: str, y: np.ndarray) -> list[str]:
    """The note saying that model ``name`` (A or B) answered as a calibration model, cell
    for cell (its results under another name, most likely: estimate's check); empty
    otherwise or when the calibration keeps no responses (a fit directory)."""
    twins = _calibration_twins(cal, name, y)
    if not twins:
        return []
    return [
        f"{_twins_said(name, twins, y)}: its score is then known without an estimate, and it "
        "is compared as a new model"
    ]


def _compare_result(
    cal: Calibration,
    both: np.ndarray,
    run: _PairedRun,
    name_a: str,
    name_b: str,
    swap: bool,
    delta: float,
    proxy: str,
    options: dict[str, Any],
    notes: list[str],
) -> CompareResult:
    """The :class:`CompareResult` of a paired ``run`` on the items ``both`` (its answers in
    the sorted pair's order, mirrored back when ``swap``); the notes not said yet are warned
    (a :class:`DataWarning` each)."""
    import warnings

    from latentbench.exceptions import DataWarning

    point, lower, upper, sign = run.point, run.lower, run.upper, run.sign
    first, second = run.answers_x, run.answers_y
    rounds = dict(run.rounds)
    if swap:  # (+ 0.0: a difference of 0 stays +0.000, not -0.000)
        point, lower, upper, sign = -point + 0.0, -upper + 0.0, -lower + 0.0, -sign
        first, second = second, first
        rounds = _mirrored(rounds)
    higher = name_a if sign > 0 else name_b if sign < 0 else None
    notes.extend(proxy_note(cal, proxy, run.proxy_used))
    contradicted = run.contradicted_at
    if contradicted is not None:  # kept valid (the certain bounds), and said
        notes.append(
            f"{name_a!r} - {name_b!r}: the answers contradicted the confidence sequence at "
            f"item {contradicted:,} (every candidate difference rejected, which happens with "
            f"probability at most delta={delta:.15g}); the interval is the certain range the "
            f"answers leave, [{lower:.3g}, {upper:.3g}], wider than before"
        )
    for note in notes:
        if not isinstance(note, _Said):  # said when the answers were read
            warnings.warn(note, DataWarning, stacklevel=user_stacklevel())
    return CompareResult(name_a, name_b, float(point), float(lower), float(upper), 1 - delta,
                         len(run.order), both.size, run.stopped, higher,
                         tuple(cal.item_ids[int(both[j])] for j in run.order),
                         tuple(first), tuple(second), tuple(run.probs), cal.source, cal.hash,
                         options, (*(message for _, message in cal.fit_warnings), *notes),
                         cal.n_items, contradicted, rounds)  # fmt: skip


def _mirrored(rounds: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """The rounds of a run made in the sorted pair's order, seen from the other side: the
    two predictions swapped, every difference negated (and an interval's ends swapped)."""
    out = dict(rounds)
    out["prediction_a"], out["prediction_b"] = rounds["prediction_b"], rounds["prediction_a"]
    for name in ("baseline", "round_estimate", "difference"):
        out[name] = [-x + 0.0 for x in rounds[name]]
    out["lower"] = [-x + 0.0 for x in rounds["upper"]]
    out["upper"] = [-x + 0.0 for x in rounds["lower"]]
    return out


def _weighted_pair(
    checked: ItemWeights,
    both: np.ndarray,
    name_a: str,
    name_b: str,
    notes: list[str],
    holds: str = "",
) -> np.ndarray:
    """A weighted comparison's items: those of ``both`` (answered by the two) of positive
    weight; refused when there are none, said when they are some of the items of positive
    weight only (the weighted difference is then over those, their weights renormalised).
    ``holds`` (a live comparison: ``the configuration holds``) replaces ``the models share
    answers on`` in the messages."""
    if checked.note:  # warned where the weights were read: recorded, not said again
        notes.append(_Said(checked.note))
    w = checked.weights
    positive = checked.n_positive
    pop: np.ndarray = both[w[both] > 0]
    if pop.size == 0:
        who = holds or f"{name_a!r} and {name_b!r} answered in common"
        raise InputError(
            f"{who} none of the {positive:,} items of positive weight in {checked.source}; "
            "expected some of them"
        )
    if pop.size < positive:
        label = score_label(checked.record()).replace("score", "difference")
        notes.append(
            f"{holds or 'the models share answers on'} {pop.size:,} of the {positive:,} items "
            f"of positive weight in {checked.source}; the {label} is over those (their "
            "weights renormalised)"
            + group_shares(checked, pop, "in the configuration" if holds else "both answered")
            + (
                ""
                if holds
                else "; if they are the items of a `latentbench tiny --weights` "
                "design, pass the design (items=DESIGN) to compare the "
                "full-benchmark scores"
            )
        )
    return pop


def _two_files(responses_a: Any, responses_b: Any) -> bool:
    """Both sides are paths (``str`` or path-like) of two different files."""
    paths = (responses_a, responses_b)
    if not all(isinstance(p, (str, os.PathLike)) for p in paths):
        return False
    a, b = (Path(p) for p in paths)
    try:
        return not a.samefile(b)
    except OSError:  # not both there (read already, so rarely): told apart by their names
        return a.resolve() != b.resolve()


def _checkpoint_labels(name: str, path_a: Path, path_b: Path) -> tuple[str, str]:
    """The labels of one model ``name`` read from two files (two checkpoints): ``name
    (STEM)`` for each, or ``name (PATH)`` when the two stems are the same.

    :func:`compare` labels them as ``latentbench compare`` does (``cli._estimate``'s
    ``_checkpoints``, which reads a tool's results itself), so the draw (seeded on the two
    names) is the same from the command line and from Python.
    """
    from latentbench.io._arrival import unpacked_path

    # the name less a compression suffix: ckpt1000.csv.gz is labelled as ckpt1000.csv
    stem_a, stem_b = unpacked_path(path_a).stem, unpacked_path(path_b).stem
    a, b = f"{name} ({stem_a})", f"{name} ({stem_b})"
    if a == b:
        a, b = f"{name} ({path_a})", f"{name} ({path_b})"
    return a, b


def _as_models(responses: Any) -> Any:
    """A file, table or matrix of answers read once into ``model -> Series`` (other inputs as
    they are), so that both sides of a one-source comparison read the same models."""
    from latentbench.select._estimate import _by_model

    _, by_model = _by_model(responses)
    return responses if by_model is None else by_model


def _pair(model_a: str | None, model_b: str | None, data: Any) -> tuple[str | None, str | None]:
    """Names for a one-source comparison: with exactly two models in ``data`` (a mapping), a
    name left out is the other one; both left out, the two in their order."""
    if not isinstance(data, dict) or len(data) != 2 or (model_a and model_b):
        return model_a, model_b
    first, second = (str(m) for m in data)
    if model_a is None and model_b is None:
        return first, second
    if model_a is None:
        return (first if model_b == second else second), model_b
    return model_a, (first if model_a == second else second)


@dataclass
class _PairedRun:
    """What :func:`_paired` ran: the items drawn (indices into ``both``), their
    probabilities, the two sides' answers to them, the difference, its interval, the
    certified sign (+1, -1 or 0), why it stopped, the proxy used, and the item after which
    the answers contradicted the sequence (or None)."""

    order: list[int]
    probs: list[float]
    answers_x: list[float]
    answers_y: list[float]
    point: float
    lower: float
    upper: float
    sign: int
    stopped: str
    proxy_used: str
    contradicted_at: int | None
    rounds: dict[str, list[Any]] = field(default_factory=dict)


def _paired(
    cal: Calibration,
    both: np.ndarray,
    answer: Callable[[int], tuple[float, float]],
    rng: np.random.Generator,
    budget: int | None,
    margin: float | None,
    delta: float,
    floor: float,
    proxy: str,
    *,
    fixed: _Design | None = None,
    observed: Callable[[_PairedRun], None] | None = None,
    weights: ItemWeights | None = None,
) -> _PairedRun:
    """The paired run of :func:`compare` and :func:`compare_live` on the items ``both``:
    ``answer(j)`` returns the two sides' answers to item ``both[j]`` (read from files, or
    asked live). An ``answer`` that raises :class:`~latentbench.exceptions.LiveStop` (a spend
    cap, a stop request, a failed cell) ends the run before that item, ``stopped`` then the
    exception's ``status`` (``capped``, ``interrupted``, ...): the interval of the items
    answered is valid at every step. ``observed(run)``, when given, is called after each item
    is taken in (a live run's progress snapshot).

    With a ``fixed`` design (``both`` then every calibrated item, the answers NaN off the
    design), its items are taken in its order with its probabilities (which depend on the
    calibration, the floor and the items before only), every one of them, and the sequence
    is sized for its registered ``k``, as a fixed design's estimate is.

    With ``weights`` (not all equal; ``both`` then items of positive weight only) the target
    is ``sum W d / n`` with ``W`` the weights over ``both`` rescaled to mean 1, and the round
    is weighted as :meth:`SequentialEstimate.observe` weighs one model's: drawn in proportion
    to ``W_j q_j``, the floor in proportion to ``W_j``, so that ``W_j / pi_j <= sum_U W /
    floor`` and the round's range stays finite (docs/estimate.md, "Weighted and macro
    differences"). Equal weights (or none) run every formula as unweighted, bit for bit."""
    a = SequentialEstimate(cal, both, delta=delta, floor=floor, proxy=proxy)
    b = SequentialEstimate(cal, both, delta=delta, floor=floor, proxy=proxy)
    n = both.size
    W = _mean_one(None if weights is None or weights.equal else weights.weights[both], n)
    weighted = bool((W != 1.0).any())  # False: every formula below as unweighted, bit for bit
    W2 = W * W
    cs = WeightedBettingCS(delta)
    design = None if fixed is None else _fixed_sequence(cal, fixed.floor, weights=weights)
    if fixed is not None and design is not None:
        cs = WeightedBettingCS(delta, target=_sized_for(a.f, b.f, design.probabilities(),
                                                         delta, cs.target_weight,
                                                         fixed.registered,
                                                         W2 if weighted else None))  # fmt: skip
    unrevealed = np.ones(n, dtype=bool)
    order: list[int] = []
    probs: list[float] = []
    answers_x: list[float] = []
    answers_y: list[float] = []
    revealed = 0.0
    wsum = wz = 0.0
    # each round as compare_items.csv shows it (CompareResult.to_frame): what it takes to
    # recompute the difference from the items drawn
    rounds: dict[str, list[Any]] = {name: [] for name in _ROUND_COLUMNS}
    groups = None
    if weighted and weights is not None:  # the target's weights (w, summing to 1), groups
        rounds["target_weight"] = []
        if weights.group_codes is not None:
            groups = weights.group_codes[both]
            rounds["group"] = []
    stopped = "exhausted" if fixed is None else "items"
    lower, upper = -1.0, 1.0
    while unrevealed.any():
        if fixed is not None and design is not None:
            if len(order) == fixed.positions.size:
                break
            pi = design.probabilities()
            j = int(fixed.draws[len(order)])  # its index in both (the design's population)
            design.unrevealed[j] = False
        if order and _sign(cs) != 0 and fixed is None:
            stopped = "sign"
            break
        if margin is not None and order and -margin <= lower and upper <= margin and not fixed:
            stopped = "equivalent"
            break
        if budget is not None and len(order) >= budget and fixed is None:
            stopped = "budget"
            break
        fa, fb = a.f, b.f
        if weighted:
            # every quantity below is over the unrevealed items U only, so computed on them
            # only (``_u``: in U's order, the order a boolean mask selects them in): the same
            # numbers, and the same arrays wherever one is summed, as over all items masked
            U = unrevealed.nonzero()[0]
            fa_u, fb_u = fa[U], fb[U]
            g_u = fa_u - fb_u
            # ndarray.clip: what np.clip calls, without its dispatch (the same bits)
            var_u = (fa_u * (1 - fa_u)).clip(0, 0.25) + (fb_u * (1 - fb_u)).clip(0, 0.25)
            if fixed is None:  # in proportion to W q, the floor to W: W_j / pi_j <= sum_U W
                q = np.zeros(n)  # / floor (np.where(unrevealed, sqrt(var), 0.0))
                q[U] = np.sqrt(var_u)
                q = W * q
                base = np.where(unrevealed, W, 0.0)
                base = base / float(base.sum())
                total = q.sum()
                pi = (1 - floor) * q / total + floor * base if total > 0 else base
                j = draw_item(pi, unrevealed, rng, a.draw_order)
        elif fixed is None:  # q = sqrt(var) on U, pi = (1 - floor) q / sum q + floor / |U|:
            # the numpy expressions, fused (the same bits)
            pi = _paired_design(fa, fb, unrevealed, float(floor), n - len(order))
            j = draw_item(pi, unrevealed, rng, a.draw_order)
        try:
            ya, yb = answer(j)
        except LiveStop as exc:  # a live run stopped early: the interval so far is valid
            stopped = exc.status
            break
        d = float(ya - yb)
        if weighted:  # d in [-1, 1]: W_j (d_j - g_j) / (n pi_j) in [-W - Wg, W - Wg] / (n pi)
            g_j = fa[j] - fb[j]  # (g[j] of g = fa - fb)
            npi_u = n * pi[U]  # (where(unrevealed, n pi, 1.0) on U)
            pi_u = pi[U]
            W_u = W[U]
            Wg_u = W_u * g_u
            center = (revealed + Wg_u.sum()) / n
            z = center + W[j] * (d - g_j) / (n * pi[j])
            # the min (max) over U of what where() filled with inf (-inf) elsewhere
            lo = center + float(((-W_u - Wg_u) / npi_u).min())
            hi = center + float(((W_u - Wg_u) / npi_u).max())
            spread_u = W2[U] * np.maximum(var_u, 2 * _VARIANCE_FLOOR)
            v = float((spread_u / pi_u).sum()) / n**2
        else:  # center = (revealed + sum_U g) / n, z = center + (d - g_j) / (n pi_j), its
            # range, v = sum_U max(var, 2 floor) / pi / n^2: fused (the same bits)
            center, z, lo, hi, v = _paired_round(
                fa, fb, pi, unrevealed, j, d, revealed, 2 * _VARIANCE_FLOOR
            )
        unrevealed[j] = False
        order.append(j)
        probs.append(float(pi[j]))
        answers_x.append(float(ya))
        answers_y.append(float(yb))
        if weighted:
            revealed += float(W[j] * d)
            left_w = float(W[unrevealed].sum())
            # the mean-1 weights sum to n only up to rounding: kept within [-1, 1]
            bounds = (max((revealed - left_w) / n, -1.0), min((revealed + left_w) / n, 1.0))
        else:
            revealed += d
            left = n - len(order)
            bounds = ((revealed - left) / n, (revealed + left) / n)
        # the sequence runs on (D + 1) / 2 in [0, 1]
        cs.update((z + 1) / 2, (lo + 1) / 2, (hi + 1) / 2, v / 4, (center + 1) / 2,
                  ((bounds[0] + 1) / 2, (bounds[1] + 1) / 2))  # fmt: skip
        lower, upper = 2 * cs.lower - 1, 2 * cs.upper - 1
        wsum += 1 / v
        wz += z / v
        _add_round(rounds, float(W[j] / (n * pi[j])), float(fa[j]), float(fb[j]), center,
                   z, v, (min(max(wz / wsum, lower), upper), lower, upper))  # fmt: skip
        if "target_weight" in rounds and weights is not None:
            rounds["target_weight"].append(float(W[j] / n))
            if groups is not None:
                rounds["group"].append(weights.group_names[int(groups[j])])
        for seq, y in ((a, ya), (b, yb)):
            seq.unrevealed[j] = False
            seq.order.append(j)
            seq.answers.append(float(y))
            seq.revealed_sum += float(y)
            seq._fit(seq.newton_steps if len(seq.order) > 1 else 5)
            seq._predict()
        if observed is not None:
            point = wz / wsum if wsum else 0.0
            observed(_PairedRun(order, probs, answers_x, answers_y,
                                min(max(point, lower), upper), lower, upper, _sign(cs),
                                stopped, a.proxy_used, cs.contradicted_at))  # fmt: skip
    if not unrevealed.any():  # the exact difference (weighted: sum W d / sum W, in [-1, 1])
        lower = upper = revealed / n if not weighted else _exact(W, order, answers_x, answers_y)
    point = lower if not unrevealed.any() else (wz / wsum if wsum else 0.0)
    point = min(max(point, lower), upper)
    if order and not unrevealed.any():  # the last row: the exact difference
        rounds["difference"][-1] = rounds["lower"][-1] = rounds["upper"][-1] = float(point)
    sign = (1 if lower > 0 else -1 if upper < 0 else 0) if not unrevealed.any() else _sign(cs)
    if (
        fixed is not None
        and sign == 0
        and margin is not None
        and -margin <= lower <= upper <= margin
    ):
        stopped = "equivalent"  # every design item scored: the verdict at its end
    return _PairedRun(order, probs, answers_x, answers_y, float(point), float(lower),
                      float(upper), sign, stopped, a.proxy_used, cs.contradicted_at,
                      rounds)  # fmt: skip


_ROUND_COLUMNS = ("design_weight", "prediction_a", "prediction_b", "baseline",
                  "round_estimate", "round_variance", "difference", "lower", "upper")  # fmt: skip
"""The per-round columns of ``compare_items.csv`` that :attr:`CompareResult.rounds` holds
(``target_weight`` and ``group`` join them for a weighted difference)."""


def _add_round(
    rounds: dict[str, list[Any]],
    design_weight: float,
    fa: float,
    fb: float,
    baseline: float,
    z: float,
    v: float,
    after: tuple[float, float, float],
) -> None:
    """Append one round to ``rounds``: the drawn item's design weight ``W_J / (n pi_J)``,
    the two predictions there, the round's baseline (``(sum_R W d + sum_U W g) / n``
    before the answer), its estimate ``z`` and variance ``v``, and the difference and
    interval after it."""
    for name, value in zip(_ROUND_COLUMNS, (design_weight, fa, fb, baseline, z, v, *after),
                           strict=True):  # fmt: skip
        rounds[name].append(float(value))


def _exact(W: np.ndarray, order: list[int], xs: list[float], ys: list[float]) -> float:
    """The weighted difference of every item revealed: ``sum W d / sum W`` over them,
    summed over the same items in the same order (every ``d`` 1 gives 1 exactly)."""
    w = W[np.asarray(order, dtype=np.int64)]
    d = np.asarray(xs) - np.asarray(ys)
    return float((w * d).sum() / w.sum())


def _sized_for(
    fa: np.ndarray,
    fb: np.ndarray,
    pi: np.ndarray,
    delta: float,
    weight: float,
    k: int,
    W2: np.ndarray | None = None,
) -> float | None:
    """The half-width (on the ``(D + 1) / 2`` scale the sequence runs on) to size a fixed
    design's sequence for: a normal interval's at level ``delta weight`` from ``k`` rounds of
    the first round's predicted variance, from the predictions ``fa``, ``fb`` and the design
    ``pi`` (shape (n,)) before any answer, as ``SequentialEstimate.budget_target`` sizes one
    model's (None when ``k`` reveals every item). ``W2``: the squared mean-1 weights of a
    weighted difference (None: unweighted)."""
    n = pi.size
    if k >= n:
        return None
    var = np.clip(fa * (1 - fa), 0, 0.25) + np.clip(fb * (1 - fb), 0, 0.25)
    spread = np.maximum(var, 2 * _VARIANCE_FLOOR)
    if W2 is not None:
        spread = W2 * spread
    v1 = float((spread / pi).sum()) / n**2 / 4
    log_ratio = math.log(2.0) - math.log(delta) - math.log(weight)
    return math.sqrt(2.0 * log_ratio * max(v1, 1e-12) / k)


def _check_fixed(budget: object, seed: object, floor: object, delta: float) -> None:
    """Refuse the options a fixed design (``items=``) makes its own: a ``budget`` or
    ``seed`` or ``floor`` passed by the caller (told apart from the defaults by identity,
    so that the value of a default is refused too, as the command refuses the option given),
    and a bad ``delta``."""
    _check_options(None, None, delta, need_stop=False)
    if budget is not _DEFAULT_COMPARE_BUDGET:
        raise InputError(
            f"budget={budget!r} with a fixed design (items=): every design item is scored; "
            "make a smaller design (tiny(k=...)), cut its last rows, or drop items= to run "
            "adaptively"
        )
    if seed is not _DEFAULT_SEED:
        raise InputError(
            f"seed={seed!r} with a fixed design (items=): the items were drawn by tiny with "
            "the design's own seed (its 'seed' column); drop seed, or make another design "
            "with tiny(seed=...)"
        )
    if floor is not _DEFAULT_FLOOR:  # even 0.5, given: as --floor with --items is refused
        raise InputError(
            f"floor={floor!r} with a fixed design (items=): the design's own probabilities "
            "are used (drawn by tiny, its floor in the items table); drop it, or run "
            "adaptively"
        )


def _design_name(items: Any) -> str:
    """How messages name a fixed design: its path, or "the design" for a table."""
    return str(items) if isinstance(items, (str, os.PathLike)) else "the design"


def _check_margin(margin: object) -> None:
    """Refuse a margin that is not a number in (0, 1): a difference of two scores in [0, 1]
    lies in [-1, 1], so a margin of 1 or more certifies any two models equivalent."""
    if margin is None:
        return
    if (
        isinstance(margin, bool)
        or not isinstance(margin, numbers.Real)
        or not 0 < float(margin) < 1
    ):
        raise InputError(
            f"margin={margin!r}; expected a number in (0, 1): the difference of two scores in "
            "[0, 1] lies in [-1, 1], so a margin of 1 or more calls any two models equivalent"
        )


def _sign(cs: WeightedBettingCS) -> int:
    """+1 when every difference <= 0 is excluded, -1 when every one >= 0 is, else 0 (the
    sequence runs on ``(D + 1) / 2``, so a difference of 0 is 0.5)."""
    if cs.excludes_at_or_below(0.5):
        return 1
    return -1 if cs.excludes_at_or_above(0.5) else 0
