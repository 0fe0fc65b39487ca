"""Live selection: real oracles, a durable store, and resumable runs.

The selection loop (:func:`latentbench.select.run_selection`) asks an oracle for the scores
of one model on a batch of items. Here that oracle is an LLM endpoint, a Python function or
the lm-evaluation-harness, wrapped by :class:`DurableOracle`, which

* answers every (model, item) already stored for the run from the store (no new call);
* commits every new result to the store before it is handed to the loop;
* records each round's decision, and refuses to continue when a replayed round differs from
  the stored one (a changed configuration or data file).

The loop is deterministic for a seed (all randomness comes from the seed), so re-running the
same configuration against the same store replays the stored cells for free, continues where
the last process stopped, and reaches the decision an uninterrupted run reaches.

Failed cells (after bounded retries) are stored with ``score`` NULL and the error text. They
reach the loop as NaN only with ``on_error = "zero"`` (the loop then scores them 0, and the
count is reported); the default ``on_error = "stop"`` ends the run after the batch, and the
next run retries exactly the failed cells.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from http.client import HTTPException
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from latentbench.exceptions import InputError
from latentbench.select._oracles import MatrixOracle, Oracle
from latentbench.select._run import SelectionResult, run_selection
from latentbench.select._scorers import Scorer, load_callable, resolve_scorer

__all__ = [
    "CallableOracle",
    "CellResult",
    "CellsFailed",
    "ChatCompletionsOracle",
    "ChatEndpoint",
    "DurableOracle",
    "LiveConfig",
    "LiveProgress",
    "LiveResult",
    "LmEvalBridgeOracle",
    "PlanPending",
    "RunInterrupted",
    "SpendCapReached",
    "StreamingOracle",
    "load_items",
    "run_live",
]

_MAX_BODY = 4 << 20
"""Largest endpoint answer read (bytes)."""


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


# ====================================================================== results and stops
@dataclass
class CellResult:
    """Outcome of one (model, item) evaluation.

    Attributes
    ----------
    position : int
        Index of the item in the batch handed to ``evaluate_cells``.
    score : float
        Score in [0, 1]; NaN when the evaluation failed.
    error : str or None
        Why it failed (after retries), without secrets.
    attempts : int
        Requests made for this cell.
    requested_at, observed_at : datetime
        UTC time of the first request and of the final answer.
    """

    position: int
    score: float
    error: str | None = None
    attempts: int = 1
    requested_at: datetime = field(default_factory=_now)
    observed_at: datetime = field(default_factory=_now)


@runtime_checkable
class StreamingOracle(Protocol):
    """An oracle that yields each cell as soon as it is known (so each can be committed).

    :class:`DurableOracle` uses ``evaluate_cells`` when present and ``evaluate`` otherwise.
    """

    n_models: int
    n_items: int

    def evaluate_cells(self, model_index: int, item_indices: np.ndarray) -> Iterator[CellResult]:
        """Yield one :class:`CellResult` per item, in completion order."""
        ...


class LiveStop(Exception):
    """Base of the exceptions that end a live run early (the store stays consistent)."""

    status = "stopped"


class RunInterrupted(LiveStop):
    """A stop was requested (Ctrl-C); raised before the next batch, after a commit."""

    status = "interrupted"


class SpendCapReached(LiveStop):
    """The next batch would exceed ``spend_cap`` evaluations."""

    status = "capped"


class CellsFailed(LiveStop):
    """Some cells failed after their retries (``on_error = "stop"``); they are stored.

    Attributes
    ----------
    failures : list of (model, item, error)
    """

    status = "failed"

    def __init__(self, failures: list[tuple[str, str, str]]) -> None:
        self.failures = failures
        first = "; ".join(f"{m}/{i}: {e}" for m, i, e in failures[:3])
        more = f" (and {len(failures) - 3} more)" if len(failures) > 3 else ""
        super().__init__(f"{len(failures)} cell(s) failed after retries: {first}{more}")


class PlanPending(LiveStop):
    """The lm-eval bridge wrote a plan; run it, then re-run the selection.

    Attributes
    ----------
    plan_path : Path
    command : str
    """

    status = "waiting"

    def __init__(self, plan_path: Path, command: str) -> None:
        self.plan_path, self.command = plan_path, command
        super().__init__(f"wrote {plan_path}; run: {command}")


# ====================================================================== items
def load_items(
    path: str | os.PathLike[str],
    *,
    id_field: str = "id",
    prompt_field: str = "prompt",
    answer_field: str = "answer",
    require_prompt: bool = True,
) -> list[dict[str, str]]:
    """Read a JSONL dataset of items: one JSON object per line with id, prompt and answer.

    Item text is data: it is only ever sent to an endpoint and compared by a scorer.

    Parameters
    ----------
    path : path-like
    id_field, prompt_field, answer_field : str
        Field names in each object.
    require_prompt : bool
        ``False`` for the lm-eval bridge (only ids are needed).

    Returns
    -------
    list of dict
        ``{"id": str, "prompt": str, "answer": str}`` in file order.

    Raises
    ------
    InputError
        Unreadable file, a line that is not a JSON object, a missing or empty field, a
        repeated id, or no items; the message names the file, line and field.
    """
    file = Path(path)
    if not file.is_file():
        raise InputError(f"{file}: items file not found; expected JSONL with {id_field!r}")
    items: list[dict[str, str]] = []
    seen: dict[str, int] = {}
    with file.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{file}:{lineno}: not valid JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise InputError(f"{file}:{lineno}: a {type(record).__name__}; expected an object")
            raw_id = record.get(id_field)
            if raw_id is None or isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
                raise InputError(
                    f"{file}:{lineno}: field {id_field!r} is {raw_id!r}; expected a string or "
                    "integer id"
                )
            item_id = str(raw_id)
            if item_id in seen:
                raise InputError(
                    f"{file}:{lineno}: id {item_id!r} repeats line {seen[item_id]}; expected "
                    "unique ids"
                )
            seen[item_id] = lineno
            entry = {"id": item_id}
            for name, key in (("prompt", prompt_field), ("answer", answer_field)):
                value = record.get(key)
                if value is None and (name == "answer" or not require_prompt):
                    entry[name] = ""
                    continue
                if not isinstance(value, str | int | float) or isinstance(value, bool):
                    raise InputError(
                        f"{file}:{lineno}: field {key!r} is {value!r}; expected a string"
                    )
                if name == "prompt" and not str(value).strip():
                    raise InputError(f"{file}:{lineno}: field {key!r} is empty; expected text")
                entry[name] = str(value)
            items.append(entry)
    if not items:
        raise InputError(f"{file}: no items; expected one JSON object per line")
    return items


# ====================================================================== oracle (b): callable
class CallableOracle:
    """Oracle (b): a Python function ``score(model, items) -> scores``.

    Parameters
    ----------
    score : callable
        ``score(model_id: str, item_ids: list[str]) -> sequence of float`` (NaN = failure).
    model_ids, item_ids : sequence of str

    Notes
    -----
    An exception, a result of the wrong length or a score outside [0, 1] is recorded as an
    error for the cells concerned (never as a score).
    """

    def __init__(
        self,
        score: Callable[[str, list[str]], Sequence[float]],
        model_ids: Sequence[str],
        item_ids: Sequence[str],
    ) -> None:
        if not callable(score):
            raise InputError(f"score={score!r}; expected a callable score(model, items)")
        self.score = score
        self.model_ids = [str(m) for m in model_ids]
        self.item_ids = [str(i) for i in item_ids]
        self.n_models, self.n_items = len(self.model_ids), len(self.item_ids)
        self.n_calls = 0

    def evaluate_cells(self, model_index: int, item_indices: np.ndarray) -> Iterator[CellResult]:
        """Call the function once for the batch; yield one result per item."""
        items = [self.item_ids[int(k)] for k in item_indices]
        started = _now()
        self.n_calls += len(items)
        error: str | None = None
        values = np.full(len(items), np.nan)
        try:
            raw = np.asarray(self.score(self.model_ids[model_index], items), dtype=np.float64)
            if raw.shape != (len(items),):
                error = f"score() returned shape {raw.shape}; expected ({len(items)},)"
            else:
                values = raw
        except Exception as exc:  # user code: any failure is a per-cell error
            error = f"score() raised {type(exc).__name__}: {exc}"
        done = _now()
        for k, value in enumerate(values):
            cell_error = error
            if cell_error is None and not np.isnan(value) and not 0 <= value <= 1:
                cell_error, value = f"score {float(value)!r} outside [0, 1]", np.nan
            elif cell_error is None and np.isnan(value):
                cell_error = "score() returned NaN"
            yield CellResult(k, float(value), cell_error, 1, started, done)

    def evaluate(self, model_index: int, item_indices: np.ndarray) -> np.ndarray:
        """Scores of a batch (NaN for failures); see :class:`~latentbench.select.Oracle`."""
        out = np.full(len(item_indices), np.nan)
        for cell in self.evaluate_cells(model_index, item_indices):
            out[cell.position] = cell.score
        return out


# ====================================================================== oracle (c): HTTP
@dataclass(frozen=True)
class ChatEndpoint:
    """One candidate model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Attributes
    ----------
    name : str
        Model id in the store and the reports.
    base_url : str
        E.g. ``https://api.openai.com/v1``; ``/chat/completions`` is appended.
    model : str
        The ``model`` field of the request.
    api_key_env : str or None
        Name of the environment variable holding the API key (the key itself is never
        stored, logged or written anywhere).
    """

    name: str
    base_url: str
    model: str
    api_key_env: str | None = None

    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


class _Retry(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class _Fatal(Exception):
    pass


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max((when - datetime.now(timezone.utc)).total_seconds(), 0.0)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: urllib would resend the Authorization header to the new host."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[override]
        return None


def _is_loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    return host in ("127.0.0.1", "localhost", "::1")


class ChatCompletionsOracle:
    """Oracle (c): one OpenAI-compatible chat-completions endpoint per model.

    Parameters
    ----------
    endpoints : sequence of ChatEndpoint
        One per candidate model (row of the pool).
    items : sequence of dict
        ``{"id", "prompt", "answer"}`` (see :func:`load_items`); one column per item.
    scorer : str or callable
        ``exact_match``, ``multiple_choice``, ``"module:function"`` or a callable
        ``scorer(response, reference) -> float``.
    concurrency : int, default 8
        Requests in flight at once.
    timeout : float, default 60
        Seconds per request (connect and each read).
    retries : int, default 3
        Extra attempts per cell after a timeout, connection error, HTTP 429 or 5xx, or a
        malformed answer. Other 4xx answers are not retried, and redirects are refused (the
        key would follow them).
    backoff : float, default 1.0
        Base delay in seconds; attempt ``k`` waits ``uniform(0.5, 1) * backoff * 2**k``
        (at most ``max_backoff``), or the server's ``Retry-After`` when given (also capped).
    max_backoff : float, default 30
    max_tokens : int or None, default None
    temperature : float, default 0.0
    system : str or None
        Optional system message before each prompt.
    random_state : int or None
        Seeds the jitter (it never affects which cells are chosen).

    Attributes
    ----------
    n_calls : int
        Cells evaluated. ``n_requests`` : int, HTTP requests sent (retries included).
    """

    def __init__(
        self,
        endpoints: Sequence[ChatEndpoint],
        items: Sequence[dict[str, str]],
        scorer: str | Scorer = "exact_match",
        *,
        concurrency: int = 8,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        system: str | None = None,
        random_state: int | None = None,
    ) -> None:
        if not endpoints:
            raise InputError("endpoints is empty; expected one ChatEndpoint per model")
        if concurrency < 1:
            raise InputError(f"concurrency={concurrency!r}; expected an integer >= 1")
        if timeout <= 0:
            raise InputError(f"timeout={timeout!r}; expected a positive number of seconds")
        if retries < 0:
            raise InputError(f"retries={retries!r}; expected an integer >= 0")
        if backoff < 0 or max_backoff < 0:
            raise InputError(f"backoff={backoff!r}, max_backoff={max_backoff!r}; expected >= 0")
        for endpoint in endpoints:
            scheme = urllib.parse.urlsplit(endpoint.base_url).scheme
            if scheme not in ("http", "https"):
                raise InputError(
                    f"model {endpoint.name!r}: base_url={endpoint.base_url!r}; expected an "
                    "http:// or https:// URL"
                )
            if endpoint.api_key_env and endpoint.api_key_env not in os.environ:
                raise InputError(
                    f"model {endpoint.name!r}: environment variable {endpoint.api_key_env!r} "
                    "(api_key_env) is not set; expected the API key there"
                )
        self.endpoints = list(endpoints)
        self.items = list(items)
        self.scorer = resolve_scorer(scorer)
        self.concurrency, self.timeout, self.retries = int(concurrency), float(timeout), retries
        self.backoff, self.max_backoff = float(backoff), float(max_backoff)
        self.max_tokens, self.temperature, self.system = max_tokens, temperature, system
        self.n_models, self.n_items = len(self.endpoints), len(self.items)
        self.n_calls = 0
        self.n_requests = 0
        self._lock = threading.Lock()
        self._jitter = random.Random(random_state)
        self._direct = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)
        self._default = urllib.request.build_opener(_NoRedirect)
        self._pool: ThreadPoolExecutor | None = None

    # -------------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Shut the worker threads down (idempotent)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> ChatCompletionsOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        names = ", ".join(e.name for e in self.endpoints)
        return f"ChatCompletionsOracle(models=[{names}], n_items={self.n_items})"

    # -------------------------------------------------------------- one request
    def _key(self, endpoint: ChatEndpoint) -> str | None:
        return os.environ.get(endpoint.api_key_env) if endpoint.api_key_env else None

    def _post(self, endpoint: ChatEndpoint, prompt: str, key: str | None) -> str:
        messages = [{"role": "user", "content": prompt}]
        if self.system:
            messages.insert(0, {"role": "system", "content": self.system})
        body: dict[str, Any] = {
            "model": endpoint.model,
            "messages": messages,
            "temperature": self.temperature,
        }
        if self.max_tokens is not None:
            body["max_tokens"] = int(self.max_tokens)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(
            endpoint.url(), data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        opener = self._direct if _is_loopback(endpoint.base_url) else self._default
        with self._lock:
            self.n_requests += 1
        try:
            with opener.open(request, timeout=self.timeout) as response:
                raw = response.read(_MAX_BODY + 1)
        except urllib.error.HTTPError as exc:
            try:
                detail = exc.read(300).decode("utf-8", "replace").strip()
            except Exception:
                detail = ""
            reason = f"HTTP {exc.code}" + (f": {detail}" if detail else "")
            if exc.code == 429 or exc.code >= 500:
                raise _Retry(reason, _retry_after(exc.headers.get("Retry-After"))) from None
            if 300 <= exc.code < 400:
                reason = f"HTTP {exc.code}: redirects are not followed (check base_url)"
            raise _Fatal(reason) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise _Retry(f"timeout after {self.timeout:g}s") from None
            raise _Retry(f"connection error: {exc.reason}") from None
        except TimeoutError:
            raise _Retry(f"timeout after {self.timeout:g}s") from None
        except (HTTPException, ConnectionError, OSError) as exc:
            raise _Retry(f"connection error: {type(exc).__name__}: {exc}") from None
        if len(raw) > _MAX_BODY:
            raise _Retry(f"malformed answer: body larger than {_MAX_BODY} bytes")
        try:
            payload = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise _Retry(f"malformed answer: not JSON ({raw[:60]!r})") from None
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise _Retry("malformed answer: no choices[0].message.content") from None
        if not isinstance(content, str):
            raise _Retry(f"malformed answer: content is {type(content).__name__}, not text")
        return content

    def _cell(self, position: int, model_index: int, item_index: int) -> CellResult:
        endpoint = self.endpoints[model_index]
        item = self.items[item_index]
        key = self._key(endpoint)
        started = _now()
        reason = ""
        attempt = 0
        for attempt in range(self.retries + 1):
            try:
                content = self._post(endpoint, item["prompt"], key)
            except _Fatal as exc:
                reason = str(exc)
                break
            except _Retry as exc:
                reason = str(exc)
                if attempt == self.retries:
                    break
                with self._lock:
                    jitter = 0.5 + 0.5 * self._jitter.random()
                delay = min(self.max_backoff, self.backoff * 2**attempt) * jitter
                if exc.retry_after is not None:
                    delay = min(self.max_backoff, exc.retry_after)
                time.sleep(delay)
                continue
            try:
                value = float(self.scorer(content, item["answer"]))
            except Exception as exc:  # user scorer: a failure is a per-cell error
                return CellResult(
                    position,
                    math.nan,
                    _redact(f"scorer raised {type(exc).__name__}: {exc}", key),
                    attempt + 1,
                    started,
                    _now(),
                )
            if not 0 <= value <= 1:  # also catches NaN
                return CellResult(
                    position,
                    math.nan,
                    f"scorer returned {value!r}; expected a score in [0, 1]",
                    attempt + 1,
                    started,
                    _now(),
                )
            return CellResult(position, value, None, attempt + 1, started, _now())
        error = _redact(f"{reason} (after {attempt + 1} attempt(s))", key)
        return CellResult(position, math.nan, error, attempt + 1, started, _now())

    # -------------------------------------------------------------- batches
    def evaluate_cells(self, model_index: int, item_indices: np.ndarray) -> Iterator[CellResult]:
        """Request the batch concurrently; yield each cell as it completes."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="latentbench")
        items = [int(k) for k in np.asarray(item_indices).ravel()]
        self.n_calls += len(items)
        pending: set[Future[CellResult]] = {
            self._pool.submit(self._cell, pos, model_index, k) for pos, k in enumerate(items)
        }
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
        finally:
            for future in pending:
                future.cancel()

    def evaluate(self, model_index: int, item_indices: np.ndarray) -> np.ndarray:
        """Scores of a batch (NaN for failures); see :class:`~latentbench.select.Oracle`."""
        out = np.full(len(item_indices), np.nan)
        for cell in self.evaluate_cells(model_index, item_indices):
            out[cell.position] = cell.score
        return out


