"""Run (or resume) a live selection through a durable store."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from latentbench._checks import check_event, user_stacklevel
from latentbench._compat import TEXT
from latentbench.exceptions import DataWarning, InputError, LiveStop
from latentbench.io import SnapshotWriter
from latentbench.io._secrets import without_masked
from latentbench.select._base import DEFAULT_DELTA
from latentbench.select._policies import POLICIES, lucb_bonus, make_policy, parse_policy
from latentbench.select._run import (
    SelectionResult,
    certifies_at_confidence,
    check_select_delta,
    crossed_note,
    reads_delta,
    run_selection,
)
from latentbench.select._schedule import default_schedule
from latentbench.select.live._config import LiveConfig, canonical_identity, without_endpoints
from latentbench.select.live._durable import (
    DurableOracle,
    LiveProgress,
    release_ledger,
    run_requests,
    unstored_note,
)
from latentbench.select.oracles import MatrixOracle, Oracle, StreamingOracle
from latentbench.select.oracles._protocol import EMPTY_NOTE, NO_TEXT_NOTE, now_utc

if TYPE_CHECKING:
    from latentbench.io.store import Store
    from latentbench.select._base import Policy

__all__ = ["LIVE_DELTA", "LiveResult", "run_live"]

LIVE_DELTA = 0.05
"""``delta`` of a live run's policy when ``[policy]`` sets none (as ``select replay``'s)."""


@dataclass
class LiveResult:
    """Outcome of :func:`run_live` (one session of a possibly resumed run).

    Attributes
    ----------
    run_id : str
    status : {"done", "interrupted", "failed", "capped", "waiting"}
    selection : SelectionResult or None
        The loop's result (``status == "done"`` only).
    resumed : bool
        The store already held this run.
    n_paid : int
        Evaluations made in this session.
    n_replayed : int
        Cells answered from the store in this session.
    paid_total : int
        Evaluations stored for the run (all sessions).
    errors : DataFrame
        Failed cells of this session: ``model``, ``item``, ``error``.
    message : str
    notes : list of str
        Lines counting the run's answers with a note (empty text; no text, content null),
        all sessions, and the requests an earlier session sent but never stored with an
        answer (killed, or stopped at once; counted against ``spend_cap``; said by the
        first session that finds them); also in ``message``.
    """

    run_id: str
    status: str
    selection: SelectionResult | None
    resumed: bool
    n_paid: int
    n_replayed: int
    paid_total: int
    errors: pd.DataFrame
    message: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary.

        Returns
        -------
        dict of str to Any
        """
        return {
            "run_id": self.run_id,
            "status": self.status,
            "resumed": self.resumed,
            "n_paid": self.n_paid,
            "n_replayed": self.n_replayed,
            "paid_total": self.paid_total,
            "n_errors": len(self.errors),
            "message": self.message,
            "notes": list(self.notes),
            "selection": None if self.selection is None else self.selection.to_dict(trace=False),
        }


def _items(
    cfg: LiveConfig, oracle: Oracle | StreamingOracle | None
) -> tuple[list[dict[str, str]], list[str]]:
    """The items (empty for a given oracle without an items file) and the column ids."""
    if oracle is None or cfg.items_path is not None:
        items = cfg.load_items()
        item_ids = [it["id"] for it in items]
    else:
        items, item_ids = [], [str(k) for k in range(oracle.n_items)]
    if oracle is not None and (oracle.n_models, oracle.n_items) != (len(cfg.models), len(item_ids)):
        raise InputError(
            f"oracle has shape ({oracle.n_models}, {oracle.n_items}); the configuration has "
            f"{len(cfg.models)} models and {len(item_ids)} items"
        )
    if cfg.run.init_batch is not None and not 1 <= cfg.run.init_batch <= len(item_ids):
        raise InputError(
            f"{cfg.source}: [run] init_batch={cfg.run.init_batch}; expected 1..{len(item_ids)} "
            "(the number of items)"
        )
    return items, item_ids


@contextlib.contextmanager
def store_of_call(path: str | os.PathLike[str]) -> Iterator[Store]:
    """The store at ``path``, opened for one live call; a store file this call created is
    removed (with DuckDB's ``.wal``) when the call is refused before anything was written
    to it, so that a refused configuration leaves no new, empty store behind. A file that
    existed before the call is never removed."""
    from latentbench.io.store import Store

    name = os.fspath(path)
    new = name != ":memory:" and not os.path.lexists(name)
    created = [name] + ([f"{name}.wal"] if new and not os.path.lexists(f"{name}.wal") else [])
    db = Store(path)
    try:
        yield db
    except BaseException:
        empty = new and _holds_nothing(db)
        db.close()
        for made in created if empty else []:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(made)
        raise
    finally:
        db.close()


