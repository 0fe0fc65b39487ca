"""The TOML configuration of a live selection run (``LiveConfig``)."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from latentbench.exceptions import InputError
from latentbench.io import load_items
from latentbench.io._files import file_sha256
from latentbench.select._base import Policy, default_initial_batch
from latentbench.select._policies import POLICIES, make_policy
from latentbench.select._proxy import LowRankProxy
from latentbench.select._scorers import load_callable
from latentbench.select.live._options import (
    ItemOptions,
    ModelOptions,
    OracleOptions,
    RunOptions,
    ScorerOptions,
    load_section,
    options_of,
)
from latentbench.select.oracles import (
    CallableOracle,
    ChatCompletionsOracle,
    ChatEndpoint,
    LmEvalBridgeOracle,
    Oracle,
    StreamingOracle,
)

__all__ = ["LiveConfig"]

_SECTIONS = ("run", "policy", "proxy", "oracle", "items", "scorer", "models")


def _read_toml(file: Path) -> dict[str, Any]:
    if not file.is_file():
        raise InputError(f"{file}: configuration file not found")
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            raise InputError(
                f"{file}: reading TOML on Python < 3.11 needs the 'tomli' package "
                "(pip install tomli)"
            ) from None
    try:
        return tomllib.loads(file.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{file}: not valid TOML ({exc})") from None


def _free_table(
    data: dict[str, Any], name: str, where: str, allowed: Sequence[str]
) -> dict[str, Any]:
    """A section whose keys are the options of a class (``[policy]``, ``[proxy]``)."""
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise InputError(f"{where}: [{name}] is {value!r}; expected a table")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise InputError(
            f"{where}: [{name}] has unknown key(s) {unknown}; expected some of {sorted(allowed)}"
        )
    return dict(value)


def _models(raw: object, where: str, kind: str) -> tuple[ModelOptions, ...]:
    if not isinstance(raw, list) or not raw:
        raise InputError(f"{where}: no [[models]]; expected at least one model table")
    models: list[ModelOptions] = []
    for k, entry in enumerate(raw):
        label = f"{where}: [[models]] #{k + 1}"
        if isinstance(entry, dict) and "api_key" in entry:
            raise InputError(
                f"{label}: api_key is not allowed in a configuration file; put the key in "
                "an environment variable and name it with api_key_env"
            )
        model = load_section(ModelOptions, entry, label)
        if any(m.name == model.name for m in models):
            raise InputError(f"{label}: name {model.name!r} repeats; expected unique names")
        if kind == "openai":
            for key in ("base_url", "model"):
                if getattr(model, key) is None:
                    raise InputError(f"{label} ({model.name}): {key}=None; expected a string")
        env = model.api_key_env
        if env is not None and not env.isidentifier():
            raise InputError(
                f"{label} ({model.name}): api_key_env is not a variable name (the value is not "
                "shown: it may be the key); expected the NAME of an environment variable"
            )
        models.append(model)
    return tuple(models)


@dataclass(frozen=True)
class LiveConfig:
    """A live selection run, usually read from TOML with :meth:`from_toml`.

    Sections: ``[run]`` (:class:`RunOptions`), ``[oracle]`` (:class:`OracleOptions`),
    ``[items]`` (:class:`ItemOptions`), ``[scorer]`` (:class:`ScorerOptions`), one
    ``[[models]]`` table per candidate (:class:`ModelOptions`), ``[policy]`` (options of the
    policy named by ``[run] policy``) and ``[proxy]`` (``history``, the path of the history
    matrix, and options of :class:`~latentbench.select.LowRankProxy`). Relative paths are
    resolved against the directory of the configuration file. API keys are never part of
    the configuration, only the names of the environment variables that hold them.

    Attributes
    ----------
    run : RunOptions
    models : tuple of ModelOptions
    items : ItemOptions or None
        None only for a configuration built in code for a replay oracle.
    oracle : OracleOptions
    scorer : ScorerOptions
    policy_options, proxy_options : dict
    history : Path or None
    source : str
        Where the configuration came from (for error messages).
    """

    run: RunOptions
    models: tuple[ModelOptions, ...]
    items: ItemOptions | None = None
    oracle: OracleOptions = field(default_factory=OracleOptions)
    scorer: ScorerOptions = field(default_factory=ScorerOptions)
    policy_options: dict[str, Any] = field(default_factory=dict)
    proxy_options: dict[str, Any] = field(default_factory=dict)
    history: Path | None = None
    source: str = "<config>"

    # -------------------------------------------------------------- reading
    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> LiveConfig:
        """Read and validate a TOML configuration file."""
        file = Path(path)
        return cls.from_dict(_read_toml(file), base_dir=file.parent, source=str(file))

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], *, base_dir: str | os.PathLike[str] = ".", source: str = ""
    ) -> LiveConfig:
        """Validate a configuration given as nested dicts (the TOML layout)."""
        where = source or "<config>"
        base = Path(base_dir)
        extra = sorted(set(data) - set(_SECTIONS))
        if extra:
            raise InputError(f"{where}: unknown section(s) {extra}; expected {sorted(_SECTIONS)}")

        def policy_name(key: str, value: Any) -> str | None:
            ok = key != "policy" or value in POLICIES
            return None if ok else f"one of {sorted(POLICIES)}"

        run = load_section(RunOptions, data.get("run", {}), f"{where}: [run]", check=policy_name)
        oracle = load_section(OracleOptions, data.get("oracle", {}), f"{where}: [oracle]")
        resolved = {
            key: str((base / getattr(oracle, key)).resolve())
            for key in ("samples_dir", "plan_dir")
            if getattr(oracle, key) is not None
        }
        oracle = OracleOptions(**{**asdict(oracle), **resolved})
        scorer_raw = data.get("scorer", {})
        if isinstance(scorer_raw, str):
            scorer_raw = {"kind": scorer_raw}
        scorer = load_section(ScorerOptions, scorer_raw, f"{where}: [scorer]")
        if scorer.kind == "python" and scorer.function is None:
            raise InputError(f"{where}: [scorer] kind='python' needs function = 'module:function'")
        items = load_section(ItemOptions, data.get("items", {}), f"{where}: [items]")
        items = ItemOptions(**{**asdict(items), "path": str((base / items.path).resolve())})
        models = _models(data.get("models"), where, oracle.kind)
        proxy = _free_table(data, "proxy", where, ("history", *options_of(LowRankProxy)))
        history = proxy.pop("history", None)
        info = POLICIES[run.policy]
        policy = _free_table(data, "policy", where, info.options)
        return cls(
            run=run,
            models=models,
            items=items,
            oracle=oracle,
            scorer=scorer,
            policy_options=policy,
            proxy_options=proxy,
            history=None if history is None else (base / str(history)).resolve(),
            source=where,
        )

    # -------------------------------------------------------------- derived
    @property
    def model_ids(self) -> list[str]:
        """Store ids of the candidate models, in pool order."""
        return [m.name for m in self.models]

    @property
    def items_path(self) -> Path | None:
        """The items file (None without ``[items]``)."""
        return None if self.items is None else Path(self.items.path)

    @property
    def benchmark_name(self) -> str:
        """Benchmark of the scores copied into the ``responses`` table."""
        if self.run.benchmark:
            return self.run.benchmark
        if self.oracle.kind == "lm-eval" and self.oracle.task:
            return self.oracle.task
        return self.items_path.stem if self.items_path is not None else "live"

    def load_items(self) -> list[dict[str, str]]:
        """The items of ``[items] path`` (see :func:`latentbench.io.load_items`)."""
        if self.items is None:
            raise InputError(f"{self.source}: [items] path is missing")
        return load_items(
            self.items.path,
            id_field=self.items.id_field,
            prompt_field=self.items.prompt_field,
            answer_field=self.items.answer_field,
            require_prompt=self.oracle.kind == "openai",
        )

    def identity(self) -> dict[str, Any]:
        """What fixes the run's decisions: a resumed run must match it exactly."""
        item_fields = {}
        if self.items is not None:
            default = ItemOptions(path=self.items.path)
            item_fields = {
                k: v
                for k, v in asdict(self.items).items()
                if k != "path" and v != asdict(default)[k]
            }
        run = self.run
        return {
            "models": self.model_ids,
            "items_sha256": file_sha256(self.items_path) if self.items_path else None,
            "item_fields": item_fields,
            "scorer": self.scorer.spec,
            "oracle_kind": self.oracle.kind,
            "policy": run.policy,
            "policy_params": self.policy_options,
            "proxy": self.proxy_options,
            "history_sha256": file_sha256(self.history) if self.history else None,
            "seed": run.seed,
            "budget": run.budget,
            "batch_size": run.batch_size,
            "init_batch": run.init_batch,
            "stop": run.stop,
            "on_error": run.on_error,
        }

    def default_run_id(self) -> str:
        """``live-`` and 16 hex digits of the SHA-256 of :meth:`identity`."""
        text = json.dumps(self.identity(), sort_keys=True, default=str)
        return "live-" + hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_record(self) -> dict[str, Any]:
        """The options stored with the run (no secrets: only environment variable names)."""
        proxy = dict(self.proxy_options)
        if self.history is not None:
            proxy["history"] = str(self.history)
        return {
            "source": self.source,
            "identity": self.identity(),
            "items_path": str(self.items_path) if self.items_path else None,
            "models": [{k: v for k, v in asdict(m).items() if v is not None} for m in self.models],
            "oracle": {k: v for k, v in asdict(self.oracle).items() if v is not None},
            "proxy": proxy,
            "spend_cap": self.run.spend_cap,
        }

    def publish_options(self) -> dict[str, Any]:
        """Keyword arguments of :meth:`Store.publish_selection` for this run's scores."""
        served = {m.name: m.served for m in self.models}
        metric = self.scorer.spec if self.oracle.kind != "lm-eval" else "lm-eval"
        return {"benchmark": self.benchmark_name, "metric": metric, "source_models": served}

    def build_policy(self) -> Policy:
        """A fresh policy object from ``[run] policy`` and ``[policy]``."""
        where = f"{self.source}: [policy]"
        return make_policy(self.run.policy, self.policy_options, where=where)

    def initial_batch(self, n_items: int) -> int:
        """``[run] init_batch``, or the policy's ``default_init_batch`` (at most ``n_items``)."""
        if self.run.init_batch is not None:
            return self.run.init_batch
        return default_initial_batch(self.build_policy(), n_items)

    def build_proxy(self, item_ids: Sequence[str]) -> LowRankProxy | None:
        """Fit the low-rank proxy on ``[proxy] history`` (None when no history is given)."""
        if self.history is None:
            return None
        from latentbench.io import ResponseMatrix

        matrix = ResponseMatrix.read(self.history)
        columns = {str(i): k for k, i in enumerate(matrix.item_ids)}
        missing = [i for i in item_ids if i not in columns]
        if missing:
            raise InputError(
                f"{self.history}: history lacks {len(missing)} item(s) of the items file "
                f"(first {missing[0]!r}); expected a column for every item id"
            )
        H = matrix.scores[:, [columns[i] for i in item_ids]]
        params = {"random_state": self.run.seed, **self.proxy_options}
        try:
            proxy = LowRankProxy(**params)
        except (TypeError, ValueError) as exc:
            raise InputError(f"{self.source}: [proxy] {params!r}: {exc}") from None
        return proxy.fit(H)

    def build_oracle(self, items: Sequence[dict[str, str]]) -> Oracle | StreamingOracle:
        """The inner oracle named by ``[oracle] kind``."""
        o = self.oracle
        ids = [it["id"] for it in items]
        if o.kind == "openai":
            endpoints = [
                ChatEndpoint(m.name, str(m.base_url), str(m.model), m.api_key_env)
                for m in self.models
            ]
            return ChatCompletionsOracle(
                endpoints, items, self.scorer.spec, random_state=self.run.seed, **o.chat_options()
            )
        if o.kind == "python":
            if o.function is None:
                raise InputError(
                    f"{self.source}: [oracle] kind='python' needs function = 'module:function'"
                )
            score = load_callable(o.function, where=f"{self.source}: [oracle] function")
            return CallableOracle(score, self.model_ids, ids)
        if o.task is None:
            raise InputError(f"{self.source}: [oracle] kind='lm-eval' needs task = 'NAME'")
        base = Path(self.source).parent if self.source != "<config>" else Path(".")
        args = [m.model_args for m in self.models]
        extra: dict[str, Any] = {"backend": o.backend} if o.backend is not None else {}
        if o.command is not None:
            extra["command"] = shlex.split(o.command)
        if o.extra_args is not None:
            extra["extra_args"] = shlex.split(o.extra_args)
        return LmEvalBridgeOracle(
            self.model_ids,
            [m.lm_eval_model or m.name for m in self.models],
            ids,
            o.task,
            o.samples_dir or str(base / "lm_eval_out"),
            o.plan_dir or str(base / "lm_eval_plans"),
            model_args=[a for a in args if a is not None] if all(args) else None,
            metric=o.metric,
            filter=o.filter,
            include_path=o.include_path,
            execute=o.execute,
            **extra,
        )