def _redact(text: str, key: str | None) -> str:
    if key:
        text = text.replace(key, "***")
    return text


# ====================================================================== oracle (d): lm-eval
class LmEvalBridgeOracle:
    """Oracle (d): the lm-evaluation-harness, one plan at a time.

    ``evaluate_cells`` reads the sample logs under ``samples_dir`` (``formats.md`` §1, via
    :func:`latentbench.io.formats.read_results`) and yields the requested cells found there.
    When some are missing it writes ``plan_dir/next_plan.json`` (model, task, doc ids and an
    ``lm_eval ... --samples`` command line) and raises :class:`PlanPending`. Run the command,
    then re-run the selection: the cells already stored are replayed and the new logs read.

    Parameters
    ----------
    models : sequence of str
        Model ids of the pool (store ids).
    lm_eval_models : sequence of str
        The model id the harness reports for each (``model_name`` in ``results_*.json``).
    item_ids : sequence of str
        Document indices of the task's evaluated split (``doc_id``), one per column.
    task : str
    samples_dir, plan_dir : path-like
    model_args : sequence of str, optional
        ``--model_args`` per model for the command line (default ``pretrained=<id>``).
    backend : str, default "hf"
        ``--model`` of the command line.
    metric, filter : str, optional
        Passed to ``read_results`` (needed when the task logs several).
    """

    def __init__(
        self,
        models: Sequence[str],
        lm_eval_models: Sequence[str],
        item_ids: Sequence[str],
        task: str,
        samples_dir: str | os.PathLike[str],
        plan_dir: str | os.PathLike[str],
        *,
        model_args: Sequence[str] | None = None,
        backend: str = "hf",
        metric: str | None = None,
        filter: str | None = None,
    ) -> None:
        if len(models) != len(lm_eval_models):
            raise InputError(
                f"lm_eval_models has {len(lm_eval_models)} entries; expected {len(models)}"
            )
        bad = [i for i in item_ids if not str(i).isdigit()]
        if bad:
            raise InputError(
                f"item id {bad[0]!r}: the lm-eval bridge needs doc_id integers as item ids"
            )
        self.models, self.lm_eval_models = list(models), list(lm_eval_models)
        self.item_ids = [str(i) for i in item_ids]
        self.task = task
        self.samples_dir, self.plan_dir = Path(samples_dir), Path(plan_dir)
        self.model_args = (
            list(model_args) if model_args else [f"pretrained={m}" for m in self.lm_eval_models]
        )
        self.backend, self.metric, self.filter = backend, metric, filter
        self.n_models, self.n_items = len(self.models), len(self.item_ids)
        self.n_calls = 0

    def _logged(self) -> dict[tuple[str, str], float]:
        from latentbench.io.formats import read_results

        if not self.samples_dir.is_dir() or not any(self.samples_dir.rglob("*.json*")):
            return {}
        import warnings

        from latentbench.exceptions import DataWarning

        with warnings.catch_warnings():  # partial logs are the point of --samples
            warnings.simplefilter("ignore", DataWarning)
            frame, _ = read_results(
                "lm-eval",
                self.samples_dir,
                metric=self.metric,
                filter=self.filter,
                duplicates="latest",
            )
        frame = frame[frame["benchmark"] == self.task]
        return {
            (str(m), str(i)): float(s)
            for m, i, s in zip(frame["model"], frame["item"], frame["score"], strict=True)
        }

    def plan(self, model_index: int, doc_ids: Sequence[str]) -> tuple[Path, str]:
        """Write the plan for one model's missing docs; returns its path and command line."""
        import shlex

        docs = [int(d) for d in doc_ids]
        samples = json.dumps({self.task: docs}, separators=(",", ":"))
        argv = [
            "lm_eval",
            "--model",
            self.backend,
            "--model_args",
            self.model_args[model_index],
            "--tasks",
            self.task,
            "--samples",
            samples,
            "--output_path",
            str(self.samples_dir),
            "--log_samples",
        ]
        command = shlex.join(argv)
        self.plan_dir.mkdir(parents=True, exist_ok=True)
        path = self.plan_dir / "next_plan.json"
        plan = {
            "model": self.models[model_index],
            "lm_eval_model": self.lm_eval_models[model_index],
            "task": self.task,
            "doc_ids": docs,
            "samples": {self.task: docs},
            "argv": argv,
            "command": command,
        }
        path.write_text(json.dumps(plan, indent=1))
        return path, command

    def evaluate_cells(self, model_index: int, item_indices: np.ndarray) -> Iterator[CellResult]:
        """Yield the logged cells; write a plan and raise :class:`PlanPending` for the rest."""
        logged = self._logged()
        name = self.lm_eval_models[model_index]
        missing: list[str] = []
        for pos, k in enumerate(np.asarray(item_indices).ravel()):
            doc = self.item_ids[int(k)]
            value = logged.get((name, doc))
            if value is None:
                missing.append(doc)
                continue
            self.n_calls += 1
            yield CellResult(pos, value)
        if missing:
            raise PlanPending(*self.plan(model_index, missing))


