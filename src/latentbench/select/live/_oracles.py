"""The registry of live oracles: what ``[oracle] kind`` may name, and how each is built.

An oracle kind is one :func:`oracle` decorator on a builder ``build(config, items)`` plus the
dataclass of its ``[oracle]`` options (a subclass of :class:`OracleOptions`, so ``kind`` is
shared). Everything else is derived from :data:`ORACLES`: the kinds accepted in ``[oracle]``,
the keys each kind takes (others are refused, naming those it does take), the paths resolved
against the configuration's folder (fields marked with :func:`path_option`), the
``[[models]]`` keys a kind needs, and the ``select live --help`` list. Adding an oracle touches
its class (a module of :mod:`latentbench.select.oracles`), one builder here and
``docs/live.md``.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from latentbench.exceptions import InputError
from latentbench.select._scorers import load_callable, resolve_scorer
from latentbench.select.live._options import OracleOptions, between, expect, workflow
from latentbench.select.oracles import (
    CallableOracle,
    ChatCompletionsOracle,
    ChatEndpoint,
    LmEvalBridgeOracle,
    Oracle,
    StreamingOracle,
)

if TYPE_CHECKING:
    from latentbench.select.live._config import LiveConfig

__all__ = [
    "ORACLES",
    "ChatOracleOptions",
    "LmEvalOracleOptions",
    "OracleInfo",
    "PythonOracleOptions",
    "get_oracle",
    "options_as",
    "oracle",
    "oracle_help",
    "path_option",
]

Build = Callable[["LiveConfig", Sequence[dict[str, str]]], Oracle | StreamingOracle]
"""``build(config, items) -> oracle``: the inner oracle of a live run."""

_B = TypeVar("_B", bound=Build)


def path_option(**metadata: Any) -> Any:
    """A ``str | None`` option holding a path, resolved against the configuration's folder."""
    return field(default=None, metadata={**metadata, "path": True})


@dataclass(frozen=True)
class OracleInfo:
    """One registered oracle kind.

    Attributes
    ----------
    name : str
        The ``[oracle] kind``.
    summary : str
        One line for help texts.
    options : type
        The dataclass of its ``[oracle]`` keys (a subclass of :class:`OracleOptions`).
    build : callable
        ``build(config, items) -> Oracle``.
    model_keys : tuple of str
        ``[[models]]`` keys every model must set for this kind.
    needs_prompt : bool
        Whether every item needs a prompt (the oracle sends it).
    metric : str or None
        The metric label of its scores in the ``responses`` table; None: the scorer's name.
    benchmark_option : str or tuple of str or None
        ``[oracle]`` keys whose value is the default benchmark name, the first one set
        (``lm-eval``: ``group``, then ``task``).
    unread : dict of str to tuple of str
        Keys of ``[scorer]``, ``[items]`` and ``[[models]]`` (by section: ``"scorer"``,
        ``"items"``, ``"models"``) that this kind never reads; a configuration that sets one
        (to another value than its default) is warned of when it is loaded, naming them.
    unread_why : str
        Why it does not read them, for that warning.
    """

    name: str
    summary: str
    options: type[OracleOptions]
    build: Build
    model_keys: tuple[str, ...] = ()
    needs_prompt: bool = False
    metric: str | None = None
    benchmark_option: str | tuple[str, ...] | None = None
    unread: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    unread_why: str = ""


ORACLES: dict[str, OracleInfo] = {}
"""Every live oracle kind by name, in registration order."""


def oracle(
    name: str,
    *,
    summary: str,
    options: type[OracleOptions],
    model_keys: tuple[str, ...] = (),
    needs_prompt: bool = False,
    metric: str | None = None,
    benchmark_option: str | tuple[str, ...] | None = None,
    unread: Mapping[str, tuple[str, ...]] | None = None,
    unread_why: str = "",
) -> Callable[[_B], _B]:
    """Register ``build(config, items)`` as the builder of ``[oracle] kind = name`` (the
    keywords are :class:`OracleInfo`'s fields)."""

    def register(build: _B) -> _B:
        if name in ORACLES:
            raise ValueError(f"oracle kind {name!r} is registered twice")
        ORACLES[name] = OracleInfo(
            name, summary, options, build, model_keys, needs_prompt, metric, benchmark_option,
            dict(unread or {}), unread_why,
        )  # fmt: skip
        return build

    return register


