"""Oracle (d): the lm-evaluation-harness, driven one written plan at a time."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

import numpy as np

from latentbench._repr import short_ids
from latentbench.exceptions import HarnessFailed, InputError, PlanPending
from latentbench.select.oracles._openai import _redact, environment_secrets
from latentbench.select.oracles._protocol import BatchFromCells, CellResult

__all__ = ["HARNESS_TIMEOUT", "LmEvalBridgeOracle"]

HARNESS_TIMEOUT = 3600.0
"""Default seconds one harness run (one batch) may take (``[oracle] harness_timeout``)."""

RUNNING_FILE = "harness_running.json"
"""In ``plan_dir`` while a harness runs (``execute``): its pid and argv, so that a session
started after a crash waits for it instead of asking (and paying) for its cells again."""

TAIL_BYTES = 2000
"""Characters of the harness's output quoted by :class:`HarnessFailed`."""

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


class LmEvalBridgeOracle(BatchFromCells):
    """Oracle (d): the lm-evaluation-harness, one plan at a time.

    ``evaluate_cells`` reads the sample logs under ``samples_dir`` (``docs/formats.md``; via
    :func:`latentbench.io.formats.read_results`) and yields the requested cells found there.
    When some are missing it writes ``plan_dir/next_plan.json`` (model, task, doc ids and an
    ``lm_eval ... --samples`` command line) and raises :class:`PlanPending`. Run the command,
    then re-run the selection: the cells already stored are replayed and the new logs read.
    With ``execute=True`` the oracle runs that command itself (one harness process per batch,
    asking only for the missing docs), reads the new logs and yields their cells.

    ``evaluate`` (the plain :class:`~latentbench.select.Oracle` that
    :func:`~latentbench.select.run_selection` calls) gathers one batch of ``evaluate_cells``
    into an array: with ``execute`` the harness runs as above; without it the missing cells
    raise :class:`PlanPending` out of ``run_selection``. Run the plan, then call
    ``run_selection`` again with the same ``random_state``: the logged cells are read back, the
    run repeats its choices up to the next missing batch. (``select live`` stores each cell and
    resumes instead.)

    Parameters
    ----------
    models : sequence of str
        Model ids of the pool (store ids).
    lm_eval_models : sequence of str
        The model id the harness reports for each (``model_name`` in ``results_*.json``).
    item_ids : sequence of str
        Document indices of the task's evaluated split (``doc_id``), one per column; with
        ``group``, ``TASK/DOC_ID`` (items of several tasks, as ``read_results(...,
        group=...)`` and ``latentbench ingest lm-eval --group`` name them).
    task : str or None
        The lm-eval task; None with ``group``.
    samples_dir, plan_dir : path-like
    model_args : sequence of str, optional
        ``--model_args`` per model for the command line (default ``pretrained=<id>``).
    backend : str, default "hf"
        ``--model`` of the command line.
    metric, filter : str, optional
        Passed to ``read_results`` (needed when the task logs several).
    command : sequence of str, default ("lm_eval",)
        The harness's argv prefix, e.g. ``("lm-eval", "run")`` or
        ``(sys.executable, "-m", "lm_eval", "run")``.
    include_path : path-like, optional
        ``--include_path`` (a folder of task YAMLs, for a task lm-eval does not ship).
    extra_args : sequence of str, optional
        Appended to every command line (e.g. ``("--apply_chat_template",)``).
    execute : bool, default False
        Run the plan and continue, instead of raising :class:`PlanPending`.
    timeout : float, default :data:`HARNESS_TIMEOUT`
        Seconds one harness run (one batch) may take with ``execute``; then the harness and
        its children are killed and :class:`HarnessFailed` is raised.
    redact : sequence of str, optional
        Names of environment variables whose values (keys) are hidden in the harness output
        quoted by errors (whatever their length); the values of 8 characters or more of
        variables named like ``*KEY*``, ``*TOKEN*``, ``*SECRET*`` and ``*PASSWORD*`` are
        hidden as well (a shorter one, ``MAX_TOKENS=512``, is a setting).
    group : str, optional
        Several tasks as one benchmark of this name (e.g. MMLU's 57 ``mmlu_*`` tasks): the
        item ids are ``TASK/DOC_ID`` and one harness run per batch asks each task for its
        docs (``--tasks T1,T2 --samples '{"T1": [...], "T2": [...]}'``). Exclusive with
        ``task``.

    Raises
    ------
    PlanPending
        From ``evaluate_cells`` (and ``evaluate``), when cells are missing and ``execute`` is
        False.
    HarnessFailed
        From ``evaluate_cells`` (and ``evaluate``) with ``execute``: the harness exited
        non-zero, or its logs lack docs it was asked for.
    """

    def __init__(
        self,
        models: Sequence[str],
        lm_eval_models: Sequence[str],
        item_ids: Sequence[str],
        task: str | None,
        samples_dir: str | os.PathLike[str],
        plan_dir: str | os.PathLike[str],
        *,
        model_args: Sequence[str] | None = None,
        backend: str = "hf",
        metric: str | None = None,
        filter: str | None = None,
        command: Sequence[str] = ("lm_eval",),
        include_path: str | os.PathLike[str] | None = None,
        extra_args: Sequence[str] = (),
        execute: bool = False,
        timeout: float = HARNESS_TIMEOUT,
        redact: Sequence[str] = (),
        group: str | None = None,
    ) -> None:
        if len(models) != len(lm_eval_models):
            raise InputError(
                f"lm_eval_models has {len(lm_eval_models)} entries; expected {len(models)}"
            )
        if (task is None) == (group is None):
            raise InputError(
                "give task= (one lm-eval task, item ids doc ids) or group= (several tasks as "
                "one benchmark, item ids TASK/DOC_ID), not "
                + ("both" if task is not None else "neither")
            )
        self.models, self.lm_eval_models = list(models), list(lm_eval_models)
        self.item_ids = [str(i) for i in item_ids]
        self.task, self.group = task, group
        for item in self.item_ids:  # every id a doc id (TASK/DOC_ID in a group), said now
            _task_doc(item, task, group)
        self.samples_dir, self.plan_dir = Path(samples_dir), Path(plan_dir)
        self.model_args = (
            list(model_args) if model_args else [f"pretrained={m}" for m in self.lm_eval_models]
        )
        self.backend, self.metric, self.filter = backend, metric, filter
        if not command:
            raise InputError("command is empty; expected the harness's argv, e.g. ['lm_eval']")
        self.command, self.extra_args = list(command), list(extra_args)
        self.include_path = None if include_path is None else str(include_path)
        self.execute = execute
        if not (isinstance(timeout, (int, float)) and 0 < timeout < float("inf")):
            raise InputError(f"timeout={timeout!r}; expected a positive number of seconds")
        self.timeout = float(timeout)
        self.redact = list(redact)
        self.n_models, self.n_items = len(self.models), len(self.item_ids)
        self.n_calls = 0
        self.n_runs = 0  #: harness processes started (``execute``)
        #: each samples file read: its key (see ``_file_key``) and its cells
        self._read: dict[Path, tuple[object, list[tuple[str, str, float, float]]]] = {}

    def __repr__(self) -> str:
        """``LmEvalBridgeOracle(task='mmlu', models=[a, b], n_items=100, execute=False)``."""
        what = f"task={self.task!r}" if self.task is not None else f"group={self.group!r}"
        return (
            f"LmEvalBridgeOracle({what}, models={short_ids(self.models)}, "
            f"n_items={self.n_items:,}, execute={self.execute})"
        )

    def _logged(self) -> dict[tuple[str, str], float]:
        """The logged cells ``(model, item) -> score`` under :attr:`samples_dir`, the latest
        run's where a cell was logged twice. A file read before is not read again while it
        and its folder's ``results_*`` files are unchanged: every batch adds files, and
        reading them all again each batch grew with the run (quadratic in its batches)."""
        import warnings

        from latentbench.exceptions import DataWarning
        from latentbench.io.formats import read_results
        from latentbench.io.formats._lm_eval import PATTERNS

        if not self.samples_dir.is_dir():
            return {}
        found = {q.resolve() for pattern in PATTERNS for q in self.samples_dir.glob(pattern)}
        files = sorted(q for q in found if q.is_file() and not q.name.startswith("results"))
        keys = {q: _file_key(q) for q in files}
        fresh = [q for q in files if self._read.get(q, (None,))[0] != keys[q]]
        for gone in set(self._read) - set(keys):
            del self._read[gone]
        if fresh:
            with warnings.catch_warnings():  # partial logs are the point of --samples
                warnings.simplefilter("ignore", DataWarning)
                try:
                    frame, _ = read_results(
                        "lm-eval",
                        fresh,
                        metric=self.metric,
                        filter=self.filter,
                        duplicates="latest",
                        group=self.group,
                    )
                except InputError as exc:  # a score outside [0, 1] (bleu, a percentage)
                    said, out, _ = str(exc).partition(" is outside [0, 1]")
                    if not out:
                        raise
                    # one damaged or edited line of a 0-1 metric's log stops the read too:
                    # say how to fix that file, not only to choose another metric
                    place = re.match(r"(?s)(.*):(\d+): field ", said)
                    fix = (
                        f"; where the metric is a 0-1 one and the line was damaged or edited, "
                        f"correct line {place.group(2)} of {place.group(1)} or move the file out "
                        f"of {self.samples_dir} (its docs are then asked of the harness again)"
                        if place
                        else ""
                    )
                    raise InputError(
                        f"{said} is outside [0, 1]; expected a score in [0, 1]: choose a 0-1 "
                        "metric (acc, exact_match, ...) with [oracle] metric = 'NAME' in the "
                        f"run's config (metric= of LmEvalBridgeOracle){fix}"
                    ) from None
            frame = frame[frame["benchmark"] == (self.group or self.task)]
            rows: dict[Path, list[tuple[str, str, float, float]]] = {q: [] for q in fresh}
            for m, i, s, t, f in zip(
                frame["model"], frame["item"], frame["score"], frame["run_timestamp"],
                frame["source_file"], strict=True,
            ):  # fmt: skip
                when = t.timestamp() if t is not None and t == t else float("-inf")
                rows.setdefault(Path(f).resolve(), []).append((str(m), str(i), when, float(s)))
            for q in fresh:
                self._read[q] = (keys[q], rows.get(q, []))
        latest: dict[tuple[str, str], tuple[float, float]] = {}
        for q in files:  # the latest run's score of a cell logged by several
            for m, i, when, score in self._read[q][1]:
                if (m, i) not in latest or when >= latest[(m, i)][0]:
                    latest[(m, i)] = (when, score)
        return {cell: score for cell, (_, score) in latest.items()}

    def plan(self, model_index: int, doc_ids: Sequence[str]) -> tuple[Path, str]:
        """Write the plan for one model's missing items (doc ids; ``TASK/DOC_ID`` with a
        group); returns its path and command line.

        Parameters
        ----------
        model_index : int
            The model's row, in ``range(n_models)``.
        doc_ids : sequence of str
            The items to evaluate (doc ids, or ``TASK/DOC_ID`` with a group).

        Returns
        -------
        path : Path
            ``next_plan.json`` in ``plan_dir``.
        command : str
            The lm-eval command line that evaluates them.
        """
        per_task: dict[str, set[int]] = {}
        for item in doc_ids:
            task, doc = _task_doc(str(item), self.task, self.group)
            per_task.setdefault(task, set()).add(int(doc))
        # sorted: lm-eval (0.4.9-0.4.13) evaluates --samples docs in dataset order but labels
        # them doc_id = the list's k-th entry, so an unsorted list mislabels the logged docs
        chosen = {task: sorted(per_task[task]) for task in sorted(per_task)}
        samples = json.dumps(chosen, separators=(",", ":"))
        argv = [
            *self.command,
            "--model",
            self.backend,
            "--model_args",
            self.model_args[model_index],
            "--tasks",
            ",".join(chosen),
            *(["--include_path", self.include_path] if self.include_path else []),
            "--samples",
            samples,
            "--output_path",
            str(self.samples_dir),
            "--log_samples",
            *self.extra_args,
        ]
        command = shlex.join(argv)
        self.plan_dir.mkdir(parents=True, exist_ok=True)
        path = self.plan_dir / "next_plan.json"
        docs: list[int] | list[str] = (
            chosen[str(self.task)]
            if self.group is None
            else [f"{task}/{doc}" for task, ids in chosen.items() for doc in ids]
        )
        plan = {
            "model": self.models[model_index],
            "lm_eval_model": self.lm_eval_models[model_index],
            **({"task": self.task} if self.group is None else {"group": self.group}),
            "doc_ids": docs,
            "samples": chosen,
            "argv": argv,
            "command": command,
        }
        path.write_text(json.dumps(plan, indent=1))
        return path, command

    def evaluate_cells(self, model_index: int, item_indices: np.ndarray) -> Iterator[CellResult]:
        """Yield the logged cells; for the rest run the plan (``execute``) or raise
        :class:`PlanPending`.

        Parameters
        ----------
        model_index : int
            The model's row, in ``range(n_models)``.
        item_indices : ndarray of int of shape (batch,)
            The items' columns, in ``range(n_items)``.

        Yields
        ------
        CellResult
            The logged cells first, then those the harness logged when it ran the plan.

        Raises
        ------
        PlanPending
            When cells are not logged and ``execute`` is False (the plan is written).
        HarnessFailed
            When the harness exited 0 but its logs are unreadable or lack a cell of the plan.
        """
        if self.execute:  # a harness an earlier session started may still be writing logs
            self._await_earlier()
        logged = self._logged()
        name = self.lm_eval_models[model_index]
        missing: list[tuple[int, str]] = []
        for pos, k in enumerate(np.asarray(item_indices).ravel()):
            doc = self.item_ids[int(k)]
            value = logged.get((name, doc))
            if value is None:
                missing.append((pos, doc))
                continue
            self.n_calls += 1
            yield CellResult(pos, value)
        if not missing:
            return
        path, command = self.plan(model_index, [doc for _, doc in missing])
        if not self.execute:
            raise PlanPending(path, command)
        self._run(path)
        try:
            logged = self._logged()
        except InputError as exc:
            raise HarnessFailed(
                f"{path}: the harness exited 0 but its logs under {self.samples_dir} are "
                f"unreadable: {exc}"
            ) from None
        absent = [doc for _, doc in missing if (name, doc) not in logged]
        if absent:
            raise HarnessFailed(
                f"{path}: the harness exited 0 but {self.samples_dir} has no "
                f"{self.group or self.task!r} sample for model {name!r} (model_name from its "
                f"model_args) and {'item' if self.group else 'doc_id'}(s) "
                f"{', '.join(absent[:5])}{' ...' if len(absent) > 5 else ''}; expected every "
                "doc of the plan"
            )
        for pos, doc in missing:
            self.n_calls += 1
            yield CellResult(pos, logged[(name, doc)])

    def _await_earlier(self) -> None:
        """Wait for a harness that an earlier session started and did not see finish (that
        session was killed: the harness runs in its own session and goes on), at most
        :attr:`timeout` seconds: its logs answer the cells it was asked for, which would
        otherwise be asked (and paid) again by a second harness run beside it."""
        import time

        running = self.plan_dir / RUNNING_FILE
        try:
            earlier = json.loads(running.read_text())
            pid, argv = int(earlier["pid"]), [str(a) for a in earlier["argv"]]
        except (OSError, ValueError, KeyError, TypeError):
            return
        deadline = time.monotonic() + self.timeout
        while _alive(pid, argv):
            if time.monotonic() > deadline:
                raise HarnessFailed(
                    f"{running}: the harness an earlier session started (pid {pid}: "
                    f"{shlex.join(argv[:4])} ...) is still running after {self.timeout:g} s "
                    "(harness_timeout); expected it to finish: stop it (or wait), then re-run"
                )
            time.sleep(0.2)
        running.unlink(missing_ok=True)

    def _secrets(self) -> list[str]:
        """Values of the environment variables that may hold keys (never shown)."""
        return environment_secrets(self.redact)

    def _tail(self, output: IO[bytes]) -> str:
        """The last :data:`TAIL_BYTES` of the harness's output: decoded with replacement,
        every key redacted, control characters other than newlines and tabs removed."""
        size = output.seek(0, os.SEEK_END)
        output.seek(max(0, size - 4 * TAIL_BYTES))
        text = output.read().decode("utf-8", "replace")
        for secret in self._secrets():
            text = _redact(text, secret.strip())
        text = _CONTROL.sub("", text).strip()
        cut = text[-TAIL_BYTES:]
        return cut if len(cut) == len(text) else "..." + cut

    def _run(self, plan_path: Path) -> None:
        """Run the plan's argv (its own process group, output to a temporary file, at most
        :attr:`timeout` seconds); a non-zero exit or the timeout raises
        :class:`HarnessFailed` with the redacted end of its output."""
        argv = json.loads(plan_path.read_text())["argv"]
        self.n_runs += 1
        head = f"{plan_path}: {shlex.join(argv[:4])} ..."
        with tempfile.TemporaryFile() as output:
            try:
                process = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its children are killed with it
                )
            except OSError as exc:
                raise HarnessFailed(f"{plan_path}: cannot start {argv[0]!r} ({exc})") from None
            running = self.plan_dir / RUNNING_FILE  # said to a session started after a crash
            running.write_text(json.dumps({"pid": process.pid, "argv": argv}))
            try:
                code = process.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                _kill_group(process)
                code = None
            except BaseException:  # Ctrl-C: no harness left behind
                _kill_group(process)
                raise
            finally:
                running.unlink(missing_ok=True)
            tail = self._tail(output)
        if code is None:
            raise HarnessFailed(
                f"{head} did not finish within {self.timeout:g} s (harness_timeout) and was "
                f"killed; the cells stored so far are kept:\n{tail}"
            )
        if code != 0:
            raise HarnessFailed(f"{head} exited {code}:\n{tail}")


