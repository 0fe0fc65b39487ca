"""Oracle (c): OpenAI-compatible chat-completions endpoints, with bounded retries.

Retries (timeouts, connection errors, HTTP 429 and 5xx, malformed answers) back off
exponentially with jitter or follow ``Retry-After``; redirects are refused (the key would
follow them) and the API key is redacted from every stored error. ``timeout`` bounds each
request as a whole (connection, headers and body): a watchdog shuts the socket down when
the time is up, so a server that drips its answer cannot hold a cell for longer.
"""

from __future__ import annotations

import functools
import http.client
import ipaddress
import json
import math
import os
import random
import re
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from http.client import HTTPException
from typing import Any

import numpy as np

from latentbench._checks import bounded_score, user_stacklevel
from latentbench._repr import short_ids
from latentbench.exceptions import DataWarning, InputError
from latentbench.select._scorers import Scorer, resolve_scorer
from latentbench.select.oracles._protocol import (
    CAPPED,
    EMPTY_NOTE,
    NO_TEXT_NOTE,
    BatchFromCells,
    CellResult,
    now_utc,
)

__all__ = [
    "SECRET_NAME",
    "ChatCompletionsOracle",
    "ChatEndpoint",
    "environment_secrets",
    "plain_http_note",
    "redact_environment",
]

_MAX_BODY = 4 << 20
"""Largest endpoint answer read (bytes)."""

_ABORTED = "aborted (Ctrl-C)"
"""The error of a cell ended by :meth:`ChatCompletionsOracle.abort`."""


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
        """The endpoint's chat-completions URL: ``base_url`` (no trailing slash) and
        ``/chat/completions``.

        Returns
        -------
        str
        """
        return self.base_url.rstrip("/") + "/chat/completions"


class _Retry(Exception):
    def __init__(
        self, reason: str, retry_after: float | None = None, *, unsent: bool = False
    ) -> None:
        super().__init__(reason)
        self.retry_after = retry_after
        self.unsent = unsent  # the request never reached a server (refused, unknown host)


class _Fatal(Exception):
    def __init__(self, reason: str, *, sent: bool = True) -> None:
        super().__init__(reason)
        self.sent = sent  # False: raised before the request was sent


class _NoText(Exception):
    """A complete, paid answer without text (``content`` null): scored 0, not retried."""


class _Capped(Exception):
    """The request allowance (the spend cap) is used up: the request was not sent."""