# ====================================================================== durability
@dataclass
class LiveProgress:
    """What the loop did in one batch, for progress displays.

    Attributes
    ----------
    call : int
        Batch number (0-based; the first ``n_models`` are the initial batch).
    phase : {"init", "loop"}
    model : str
    n_new, n_replayed, n_errors : int
        Cells of this batch evaluated now, answered from the store, failed.
    paid_total : int
        Evaluations made for the run so far, earlier sessions included.
    replayed_total : int
        Cells answered from the store in this session.
    revealed : int
        Cells the loop has seen (initial batch included).
    planned : int
        ``n_models * init_batch + budget``.
    leader : str or None
        Current recommendation (after the previous round), with ``estimate``, ``lower``,
        ``upper`` (None before the loop starts or without intervals).
    """

    call: int
    phase: str
    model: str
    n_new: int
    n_replayed: int
    n_errors: int
    paid_total: int
    replayed_total: int
    revealed: int
    planned: int
    leader: str | None = None
    estimate: float | None = None
    lower: float | None = None
    upper: float | None = None

    @property
    def budget_left(self) -> int:
        """Cells the run may still reveal."""
        return max(self.planned - self.revealed, 0)


def _leader(policy: Any, model_ids: Sequence[str]) -> dict[str, Any]:
    est = getattr(policy, "est", None)
    if est is None:
        return {}
    best = int(np.argmax(est))
    out: dict[str, Any] = {"leader": model_ids[best], "estimate": float(est[best])}
    try:
        bounds = policy.interval()
    except Exception:
        bounds = None
    if bounds is not None:
        out["lower"], out["upper"] = float(bounds[0][best]), float(bounds[1][best])
    return out