def _task_doc(item: str, task: str | None, group: str | None) -> tuple[str, str]:
    """The (task, doc id) of an item id: a doc id of ``task``, or ``TASK/DOC_ID`` in a
    group; an id of another form is an :class:`InputError` naming it. A doc id is written
    as lm-eval logs it (``12``, not ``012`` or ``+12``): the logs read back under that
    name, so another spelling would be asked of the harness, paid, and never found."""
    if group is None:
        if not item.isdigit():
            raise InputError(
                f"item id {item!r}: the lm-eval bridge needs doc_id integers as item ids "
                "(items TASK/DOC_ID are a group's: [oracle] group = 'NAME' instead of task)"
            )
        _check_doc(item, item)
        return str(task), item
    name, _, doc = item.rpartition("/")
    if not name or not doc.isdigit():
        raise InputError(
            f"item id {item!r}: the lm-eval bridge with group {group!r} needs item ids "
            "TASK/DOC_ID (e.g. mmlu_anatomy/12), as `latentbench ingest lm-eval --group` "
            "names them"
        )
    _check_doc(item, doc)
    return name, doc


def _check_doc(item: str, doc: str) -> None:
    """Refuse a doc id of digits that lm-eval would log under another name (``012``, ``٣``)."""
    if not (doc.isascii() and str(int(doc)) == doc):
        canonical = str(int(doc)) if doc.isdecimal() else None
        raise InputError(
            f"item id {item!r}: doc id {doc!r} is not written as lm-eval logs it "
            + (f"({canonical!r}); " if canonical is not None else "; ")
            + "expected digits 0-9 without leading zeros, so that the harness's logs read "
            "back under the item's id"
        )