class _Deadline:
    """Shuts a request's socket down when its time is up (the request's total deadline).

    urllib's ``timeout`` bounds each socket operation only: a body dripped one byte at a
    time never trips it. The timer starts before the connection is made; when it fires, the
    socket's blocked reads end at once and :attr:`expired` tells the caller why.
    """

    def __init__(self, seconds: float, *, start: bool = True) -> None:
        self.expired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        if start:
            self._timer.start()

    def start(self) -> None:
        """Start the timer of a deadline made with ``start=False`` (not once it expired)."""
        with self._lock:
            if not self.expired:
                self._timer.start()

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shutdown(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shutdown(sock)

    def expire(self) -> None:
        """End the request now (its socket shut down), as if its time were up."""
        self._timer.cancel()
        self._expire()

    def cancel(self) -> None:
        self._timer.cancel()


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed
        pass


class _Request(urllib.request.Request):
    """A request that carries its :class:`_Deadline` to the connection."""

    def __init__(self, *args: Any, deadline: _Deadline, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.deadline = deadline


class _DeadlineHTTPConnection(http.client.HTTPConnection):
    """A connection that hands its socket to the request's :class:`_Deadline` once connected."""

    def __init__(self, *args: Any, deadline: _Deadline, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline = deadline

    def connect(self) -> None:
        super().connect()
        self._deadline.attach(self.sock)


class _DeadlineHTTPSConnection(_DeadlineHTTPConnection, http.client.HTTPSConnection):
    """The same over TLS: ``super().connect()`` is the TLS connect, so the wrapped socket is
    the one attached."""


def _connection(
    kind: type[_DeadlineHTTPConnection], req: urllib.request.Request
) -> functools.partial[_DeadlineHTTPConnection]:
    """The connection factory for ``req``, bound to its deadline (an hour for a foreign one)."""
    deadline = req.deadline if isinstance(req, _Request) else _Deadline(3600.0)
    return functools.partial(kind, deadline=deadline)


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_connection(_DeadlineHTTPConnection, req), req)


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        connection = _connection(_DeadlineHTTPSConnection, req)
        return self.do_open(connection, req, context=getattr(self, "_context", None))


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
        when = when.replace(tzinfo=UTC)
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: urllib would resend the Authorization header to the new host."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> None:
        return None


def _is_loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    return host in ("127.0.0.1", "localhost", "::1")


def _loopback_host(host: str) -> bool:
    """Whether ``host`` names this machine: ``localhost`` (or a name under it) or a loopback
    address (``127.0.0.0/8``, ``::1``)."""
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def plain_http_note(endpoints: Sequence[ChatEndpoint]) -> str | None:
    """The one-line warning for the endpoints that would send an API key over plain
    ``http://`` to another machine (None when there are none): anyone on the network path
    can read the key. ``https://`` and loopback hosts (``localhost``, ``127.0.0.1``,
    ``::1``: a local server) are not named. An endpoint counts when its ``api_key_env`` is
    set in the environment.

    Parameters
    ----------
    endpoints : sequence of ChatEndpoint

    Returns
    -------
    str or None
    """
    named = []
    for endpoint in endpoints:
        parts = urllib.parse.urlsplit(endpoint.base_url)
        key = os.environ.get(endpoint.api_key_env or "", "").strip() or None
        if key and parts.scheme == "http" and not _loopback_host(parts.hostname or ""):
            named.append(f"{endpoint.name!r} to {parts.hostname}")
    if not named:
        return None
    shown = ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else "")
    return (
        f"API key sent over plain http:// (unencrypted) for model(s) {shown}: anyone on the "
        "network path can read it; use an https:// base_url (http:// is expected only for a "
        "local server: localhost, 127.0.0.1, ::1)"
    )


class ChatCompletionsOracle(BatchFromCells):
    """Oracle (c): one OpenAI-compatible chat-completions endpoint per model.

    Parameters
    ----------
    endpoints : sequence of ChatEndpoint
        One per candidate model (row of the pool).
    items : sequence of dict
        ``{"id", "prompt", "answer"}`` (see :func:`latentbench.io.load_items`); one column per item.
    scorer : str or callable
        ``exact_match``, ``multiple_choice``, ``"module:function"`` or a callable
        ``scorer(response, reference) -> float``.
    concurrency : int, default 8
        Requests in flight at once.
    timeout : float, default 60
        Seconds per request, as a whole: connecting, sending, and reading the headers and
        the body (a slowly dripped answer is cut off at the deadline and retried).
    retries : int, default 3
        Extra attempts per cell after a timeout, connection error, HTTP 429 or 5xx, or a
        malformed answer. Other 4xx answers are not retried (the cell fails); redirects are
        refused (the key would follow them). A complete answer without text (``content``
        null: a refusal, a tool call, ``finish_reason`` "length") is not retried either (a
        retry would pay again for the same answer): it is the model's answer, scored 0 with
        the reason in :attr:`CellResult.note` (starting ``no text (content null``).
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

    Raises
    ------
    InputError
        For no endpoint, ``concurrency``, ``timeout``, ``retries``, ``temperature``, ``backoff`` or
        ``max_backoff`` out of range, a ``base_url`` that is not http(s), or an ``api_key_env``
        that is not set or holds no usable key.

    Attributes
    ----------
    n_calls : int
        Cells evaluated (handed to the caller: a batch stopped early counts only the cells it
        took). ``n_requests`` : int, HTTP requests sent (retries included; a
        refused connection or an unknown host sends none). ``n_empty`` : int, answers whose
        text was empty or blank (handed to the scorer as they are, noted on the cell; the run
        says how many). ``n_no_text`` : int, answers with ``content`` null (scored 0, noted).
    notes : list of str
        What a run records about the oracle: the warning of a key sent over plain
        ``http://`` to a host that is not loopback (:func:`plain_http_note`; warned once
        when the oracle is made). Empty otherwise.

    Notes
    -----
    At most ``concurrency`` cells are outstanding at once: in flight, or answered and handed
    to the consumer of :meth:`evaluate_cells` but not yet taken. A new request starts only
    when the consumer asks for the next cell, so a consumer that stores each cell before
    asking for the next one loses at most ``concurrency`` paid answers if it is killed.
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
        try:
            warmth = math.nan if isinstance(temperature, (bool, str)) else float(temperature)
        except (TypeError, ValueError):
            warmth = math.nan
        if not 0 <= warmth < math.inf:
            raise InputError(f"temperature={temperature!r}; expected a number >= 0")
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
                    f"model {endpoint.name!r}: environment variable "
                    f"{_variable_name(endpoint.api_key_env)} (api_key_env) is not set; expected "
                    "the API key there"
                )
            key = self._key(endpoint)
            if key is not None and (
                not key or any(ord(c) < 32 or ord(c) == 127 for c in key) or not key.isascii()
            ):
                raise InputError(
                    f"model {endpoint.name!r}: the API key in "
                    f"{_variable_name(endpoint.api_key_env)} is empty or holds control or "
                    "non-ASCII characters; expected the key alone on one line (not shown)"
                )
        self.endpoints = list(endpoints)
        #: what a run records about this oracle (a key sent over plain http://)
        self.notes: list[str] = []
        note = plain_http_note(self.endpoints)
        if note is not None:
            self.notes.append(note)
            warnings.warn(note, DataWarning, stacklevel=user_stacklevel())
        self.items = list(items)
        self.scorer = resolve_scorer(scorer)
        self.concurrency, self.timeout, self.retries = int(concurrency), float(timeout), retries
        self.backoff, self.max_backoff = float(backoff), float(max_backoff)
        # a plain float: numpy's (np.float32(0.5)) is not JSON and failed after the request
        # was counted against the allowance
        self.max_tokens, self.temperature, self.system = max_tokens, warmth, system
        self.n_models, self.n_items = len(self.endpoints), len(self.items)
        self.n_calls = 0
        self.n_requests = 0
        self.n_empty = 0
        self.n_no_text = 0
        self._lock = threading.Lock()
        # a request in flight that comes back unsent returns its share of the allowance:
        # a cell that finds the allowance spent waits for those before it is capped
        self._settled = threading.Condition(self._lock)
        self._jitter = random.Random(random_state)
        self._allowance: int | None = None
        self._ledger: Callable[[int], None] | None = None
        handlers = (_NoRedirect, _DeadlineHTTPHandler, _DeadlineHTTPSHandler)
        self._direct = urllib.request.build_opener(urllib.request.ProxyHandler({}), *handlers)
        self._default = urllib.request.build_opener(*handlers)
        self._pool: ThreadPoolExecutor | None = None
        self._aborted = threading.Event()
        self._active: set[_Deadline] = set()

    # -------------------------------------------------------------- lifecycle
    def close(self) -> None:
        """Shut the worker threads down (idempotent)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def abort(self) -> None:
        """Stop at once (a second Ctrl-C): no new request or retry is sent, the requests in
        flight are cut (their answers would not be stored), and the cells not done end with
        an error; then :meth:`close` returns without waiting for retries."""
        self._aborted.set()
        with self._lock:
            active = list(self._active)
            self._settled.notify_all()
        for deadline in active:
            deadline.expire()

    def __enter__(self) -> ChatCompletionsOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        names = short_ids([e.name for e in self.endpoints])
        return f"ChatCompletionsOracle(models={names}, n_items={self.n_items:,})"

    def limit_requests(self, allowance: int | None) -> None:
        """Send at most ``allowance`` more HTTP requests (retries included); None: no limit.

        A cell whose next request would pass the allowance ends with ``capped=True`` (see
        :class:`~latentbench.select.oracles.CellResult`);
        :class:`~latentbench.select.live.DurableOracle` sets it from the run's ``spend_cap``
        before each batch.

        Parameters
        ----------
        allowance : int or None
            Requests left (negative counts as 0); None removes the limit.
        """
        with self._lock:
            self._allowance = None if allowance is None else max(int(allowance), 0)

    def set_ledger(self, ledger: Callable[[int], None] | None) -> None:
        """Record every HTTP request durably: ``ledger(1)`` is called before each request is
        sent (the request is not sent until it returns; when it raises, the request is not
        sent or counted and the cell ends with that exception), and ``ledger(-1)`` for one
        refunded because it never reached a server (a refused connection, an unknown host).
        None: no ledger (a bare oracle).

        :class:`~latentbench.select.live.DurableOracle` sets it to the run's request ledger
        in its store (:meth:`~latentbench.io.store.Store.record_requests`), so the requests
        in flight when a process is killed count against ``spend_cap`` on resume, and
        unsets it when the run ends (an oracle passed to
        :func:`~latentbench.select.live.run_live` then records nothing more there). It is
        called from the worker threads, at most ``concurrency`` at once. A cell records all
        its requests (retries and refunds too) in the ledger set when it started: another
        one set meanwhile applies to the cells started after.

        Parameters
        ----------
        ledger : callable or None
            ``ledger(delta)`` with ``delta`` 1 or -1; it must be safe to call from several
            threads.
        """
        with self._lock:
            self._ledger = ledger

    # -------------------------------------------------------------- one request
    @staticmethod
    def _key(endpoint: ChatEndpoint) -> str | None:
        """The key, without surrounding whitespace (a trailing newline is common in files)."""
        if not endpoint.api_key_env or endpoint.api_key_env not in os.environ:
            return None
        return os.environ[endpoint.api_key_env].strip()

    def _post(
        self,
        endpoint: ChatEndpoint,
        prompt: str,
        key: str | None,
        ledger: Callable[[int], None] | None,
    ) -> str:
        """One request; ``ledger``: the cell's (the one set when the cell started)."""
        body = self._body(endpoint, prompt)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        opener = self._direct if _is_loopback(endpoint.base_url) else self._default
        data = json.dumps(body).encode()  # before the allowance: a body that is no JSON costs none
        deadline = self._reserve(ledger)
        request = _Request(
            endpoint.url(),
            data=data,
            headers=headers,
            method="POST",
            deadline=deadline,
        )
        try:
            return self._send(opener, request, key)
        except _Retry as exc:
            self._after_retry(exc, deadline, ledger)
            raise
        except _Fatal:
            self._after_fatal(deadline)
            raise
        finally:
            deadline.cancel()
            with self._lock:
                self._active.discard(deadline)
                self._settled.notify_all()

    def _body(self, endpoint: ChatEndpoint, prompt: str) -> dict[str, Any]:
        """The request's JSON body: the model, the messages and the sampling options."""
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
        return body

    def _reserve(self, ledger: Callable[[int], None] | None) -> _Deadline:
        """Count one request against the allowance, record it in ``ledger`` (the cell's)
        and start its deadline: once recorded, so that a slow ledger write is no part of the
        request's ``timeout`` (it cut requests never sent, counted as paid timeouts).

        Raises :class:`_Fatal` (not sent) after an abort, :class:`_Capped` when the allowance
        is spent (after waiting for the requests in flight, whose share may be refunded).
        """
        with self._lock:
            if self._aborted.is_set():
                raise _Fatal(_ABORTED, sent=False)
            if self._allowance is not None:
                while self._allowance <= 0 and self._active and not self._aborted.is_set():
                    self._settled.wait(1.0)  # one in flight may be refunded (never sent)
                if self._aborted.is_set():
                    raise _Fatal(_ABORTED, sent=False)
                if self._allowance <= 0:
                    raise _Capped
                self._allowance -= 1
            self.n_requests += 1
            deadline = _Deadline(self.timeout, start=False)  # in flight for an abort
            self._active.add(deadline)
        if ledger is not None:
            try:
                ledger(1)  # committed before the request goes out
            except BaseException:  # not recorded: not sent, not counted
                self._unreserve(deadline)
                raise
            if self._aborted.is_set():  # aborted while it was recorded: never sent
                self._unreserve(deadline)
                ledger(-1)
                raise _Fatal(_ABORTED, sent=False)
        deadline.start()
        return deadline

    def _unreserve(self, deadline: _Deadline) -> None:
        """Give back a request counted by :meth:`_reserve` that will not be sent."""
        deadline.cancel()
        with self._lock:
            self.n_requests -= 1
            if self._allowance is not None:
                self._allowance += 1
            self._active.discard(deadline)
            self._settled.notify_all()

    def _after_retry(
        self, exc: _Retry, deadline: _Deadline, ledger: Callable[[int], None] | None
    ) -> None:
        """Refund a request that never reached a server (in ``ledger``, where it was
        recorded); raise what replaces ``exc`` (an abort, or the deadline that cut the
        request), else return (``exc`` stands)."""
        if exc.unsent:  # nothing reached a server: not a paid request
            with self._lock:
                self.n_requests -= 1
                if self._allowance is not None:
                    self._allowance += 1
            if ledger is not None:
                ledger(-1)
        if self._aborted.is_set():
            raise _Fatal(_ABORTED, sent=not exc.unsent) from None
        if deadline.expired and not exc.unsent:  # (an unsent one keeps its reason)
            raise _Retry(f"timeout after {self.timeout:g}s") from None

    def _after_fatal(self, deadline: _Deadline) -> None:
        """Raise what replaces a fatal error (an abort, or the deadline that cut the
        request), else return (the error stands)."""
        if self._aborted.is_set():
            raise _Fatal(_ABORTED) from None
        if deadline.expired:
            raise _Retry(f"timeout after {self.timeout:g}s") from None

    def _send(
        self, opener: urllib.request.OpenerDirector, request: _Request, key: str | None
    ) -> str:
        raw = self._open(opener, request, key)
        if request.deadline.expired:  # the body was cut off at the deadline
            raise _Retry(f"timeout after {self.timeout:g}s")
        if len(raw) > _MAX_BODY:
            raise _Retry(f"malformed answer: body larger than {_MAX_BODY} bytes")
        return _content(raw, key)

    def _open(
        self, opener: urllib.request.OpenerDirector, request: _Request, key: str | None
    ) -> bytes:
        """Send the request and read the answer's body (at most ``_MAX_BODY + 1`` bytes);
        every failure becomes :class:`_Retry` or :class:`_Fatal`."""
        try:
            with opener.open(request, timeout=self.timeout) as response:
                raw: bytes = response.read(_MAX_BODY + 1)
        except urllib.error.HTTPError as exc:
            raise _http_error(exc, key) from None
        except urllib.error.URLError as exc:
            raise _url_error(exc, self.timeout) from None
        except TimeoutError:
            raise _Retry(f"timeout after {self.timeout:g}s") from None
        except ConnectionRefusedError as exc:
            raise _Retry(f"connection error: {exc}", unsent=True) from None
        except (HTTPException, ConnectionError, OSError) as exc:
            raise _Retry(f"connection error: {type(exc).__name__}: {exc}") from None
        return raw

    def _cell(self, position: int, model_index: int, item_index: int) -> CellResult:
        endpoint = self.endpoints[model_index]
        item = self.items[item_index]
        key = self._key(endpoint)
        started = now_utc()
        reason = ""
        attempt = 0
        sent = 0  # requests that reached a server (a refused connection is not one)
        with self._lock:  # every request of the cell, retries and refunds, in one ledger:
            ledger = self._ledger  # the run's that asked it, even once the oracle is released
        for attempt in range(self.retries + 1):
            try:
                content = self._post(endpoint, item["prompt"], key, ledger)
            except _Capped:
                error = f"{CAPPED} after {sent} request(s) for this cell"
                return CellResult(position, math.nan, error, sent, started, now_utc(), capped=True)
            except _NoText as exc:  # a paid answer: scored 0 with its reason, never re-asked
                with self._lock:
                    self.n_no_text += 1
                said = _redact(str(exc), key)
                return CellResult(position, 0.0, None, sent + 1, started, now_utc(), note=said)
            except _Fatal as exc:
                sent += int(exc.sent)
                reason = str(exc)
                break
            except _Retry as exc:
                sent += int(not exc.unsent)
                reason = str(exc)
                if attempt == self.retries:
                    break
                with self._lock:
                    jitter = 0.5 + 0.5 * self._jitter.random()
                delay = min(self.max_backoff, self.backoff * 2**attempt) * jitter
                if exc.retry_after is not None:
                    delay = min(self.max_backoff, exc.retry_after)
                if self._aborted.wait(delay):  # an abort ends the wait: no retry is sent
                    reason = _ABORTED
                    break
                continue
            sent += 1
            note: str | None = None
            if not content.strip():
                with self._lock:
                    self.n_empty += 1
                note = f"{EMPTY_NOTE} (blank text, {len(content)} character(s)); scored as given"
            try:
                given = float(self.scorer(content, item["answer"]))
            except Exception as exc:  # user scorer: a failure is a per-cell error
                return CellResult(
                    position,
                    math.nan,
                    _redact(f"scorer raised {type(exc).__name__}: {exc}", key),
                    sent,
                    started,
                    now_utc(),
                )
            bounded = bounded_score(given)  # a rounding past 0 or 1 is the bound
            if bounded is None or math.isnan(bounded):
                return CellResult(
                    position,
                    math.nan,
                    f"scorer returned {given!r}; expected a score in [0, 1]",
                    sent,
                    started,
                    now_utc(),
                )
            return CellResult(position, bounded, None, sent, started, now_utc(), note=note)
        tried = f"after {attempt + 1} attempt(s)" if sent or reason != _ABORTED else "none sent"
        error = _redact(f"{reason} ({tried})", key)
        unsent = sent == 0 and reason != _ABORTED  # every attempt refused before sending
        return CellResult(position, math.nan, error, sent, started, now_utc(), unsent=unsent)

    # -------------------------------------------------------------- batches
    def evaluate_cells(self, model_index: int, item_indices: np.ndarray) -> Iterator[CellResult]:
        """Request the batch concurrently; yield each cell as it completes.

        At most ``concurrency`` cells are outstanding (requested, or answered but not yet
        taken): the next request starts when the consumer asks for the next cell.

        Parameters
        ----------
        model_index : int
            The model's row, in ``range(n_models)``.
        item_indices : ndarray of int of shape (batch,)
            The items' columns, in ``range(n_items)``.

        Yields
        ------
        CellResult
            One per item, in the order they complete (``position`` says which).
        """
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="latentbench")
        pool = self._pool
        items = [int(k) for k in np.asarray(item_indices).ravel()]
        queue = iter(list(enumerate(items)))
        pending: set[Future[CellResult]] = set()

        def top_up() -> None:
            while len(pending) < self.concurrency:
                nxt = next(queue, None)
                if nxt is None:
                    return
                pending.add(pool.submit(self._cell, nxt[0], model_index, nxt[1]))

        top_up()
        try:
            while pending:
                # with a timeout: Python runs a signal's handler on the main thread, and a
                # signal the OS gave one of the pool's threads waited, with no timeout here,
                # until a cell ended (a Ctrl-C said nothing while held requests timed out and
                # were retried: 20 s in CI, and the run ended 'failed')
                done, _ = wait(pending, timeout=_SIGNAL_POLL, return_when=FIRST_COMPLETED)
                for future in done:
                    # taken out only once consumed: an answered cell still counts against
                    # the bound until the consumer has it (and has stored it)
                    pending.discard(future)
                    # counted as handed over: a batch stopped early (a Ctrl-C, a failed
                    # cell) counted its cells never requested or cancelled too
                    self.n_calls += 1
                    yield future.result()
                    top_up()
        finally:
            for future in pending:
                future.cancel()