class DurableOracle:
    """Wrap an oracle so that every cell is stored before use and never requested twice.

    Parameters
    ----------
    store : latentbench.io.store.Store
    run_id : str
        A ``selection_runs`` row (created by the caller).
    inner : Oracle or StreamingOracle
    model_ids, item_ids : sequence of str
        Store ids of the rows and columns.
    policy : Policy, optional
        Read (never changed) for the leader shown in progress and decisions.
    on_error : {"stop", "zero"}, default "stop"
        ``stop``: after a batch with failed cells, raise :class:`CellsFailed` (the failures
        are stored; a resumed run requests those cells again). ``zero``: hand them to the
        loop as NaN (the loop scores them 0) and replay them as such on resume.
    spend_cap : int, optional
        Largest number of evaluations for the run, earlier sessions included; a batch that
        would pass it raises :class:`SpendCapReached` before any request.
    planned : int
        Cells the run plans to reveal (progress only).
    stop_event : threading.Event, optional
        When set, the next batch raises :class:`RunInterrupted` (the current one finishes
        and is committed).
    progress : callable, optional
        Called with a :class:`LiveProgress` after each batch.

    Attributes
    ----------
    n_paid : int
        Cells evaluated by ``inner`` in this session.
    n_replayed : int
        Cells answered from the store in this session.
    n_calls : int
        Batches seen.
    """

    def __init__(
        self,
        store: Any,
        run_id: str,
        inner: Oracle | StreamingOracle,
        model_ids: Sequence[str],
        item_ids: Sequence[str],
        *,
        policy: Any = None,
        on_error: str = "stop",
        spend_cap: int | None = None,
        planned: int = 0,
        stop_event: threading.Event | None = None,
        progress: Callable[[LiveProgress], None] | None = None,
    ) -> None:
        if on_error not in ("stop", "zero"):
            raise InputError(f"on_error={on_error!r}; expected 'stop' or 'zero'")
        if len(model_ids) != inner.n_models or len(item_ids) != inner.n_items:
            raise InputError(
                f"{len(model_ids)} model ids and {len(item_ids)} item ids for an oracle of shape "
                f"({inner.n_models}, {inner.n_items})"
            )
        self.store, self.run_id, self.inner = store, run_id, inner
        self.model_ids = [str(m) for m in model_ids]
        self.item_ids = [str(i) for i in item_ids]
        self.n_models, self.n_items = inner.n_models, inner.n_items
        self.policy, self.on_error, self.spend_cap = policy, on_error, spend_cap
        self.planned, self.stop_event, self.progress = planned, stop_event, progress
        self.n_paid = self.n_replayed = self.n_calls = self.revealed = 0
        self.n_errors_replayed = 0
        self._known: dict[tuple[str, str], tuple[float, str | None]] = {}
        stored = store.selection_observations(run_id)
        for model, item, score, error in zip(
            stored["model"], stored["item"], stored["score"], stored["error"], strict=True
        ):
            value = float(score) if score is not None and not pd.isna(score) else math.nan
            prev = self._known.get((model, item))
            if prev is None or math.isnan(prev[0]):  # a score wins over an earlier failure
                self._known[(model, item)] = (value, None if pd.isna(error) else str(error))
        self.paid_total = len(stored)
        self._seq = int(stored["seq"].max()) + 1 if len(stored) else 0
        self._decisions = {d["round"]: d for d in store.selection_decisions(run_id)}
        self.errors: list[tuple[str, str, str]] = []

    # -------------------------------------------------------------- store writes
    def _commit(self, call: int, model: str, cells: list[tuple[str, CellResult]]) -> None:
        frame = pd.DataFrame(
            {
                "seq": np.arange(self._seq, self._seq + len(cells), dtype=np.int64),
                "round": call,
                "model": model,
                "item": [item for item, _ in cells],
                "score": [None if math.isnan(c.score) else c.score for _, c in cells],
                "error": [c.error for _, c in cells],
                "requested_at": [c.requested_at for _, c in cells],
                "observed_at": [c.observed_at for _, c in cells],
            }
        )
        self.store.add_observations(self.run_id, frame)
        self._seq += len(cells)
        self.paid_total += len(cells)
        for item, cell in cells:
            self._known[(model, item)] = (cell.score, cell.error)

    def _decide(self, call: int, model: str, ids: list[str]) -> None:
        payload = {
            "phase": "init" if call < self.n_models else "loop",
            "model": model,
            "items": ids,
            **_leader(self.policy, self.model_ids),
        }
        prev = self._decisions.get(call)
        if prev is None:
            self.store.add_decision(self.run_id, call, payload)
            self._decisions[call] = {"round": call, **payload}
        elif prev.get("model") != model or prev.get("items") != ids:
            raise InputError(
                f"run {self.run_id!r}: round {call} asks {model!r} for {len(ids)} items but the "
                f"store recorded {prev.get('model')!r} with {len(prev.get('items') or [])} "
                "(different items); the configuration, seed or a data file changed since the "
                "run started; use a new store or run_id"
            )

    # -------------------------------------------------------------- the oracle
    def evaluate(self, model_index: int, item_indices: np.ndarray) -> np.ndarray:
        """Scores of a batch: stored cells replayed, new ones evaluated and committed first.

        Raises
        ------
        RunInterrupted, SpendCapReached, CellsFailed, PlanPending
            See the class description; everything evaluated before is committed.
        """
        if self.stop_event is not None and self.stop_event.is_set():
            raise RunInterrupted(
                f"stopped before batch {self.n_calls}; {self.paid_total} evaluations stored"
            )
        call = self.n_calls
        model = self.model_ids[model_index]
        items = np.asarray(item_indices, dtype=np.int64).ravel()
        ids = [self.item_ids[k] for k in items]
        self._decide(call, model, ids)
        scores = np.full(len(items), np.nan)
        todo: list[int] = []
        for pos, item in enumerate(ids):
            hit = self._known.get((model, item))
            if hit is not None and (not math.isnan(hit[0]) or self.on_error == "zero"):
                scores[pos] = hit[0]
                self.n_errors_replayed += int(math.isnan(hit[0]))
            else:
                todo.append(pos)
        n_replayed = len(items) - len(todo)
        failures: list[tuple[str, str, str]] = []
        if todo:
            if self.spend_cap is not None and self.paid_total + len(todo) > self.spend_cap:
                raise SpendCapReached(
                    f"the next batch needs {len(todo)} evaluations; {self.paid_total} of "
                    f"spend_cap={self.spend_cap} are used"
                )
            sub = items[todo]
            stream = getattr(self.inner, "evaluate_cells", None)
            if stream is not None:
                for cell in stream(model_index, sub):
                    pos = todo[cell.position]
                    self._commit(call, model, [(ids[pos], cell)])  # stored before use
                    scores[pos] = cell.score
                    if cell.error is not None or math.isnan(cell.score):
                        failures.append((model, ids[pos], cell.error or "NaN score"))
            else:
                started = _now()
                values = np.asarray(self.inner.evaluate(model_index, sub), dtype=np.float64)
                done = _now()
                cells = []
                for k, pos in enumerate(todo):
                    value = float(values[k])
                    error = "oracle returned NaN" if math.isnan(value) else None
                    cells.append((ids[pos], CellResult(k, value, error, 1, started, done)))
                    if error:
                        failures.append((model, ids[pos], error))
                self._commit(call, model, cells)
                scores[todo] = values
        self.n_calls += 1
        self.n_paid += len(todo)
        self.n_replayed += n_replayed
        self.revealed += len(items)
        self.errors.extend(failures)
        if self.progress is not None:
            self.progress(
                LiveProgress(
                    call=call,
                    phase="init" if call < self.n_models else "loop",
                    model=model,
                    n_new=len(todo),
                    n_replayed=n_replayed,
                    n_errors=len(failures),
                    paid_total=self.paid_total,
                    replayed_total=self.n_replayed,
                    revealed=self.revealed,
                    planned=self.planned,
                    **_leader(self.policy, self.model_ids),
                )
            )
        if failures and self.on_error == "stop":
            raise CellsFailed(failures)
        # on_error = "zero": the user chose to score failed cells 0; do it here, explicitly
        return np.where(np.isnan(scores), 0.0, scores)


