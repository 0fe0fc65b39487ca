"""The TOML configuration of a live selection run."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from latentbench.exceptions import InputError
from latentbench.io import load_items
from latentbench.select._base import Policy
from latentbench.select._policies import POLICIES, make_policy
from latentbench.select._scorers import load_callable
from latentbench.select.oracles import (
    CallableOracle,
    ChatCompletionsOracle,
    ChatEndpoint,
    LmEvalBridgeOracle,
)

__all__ = ["LiveConfig"]


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
        if policy_name not in POLICIES:
            raise InputError(
                f"{where}: [run] policy={policy_name!r}; expected one of {sorted(POLICIES)}"
            )
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

    def publish_options(self) -> dict[str, Any]:
        """Keyword arguments of :meth:`Store.publish_selection` for this run's scores."""
        served = {
            str(m["name"]): str(m.get("model") or m.get("lm_eval_model") or m["name"])
            for m in self.models
        }
        metric = self.scorer if self.oracle.get("kind") != "lm-eval" else "lm-eval"
        return {"benchmark": self.benchmark_name, "metric": metric, "source_models": served}

    def build_policy(self) -> Policy:
        """A fresh policy object from ``[run] policy`` and ``[policy]``."""
        return make_policy(self.policy, self.policy_params, where=f"{self.source}: [policy]")

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