_SIGNAL_POLL = 0.2
"""Seconds the consumer of a batch waits for a cell before it looks again: the longest a
signal's handler (Ctrl-C) waits when the OS gave the signal to a worker thread."""


def _http_error(exc: urllib.error.HTTPError, key: str | None) -> _Retry | _Fatal:
    """An HTTP error status as the exception to raise: 429 and 5xx are retried (following
    ``Retry-After``), redirects and other 4xx are fatal; the body's excerpt is redacted."""
    try:
        # redact the whole excerpt first, then shorten it: a key cut in two by the
        # shortening would no longer be found
        detail = _excerpt(exc.read(_MAX_ERROR_BODY), key, 300)
    except Exception:
        detail = ""
    reason = f"HTTP {exc.code}" + (f": {detail}" if detail else "")
    if exc.code == 429 or exc.code >= 500:
        return _Retry(reason, _retry_after(exc.headers.get("Retry-After")))
    if 300 <= exc.code < 400:
        reason = f"HTTP {exc.code}: redirects are not followed (check base_url)"
    return _Fatal(reason)


def _url_error(exc: urllib.error.URLError, timeout: float) -> _Retry:
    """A failed connection as a retry: a timeout, or a connection error (unsent when the
    connection was refused or the host is unknown)."""
    if isinstance(exc.reason, TimeoutError):
        return _Retry(f"timeout after {timeout:g}s")
    unsent = isinstance(exc.reason, (ConnectionRefusedError, socket.gaierror))
    return _Retry(f"connection error: {exc.reason}", unsent=unsent)