def _holds_nothing(db: Store) -> bool:
    """Whether every table of ``db`` but ``meta`` (the schema's) is empty; False when it
    cannot be read (the file is then kept)."""
    try:
        con = db.connection
        tables = [
            str(t)
            for (t,) in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = "
                "current_database() AND schema_name = 'main' AND table_name <> 'meta'"
            ).fetchall()
        ]
        if not tables:
            return True
        counts = " UNION ALL ".join(f'SELECT count(*) FROM "{t}"' for t in tables)
        return all(int(n) == 0 for (n,) in con.execute(counts).fetchall())
    except Exception:  # a closed or damaged store: kept as it is
        return False


ESTIMATE_RUN = re.compile(r"-estimate-[0-9a-f]{10}$")
"""The end of an ``estimate --live`` run's id (runs stored before ``task`` was recorded)."""


def is_estimate_run(run: Mapping[str, Any]) -> bool:
    """Is this stored run (a :meth:`Store.selection_runs` row) a live estimate rather than a
    selection? Its record says so (``task``); older ones by the end of their id."""
    return run_task(run) == "estimate"


def is_compare_run(run: Mapping[str, Any]) -> bool:
    """Is this stored run (a :meth:`Store.selection_runs` row) a live comparison of two
    models (``compare --live``, ``task = "compare"``)?"""
    return run_task(run) == "compare"


def run_task(run: Mapping[str, Any]) -> str:
    """What a stored run is: ``select`` (a selection), ``estimate`` (``estimate --live``) or
    ``compare`` (``compare --live``), as its record says (``task``); older ones by the end
    of their id (an estimate's, else a selection)."""
    config = run.get("config") if isinstance(run.get("config"), dict) else {}
    task = (config or {}).get("task")
    if task:
        return str(task)
    return "estimate" if ESTIMATE_RUN.search(str(run.get("run_id"))) else "select"


def _suffix_task(suffix: str) -> str:
    """The task of the runs whose ids end in ``suffix`` (:func:`resolve_run_id`'s)."""
    if suffix.startswith("-compare-"):
        return "compare"
    return "estimate" if suffix else "select"