# ====================================================================== configuration
_POLICIES = ("pulse", "ucbe", "uniform", "naive", "ucbe_lrf", "full")
_RUN_KEYS = {
    "seed", "budget", "batch_size", "init_batch", "policy", "stop", "on_error", "spend_cap",
    "run_id", "benchmark",
}  # fmt: skip
_ORACLE_KEYS = {
    "kind", "concurrency", "timeout", "retries", "backoff", "max_backoff", "max_tokens",
    "temperature", "system", "function", "task", "samples_dir", "plan_dir", "backend",
    "metric", "filter",
}  # fmt: skip
_ITEM_KEYS = {"path", "id_field", "prompt_field", "answer_field"}
_MODEL_KEYS = {"name", "base_url", "model", "api_key_env", "lm_eval_model", "model_args"}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass
class LiveConfig:
    """A live selection run, usually read from TOML with :meth:`from_toml`.

    See ``docs/live.md`` for the file format. Relative paths are resolved against the
    directory of the configuration file. API keys are never part of the configuration, only
    the names of the environment variables that hold them.

    Attributes
    ----------
    models : list of dict
        ``name`` (store id) and, for ``kind = "openai"``, ``base_url``, ``model``,
        ``api_key_env``; for ``kind = "lm-eval"``, ``lm_eval_model`` and ``model_args``.
    items_path : Path or None
    item_fields : dict
    seed, budget, batch_size, init_batch : int
    policy : str
    policy_params, proxy, oracle : dict
    scorer : str
    stop, on_error : str
    spend_cap : int or None
    run_id : str or None
    benchmark : str or None
        Benchmark name of the scores copied into ``responses`` (default: the lm-eval task,
        else the items file name without its suffix).
    source : str
        Where the configuration came from (for error messages).
    """

    models: list[dict[str, Any]]
    items_path: Path | None
    budget: int
    seed: int = 0
    batch_size: int = 64
    init_batch: int = 64
    policy: str = "pulse"
    policy_params: dict[str, Any] = field(default_factory=dict)
    proxy: dict[str, Any] = field(default_factory=dict)
    oracle: dict[str, Any] = field(default_factory=lambda: {"kind": "openai"})
    scorer: str = "exact_match"
    item_fields: dict[str, str] = field(default_factory=dict)
    stop: str = "budget"
    on_error: str = "stop"
    spend_cap: int | None = None
    run_id: str | None = None
    benchmark: str | None = None
    source: str = "<config>"

    # -------------------------------------------------------------- reading
    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> LiveConfig:
        """Read and validate a TOML configuration file."""
        file = Path(path)
        if not file.is_file():
            raise InputError(f"{file}: configuration file not found")
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            try:
                import tomli as tomllib  # type: ignore[no-redef]
            except ModuleNotFoundError:
                raise InputError(
                    f"{file}: reading TOML on Python < 3.11 needs the 'tomli' package "
                    "(pip install tomli)"
                ) from None
        try:
            data = tomllib.loads(file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"{file}: not valid TOML ({exc})") from None
        return cls.from_dict(data, base_dir=file.parent, source=str(file))

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], *, base_dir: str | os.PathLike[str] = ".", source: str = ""
    ) -> LiveConfig:
        """Validate a configuration given as nested dicts (the TOML layout)."""
        where = source or "<config>"
        base = Path(base_dir)
        known = {"run", "policy", "proxy", "oracle", "items", "scorer", "models"}
        extra = sorted(set(data) - known)
        if extra:
            raise InputError(f"{where}: unknown section(s) {extra}; expected {sorted(known)}")

        def table(name: str, keys: set[str] | None = None) -> dict[str, Any]:
            value = data.get(name, {})
            if not isinstance(value, dict):
                raise InputError(f"{where}: [{name}] is {value!r}; expected a table")
            if keys is not None:
                unknown = sorted(set(value) - keys)
                if unknown:
                    raise InputError(
                        f"{where}: [{name}] has unknown key(s) {unknown}; expected some of "
                        f"{sorted(keys)}"
                    )
            return dict(value)

        run = table("run", _RUN_KEYS)
        oracle = table("oracle", _ORACLE_KEYS)
        oracle.setdefault("kind", "openai")
        if oracle["kind"] not in ("openai", "python", "lm-eval"):
            raise InputError(
                f"{where}: [oracle] kind={oracle['kind']!r}; expected 'openai', 'python' or "
                "'lm-eval'"
            )
        items = table("items", _ITEM_KEYS)
        scorer = data.get("scorer", {"kind": "exact_match"})
        if isinstance(scorer, str):
            scorer = {"kind": scorer}
        if not isinstance(scorer, dict) or set(scorer) - {"kind", "function"}:
            raise InputError(
                f"{where}: [scorer] is {scorer!r}; expected kind = 'exact_match', "
                "'multiple_choice' or 'python' (with function = 'module:function')"
            )
        kind = scorer.get("kind", "exact_match")
        if kind == "python":
            if not isinstance(scorer.get("function"), str):
                raise InputError(
                    f"{where}: [scorer] kind='python' needs function = 'module:function'"
                )
            scorer_spec = scorer["function"]
        elif kind in ("exact_match", "multiple_choice"):
            scorer_spec = kind
        else:
            raise InputError(
                f"{where}: [scorer] kind={kind!r}; expected 'exact_match', 'multiple_choice' "
                "or 'python'"
            )
        models = data.get("models")
        if not isinstance(models, list) or not models:
            raise InputError(f"{where}: no [[models]]; expected at least one model table")
        names: set[str] = set()
        for k, model in enumerate(models):
            label = f"{where}: [[models]] #{k + 1}"
            if not isinstance(model, dict):
                raise InputError(f"{label} is {model!r}; expected a table")
            if "api_key" in model:
                raise InputError(
                    f"{label}: api_key is not allowed in a configuration file; put the key in "
                    "an environment variable and name it with api_key_env"
                )
            unknown = sorted(set(model) - _MODEL_KEYS)
            if unknown:
                raise InputError(
                    f"{label} has unknown key(s) {unknown}; expected some of {sorted(_MODEL_KEYS)}"
                )
            name = model.get("name")
            if not isinstance(name, str) or not name:
                raise InputError(f"{label}: name={name!r}; expected a non-empty string")
            if name in names:
                raise InputError(f"{label}: name {name!r} repeats; expected unique names")
            names.add(name)
            if oracle["kind"] == "openai":
                for key in ("base_url", "model"):
                    if not isinstance(model.get(key), str) or not model[key]:
                        raise InputError(
                            f"{label} ({name}): {key}={model.get(key)!r}; expected a string"
                        )
                env = model.get("api_key_env")
                if env is not None and (not isinstance(env, str) or not env.isidentifier()):
                    raise InputError(
                        f"{label} ({name}): api_key_env={env!r}; expected the NAME of an "
                        "environment variable (never the key itself)"
                    )
        policy_name = run.get("policy", "pulse")
        if policy_name not in _POLICIES:
            raise InputError(f"{where}: [run] policy={policy_name!r}; expected one of {_POLICIES}")
        ints: dict[str, int] = {}
        for key, default, low in (
            ("budget", None, 0),
            ("seed", 0, 0),
            ("batch_size", 64, 1),
            ("init_batch", 64, 1),
        ):
            value = run.get(key, default)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InputError(f"{where}: [run] {key}={value!r}; expected an integer >= {low}")
            ints[key] = value
        spend_cap = run.get("spend_cap")
        if spend_cap is not None and (
            isinstance(spend_cap, bool) or not isinstance(spend_cap, int) or spend_cap < 0
        ):
            raise InputError(f"{where}: [run] spend_cap={spend_cap!r}; expected an integer >= 0")
        for key, allowed in (("stop", ("budget", "confidence")), ("on_error", ("stop", "zero"))):
            value = run.get(key, allowed[0])
            if value not in allowed:
                raise InputError(f"{where}: [run] {key}={value!r}; expected one of {allowed}")
        proxy = table("proxy")
        if "history" in proxy:
            proxy["history"] = str((base / proxy["history"]).resolve())
        for key in ("samples_dir", "plan_dir"):
            if key in oracle:
                oracle[key] = str((base / oracle[key]).resolve())
        if not isinstance(items.get("path"), str):
            raise InputError(
                f"{where}: [items] path={items.get('path')!r}; expected the path of a JSONL file"
            )
        items_path = (base / items["path"]).resolve()
        fields = {k: str(v) for k, v in items.items() if k != "path"}
        for key in ("run_id", "benchmark"):
            value = run.get(key)
            if value is not None and (not isinstance(value, str) or not value):
                raise InputError(f"{where}: [run] {key}={value!r}; expected a non-empty string")
        return cls(
            models=[dict(m) for m in models],
            items_path=items_path,
            item_fields=fields,
            policy=policy_name,
            policy_params=table("policy"),
            proxy=proxy,
            oracle=oracle,
            scorer=scorer_spec,
            stop=run.get("stop", "budget"),
            on_error=run.get("on_error", "stop"),
            spend_cap=spend_cap,
            run_id=run.get("run_id"),
            benchmark=run.get("benchmark"),
            source=where,
            **ints,
        )

    # -------------------------------------------------------------- derived
    @property
    def model_ids(self) -> list[str]:
        """Store ids of the candidate models, in pool order."""
        return [str(m["name"]) for m in self.models]

    @property
    def benchmark_name(self) -> str:
        """Benchmark of the scores copied into the ``responses`` table."""
        if self.benchmark:
            return self.benchmark
        if self.oracle.get("kind") == "lm-eval" and self.oracle.get("task"):
            return str(self.oracle["task"])
        return self.items_path.stem if self.items_path is not None else "live"

    def load_items(self) -> list[dict[str, str]]:
        """The items of :attr:`items_path` (see :func:`load_items`)."""
        if self.items_path is None:
            raise InputError(f"{self.source}: [items] path is missing")
        return load_items(
            self.items_path,
            id_field=self.item_fields.get("id_field", "id"),
            prompt_field=self.item_fields.get("prompt_field", "prompt"),
            answer_field=self.item_fields.get("answer_field", "answer"),
            require_prompt=self.oracle.get("kind") == "openai",
        )

    def identity(self) -> dict[str, Any]:
        """What fixes the run's decisions: a resumed run must match it exactly."""
        history = self.proxy.get("history")
        return {
            "models": self.model_ids,
            "items_sha256": _sha256(self.items_path) if self.items_path else None,
            "item_fields": self.item_fields,
            "scorer": self.scorer,
            "oracle_kind": self.oracle.get("kind"),
            "policy": self.policy,
            "policy_params": self.policy_params,
            "proxy": {k: v for k, v in self.proxy.items() if k != "history"},
            "history_sha256": _sha256(Path(history)) if history else None,
            "seed": self.seed,
            "budget": self.budget,
            "batch_size": self.batch_size,
            "init_batch": self.init_batch,
            "stop": self.stop,
            "on_error": self.on_error,
        }

    def default_run_id(self) -> str:
        """``live-`` and 16 hex digits of the SHA-256 of :meth:`identity`."""
        text = json.dumps(self.identity(), sort_keys=True, default=str)
        return "live-" + hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_record(self) -> dict[str, Any]:
        """The options stored with the run (no secrets: only environment variable names)."""
        return {
            "source": self.source,
            "identity": self.identity(),
            "items_path": str(self.items_path) if self.items_path else None,
            "models": self.models,
            "oracle": self.oracle,
            "proxy": self.proxy,
            "spend_cap": self.spend_cap,
        }

    def build_policy(self) -> Any:
        """A fresh policy object from ``[run] policy`` and ``[policy]``."""
        from latentbench.select import _policies as p

        cls = {
            "pulse": p.Pulse,
            "ucbe": p.UCBE,
            "uniform": p.Uniform,
            "naive": p.NaivePooling,
            "ucbe_lrf": p.UCBELRF,
            "full": p.FullEvaluation,
        }[self.policy]
        try:
            return cls(**self.policy_params)
        except TypeError as exc:
            raise InputError(f"{self.source}: [policy] {self.policy_params!r}: {exc}") from None

    def build_proxy(self, item_ids: Sequence[str]) -> Any:
        """Fit the low-rank proxy on ``[proxy] history`` (None when no history is given)."""
        history = self.proxy.get("history")
        if not history:
            return None
        from latentbench.io import ResponseMatrix
        from latentbench.select._proxy import LowRankProxy

        matrix = ResponseMatrix.read(history)
        columns = {str(i): k for k, i in enumerate(matrix.item_ids)}
        missing = [i for i in item_ids if i not in columns]
        if missing:
            raise InputError(
                f"{history}: history lacks {len(missing)} item(s) of the items file (first "
                f"{missing[0]!r}); expected a column for every item id"
            )
        H = matrix.scores[:, [columns[i] for i in item_ids]]
        params = {k: v for k, v in self.proxy.items() if k != "history"}
        params.setdefault("random_state", self.seed)
        try:
            proxy = LowRankProxy(**params)
        except TypeError as exc:
            raise InputError(f"{self.source}: [proxy] {params!r}: {exc}") from None
        return proxy.fit(H)

    def build_oracle(self, items: Sequence[dict[str, str]]) -> Any:
        """The inner oracle named by ``[oracle] kind``."""
        o = self.oracle
        kind = o.get("kind", "openai")
        ids = [it["id"] for it in items]
        if kind == "openai":
            endpoints = [
                ChatEndpoint(m["name"], m["base_url"], m["model"], m.get("api_key_env"))
                for m in self.models
            ]
            return ChatCompletionsOracle(
                endpoints,
                items,
                self.scorer,
                concurrency=int(o.get("concurrency", 8)),
                timeout=float(o.get("timeout", 60.0)),
                retries=int(o.get("retries", 3)),
                backoff=float(o.get("backoff", 1.0)),
                max_backoff=float(o.get("max_backoff", 30.0)),
                max_tokens=o.get("max_tokens"),
                temperature=float(o.get("temperature", 0.0)),
                system=o.get("system"),
                random_state=self.seed,
            )
        if kind == "python":
            if not isinstance(o.get("function"), str):
                raise InputError(
                    f"{self.source}: [oracle] kind='python' needs function = 'module:function'"
                )
            score = load_callable(o["function"], where=f"{self.source}: [oracle] function")
            return CallableOracle(score, self.model_ids, ids)
        task = o.get("task")
        if not isinstance(task, str) or not task:
            raise InputError(f"{self.source}: [oracle] kind='lm-eval' needs task = 'NAME'")
        base = Path(self.source).parent if self.source != "<config>" else Path(".")
        return LmEvalBridgeOracle(
            self.model_ids,
            [str(m.get("lm_eval_model", m["name"])) for m in self.models],
            ids,
            task,
            o.get("samples_dir", str(base / "lm_eval_out")),
            o.get("plan_dir", str(base / "lm_eval_plans")),
            model_args=[m["model_args"] for m in self.models]
            if all("model_args" in m for m in self.models)
            else None,
            backend=str(o.get("backend", "hf")),
            metric=o.get("metric"),
            filter=o.get("filter"),
        )