def get_oracle(kind: str, where: str = "") -> OracleInfo:
    """The oracle registered as ``kind``; an :class:`InputError` lists the kinds."""
    try:
        return ORACLES[kind]
    except (KeyError, TypeError):
        prefix = f"{where} " if where else ""
        raise InputError(
            f"{prefix}kind={kind!r}; expected one of {', '.join(map(repr, ORACLES))}"
        ) from None


_O = TypeVar("_O", bound=OracleOptions)


def options_as(config: LiveConfig, cls: type[_O]) -> _O:
    """``config.oracle`` as the options class ``cls`` of its kind (a bare
    :class:`OracleOptions`, e.g. a configuration built in code, takes every default)."""
    given = config.oracle
    if isinstance(given, cls):
        return given
    if type(given) is OracleOptions:
        return cls(kind=given.kind)
    raise InputError(
        f"{config.source}: [oracle] options of type {type(given).__name__}; expected "
        f"{cls.__name__} for kind={given.kind!r}"
    )


def oracle_help() -> str:
    """``kind (summary)`` of every oracle, for command-line help."""
    return "; ".join(f"{k} ({v.summary})" for k, v in ORACLES.items())


# ---------------------------------------------------------------------------- openai
@dataclass(frozen=True)
class ChatOracleOptions(OracleOptions):
    """``[oracle] kind = "openai"``: unset options take the defaults of
    :class:`~latentbench.select.oracles.ChatCompletionsOracle` (written there only)."""

    concurrency: int | None = field(default=None, metadata=workflow(between(1, 256)))
    timeout: float | None = field(default=None, metadata=workflow(between(0.001, 3600)))
    retries: int | None = field(default=None, metadata=workflow(between(0, 100)))
    backoff: float | None = field(default=None, metadata=workflow(between(0, 3600)))
    max_backoff: float | None = field(default=None, metadata=workflow(between(0, 3600)))
    max_tokens: int | None = field(default=None, metadata=between(1, 1_000_000))
    temperature: float | None = field(default=None, metadata=between(0, 2))
    system: str | None = None


@oracle(
    "openai",
    summary="OpenAI-compatible /chat/completions endpoints, one per model",
    options=ChatOracleOptions,
    model_keys=("base_url", "model"),
    needs_prompt=True,
    unread={"models": ("lm_eval_model", "model_args")},
    unread_why="each endpoint is asked for its model; lm_eval_model and model_args are the "
    "lm-eval bridge's",
)
def _chat(config: LiveConfig, items: Sequence[dict[str, str]]) -> ChatCompletionsOracle:
    o = options_as(config, ChatOracleOptions)
    endpoints = [
        ChatEndpoint(m.name, str(m.base_url), str(m.model), m.api_key_env) for m in config.models
    ]
    names = ("concurrency", "timeout", "retries", "backoff", "max_backoff", "max_tokens",
             "temperature", "system")  # fmt: skip
    given = {k: getattr(o, k) for k in names if getattr(o, k) is not None}
    scorer = resolve_scorer(
        config.scorer.spec,
        # a scorer that cannot be loaded is always a python one: its key is function
        where=f"{config.source}: [scorer] function",
        base=_config_folder(config),
    )
    return ChatCompletionsOracle(endpoints, items, scorer, random_state=config.run.seed, **given)


# ---------------------------------------------------------------------------- python
@dataclass(frozen=True)
class PythonOracleOptions(OracleOptions):
    """``[oracle] kind = "python"``: ``function = "module:function"``."""

    function: str | None = field(default=None, metadata=expect("'module:function'"))