def _same_answers_as_stored(cfg: LiveConfig, record: dict[str, Any]) -> list[str]:
    """For a run stored before the identity held the answer options: the options (oracle
    option names, model names) whose value differs from this configuration's; empty when the
    run got the answers this configuration would get."""
    mine = json.loads(json.dumps(cfg.answer_options(), sort_keys=True, default=str))
    theirs = json.loads(json.dumps(cfg.stored_answer_options(record), sort_keys=True, default=str))
    changed = []
    for part in ("oracle", "models"):
        a, b = mine.get(part) or {}, theirs.get(part) or {}
        changed += [f"{part}.{k}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return changed


def resolve_run_id(store: Store, cfg: LiveConfig, suffix: str = "") -> str:
    """The run's id: ``[run] run_id``, else the default id (plus ``suffix``).

    A run stored under the id the same configuration had before its identity held the
    answer options is resumed under that id (its paid cells, its spend cap) when it got the
    answers this configuration gets; one with other answer options (a temperature, an
    endpoint changed since) is an error naming them: a new run beside it would start past
    its cap, a resume would mix two configurations' answers.
    """
    if cfg.run.run_id:
        return cfg.run.run_id + suffix
    current = cfg.default_run_id() + suffix
    if store.selection_run(current) is None:
        # a run stored while its models' endpoints were part of the identity has another
        # id: the same configuration (endpoints aside) resumes it, with its cells and cap
        mine = json.loads(json.dumps(cfg.identity(), sort_keys=True, default=str))
        for run in store.selection_runs():
            config = run.get("config") if isinstance(run.get("config"), dict) else {}
            stored = (config or {}).get("identity")
            if (
                str(run["run_id"]).startswith("live-")
                and str(run["run_id"]).endswith(suffix)
                and run_task(run) == _suffix_task(suffix)  # a selection never an estimate's
                and isinstance(stored, dict)
                and "answers" in stored
                and canonical_identity(stored) == mine
            ):
                return str(run["run_id"])
        older = cfg.default_run_id(legacy=True) + suffix
        stored = store.selection_run(older)
        if stored is not None and "answers" not in (stored["config"].get("identity") or {}):
            changed = _same_answers_as_stored(cfg, stored["config"])
            if changed:
                raise InputError(
                    f"{store.path}: run {older!r}, stored by an earlier version for this "
                    f"configuration, was started with other answer options (changed: "
                    f"{', '.join(changed)}); set [run] run_id to start a new run, or use "
                    "another store"
                )
            return older
        _say_near_runs(store, mine, current, suffix)
    return current


def abort_oracle(oracle: Any) -> None:
    """Stop an oracle's requests in flight and its retries (``abort()``, where it has one)
    when an exception (a second Ctrl-C, a store write that failed) ends a run that built it:
    the run then ends at once instead of after every retry of the batch (about 14 s at a 5 s
    timeout, the answers paid and never stored). The oracle stays aborted (it is closed
    next)."""
    abort = getattr(oracle, "abort", None)
    if callable(abort):
        abort()


def empty_answers_note(oracle: Any) -> str:
    """A line saying how many answers had empty text this session (``n_empty`` of an oracle
    that counts them, e.g. a chat endpoint whose ``max_tokens`` cuts every answer short);
    empty if none. The scorer scored them (``exact_match``: 0)."""
    n = int(getattr(oracle, "n_empty", 0) or 0)
    if n <= 0:
        return ""
    return (
        f"{n} answer(s) received this session had empty text and were scored as such "
        "(exact_match: 0); if the model was cut off, raise [oracle] max_tokens"
    )


def no_text_note(oracle: Any) -> str:
    """A line saying how many answers came without text this session (``n_no_text``:
    ``content`` null, a refusal, a tool call or the token limit spent on reasoning); empty if
    none. Each was scored 0, with its reason stored on the cell."""
    n = int(getattr(oracle, "n_no_text", 0) or 0)
    if n <= 0:
        return ""
    return (
        f"{n} answer(s) received this session came without text (content null) and were "
        "scored 0, not retried (the reason is stored as each cell's note); if finish_reason "
        "was 'length', raise [oracle] max_tokens"
    )


def stored_answer_notes(store: Store, run_id: str) -> list[str]:
    """Lines counting the run's stored answers with a note (all sessions): empty text
    (:data:`~latentbench.select.oracles._protocol.EMPTY_NOTE`) and no text (content null,
    :data:`~latentbench.select.oracles._protocol.NO_TEXT_NOTE`); empty if none."""
    notes = store.selection_observations(run_id)["note"]
    text = notes[notes.notna()].astype(TEXT)
    n_empty = int(text.str.startswith(EMPTY_NOTE).sum())
    n_null = int(text.str.startswith(NO_TEXT_NOTE).sum())
    lines = []
    if n_empty:
        lines.append(f"{n_empty} answer(s) had empty text (scored as given; see the cells' note)")
    if n_null:
        lines.append(f"{n_null} answer(s) had no text (content null) and were scored 0")
    return lines


def _short(value: Any) -> str:
    """A stored option's value for a message (``None``: not set), at most 60 characters."""
    text = "(not set)" if value is None else json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _flat(value: Any, prefix: str) -> dict[str, Any]:
    """``{"a": {"b": 1}}`` as ``{"prefix.a.b": 1}`` (the paths of a nested record)."""
    if not isinstance(value, dict) or not value:
        return {prefix: value}
    out: dict[str, Any] = {}
    for key, inner in value.items():
        out.update(_flat(inner, f"{prefix}.{key}"))
    return out


def _near_runs(store: Store, mine: dict[str, Any], suffix: str) -> list[dict[str, Any]]:
    """Stored runs of this task that a new run does not resume although they have its
    configuration except what fixes their answers (``"why": "answers"``: a scorer or oracle
    file edited, a temperature, a served model; not reused) or except ``[proxy] history``'s
    file hash (``"why": "history"``: the file edited or replaced; their answers are reused).
    Each: ``run_id``, ``why``, ``changed`` (the fields), ``status`` and ``requests`` (the
    paid requests it stored, or its request ledger holds when more)."""
    out = []
    for run in store.selection_runs():
        config = run.get("config") if isinstance(run.get("config"), dict) else {}
        stored = (config or {}).get("identity")
        if (
            not isinstance(stored, dict)
            or "answers" not in stored
            or not str(run["run_id"]).endswith(suffix)
            or run_task(run) != _suffix_task(suffix)
        ):
            continue
        theirs = canonical_identity(stored)
        rest = {k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k)}
        if rest == {"answers"}:
            a, b = _flat(theirs["answers"], "answers"), _flat(mine["answers"], "answers")
            changed, why = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k)), "answers"
        elif rest == {"history_sha256"}:
            changed, why = ["[proxy] history"], "history"
        else:
            continue
        stored, sent = run_requests(store, str(run["run_id"]))
        out.append(
            {"run_id": str(run["run_id"]), "why": why, "changed": changed,
             "status": run.get("status"), "requests": max(stored, sent or 0)}
        )  # fmt: skip
    return out