# ====================================================================== the run
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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary."""
        return {
            "run_id": self.run_id,
            "status": self.status,
            "resumed": self.resumed,
            "n_paid": self.n_paid,
            "n_replayed": self.n_replayed,
            "paid_total": self.paid_total,
            "n_errors": len(self.errors),
            "message": self.message,
            "selection": None if self.selection is None else self.selection.to_dict(trace=False),
        }


def _publish_responses(store: Any, cfg: LiveConfig, run_id: str) -> int:
    """Copy the run's scored cells into the canonical ``responses`` table (idempotent).

    Source ``live:<run_id>``, metric = the scorer, filter ``none``, trial 0; failed cells have
    no row (missing, never 0). Returns the rows offered.
    """
    rows = store.selection_observations(run_id)
    rows = rows[rows["score"].notna()]
    if rows.empty:
        return 0
    served = {str(m["name"]): str(m.get("model") or m.get("lm_eval_model") or m["name"])
              for m in cfg.models}  # fmt: skip
    frame = pd.DataFrame(
        {
            "model": rows["model"].astype(str).to_numpy(),
            "benchmark": cfg.benchmark_name,
            "item": rows["item"].astype(str).to_numpy(),
            "score": rows["score"].astype(float).to_numpy(),
            "metric": cfg.scorer if cfg.oracle.get("kind") != "lm-eval" else "lm-eval",
            "filter": "none",
            "trial": 0,
            "source": f"live:{run_id}",
            "source_file": f"{store.path}#selection_observations/{run_id}",
            "run_timestamp": pd.to_datetime(rows["observed_at"]).to_numpy(),
            "item_hash": None,
            "source_model": [served.get(str(m), str(m)) for m in rows["model"]],
        }
    )
    store.ingest(frame)
    return len(frame)


def run_live(
    config: LiveConfig | str | os.PathLike[str],
    store: Any,
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
    from latentbench.io.store import Store

    cfg = config if isinstance(config, LiveConfig) else LiveConfig.from_toml(config)
    if not isinstance(store, Store):
        with Store(store) as db:
            return run_live(cfg, db, oracle=oracle, progress=progress, stop_event=stop_event)
    if oracle is None:
        items = cfg.load_items()
        item_ids = [it["id"] for it in items]
    else:
        items = None
        item_ids = (
            [it["id"] for it in cfg.load_items()]
            if cfg.items_path is not None
            else [str(k) for k in range(oracle.n_items)]
        )
    if oracle is not None and (oracle.n_models, oracle.n_items) != (len(cfg.models), len(item_ids)):
        raise InputError(
            f"oracle has shape ({oracle.n_models}, {oracle.n_items}); the configuration has "
            f"{len(cfg.models)} models and {len(item_ids)} items"
        )
    if not 1 <= cfg.init_batch <= len(item_ids):
        raise InputError(
            f"{cfg.source}: [run] init_batch={cfg.init_batch}; expected 1..{len(item_ids)} "
            "(the number of items)"
        )
    run_id = cfg.run_id or cfg.default_run_id()
    identity = json.loads(json.dumps(cfg.identity(), sort_keys=True, default=str))
    row = store.connection.execute(
        "SELECT config FROM selection_runs WHERE run_id = ?", [run_id]
    ).fetchall()
    resumed = bool(row)
    if resumed:
        stored = json.loads(row[0][0] or "{}").get("identity")
        if stored != identity:
            changed = sorted(
                k
                for k in set(identity) | set(stored or {})
                if (stored or {}).get(k) != identity.get(k)
            )
            raise InputError(
                f"{store.path}: run {run_id!r} was started with a different configuration "
                f"(changed: {', '.join(changed)}); use another run_id or store"
            )
        store.set_selection_status(run_id, "running")
    else:
        store.start_selection(cfg.to_record(), run_id=run_id)
    policy = cfg.build_policy()
    proxy = cfg.build_proxy(item_ids)
    inner = oracle if oracle is not None else cfg.build_oracle(items or [])
    durable = DurableOracle(
        store,
        run_id,
        inner,
        cfg.model_ids,
        item_ids,
        policy=policy,
        on_error=cfg.on_error,
        spend_cap=cfg.spend_cap,
        planned=len(cfg.models) * cfg.init_batch + cfg.budget,
        stop_event=stop_event,
        progress=progress,
    )
    selection: SelectionResult | None = None
    status, message = "done", ""
    try:
        selection = run_selection(
            durable,
            policy,
            budget=cfg.budget,
            batch_size=cfg.batch_size,
            init_batch=cfg.init_batch,
            proxy=proxy,
            random_state=cfg.seed,
            stop=cfg.stop,
            model_ids=cfg.model_ids,
            true_means=inner.true_means() if isinstance(inner, MatrixOracle) else None,
        )
    except LiveStop as exc:
        status, message = exc.status, str(exc)
    except KeyboardInterrupt:  # a second Ctrl-C: stored cells are kept
        store.set_selection_status(run_id, "interrupted")
        raise
    except BaseException:
        store.set_selection_status(run_id, "failed")
        raise
    finally:
        close = getattr(inner, "close", None)
        if oracle is None and callable(close):
            close()
    if selection is not None:
        final = durable.n_calls
        if final not in durable._decisions:
            store.add_decision(
                run_id,
                final,
                {"phase": "final", **selection.to_dict(trace=False)},
            )
        n_errors = durable.n_errors_replayed + len(durable.errors)
        message = f"best model {selection.best_id} after {selection.evaluations_total} cells" + (
            f"; {n_errors} failed cell(s) were scored 0 (on_error = 'zero')" if n_errors else ""
        )
    try:
        _publish_responses(store, cfg, run_id)
    except InputError as exc:  # the selection tables are complete; say why responses are not
        message += f"; scores not copied to responses: {exc}"
    store.set_selection_status(run_id, status)
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
    )