@oracle(
    "python",
    summary="a Python function score(model, items) -> scores",
    options=PythonOracleOptions,
    unread={
        "scorer": ("kind", "function"),
        "items": ("prompt_field", "answer_field"),
        "models": ("base_url", "api_key_env", "model_args"),
    },
    unread_why="its function scores each model's items itself, given their ids; [scorer] only "
    "names the metric its rows are stored under",
)
def _python(config: LiveConfig, items: Sequence[dict[str, str]]) -> CallableOracle:
    o = options_as(config, PythonOracleOptions)
    if o.function is None:
        raise InputError(
            f"{config.source}: [oracle] kind='python' needs function = 'module:function'"
        )
    where = f"{config.source}: [oracle] function"
    score = load_callable(o.function, where=where, base=_config_folder(config))
    return CallableOracle(score, config.model_ids, [it["id"] for it in items])


# ---------------------------------------------------------------------------- lm-eval
@dataclass(frozen=True)
class LmEvalOracleOptions(OracleOptions):
    """``[oracle] kind = "lm-eval"``: the task (or a group of tasks), the folders and the
    harness command."""

    task: str | None = None
    group: str | None = None
    samples_dir: str | None = path_option(workflow=True)
    plan_dir: str | None = path_option(workflow=True)
    backend: str | None = None
    metric: str | None = None
    filter: str | None = None
    execute: bool = field(default=False, metadata=workflow())
    command: str | None = field(
        default=None, metadata=expect("a command line, e.g. 'lm-eval run'")
    )  # not a workflow option: '--num_fewshot 5' or another install changes the answers
    include_path: str | None = None
    extra_args: str | None = field(
        default=None, metadata=expect("arguments, e.g. '--apply_chat_template'")
    )
    harness_timeout: float | None = field(default=None, metadata=workflow(between(1, 7 * 86400)))


@oracle(
    "lm-eval",
    summary="the lm-evaluation-harness, one plan per batch (run by you, or execute = true)",
    options=LmEvalOracleOptions,
    metric="lm-eval",
    benchmark_option=("group", "task"),
    unread={
        "scorer": ("kind", "function"),
        "items": ("prompt_field", "answer_field"),
        "models": ("base_url",),
    },
    unread_why="the harness builds and scores the prompts of its task itself; a served model's "
    "URL goes in model_args",
)
def _lm_eval(config: LiveConfig, items: Sequence[dict[str, str]]) -> LmEvalBridgeOracle:
    o = options_as(config, LmEvalOracleOptions)
    if (o.task is None) == (o.group is None):
        raise InputError(
            f"{config.source}: [oracle] kind='lm-eval' needs task = 'NAME' (one lm-eval task; "
            "item ids its doc ids) or group = 'NAME' (several tasks as one benchmark; item ids "
            "TASK/DOC_ID), " + ("not both" if o.task is not None else "and has neither")
        )
    base = _config_folder(config)
    # each model's --model_args: its own, else the bridge's default for it (pretrained=...);
    # a model without them no longer drops the others' (all were replaced by the defaults)
    args = [m.model_args or f"pretrained={m.lm_eval_model or m.name}" for m in config.models]
    extra: dict[str, Any] = {"backend": o.backend} if o.backend is not None else {}
    if o.command is not None:
        extra["command"] = shlex.split(o.command)
    if o.extra_args is not None:
        extra["extra_args"] = shlex.split(o.extra_args)
    if o.harness_timeout is not None:
        extra["timeout"] = o.harness_timeout
    return LmEvalBridgeOracle(
        config.model_ids,
        [m.lm_eval_model or m.name for m in config.models],
        [it["id"] for it in items],
        o.task,
        o.samples_dir or str(base / "lm_eval_out"),
        o.plan_dir or str(base / "lm_eval_plans"),
        model_args=args,
        metric=o.metric,
        filter=o.filter,
        include_path=o.include_path,
        execute=o.execute,
        redact=[m.api_key_env for m in config.models if m.api_key_env],
        group=o.group,
        **extra,
    )


def _config_folder(config: LiveConfig) -> Path:
    """The folder of the configuration file (relative names in it resolve there)."""
    return Path(config.source).parent if config.source != "<config>" else Path(".")