def _content(raw: bytes, key: str | None) -> str:
    """The text of a complete answer's ``choices[0].message.content``.

    Raises :class:`_Retry` for a malformed answer, :class:`_NoText` for content null.
    """
    try:
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise _Retry(f"malformed answer: not JSON ({_excerpt(raw, key, 60)!r})") from None
    try:
        choice = payload["choices"][0]
        message = choice["message"]
        content = message["content"] if "content" in message else None
    except (KeyError, IndexError, TypeError):
        raise _Retry("malformed answer: no choices[0].message.content") from None
    if content is None:
        raise _no_text(choice, message, key)
    if not isinstance(content, str):
        raise _Retry(f"malformed answer: content is {type(content).__name__}, not text")
    return content


def _no_text(choice: Any, message: Any, key: str | None) -> _NoText:
    """A complete answer without text (a refusal, a tool call, the token limit spent on
    reasoning): the same request would be paid again for the same answer."""
    finish = choice.get("finish_reason") if isinstance(choice, dict) else None
    refusal = message.get("refusal") if isinstance(message, dict) else None
    detail = f"finish_reason {finish!r}" if finish is not None else "no finish_reason"
    if refusal:
        detail += f", refusal {_excerpt(str(refusal).encode(), key, 60)!r}"
    hint = "; raise max_tokens" if finish == "length" else ""
    return _NoText(f"{NO_TEXT_NOTE}, {detail}); scored 0, not retried{hint}")