def _file_key(path: Path) -> tuple[object, ...]:
    """What makes a samples file's reading stale: its size and time, and those of the
    results files of its run (``results_<date>.json`` beside ``samples_<task>_<date>``; the
    model's name and the task's metadata come from them), or of its folder's results files
    when its name gives no date."""
    from latentbench.io.formats._lm_eval import _SAMPLES

    def stamp(q: Path) -> tuple[str, int, int]:
        st = q.stat()
        return (q.name, st.st_mtime_ns, st.st_size)

    match = _SAMPLES.match(path.name)
    date = match.group("date") if match else ""
    results = [q for q in path.parent.glob("*.json") if date in q.name and q != path]
    return (stamp(path), *sorted(stamp(q) for q in results if not q.name.startswith("samples_")))


def _alive(pid: int, argv: list[str]) -> bool:
    """Whether process ``pid`` runs and, where ``/proc`` tells, runs ``argv``'s arguments
    (not another program that took the number of a harness long gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: not our harness, but said to exist
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: trust the number
    if stat.rsplit(")", 1)[-1].split()[:1] == ["Z"]:
        return False  # exited, not yet reaped
    # its arguments (a script's interpreter may come first: `lm_eval` runs as python + path)
    words, args = raw.split(b"\0")[:-1], [a.encode() for a in argv[1:]]
    return len(words) > len(args) and words[len(words) - len(args) :] == args


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the harness and every process it started; wait for it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.wait()
