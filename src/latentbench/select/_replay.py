"""A selection replayed on a recorded matrix: the Python twin of ``latentbench select replay``.

:func:`replay` reads the candidates, finds the proxy's history (a file, a store benchmark, a
random half of the candidates' file, or none), fits the proxy, builds the policy and runs
:func:`~latentbench.select.run_selection`; the result records where the history came from.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from latentbench._checks import check_flag, check_seed, user_stacklevel
from latentbench._progress import ProgressCallback, notify
from latentbench.exceptions import DataWarning, InputError
from latentbench.io._arrival import tilde_hint
from latentbench.select._certify import check_epsilon
from latentbench.select._experiment import not_a_matrix, split_models
from latentbench.select._online import OnlineProxy
from latentbench.select._policies import (
    POLICIES,
    lucb_bonus,
    make_policy,
    parse_policy,
    refuse_spec_delta,
    refuse_spec_init_batch,
)
from latentbench.select._proxy import LowRankProxy, check_rank, fit_history
from latentbench.select._run import (
    SelectionResult,
    check_select_delta,
    crossed_note,
    run_selection,
)
from latentbench.select.oracles import MatrixOracle

if TYPE_CHECKING:
    from latentbench.io import ResponseMatrix
    from latentbench.select._base import Policy

__all__ = ["check_complete", "replay"]

PathLike = str | os.PathLike[str]


def check_complete(
    scores: np.ndarray,
    model_ids: list[str],
    item_ids: list[str],
    missing: str,
    source: str | None = None,
) -> None:
    """A replay needs every candidate cell unless ``missing`` says otherwise: name the first
    hole by its model and item ids.

    Parameters
    ----------
    scores : ndarray of shape (n_models, n_items)
        NaN = missing.
    model_ids, item_ids : list of str
    missing : {"error", "zero", "drop-items"}
    source : str, optional
        Where the scores come from (a file, a store's benchmark), named first in the error.

    Raises
    ------
    InputError
        With ``missing="error"`` and a missing cell.
    """
    if missing != "error":
        return
    holes = np.isnan(scores)
    if holes.any():
        row, col = (int(v) for v in np.argwhere(holes)[0])
        n = int(holes.sum())
        count = "1 candidate cell is missing" if n == 1 else f"{n:,} candidate cells are missing"
        raise InputError(
            f"{f'{source}: ' if source else ''}{count} (first: model "
            f"{model_ids[row]!r}, item {item_ids[col]!r}); a replay needs complete rows: pass "
            "missing='drop-items' to drop the items with a missing cell, missing='zero' to "
            "score them 0 explicitly, or drop the incomplete models"
        )


def _read(
    source: ResponseMatrix | PathLike, what: str = "responses"
) -> tuple[ResponseMatrix, Path | None]:
    """The matrix of ``source`` and its path (None for a matrix in memory); a missing file
    is named with its role (``what``: responses, history)."""
    from latentbench.io import ResponseMatrix

    if isinstance(source, ResponseMatrix):
        return source, None
    if not isinstance(source, str | os.PathLike):
        raise not_a_matrix(source, what)
    if not Path(source).exists():
        raise InputError(f"{what} {source}: file not found{tilde_hint(source)}")
    return ResponseMatrix.read(source), Path(source)


def _canonical(matrix: ResponseMatrix) -> ResponseMatrix:
    """``matrix`` with its models and items in the canonical order (ids sorted as strings,
    the order a long file is read in): a run's draws, history split and proxy fit follow the
    matrix's rows and columns, so the same cells as a wide file in another order, a long file
    or a matrix in memory give the same run (as the estimate's calibration does)."""
    rows = np.argsort(np.asarray(matrix.model_ids, dtype=str), kind="stable")
    cols = np.argsort(np.asarray(matrix.item_ids, dtype=str), kind="stable")
    if np.array_equal(rows, np.arange(rows.size)) and np.array_equal(cols, np.arange(cols.size)):
        return matrix
    return matrix.subset(models=rows, items=cols)


def _rank(value: int | str) -> int | str:
    if value == "auto":
        return "auto"
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InputError(f"rank={value!r}; expected an integer or 'auto'") from None


def replay(
    responses: ResponseMatrix | PathLike,
    *,
    history: ResponseMatrix | PathLike | None = None,
    history_store: PathLike | None = None,
    history_benchmark: str | None = None,
    history_metric: str | None = None,
    history_filter: str | None = None,
    history_split: str | None = None,
    no_history: bool = False,
    policy: str = "pulse",
    budget: int | None = None,
    batch_size: int | None = None,
    init_batch: int | None = None,
    rank: int | str = "auto",
    delta: float = 0.05,
    epsilon: float = 0.0,
    stop: str | None = None,
    missing: str = "error",
    random_state: int = 0,
    progress: ProgressCallback | None = None,
) -> SelectionResult:
    """Replay a best-model selection on a recorded matrix.

    The Python twin of ``latentbench select replay``.

    Parameters
    ----------
    responses : ResponseMatrix or path-like
        Scores of the candidate models (a Parquet/CSV file or a matrix).
    history : ResponseMatrix or path-like, optional
        Scores of historical models on the same items; they learn the proxy.
    history_store, history_benchmark : optional
        Take the history from a benchmark of a DuckDB store instead (both together).
    history_metric, history_filter, history_split : str, optional
        That benchmark's metric, filter and split when the store holds several
        (:meth:`latentbench.io.Store.matrix`; split: ``test`` by default, with a warning).
    no_history : bool, default False
        History-free: every model is a candidate and the proxy's item factors are learned
        online from the candidates' own revealed cells
        (:class:`~latentbench.select.OnlineProxy`).
        With none of ``history``, ``history_store`` and ``no_history``, a random half of the
        responses (seeded by ``random_state``) is the history and only the other half are
        candidates; the result records which.
    policy : str, default "pulse"
        A policy spec (:func:`~latentbench.select.parse_policy`).
    budget : int, optional
        Post-initialisation cells. Without one the run stops when the best is certified
        (at the latest when every cell is revealed).
    batch_size, init_batch : int, optional
        Cells per round and initial cells per model; by default from
        :func:`~latentbench.select.default_schedule` (the same start for every policy). A
        spec's ``init_batch`` is the same setting: both given, with different values, is
        an error.
    rank : int or "auto", default "auto"
        Rank of the low-rank proxy (history-free: ``"auto"`` is rank 2); a policy that
        learns no proxy (``ucbe``, ``uniform``, ``full``) does not use it, and another
        value than ``"auto"`` is then warned of.
    delta : float, default 0.05
        Error probability of the certificate (and simultaneous miscoverage of the
        intervals): a certified best is the true best with probability at least
        ``1 - delta``. It is called ``delta`` as in best-arm identification, where it is the
        probability of a wrong answer; a ``level`` (as in ``irt``) would read as the
        coverage of one interval, which this is not (the policies take the same ``delta``).
    epsilon : float, default 0.0
        Tolerance of the certificate in score units: certify a model within ``epsilon`` of
        the best (with probability at least ``1 - delta``) instead of the best itself, so
        that models tied at the top do not have to be evaluated fully
        (:func:`~latentbench.select.run_selection`).
    stop : {"budget", "confidence"}, optional
        ``confidence`` stops at the first certificate (PULSE then samples the leader and its
        strongest challenger, LUCB-style; a policy without intervals that reveals uniform
        cells is certified on its revealed cells). Default: ``confidence`` without a budget,
        ``budget`` with one.
    missing : {"error", "zero", "drop-items"}, default "error"
        Missing candidate cells (see :class:`~latentbench.select.MatrixOracle`).
    random_state : int, default 0
        Seeds the history split, the proxy and the run.
    progress : callable, optional
        ``progress(phase, done, total)`` (a :data:`~latentbench._progress.ProgressCallback`,
        as every long call takes) as each slow stage starts (``done`` and ``total`` None).

    Returns
    -------
    SelectionResult
        ``params["n_items"]`` and ``params["history"]`` (source, counts, proxy rank, the
        input's SHA-256, and ``note``: one line saying where the history came from) added.

    Warns
    -----
    DataWarning
        Without a history (a random half of the responses learns the proxy); a ``rank``
        that the policy does not use (it learns no proxy); with
        ``missing="zero"`` or ``"drop-items"`` when candidate cells are missing (how many are
        scored 0 or how many items are dropped: the target changes); candidates in the history.

    Raises
    ------
    InputError
        Exclusive or incomplete history options, items missing from the history, missing
        candidate cells (``missing="error"``), an unknown policy or option.
    """
    no_history = check_flag(no_history, "no_history")  # "no" ran without a history
    random_state = check_seed(random_state, "random_state")
    check_select_delta(delta)  # before the history and the proxy fit
    refuse_spec_init_batch(policy, init_batch, "policy")  # the spec's won, unsaid
    choice = _check_history_options(
        history, history_store, history_benchmark, no_history,
        {"metric": history_metric, "filter": history_filter, "split": history_split},
    )  # fmt: skip
    epsilon = check_epsilon(epsilon)
    notify(progress, "reading the responses")
    matrix, path = _read(responses)
    stored = None if path is not None else _store_input(matrix)
    matrix = _canonical(matrix)
    if history is not None or history_store is not None:
        split = _given_history(
            matrix, history, history_store, history_benchmark, choice, _uses_proxy(policy)
        )
    elif no_history:
        split = _no_history(matrix, _uses_proxy(policy))
    else:
        name = path.name if path is not None else (stored or {}).get("layout")
        split = _random_half_history(matrix, name, random_state, _uses_proxy(policy))
    where = str(path) if path is not None else (stored or {}).get("layout") or matrix.source
    check_complete(split.candidates, split.ids, list(matrix.item_ids), missing, where)
    oracle = MatrixOracle(split.candidates, missing=missing)
    _drop_items(split, oracle, matrix)
    _zero_cells(split, missing)
    if stop is None:
        stop = "confidence" if budget is None else "budget"
    pol, run_kw = _policy(policy, delta, stop)
    if not pol.needs_proxy and _rank(rank) != "auto":  # it was accepted and ignored
        warnings.warn(
            f"rank={rank!r} not used: policy {policy!r} learns no proxy, and rank is the "
            "proxy's; drop rank, or choose a policy that learns one (e.g. pulse)",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    proxy = _proxy(pol, split, rank, random_state, progress)
    record = split.record
    if path is not None:
        from latentbench.io._files import file_sha256

        record["input"] = str(path)
        record["input_sha256"] = file_sha256(path)
    elif stored is not None:  # a store's benchmark: its query and a hash of its cells
        record["input"] = stored["layout"]
        record["input_store"] = stored
    notify(progress, "running the selection")
    result = run_selection(
        oracle,
        pol,
        budget=budget,
        batch_size=batch_size,
        init_batch=run_kw.get("init_batch", init_batch),
        item_order=run_kw.get("item_order"),
        proxy=proxy,
        random_state=random_state,
        stop=stop,
        delta=delta,
        epsilon=epsilon,
        model_ids=split.ids,
    )
    record["note"] = split.note
    crossed = crossed_note(result)
    if crossed:
        warnings.warn(crossed, DataWarning, stacklevel=user_stacklevel())
    result.params.setdefault("n_items", oracle.n_items)
    result.params.setdefault("seed", random_state)
    result.params.setdefault("missing", missing)
    result.params.setdefault("history", record)
    return result


def _check_history_options(
    history: object,
    history_store: PathLike | None,
    history_benchmark: str | None,
    no_history: bool,
    choice: dict[str, str | None],
) -> dict[str, str | None]:
    """Refuse exclusive or incomplete history options; return ``choice`` (the store
    benchmark's metric, filter and split)."""
    given = [name for name, on in (("history", history is not None),
                                   ("history_store", history_store is not None),
                                   ("no_history", no_history)) if on]  # fmt: skip
    if len(given) > 1:
        raise InputError(f"{' and '.join(given)} exclude each other; give one of them")
    if (history_store is None) != (history_benchmark is None):
        raise InputError("history_store and history_benchmark go together; give both")
    if history_store is None and any(value is not None for value in choice.values()):
        named = ", ".join(f"history_{name}" for name, value in choice.items() if value)
        raise InputError(f"{named}: only with history_store and history_benchmark")
    return choice


@dataclass
class _Split:
    """Who learns the proxy and who is a candidate, with the record and note saying so."""

    candidates: np.ndarray
    ids: list[str]
    hist_scores: np.ndarray | None
    note: str
    record: dict[str, Any]


def _given_history(
    matrix: ResponseMatrix,
    history: ResponseMatrix | PathLike | None,
    history_store: PathLike | None,
    history_benchmark: str | None,
    choice: dict[str, str | None],
    uses_proxy: bool = True,
) -> _Split:
    """Every model a candidate, the history from ``history`` or a store's benchmark (it
    must cover the candidates' items; candidates inside it are a warning). A policy without
    a proxy (``uses_proxy`` False: UCB-E, uniform) learns nothing from it: the note says
    so, and candidates inside it leak nothing."""
    if history is not None:
        hist, hist_path = _read(history, "history")
        where = str(hist_path) if hist_path is not None else "the history matrix"
        flag = "history"
    else:
        store_path = Path(history_store)  # type: ignore[arg-type]
        hist = _history_from_store(store_path, str(history_benchmark), choice)
        chosen = ", ".join(f"{k} {v!r}" for k, v in choice.items() if v is not None)
        chosen = f" ({chosen})" if chosen else ""
        where = f"benchmark {history_benchmark!r}{chosen} of store {history_store}"
        # the option the user names: a CLI run may give --history-benchmark alone (--store)
        flag = "history_benchmark"
    absent = set(matrix.item_ids) - set(hist.item_ids)
    if absent:
        raise InputError(
            f"{flag} ({where}) lacks {len(absent)} items of the responses, e.g. "
            f"{sorted(absent)[0]!r}{_transposed(matrix, hist)}; the history must cover the "
            "candidates' items: give one that does, or pass no_history=True to learn the "
            "proxy from the candidates' own revealed cells"
        )
    hist_scores = _canonical(hist).subset(items=matrix.item_ids).scores  # rows: the fit's order
    candidates, ids = matrix.scores, list(matrix.model_ids)
    used = "learn the proxy"
    if not uses_proxy:
        used = "given, which this policy does not use (it learns no proxy)"
    note = f"history: {hist.n_models} models of {where} {used}; {len(ids)} candidates"
    record: dict[str, Any] = {
        "source": where,
        "history models": hist.n_models,
        "candidates": len(ids),
    }
    if history is not None and hist_path is not None:
        from latentbench.io._files import file_sha256

        record["history_sha256"] = file_sha256(hist_path)
    stored = _store_input(hist)  # a store's benchmark: its query and a hash of its cells
    if stored is not None:
        record["history_store"] = stored
    shared = [m for m in ids if m in set(hist.model_ids)]
    if shared and uses_proxy:  # without a proxy, nothing learns their answers
        leak = (
            f"{flag} ({where}) holds {len(shared)} of the {len(ids)} candidates (e.g. "
            f"{shared[0]!r}): the proxy has seen their answers, so the cells used are "
            "optimistic for a new pool"
        )
        warnings.warn(leak, DataWarning, stacklevel=user_stacklevel())
        note += f"; {leak}"
        record["candidates in the history"] = len(shared)
    return _Split(candidates, ids, hist_scores, note, record)


def _transposed(matrix: ResponseMatrix, hist: ResponseMatrix) -> str:
    """A hint when one of the two files has models and items swapped (a wide export written
    with items as rows): the responses' models are the history's items, or the reverse."""
    for rows, cols, which in ((matrix, hist, "responses"), (hist, matrix, "history")):
        if set(map(str, rows.model_ids)) & set(map(str, cols.item_ids)):
            return (
                f" (the {which} file's rows are item ids: is it transposed, items as rows? "
                "expected one row per model)"
            )
    return ""


def _no_history(matrix: ResponseMatrix, uses_proxy: bool = True) -> _Split:
    """History-free: every model a candidate, no history scores (a policy without a proxy,
    ``uses_proxy`` False, learns none from their cells either: the note says so)."""
    ids = list(matrix.model_ids)
    note = f"history-free (--no-history): all {len(ids)} models are candidates; " + (
        "the proxy is learned from their own revealed cells as the run goes"
        if uses_proxy
        else "this policy learns no proxy"
    )
    record = {"source": "none (history-free)", "history models": 0, "candidates": len(ids)}
    return _Split(matrix.scores, ids, None, note, record)


def _store_input(matrix: ResponseMatrix) -> dict[str, Any] | None:
    """The store, benchmark, (metric, filter, split) and cells' hash of a matrix read by
    :meth:`Store.matrix <latentbench.io.store.Store.matrix>`; None for another matrix."""
    from latentbench.io._files import store_input_record

    return store_input_record(matrix)


def _uses_proxy(policy: str) -> bool:
    """Whether the policy spec ``policy`` learns a proxy from a history (True for a spec not
    understood here: the policy's own check refuses it later, with its message)."""
    try:
        return POLICIES[parse_policy(policy)[1]].needs_proxy
    except (InputError, KeyError, TypeError, ValueError):
        return True


def _random_half_history(
    matrix: ResponseMatrix, name: str | None, random_state: int, uses_proxy: bool = True
) -> _Split:
    """No history given: a random half of the models (at least 2) learns the proxy and the
    other half are the candidates, with a warning saying so (``name``: the responses' file
    name or store benchmark, for the messages). A policy without a proxy (``uses_proxy``
    False: UCB-E, uniform) learns nothing from that half, and the warning says so."""
    if matrix.n_models < 4:
        half = matrix.n_models // 2
        raise InputError(
            f"{name or 'the responses'}: {matrix.n_models} models; without a history a "
            f"random half of them learns the proxy, which leaves {half} history and "
            f"{matrix.n_models - half} candidate model(s) (at least 2 of each needed): pass "
            "history=, history_store= or no_history=True (every model a candidate)"
        )
    h_rows, t_rows = split_models(matrix.n_models, how="random", random_state=random_state)
    ids = [matrix.model_ids[i] for i in t_rows]
    name = name or "the responses"
    held = f"a random half of the responses ({len(h_rows)} models, seed {random_state})"
    note = (
        f"history split: no history given, so {held} learns the proxy and only the other "
        f"{len(ids)} models are candidates; pass history=, history_store= or "
        "no_history=True to use all of them"
        if uses_proxy
        else f"history split: no history given, so {held} is set aside as the history, "
        f"which this policy does not use (it learns no proxy), and only the other {len(ids)} "
        "models are candidates; pass no_history=True to make all of them candidates"
    )
    warnings.warn(note, DataWarning, stacklevel=user_stacklevel())
    record = {
        "source": f"random half of {name} (seed {random_state})",
        "history models": len(h_rows),
        "candidates": len(ids),
        "history ids": [matrix.model_ids[i] for i in h_rows],
    }
    return _Split(matrix.scores[t_rows], ids, matrix.scores[h_rows], note, record)


def _drop_items(split: _Split, oracle: MatrixOracle, matrix: ResponseMatrix) -> None:
    """``missing="drop-items"`` dropped items: say so (note, record, warning) and drop them
    from the history too."""
    kept = oracle.kept_items
    if kept.size >= matrix.n_items:
        return
    dropped = matrix.n_items - kept.size
    split.note += (
        f"; --missing drop-items: dropped {dropped:,} of {matrix.n_items:,} items with a "
        f"missing candidate cell, so the target is each model's mean over the other "
        f"{kept.size:,}"
    )
    split.record["dropped items"] = dropped
    warnings.warn(
        f"missing='drop-items': dropped {dropped:,} of {matrix.n_items:,} items with a "
        f"missing candidate cell; each model's target is its mean over the other "
        f"{kept.size:,} (recorded in params['history']['dropped items'])",
        DataWarning,
        stacklevel=user_stacklevel(),
    )
    if split.hist_scores is not None:
        split.hist_scores = split.hist_scores[:, kept]


def _zero_cells(split: _Split, missing: str) -> None:
    """``missing="zero"`` scored missing candidate cells 0: say so (note, record, warning)."""
    zeros = int(np.isnan(split.candidates).sum()) if missing == "zero" else 0
    if zeros:  # the user's choice, recorded and said (it changes what "best" means)
        split.note += (
            f"; --missing zero: {zeros:,} missing candidate cell(s) are scored 0, so each "
            "model's target is its mean with those zeros"
        )
        split.record["missing cells scored 0"] = zeros
        warnings.warn(
            f"missing='zero': {zeros:,} missing candidate cell(s) are scored 0, so each "
            "model's target is its mean with those zeros (recorded in "
            "params['history']['missing cells scored 0'])",
            DataWarning,
            stacklevel=user_stacklevel(),
        )


def _policy(policy: str, delta: float, stop: str) -> tuple[Policy, dict[str, Any]]:
    """The policy of the spec ``policy`` with the run's ``delta`` (and LUCB sampling for a
    fixed-confidence stop), and the spec's run options."""
    refuse_spec_delta(policy, "policy")  # delta= sets it; the spec's was overridden silently
    _, name, spec_options, run_kw = parse_policy(policy)
    options = POLICIES[name].options
    extra: dict[str, Any] = {"delta": delta} if "delta" in options else {}
    extra.update(lucb_bonus(name, stop, spec_options))  # fixed confidence: LUCB sampling
    return make_policy(policy, extra, where="policy"), run_kw


def _proxy(
    pol: Policy,
    split: _Split,
    rank: int | str,
    random_state: int,
    progress: ProgressCallback | None,
) -> LowRankProxy | OnlineProxy | None:
    """The proxy ``pol`` needs (online without a history, else fitted on it), its rank
    recorded; None when it needs none."""
    proxy: LowRankProxy | OnlineProxy | None = None
    if pol.needs_proxy and split.hist_scores is None:  # history-free
        online_rank = _rank(rank)
        check_rank(online_rank, split.candidates.shape, "the candidates (history-free)")
        proxy = OnlineProxy(
            rank=2 if online_rank == "auto" else int(online_rank), random_state=random_state
        )
        split.record["proxy rank"] = proxy.rank
    elif pol.needs_proxy and split.hist_scores is not None:
        what = f"the history ({split.record['source']})"
        check_rank(_rank(rank), split.hist_scores.shape, what)
        notify(progress, "learning item factors from the history")
        fitted = LowRankProxy(rank=_rank(rank), random_state=random_state)
        fit_history(fitted, split.hist_scores, what)
        split.record["proxy rank"] = fitted.rank_
        proxy = fitted
    return proxy


def _history_from_store(
    path: Path, benchmark: str, choice: dict[str, str | None]
) -> ResponseMatrix:
    """The history matrix of ``benchmark`` in the store at ``path``; the store's advice on
    choosing a metric, filter or split names this function's ``history_*`` keywords."""
    from latentbench.io.store import Store

    def ours(text: str) -> str:
        text = re.sub(  # the choices the store names: this function's history_* keywords
            r"has no rows with [^;]*",
            lambda m: re.sub(r"\b(metric|filter|split)=", r"history_\1=", m.group(0)),
            text,
        )
        return text.replace(
            "pass metric=, filter= and split=",
            "pass history_metric=, history_filter= and history_split=",
        ).replace("choose another with split=...", "choose another with history_split=...")

    with warnings.catch_warnings(record=True) as caught, Store(path, read_only=True) as db:
        warnings.simplefilter("always")
        try:
            hist = db.matrix(benchmark, **choice)
        except InputError as exc:
            raise InputError(ours(str(exc))) from None
    for w in caught:
        warnings.warn(ours(str(w.message)), w.category, stacklevel=user_stacklevel())
    return hist