def _variable_name(name: str | None) -> str:
    """``name`` quoted when it looks like a variable name; hidden when it may be a key."""
    if name is not None and re.fullmatch(r"[A-Z][A-Z0-9_]{0,63}", name):
        return repr(name)
    return "(name not shown: it does not look like a variable name and may be the key itself)"


_MAX_ERROR_BODY = 16_384
"""Bytes of an error body read for the message (redacted whole, then shortened)."""

_FRAGMENT = 6
"""A run of at least this many characters of the key, anywhere in a message, is redacted."""

_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})|%([0-9a-fA-F]{2})")


def _unescape(text: str) -> str:
    """Decode ``\\uXXXX``, ``\\xXX`` and ``%XX`` escapes, so an escaped key is found too."""

    def one(match: re.Match[str]) -> str:
        code = next(g for g in match.groups() if g is not None)
        return chr(int(code, 16))

    previous = None
    while previous != text:  # escapes of escapes
        previous, text = text, _ESCAPE.sub(one, text)
    return text


def _redact(text: str, key: str | None) -> str:
    """``text`` with every run of ``_FRAGMENT`` or more characters of ``key`` replaced.

    Catches the whole key, a truncated key, a key split across fields and an escaped key
    (escapes are decoded first). A key shorter than ``_FRAGMENT`` (a local server's
    placeholder such as ``x`` or ``EMPTY``) is replaced where it stands alone, not inside a
    word: replaced everywhere, the key ``x`` turned the note "no text" into "no te***t".
    """
    if not key:
        return text
    text = _unescape(text)
    if len(key) < _FRAGMENT:  # a word character beside an edge that is one: inside a word
        before = r"(?<!\w)" if re.match(r"\w", key[0]) else ""
        after = r"(?!\w)" if re.match(r"\w", key[-1]) else ""
        return re.sub(before + re.escape(key) + after, "***", text)
    size = _FRAGMENT
    pieces = {key[i : i + size] for i in range(len(key) - size + 1)}
    hidden = [False] * len(text)
    for i in range(len(text) - size + 1):
        if text[i : i + size] in pieces:
            hidden[i : i + size] = [True] * size
    if not any(hidden):
        return text
    out: list[str] = []
    for i, char in enumerate(text):
        if not hidden[i]:
            out.append(char)
        elif i == 0 or not hidden[i - 1]:
            out.append("***")
    return "".join(out)


SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.I)
"""Environment variables whose values may be keys (never shown in an error)."""

MIN_SECRET_LENGTH = 8
"""Shortest value of a variable named like :data:`SECRET_NAME` that is taken for a key. A
shorter one (``MAX_TOKENS=512``, ``HF_TOKEN_ENABLED=1``, ``TOKENIZERS_PARALLELISM=false``)
is a setting: replaced wherever it stands, it turned every ``512`` of an error into ``***``.
API keys and tokens are far longer; a variable named in ``names`` (a model's
``api_key_env``) is a key whatever its length."""


def environment_secrets(names: Sequence[str] = ()) -> list[str]:
    """Values of ``names`` and of the environment variables named like :data:`SECRET_NAME`
    (``OPENAI_API_KEY``, ``HF_TOKEN``), stripped: what an error text must not show. A value
    of a variable not in ``names`` that is shorter than :data:`MIN_SECRET_LENGTH` characters
    (``MAX_TOKENS=512``, a flag such as ``TOKENIZERS_PARALLELISM=false``), or the path of an
    existing file or folder (``HF_TOKEN_PATH``), is no key.

    Parameters
    ----------
    names : sequence of str, optional
        Variables whose values are keys whatever their names and lengths (the models'
        ``api_key_env``).

    Returns
    -------
    list of str
        The values, empty ones left out.
    """
    found = set(names) | {k for k in os.environ if SECRET_NAME.search(k)}
    values = [(k, os.environ.get(k, "").strip()) for k in found]
    return [v for k, v in values if v and (k in names or _may_be_key(v))]


def _may_be_key(value: str) -> bool:
    """Whether the value of a variable named like a key may be one: at least
    :data:`MIN_SECRET_LENGTH` characters, and not the path of an existing file or folder
    (``HF_TOKEN_PATH=/root/.cache/huggingface/token``: redacted, every run of 6 of its
    characters in a traceback's paths became ``***``)."""
    if len(value) < MIN_SECRET_LENGTH:
        return False
    if value.startswith(("/", "~")) and os.path.exists(os.path.expanduser(value)):
        return False
    return True


def redact_environment(text: str, names: Sequence[str] = ()) -> str:
    """``text`` with every value of :func:`environment_secrets` redacted (:func:`_redact`).

    Parameters
    ----------
    text : str
        An error or log text.
    names : sequence of str, optional
        As :func:`environment_secrets`.

    Returns
    -------
    str
    """
    for secret in environment_secrets(names):
        text = _redact(text, secret)
    return text


def _excerpt(raw: bytes, key: str | None, limit: int) -> str:
    """A redacted, then shortened, text excerpt of a response body."""
    text = _redact(raw.decode("utf-8", "replace").strip(), key)
    return text if len(text) <= limit else text[:limit] + "..."