def _say_near_runs(store: Store, mine: dict[str, Any], run_id: str, suffix: str) -> None:
    """Warn when a new run starts beside a stored one of the same configuration except the
    options that fix its answers (a scorer or oracle file edited, a temperature, a served
    model): its answers are not reused, so the new run pays for its cells again; or except
    ``[proxy] history`` (the file edited): the stored run is left as it was, its answers
    are reused, and the new run's spend cap is its own, beside what the stored one paid."""
    near = _near_runs(store, mine, suffix)
    for run in near:
        if run["why"] != "answers":
            continue
        shown = ", ".join(run["changed"][:4]) + (", ..." if len(run["changed"]) > 4 else "")
        warnings.warn(
            f"{store.path}: starting run {run_id!r}; run {run['run_id']!r} has this "
            f"configuration except what fixes its answers (changed: {shown}: a python "
            "scorer's or oracle's file hash when its code was edited), so its answers are not "
            "reused and this run pays for its cells again (with a spend cap of its own)",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
        return
    left = [run for run in near if run["why"] == "history"]
    if left:
        paid = sum(run["requests"] for run in left)
        names = ", ".join(f"{r['run_id']!r} ({r['status']}, {r['requests']:,} paid)" for r in left)
        warnings.warn(
            f"{store.path}: starting run {run_id!r}, not resuming run{'s' if len(left) > 1 else ''}"
            f" {names}: [proxy] history changed (its file's SHA-256 differs: the file was edited "
            "or replaced), which makes a new run; the stored run is left as it was (abandoned), "
            "its answers are reused where this run asks the same cells, and this run's "
            f"spend_cap counts only its own requests, beside the {paid:,} already paid "
            "(recorded in the run's config as 'abandons'); restore the file to resume it",
            DataWarning,
            stacklevel=user_stacklevel(),
        )


def _open_run(
    store: Store,
    cfg: LiveConfig,
    run_id: str,
    *,
    injected: bool = False,
    task: str = "select",
    notes: Sequence[str] = (),
) -> bool:
    """Start the run in the store, or check that a stored one matches; True if resumed.

    ``injected``: the run's answers come from an oracle passed in, not the configuration's.
    A run started with the configured oracle records ``answers_from = "config"``, the only
    runs whose answers :func:`reusable_answers` hands to others; one resumed with another
    oracle would mix the two, and is refused (so is the reverse, a run of an injected
    oracle resumed with the configured one). ``task``: ``select`` or ``estimate``.
    ``notes``: what the oracle says of itself (a key sent over plain http://), recorded in
    the run's ``config`` under ``notes`` (a resumed run adds those it does not hold yet).
    """
    stored = store.selection_run(run_id)
    if stored is None:
        record = {**cfg.to_record(), "task": task}
        if notes:
            record["notes"] = list(notes)
        if not cfg.run.run_id:  # a default id: the stored runs it does not resume, recorded
            mine = json.loads(json.dumps(cfg.identity(), sort_keys=True, default=str))
            suffix = run_id.removeprefix(cfg.default_run_id())
            left = [r for r in _near_runs(store, mine, suffix) if r["why"] == "history"]
            if left:
                record["abandons"] = left
        if not injected:
            record["answers_from"] = "config"
        store.start_selection(record, run_id=run_id)
        return False
    masked = store.redact_selection_config(run_id)
    if masked:  # an earlier version stored a key in the run's options; read masked already
        warnings.warn(
            f"{store.path}: run {run_id!r}: its stored options, written by an earlier "
            f"version, held a key ({', '.join(masked[:3])}{', ...' if len(masked) > 3 else ''}"
            "); replaced by *** in the store (not shown)",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    identity = json.loads(json.dumps(cfg.identity(), sort_keys=True, default=str))
    before = canonical_identity(stored["config"].get("identity") or {})
    if "answers" not in before:  # stored before the identity held them: compared from its
        identity.pop("answers", None)  # record's oracle and models
        changed = _same_answers_as_stored(cfg, stored["config"])
        if changed:
            raise InputError(
                f"{store.path}: run {run_id!r} was started with other answer options (changed: "
                f"{', '.join(changed)}); use another run_id or store"
            )
    if before != identity:
        a, b = _flat(before, "identity"), _flat(identity, "identity")
        changed = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        shown = "; ".join(
            f"{k.removeprefix('identity.')}: {_short(a.get(k))} -> {_short(b.get(k))}"
            for k in changed[:4]
        ) + ("; ..." if len(changed) > 4 else "")
        raise InputError(
            f"{store.path}: run {run_id!r} was started with a different configuration "
            f"(changed: {shown}); use another run_id or store"
        )
    from_config = stored["config"].get("answers_from") == "config"
    if "task" in stored["config"] and from_config == injected:  # recorded, and it differs
        started, now = (
            ("the configured", "another") if from_config else ("another", "the configured")
        )
        raise InputError(
            f"{store.path}: run {run_id!r} was started with {started} oracle; resuming it with "
            f"{now} would mix two oracles' answers; use another run_id or store"
        )
    moved = _moved_endpoints(cfg, stored["config"])
    if moved:
        warnings.warn(
            f"{store.path}: run {run_id!r} resumes with {moved}: its stored answers are kept "
            "as the same model's (a base_url says where to reach a model, not which one; a "
            "different model served under the same name needs another [[models]] name)",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
        # said once: the record holds the addresses asked now, and the earlier ones
        record = dict(stored["config"])
        urls = {m.name: m.base_url for m in cfg.models}
        moves = list(record.get("endpoint_moves") or [])
        models = []
        for entry in record.get("models") or ():
            if isinstance(entry, dict) and urls.get(str(entry.get("name"))) not in (
                None,
                entry.get("base_url"),
            ):
                moves.append(
                    {"model": entry.get("name"), "from": entry.get("base_url"),
                     "to": urls[str(entry.get("name"))], "at": now_utc().isoformat()}
                )  # fmt: skip
                entry = {**entry, "base_url": urls[str(entry.get("name"))]}
            models.append(entry)
        store.set_selection_config(run_id, {**record, "models": models, "endpoint_moves": moves})
    held = list(stored["config"].get("notes") or [])
    new = [note for note in notes if note not in held]
    if new:  # e.g. a key now sent over plain http:// (said once, as the run was opened)
        latest = store.selection_run(run_id)
        record = dict(latest["config"]) if latest is not None else dict(stored["config"])
        store.set_selection_config(run_id, {**record, "notes": held + new})
    store.set_selection_status(run_id, "running")
    return True


def _moved_endpoints(
    cfg: LiveConfig, record: Mapping[str, Any], models: Any = None, *, every: bool = False
) -> str:
    """``model 'm' at URL (asked at OLD before)`` for each model (of ``models``, default all)
    whose ``base_url`` differs from the one a stored run's record holds; empty if none.
    ``every``: also the addresses the run was asked at before a resume moved it (its
    ``endpoint_moves``), i.e. wherever its stored answers may come from."""
    before: dict[str, list[str]] = {}
    for m in record.get("models") or ():
        if isinstance(m, dict) and m.get("base_url") is not None:
            before.setdefault(str(m.get("name")), []).append(str(m["base_url"]))
    if every:
        for move in record.get("endpoint_moves") or ():
            if isinstance(move, dict) and move.get("from") is not None:
                urls = before.setdefault(str(move.get("model")), [])
                if str(move["from"]) not in urls:
                    urls.append(str(move["from"]))
    moved = []
    for m in cfg.models:
        if (models is not None and m.name not in models) or m.base_url is None:
            continue
        others = [url for url in before.get(m.name, ()) if url != m.base_url]
        if others:
            moved.append(f"model {m.name!r} at {m.base_url} (asked at {', '.join(others)} before)")
    return "; ".join(moved[:3]) + ("; ..." if len(moved) > 3 else "")


def answer_key(record: Mapping[str, Any], model: str) -> str | None:
    """What fixes ``model``'s answer to an item in a stored run's configuration record
    (:meth:`LiveConfig.to_record` with ``answers_from``): the items file and its fields, the
    scorer, the oracle's answer options and the model's own entry (endpoint, served name:
    :meth:`LiveConfig.answer_options`). None for a run whose answers did not come from its
    configured oracle, or one stored before these were recorded: its answers are never
    reused."""
    identity = record.get("identity") or {}
    answers = identity.get("answers")
    if record.get("answers_from") != "config" or not isinstance(answers, dict):
        return None
    models = answers.get("models") or {}
    if model not in models:
        return None
    key = {
        "items": identity.get("items_sha256"),
        "item_fields": identity.get("item_fields"),
        "scorer": identity.get("scorer"),
        "oracle_kind": identity.get("oracle_kind"),
        "oracle": answers.get("oracle"),
        "code": answers.get("code"),  # a python oracle's or scorer's file
        "model": without_endpoints({model: models[model]})[model],  # not where it was asked
    }
    # a key an earlier version stored (masked as read) is not what fixes the answers
    text = json.dumps(without_masked(key), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def reusable_answers(
    store: Store,
    cfg: LiveConfig,
    run_id: str,
    models: Sequence[str],
    notes: dict[tuple[str, str], str] | None = None,
    origins: dict[tuple[str, str], tuple[str, str]] | None = None,
) -> dict[tuple[str, str], float]:
    """Answers that other runs in ``store`` paid for and that this configuration would get
    again: the same model, items, scorer and oracle options (:func:`answer_key`), whatever
    the seed, the policy or the calibration. ``(model, item) -> score``; failed cells are not
    reused. The answer is the model's, not the design's: reusing it leaves every interval
    valid (the items a run asks are chosen independently of the answers). ``notes``, when
    given, receives the stored note of each reused answer that has one (empty text, content
    null), so the reusing run stores and counts it too. ``origins``, when given, receives
    the run each reused answer comes from: ``(run id, task)`` (:func:`run_task`), which
    :func:`reused_note` names."""
    mine = {**cfg.to_record(), "answers_from": "config"}
    keys = {m: answer_key(mine, m) for m in models}
    found: dict[tuple[str, str], float] = {}
    for run in store.selection_runs():
        if run["run_id"] == run_id or not isinstance(run.get("config"), dict):
            continue
        same = [
            m for m in models if keys[m] is not None and answer_key(run["config"], m) == keys[m]
        ]
        if not same:
            continue
        stored = store.selection_observations(run["run_id"])
        good = stored[stored["model"].isin(same) & stored["score"].notna() & stored["error"].isna()]
        moved = _moved_endpoints(cfg, run["config"], set(good["model"].astype(TEXT)), every=True)
        if moved and len(good):
            warnings.warn(
                f"{store.path}: answers of run {run['run_id']!r} ({len(good):,} stored) are "
                f"reused where this run asks the same cells, for "
                f"{moved} (the same model name, served name and options: the same answers; a "
                "different model served under the same name needs another [[models]] name)",
                DataWarning,
                stacklevel=user_stacklevel(),
            )
        for model, item, score, note in zip(
            good["model"], good["item"], good["score"], good["note"], strict=True
        ):
            cell = (str(model), str(item))
            if cell not in found:
                found[cell] = float(score)
                if notes is not None and isinstance(note, str):
                    notes[cell] = note
                if origins is not None:
                    origins[cell] = (str(run["run_id"]), run_task(run))
    return found


_RUN_WORDS = {"compare": "the live comparison", "estimate": "the live estimate"}
"""How :func:`reused_note` names a run of each task (others: ``the selection run``)."""


def reused_note(
    store_path: object,
    cells: Sequence[tuple[str, str]],
    origins: Mapping[tuple[str, str], tuple[str, str]],
) -> str:
    """The note of a live run that reused the answers ``cells`` (``(model, item)``, as
    :class:`DurableOracle` lists them in ``reused``) from other runs of ``store_path``:
    how many, and from which runs (``origins``, filled by :func:`reusable_answers`), each
    named with what it is (``4 from the live comparison 'live-...-compare-...'``)."""
    from collections import Counter

    from latentbench._text import counted

    by_run = Counter(origins.get(cell, ("?", "select")) for cell in cells)
    named = "; ".join(
        f"{n:,} from {_RUN_WORDS.get(task, 'the selection run')} {run_id!r}"
        for (run_id, task), n in by_run.items()
    )
    return (
        f"{counted(len(cells), 'answer')} came from earlier runs in {store_path} with the same "
        f"model, items, scorer and oracle options ({named}): stored here, not paid again"
    )


def run_live(
    config: LiveConfig | str | os.PathLike[str],
    store: Store | str | os.PathLike[str],
    *,
    oracle: Oracle | StreamingOracle | None = None,
    progress: Callable[[LiveProgress], None] | None = None,
    stop_event: threading.Event | None = None,
) -> LiveResult:
    """Run (or resume) a live selection whose every observation is stored first.

    The Python twin of ``latentbench select live --config RUN.toml --store RUN.duckdb``.

    Parameters
    ----------
    config : LiveConfig or path-like
        A configuration or its TOML file.
    store : Store or path-like
        The DuckDB store (opened and closed here when a path is given).
    oracle : Oracle, optional
        Replace the oracle the configuration describes (e.g. a
        :class:`~latentbench.select.MatrixOracle` for a replay through the store).
    progress : callable, optional
        Called with a :class:`LiveProgress` after each batch.
    stop_event : threading.Event, optional
        Set it (e.g. from a SIGINT handler) to stop after the batch in flight.

    Returns
    -------
    LiveResult
        ``status`` ``done`` (with ``selection``), or why it stopped; the store's
        ``selection_runs.status`` says the same.

    Raises
    ------
    InputError
        Bad configuration or data, or a store whose run of the same id does not match.
    """
    check_event(stop_event)
    from latentbench.io.store import Store

    cfg = config if isinstance(config, LiveConfig) else LiveConfig.from_toml(config)
    if not isinstance(store, Store):  # a store this call makes is removed if it is refused
        with store_of_call(store) as db:
            return run_live(cfg, db, oracle=oracle, progress=progress, stop_event=stop_event)
    items, item_ids = _items(cfg, oracle)
    run_id = resolve_run_id(store, cfg)
    # everything that can refuse the configuration runs before the run row is written
    run = cfg.run
    stop = run.stop or ("confidence" if run.budget is None else "budget")
    n_models, n_items = len(cfg.models), len(item_ids)
    policy = _live_policy(cfg, stop, (n_models, n_items))
    try:  # before the run row: a refused delta left a 'failed' run behind
        check_select_delta(getattr(policy, "delta", None))
    except InputError as exc:
        raise InputError(f"{cfg.source}: [policy] {exc}") from None
    if run.epsilon > 0 and not reads_delta(policy, stop):  # refused after the paid start
        raise InputError(
            f"{cfg.source}: [run] epsilon = {run.epsilon:g} applies to a certificate, and "
            f"policy {run.policy!r} has none with stop = {stop!r}; expected [run] stop = "
            "'confidence' (a betting certificate on its revealed cells) or epsilon = 0 "
            "(nothing was asked)"
        )
    # the [policy] delta given ("alpha" is renamed at load), as the policy holds it (checked)
    given_delta = getattr(policy, "delta", None) if "delta" in cfg.policy_options else None
    if (
        given_delta is not None
        and float(given_delta) != DEFAULT_DELTA
        and not reads_delta(policy, stop)
    ):  # read by nothing (select replay and experiment refuse their --delta alike)
        raise InputError(
            f"{cfg.source}: [policy] delta = {given_delta:g} applies to a certificate, and "
            f"policy {run.policy!r} with ci = {getattr(policy, 'ci', 'none')!r} has none with "
            f"stop = {stop!r}; expected [run] stop = 'confidence' (a betting certificate on its "
            "revealed cells), a [policy] ci other than 'none', or no delta (nothing was asked)"
        )
    if stop == "confidence" and not certifies_at_confidence(policy):  # refused after the start
        default = "" if run.stop else " (the default without a budget)"
        raise InputError(
            f"{cfg.source}: [run] stop = 'confidence'{default} stops when the best is "
            f"certified, and policy {run.policy!r} has no intervals and chooses its items (no "
            "certificate on its cells); expected [run] budget = N, or stop = 'budget' to "
            "evaluate every cell (nothing was asked)"
        )
    batch_size, init_batch = default_schedule(n_models, n_items, run.budget)
    batch_size = run.batch_size or batch_size
    init_batch = run.init_batch or init_batch
    budget = n_models * n_items if run.budget is None else run.budget
    if policy.needs_proxy:
        proxy = cfg.build_proxy(item_ids)
    else:  # the history refused as before, but not fitted: nothing here uses its proxy
        cfg._history_proxy(item_ids)
        proxy = None
    if proxy is None and policy.needs_proxy:  # it failed after the paid initial batch
        raise InputError(
            f"{cfg.source}: [run] policy = {run.policy!r} needs [proxy] history = FILE (a "
            "matrix of earlier models' scores on these items); add it, or use policy = 'ucbe'"
        )
    unused = None
    if not policy.needs_proxy and (cfg.history is not None or cfg.proxy_options):
        # as select replay --history (and --rank) says; the proxy's options (rank, ...) are
        # as unused as its history (they were accepted without a word)
        named = [f"history ({cfg.history})"] if cfg.history is not None else []
        named += sorted(cfg.proxy_options)
        unused = (
            f"[proxy] {', '.join(named)} given, which this policy does not use (it learns no proxy)"
        )
        warnings.warn(f"{cfg.source}: {unused}", DataWarning, stacklevel=user_stacklevel())
    # without a proxy, nothing learns the candidates' answers: no leak to warn of
    shared = cfg.history_candidates() if proxy is not None and policy.needs_proxy else []
    if shared:  # as select replay says of its --history (the certificate stays valid)
        warnings.warn(
            f"{cfg.source}: [proxy] history ({cfg.history}) holds {len(shared)} of the "
            f"{n_models} candidates (e.g. {shared[0]!r}): the proxy has seen their answers, so "
            "the cells used are optimistic for a new pool",
            DataWarning,
            stacklevel=user_stacklevel(),
        )
    inner = oracle if oracle is not None else cfg.build_oracle(items)
    resumed = _open_run(
        store,
        cfg,
        run_id,
        injected=oracle is not None,
        task="select",
        notes=getattr(inner, "notes", None) or (),
    )
    reused_notes: dict[tuple[str, str], str] = {}
    snapshot = SnapshotWriter(store.path, run_id, "select", spend_cap=run.spend_cap)
    durable: DurableOracle

    def watched(p: LiveProgress) -> None:  # the snapshot beside the store, then the caller's
        answer = None
        if p.leader is not None:
            answer = {"best": p.leader, "estimate": p.estimate, "lower": p.lower,
                      "upper": p.upper, "certified": None}  # fmt: skip
        snapshot.update(batch=p.call + 1, spent=p.paid_total, planned=p.planned,
                        left=p.budget_left, requests=durable.requests_total,
                        answer=answer)  # fmt: skip
        if progress is not None:
            progress(p)

    durable = DurableOracle(
        store,
        run_id,
        inner,
        cfg.model_ids,
        item_ids,
        policy=policy,
        on_error=run.on_error,
        spend_cap=run.spend_cap,
        planned=n_models * n_items if run.budget is None else n_models * init_batch + budget,
        stop_event=stop_event,
        progress=watched,
        reuse=reusable_answers(store, cfg, run_id, cfg.model_ids, notes=reused_notes)
        if oracle is None
        else None,
        reuse_notes=reused_notes,
    )
    unstored = unstored_note(durable)
    if unstored:  # a killed session's requests in flight: counted, said by one session
        warnings.warn(f"run {run_id!r}: {unstored}", DataWarning, stacklevel=user_stacklevel())
        durable.record_unstored_said()
    snapshot.update(spent=durable.paid_total, planned=durable.planned,
                    left=max(durable.planned - durable.stored_before, 0),
                    requests=durable.requests_total)  # fmt: skip
    with snapshot.until_end():
        selection, status, message = _select(
            durable,
            policy,
            cfg,
            inner,
            store,
            run_id,
            own_oracle=oracle is None,
            batch_size=batch_size,
            init_batch=init_batch,
            proxy=proxy,
            stop=stop,
        )
    if selection is not None and shared:  # in the final decision's record too
        selection.params["candidates in the history"] = len(shared)
    if selection is not None and unused:
        source = "none" if cfg.history is None else str(cfg.history)
        selection.params["history"] = {"source": source, "note": unused}
    for line in (empty_answers_note(inner), no_text_note(inner)):
        if line:
            warnings.warn(f"run {run_id!r}: {line}", DataWarning, stacklevel=user_stacklevel())
    notes = stored_answer_notes(store, run_id) + ([unstored] if unstored else [])
    notes += [unused] if unused else []
    message = _final_message(store, cfg, run_id, durable, selection, message, notes)
    store.set_selection_status(run_id, status)
    final: dict[str, Any] = {"spent": durable.paid_total, "requests": durable.requests_total}
    if selection is not None:  # the outcome, as the run prints it
        best = selection.best
        final["answer"] = {
            "best": str(selection.best_id),
            "estimate": float(selection.estimates[best]),
            "lower": None if selection.lower is None else float(selection.lower[best]),
            "upper": None if selection.upper is None else float(selection.upper[best]),
            "certified": selection.certified,
        }
    snapshot.finish(status, **final)
    return LiveResult(
        run_id=run_id,
        status=status,
        selection=selection,
        resumed=resumed,
        n_paid=durable.n_paid,
        n_replayed=durable.n_replayed,
        paid_total=durable.paid_total,
        errors=pd.DataFrame(durable.errors, columns=["model", "item", "error"]),
        message=message,
        notes=notes,
    )


def _live_policy(cfg: LiveConfig, stop: str, shape: tuple[int, int]) -> Policy:
    """The configuration's policy, with ``select replay``'s defaults where it gives none: the
    live ``delta`` and, at fixed confidence, LUCB sampling (``bonus = "ci"``)."""
    run = cfg.run
    policy = cfg.build_policy(shape=shape)
    _, name, spec_options, _ = parse_policy(run.policy)
    given = {**spec_options, **cfg.policy_options}
    defaults: dict[str, Any] = {}
    if "delta" in POLICIES[name].options and "delta" not in given and "alpha" not in given:
        defaults["delta"] = LIVE_DELTA  # as select replay, not the policy class's own 0.1
    defaults.update(lucb_bonus(name, stop, given))  # LUCB sampling, as in a replay
    if defaults:
        policy = make_policy(run.policy, {**defaults, **cfg.policy_options}, shape=shape)
    return policy


def _select(
    durable: DurableOracle,
    policy: Policy,
    cfg: LiveConfig,
    inner: Any,
    store: Store,
    run_id: str,
    *,
    own_oracle: bool,
    batch_size: int,
    init_batch: int,
    proxy: Any,
    stop: str,
) -> tuple[SelectionResult | None, str, str]:
    """Run the selection through the durable oracle: its result (None when the live run
    stopped early), the status and why it stopped. Any other exception marks the run
    interrupted or failed (aborting an oracle of its own) and propagates."""
    run = cfg.run
    selection: SelectionResult | None = None
    status, message = "done", ""
    try:
        selection = run_selection(
            durable,
            policy,
            budget=run.budget,
            batch_size=batch_size,
            init_batch=init_batch,
            proxy=proxy,
            random_state=run.seed,
            stop=stop,
            # the [policy] delta (or the live default) is the run's, as select replay's
            # --delta is: without intervals (ci = 'none') the certificate on the revealed
            # cells of a confidence stop is built at it (it was built at 0.05, unsaid)
            delta=getattr(policy, "delta", None)
            if "delta" in POLICIES[run.policy].options
            else None,
            epsilon=run.epsilon,
            model_ids=cfg.model_ids,
            true_means=inner.true_means() if isinstance(inner, MatrixOracle) else None,
        )
    except LiveStop as exc:
        status, message = exc.status, str(exc)
    except BaseException as exc:  # a second Ctrl-C, a store that cannot be written, ...
        if own_oracle:  # its own oracle: nothing more asked (a passed one is the caller's)
            abort_oracle(inner)
        interrupted = isinstance(exc, KeyboardInterrupt)  # stored cells are kept either way
        store.set_selection_status(run_id, "interrupted" if interrupted else "failed")
        raise
    finally:
        close = getattr(inner, "close", None)
        if own_oracle and callable(close):
            close()
        release_ledger(inner)  # an oracle passed in records nothing more in this run's ledger
    return selection, status, message


def _final_message(
    store: Store,
    cfg: LiveConfig,
    run_id: str,
    durable: DurableOracle,
    selection: SelectionResult | None,
    message: str,
    notes: list[str],
) -> str:
    """Record a finished selection's final decision and publish the run's scores; the run's
    message (the best model, or why it stopped, then the stored answers' notes)."""
    if selection is not None:
        durable.record_final({"phase": "final", **selection.to_dict(trace=False)})
        crossed = crossed_note(selection)
        if crossed:
            notes = [*notes, crossed]
        n_errors = durable.n_errors_replayed + len(durable.errors)
        message = f"best model {selection.best_id} after {selection.evaluations_total} cells" + (
            f"; {n_errors} failed cell(s) were scored 0 (on_error = 'zero')" if n_errors else ""
        )
    message = "; ".join([message, *notes]) if message else "; ".join(notes)
    try:
        store.publish_selection(run_id, **cfg.publish_options())
    except InputError as exc:  # the selection tables are complete; say why responses are not
        message += f"; scores not copied to responses: {exc}"
    return message
