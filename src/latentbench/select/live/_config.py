"""The TOML configuration of a live selection run (``LiveConfig``)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import tomllib
import urllib.parse
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from latentbench._checks import json_problem, user_stacklevel
from latentbench.exceptions import DataWarning, InputError
from latentbench.io import load_items
from latentbench.io._arrival import tilde_hint, unpacked_path
from latentbench.io._files import file_sha256
from latentbench.io._secrets import (
    SECRET_QUERY,
    argument_secret,
    secret_query_names,
    without_masked,
)
from latentbench.select._base import (
    DEPRECATED_OPTIONS,
    Policy,
    rename_deprecated,
)
from latentbench.select._policies import POLICIES, make_policy
from latentbench.select._proxy import LowRankProxy, fit_history
from latentbench.select.live._options import (
    ItemOptions,
    ModelOptions,
    OracleOptions,
    RunOptions,
    ScorerOptions,
    load_section,
    options_of,
)
from latentbench.select.live._oracles import OracleInfo, get_oracle
from latentbench.select.oracles import Oracle, StreamingOracle

if TYPE_CHECKING:
    import numpy as np

__all__ = ["LiveConfig"]

_SECTIONS = ("run", "policy", "proxy", "oracle", "items", "scorer", "models")


def _read_toml(file: Path) -> dict[str, Any]:
    if file.is_dir():
        raise InputError(f"{file}: is a folder; expected the configuration (TOML) file")
    if not file.is_file():
        raise InputError(f"{file}: configuration file not found{tilde_hint(file)}")
    try:  # a byte-order mark (Notepad) before the first key is not part of it
        return tomllib.loads(file.read_text(encoding="utf-8-sig"))
    except (ValueError, RecursionError) as exc:  # also a huge integer, an array nested deeply
        raise InputError(f"{file}: not valid TOML ({json_problem(exc)})") from None


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


def legacy_policy_params(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with each renamed policy option in its old spelling (``delta`` as
    ``alpha``): the form the default run id hashes."""
    old_for = {new: old for old, new in DEPRECATED_OPTIONS.items()}
    return {old_for.get(k, k): v for k, v in params.items()}


ENDPOINT_FIELDS = ("base_url",)
"""A model entry's fields that say where to reach it, not what it answers: they may change
between sessions of a run (a server moved to another port) and are not part of its
identity or of the key under which its answers are reused."""


def without_endpoints(models: Any) -> Any:
    """The ``answers.models`` of an identity without :data:`ENDPOINT_FIELDS` (runs stored
    before the endpoint left the identity hold it)."""
    if not isinstance(models, dict):
        return models
    return {
        name: {k: v for k, v in entry.items() if k not in ENDPOINT_FIELDS}
        if isinstance(entry, dict)
        else entry
        for name, entry in models.items()
    }


def canonical_identity(identity: dict[str, Any]) -> dict[str, Any]:
    """A stored :meth:`LiveConfig.identity` in today's terms, for comparison with the file's:
    its policy options in today's spelling (a run stored before the rename holds ``alpha``),
    and its models' endpoints left out (a run stored before they left the identity holds
    them), and a key an earlier version stored in it, masked as it is read, left out too
    (:func:`~latentbench.io._secrets.without_masked`: today's file cannot hold the key, and
    the run is the same without it)."""
    params = identity.get("policy_params")
    if isinstance(params, dict):
        renamed = {DEPRECATED_OPTIONS.get(k, k): v for k, v in params.items()}
        identity = {**identity, "policy_params": renamed}
    answers = identity.get("answers")
    if isinstance(answers, dict) and isinstance(answers.get("models"), dict):
        answers = {**answers, "models": without_endpoints(answers["models"])}
        identity = {**identity, "answers": answers}
    masked: dict[str, Any] = without_masked(identity)
    return masked


_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""A ``run_id``: a plain name (no path separators, no leading dot, no control characters)."""

_HOST = re.compile(r"(localhost|[a-z0-9-]+(\.[a-z0-9-]+)+)(:\d+)?(/\S*)?$")
"""A host (a dotted lower-case name or ``localhost``, an optional port and path) written
without its scheme (``127.0.0.1:8000/v1``), which a key is not."""


def _check_base_url(url: str, label: str) -> None:
    """Refuse credentials in a ``base_url`` (they would be stored with the run's options);
    the value is never shown."""
    try:
        parts = urllib.parse.urlsplit(url)
        userinfo = parts.username is not None or parts.password is not None
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        query += urllib.parse.parse_qsl(parts.fragment, keep_blank_values=True)  # #access_token=
    except ValueError:
        raise InputError(
            f"{label}: base_url is not a URL (the value is not shown: it may hold a key); "
            "expected e.g. 'https://api.example.com/v1'"
        ) from None
    secret = [name for name, _ in query if SECRET_QUERY.search(name)]
    secret += secret_query_names(url)  # ;sig=..., as a read masks it (stored unmasked: a key)
    if not (userinfo or secret) and parts.scheme not in ("http", "https"):
        # a URL, or a host without its scheme, is quoted; another value may be a key pasted
        # in the wrong field
        if "://" in url or _HOST.match(url):
            said = f"base_url = {url!r}"
        else:
            said = (
                "base_url is not a URL (the value is not shown: it may be a key, which goes in "
                "an environment variable named with api_key_env)"
            )
        raise InputError(
            f"{label}: {said}; expected an http:// or https:// URL such as "
            "'https://api.example.com/v1'"
        )
    if userinfo or secret:
        where = "a user name or password" if userinfo else f"the query parameter {secret[0]!r}"
        raise InputError(
            f"{label}: base_url holds {where} (the value is not shown and is not stored); "
            "expected a URL without credentials: put the key in an environment variable "
            "and name it with api_key_env"
        )


def _check_harness_argument(text: str, label: str, name: str) -> None:
    """Refuse a key written into a harness argument (``model_args``, ``extra_args``,
    ``command``): they are stored with the run's options and printed in its plan command,
    as a ``base_url``'s credentials would be; the value is never shown."""
    where = argument_secret(text)
    if where:
        raise InputError(
            f"{label}: {name} holds {where} (the value is not shown and is not stored); "
            "expected no credentials in the configuration: it is stored with the run and "
            "printed in its plan. Put the key in the environment, where the harness reads it "
            "(lm-eval's API backends: OPENAI_API_KEY)"
        )


def _models(raw: object, where: str, info: OracleInfo) -> tuple[ModelOptions, ...]:
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
        if isinstance(entry, dict) and isinstance(entry.get("base_url"), str):
            _check_base_url(entry["base_url"], label)
        if isinstance(entry, dict) and isinstance(entry.get("model_args"), str):
            _check_harness_argument(entry["model_args"], label, "model_args")
        model = load_section(ModelOptions, entry, label)
        if any(m.name == model.name for m in models):
            raise InputError(f"{label}: name {model.name!r} repeats; expected unique names")
        for key in info.model_keys:
            if getattr(model, key) is None:
                raise InputError(
                    f"{label} ({model.name!r}): {key}=None; expected a string "
                    f"([oracle] kind={info.name!r} needs it)"
                )
        env = model.api_key_env
        if env is not None and not env.isidentifier():
            raise InputError(
                f"{label} ({model.name}): api_key_env is not a variable name (the value is not "
                "shown: it may be the key); expected the NAME of an environment variable"
            )
        models.append(model)
    return tuple(models)


def _unread_settings(
    info: OracleInfo,
    raw: dict[str, Any],
    loaded: dict[str, ScorerOptions | ItemOptions],
    models: Sequence[ModelOptions],
) -> tuple[str, bool]:
    """The ``[scorer]``, ``[items]`` and ``[[models]]`` settings the configuration gives
    (another value than the default) that oracle kind ``info`` never reads
    (:attr:`OracleInfo.unread`), as one phrase naming them (the sections' values, the models
    that set a model key), empty when there are none; and whether one of them is part of
    :meth:`LiveConfig.identity` (the scorer, the item fields, a model's harness options: all
    but a model's endpoint and key variable), so that dropping it changes the run."""
    parts = []
    keyed = False
    for section, options in loaded.items():
        table = raw.get(section)
        given = table if isinstance(table, dict) else {}
        defaults = {f.name: f.default for f in fields(options)}
        named = [
            f"{key}={getattr(options, key)!r}"
            for key in info.unread.get(section, ())
            if key in given and getattr(options, key) != defaults.get(key)
        ]
        if named:  # the scorer's spec and the item fields are the identity's
            parts.append(f"[{section}] " + ", ".join(named))
            keyed = True
    by_models: dict[tuple[str, ...], list[str]] = {}
    for key in info.unread.get("models", ()):
        names = tuple(m.name for m in models if getattr(m, key) is not None)
        if names:
            by_models.setdefault(names, []).append(key)
            keyed = keyed or key not in ("api_key_env", *ENDPOINT_FIELDS)
    shown = []
    for names, keys in by_models.items():
        who = f"{len(names)} of {len(models)} models"
        if len(names) < len(models):
            who += ": " + ", ".join(map(repr, names[:3])) + (", ..." if len(names) > 3 else "")
        shown.append(f"{', '.join(keys)} ({who})")
    if shown:
        parts.append("[[models]] " + ", ".join(shown))
    return "; ".join(parts), keyed


_STILL_KEYED = (
    "they still key the run and its stored answers: dropped from a run that has started, it "
    "is another run that asks its cells again, or is refused with [run] run_id"
)
"""What the unread settings that are part of :meth:`LiveConfig.identity` still do: a python
oracle's run with ``[scorer] kind = 'multiple_choice'``, told to drop it and run again on the
same store, started another run (another id) and called its function for all 12 cells again
(none reused: the scorer is part of each answer's key), or was refused with ``[run] run_id``."""


def _at(base: Path, value: str) -> Path:
    """A path of the configuration: ``~`` is the home folder (a TOML string is always quoted,
    so no shell expands it), and a relative path is relative to ``base``, the configuration
    file's folder."""
    return (base / Path(value).expanduser()).resolve()


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
        """Read and validate a TOML configuration file (docs/live.md, Configuration).

        Parameters
        ----------
        path : path-like
            The ``run.toml``; relative paths inside it (items, history, a python oracle) are
            read from its folder.

        Returns
        -------
        LiveConfig

        Raises
        ------
        InputError
            A file that is missing or not TOML, an unknown section or key, a bad value, or a
            credential written into the file (keys come from environment variables), named
            with its section and key.

        Warns
        -----
        DataWarning
            ``[scorer]``, ``[items]`` or ``[[models]]`` settings that the ``[oracle] kind``
            never reads (:attr:`OracleInfo.unread <latentbench.select.live.OracleInfo>`), in
            one line naming the kind and the keys.
        """
        file = Path(path)
        return cls.from_dict(_read_toml(file), base_dir=file.parent, source=str(file))

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], *, base_dir: str | os.PathLike[str] = ".", source: str = ""
    ) -> LiveConfig:
        """Validate a configuration given as nested dicts (the TOML layout).

        Parameters
        ----------
        data : dict
            Sections (``run``, ``policy``, ``proxy``, ``oracle``, ``items``, ``scorer``,
            ``models``) as :meth:`from_toml` reads them.
        base_dir : path-like, default "."
            The folder relative paths are read from.
        source : str, optional
            What errors name (a file's path; default ``"<config>"``).

        Returns
        -------
        LiveConfig

        Raises
        ------
        InputError
            As :meth:`from_toml`.

        Warns
        -----
        DataWarning
            As :meth:`from_toml`.
        """
        where = source or "<config>"
        base = Path(base_dir)
        extra = sorted(set(data) - set(_SECTIONS))
        if extra:
            raise InputError(f"{where}: unknown section(s) {extra}; expected {sorted(_SECTIONS)}")

        def policy_name(key: str, value: Any) -> str | None:
            ok = key != "policy" or value in POLICIES
            return None if ok else f"one of {sorted(POLICIES)}"

        run = load_section(RunOptions, data.get("run", {}), f"{where}: [run]", check=policy_name)
        if run.run_id is not None and not _RUN_ID.fullmatch(run.run_id):
            raise InputError(
                f"{where}: [run] run_id={run.run_id!r}; expected 1-128 letters, digits, '.', "
                "'_' or '-', starting with a letter or digit (no path separators)"
            )
        oracle_raw = data.get("oracle", {})
        kind = oracle_raw.get("kind", OracleOptions.kind) if isinstance(oracle_raw, dict) else ""
        info = get_oracle(kind, f"{where}: [oracle]")
        oracle = load_section(info.options, oracle_raw, f"{where}: [oracle] (kind={kind!r})")
        for name in ("command", "extra_args"):
            if isinstance(getattr(oracle, name, None), str):
                _check_harness_argument(getattr(oracle, name), f"{where}: [oracle]", name)
        resolved = {
            f.name: str(_at(base, getattr(oracle, f.name)))
            for f in dataclasses.fields(oracle)
            if f.metadata.get("path") and getattr(oracle, f.name) is not None
        }
        oracle = dataclasses.replace(oracle, **resolved)
        scorer_raw = data.get("scorer", {})
        if isinstance(scorer_raw, str):
            scorer_raw = {"kind": scorer_raw}
        scorer = load_section(ScorerOptions, scorer_raw, f"{where}: [scorer]")
        if scorer.kind == "python" and scorer.function is None:
            raise InputError(f"{where}: [scorer] kind='python' needs function = 'module:function'")
        items = load_section(ItemOptions, data.get("items", {}), f"{where}: [items]")
        items = ItemOptions(**{**asdict(items), "path": str(_at(base, items.path))})
        models = _models(data.get("models"), where, info)
        proxy = _free_table(data, "proxy", where, ("history", *options_of(LowRankProxy)))
        history = proxy.pop("history", None)
        policy_info = POLICIES[run.policy]
        accepted = policy_info.options
        policy = _free_table(
            data, "policy", where, (*accepted, *policy_info.deprecated_options)
        )  # [policy] alpha: the deprecated spelling of delta, renamed with a warning
        policy = rename_deprecated(policy, accepted, where=f"{where}: [policy]")
        unread, keyed = _unread_settings(
            info, {"scorer": scorer_raw, "items": data.get("items")},
            {"scorer": scorer, "items": items}, models,
        )  # fmt: skip
        if unread:  # accepted and never read: one line at load, the identity unchanged
            warnings.warn(
                f"{where}: [oracle] kind={info.name!r} does not read {unread} "
                f"({info.unread_why}): drop them, or choose the oracle kind that reads them"
                + (f"; {_STILL_KEYED}" if keyed else ""),
                DataWarning,
                stacklevel=user_stacklevel(),
            )
        return cls(
            run=run,
            models=models,
            items=items,
            oracle=oracle,
            scorer=scorer,
            policy_options=policy,
            proxy_options=proxy,
            history=None if history is None else _at(base, str(history)),
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
    def oracle_info(self) -> OracleInfo:
        """The registry entry of ``[oracle] kind``."""
        return get_oracle(self.oracle.kind, f"{self.source}: [oracle]")

    @property
    def benchmark_name(self) -> str:
        """Benchmark of the scores copied into the ``responses`` table."""
        if self.run.benchmark:
            return self.run.benchmark
        option = self.oracle_info.benchmark_option
        for key in (option,) if isinstance(option, str) else option or ():
            named = getattr(self.oracle, key, None)
            if named:
                return str(named)
        return unpacked_path(self.items_path).stem if self.items_path is not None else "live"

    def load_items(self) -> list[dict[str, str]]:
        """The items of ``[items] path`` (see :func:`latentbench.io.load_items`).

        Returns
        -------
        list of dict of str to str

        Raises
        ------
        InputError
            When ``[items] path`` is missing, or the file is not readable as items.
        """
        if self.items is None:
            raise InputError(f"{self.source}: [items] path is missing")
        path = Path(self.items.path)
        if not path.exists():  # named as the configuration gives it, as [proxy] history is
            raise InputError(
                f"{self.source}: [items] path = {str(path)!r}: no such file"
                f"{tilde_hint(path)}; expected a JSONL items file with {self.items.id_field!r}"
            )
        return load_items(
            self.items.path,
            id_field=self.items.id_field,
            prompt_field=self.items.prompt_field,
            answer_field=self.items.answer_field,
            require_prompt=self.oracle_info.needs_prompt,
            # a built-in scorer compares the completion with the reference: it must be there
            require_answer=self.oracle_info.needs_prompt and self.scorer.kind != "python",
        )

    def identity(self) -> dict[str, Any]:
        """What fixes the run's decisions: a resumed run must match it exactly.

        Returns
        -------
        dict of str to Any
        """
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
            "history_sha256": file_sha256(self._history_file()) if self.history else None,
            "seed": run.seed,
            "budget": run.budget,
            "batch_size": run.batch_size,
            "init_batch": run.init_batch,
            "stop": run.stop,
            "on_error": run.on_error,
            # only when set: the run ids of configurations without it stay as they were
            **({"epsilon": run.epsilon} if run.epsilon else {}),
            "answers": self.answer_options(),
        }

    def answer_options(self) -> dict[str, Any]:
        """What the answers depend on beyond the items and the scorer: the oracle's options
        except those marked :func:`~latentbench.select.live._options.workflow` (timeouts,
        retries, concurrency, the harness's folders), and each model's served name and
        harness options (not its key's variable, nor its ``base_url``: where to reach a model
        may change between sessions, :data:`ENDPOINT_FIELDS`). Part of :meth:`identity`: a
        run resumed with another temperature or served model would mix answers of two
        configurations.

        Returns
        -------
        dict of str to Any
            Keys ``oracle``, ``models`` and, for python code, ``code``.
        """
        skip = {f.name for f in fields(self.oracle) if f.metadata.get("workflow")} | {"kind"}
        oracle = {k: v for k, v in asdict(self.oracle).items() if v is not None and k not in skip}
        models = {
            m.name: {k: v for k, v in asdict(m).items() if v is not None and k not in (
                "name", "api_key_env", *ENDPOINT_FIELDS)}
            for m in self.models
        }  # fmt: skip
        # a python oracle's or scorer's answers are its code's: the file it is imported from
        from latentbench.select._scorers import module_sha256

        base = Path(self.source).parent if self.source != "<config>" else Path(".")
        code = {}
        function = getattr(self.oracle, "function", None)
        if self.oracle.kind == "python" and function:
            code["oracle"] = module_sha256(function, base)
        if self.scorer.kind == "python" and self.scorer.function:
            code["scorer"] = module_sha256(self.scorer.function, base)
        return {"oracle": oracle, "models": models, **({"code": code} if code else {})}

    def stored_answer_options(self, record: dict[str, Any]) -> dict[str, Any]:
        """:meth:`answer_options` rebuilt from a run record stored before the identity held
        them (its ``oracle`` and ``models``, read with this configuration's oracle kind; the
        ``code`` of a python oracle or scorer was not recorded then), for comparison with
        ``{"oracle": ..., "models": ...}`` of :meth:`answer_options`.

        Parameters
        ----------
        record : dict of str to Any
            A stored run record (its ``oracle`` and ``models``).

        Returns
        -------
        dict of str to Any
            Keys ``oracle`` and ``models``.
        """
        # this kind's own answer options (an older record also holds other kinds' defaults)
        keep = {f.name for f in fields(self.oracle) if not f.metadata.get("workflow")}
        oracle = {k: v for k, v in (record.get("oracle") or {}).items()
                  if v is not None and k in keep - {"kind"}}  # fmt: skip
        models = {
            str(m.get("name")): {k: v for k, v in m.items()
                                 if v is not None and k not in ("name", "api_key_env",
                                                                 *ENDPOINT_FIELDS)}
            for m in record.get("models") or ()
            if isinstance(m, dict)
        }  # fmt: skip
        return {"oracle": oracle, "models": models}

    def default_run_id(self, legacy: bool = False) -> str:
        """``live-`` and 16 hex digits of the SHA-256 of :meth:`identity`.

        The hash reads policy options in their spelling before the rename (``alpha`` for
        ``delta``), so that a run started then resumes under the same id whichever spelling
        the file uses now. ``legacy``: the id before the identity held
        :meth:`answer_options` (a run stored then resumes under it).

        Parameters
        ----------
        legacy : bool, default False
            Hash the identity without its ``answers``.

        Returns
        -------
        str
        """
        identity = self.identity()
        if legacy:
            identity.pop("answers")
        identity["policy_params"] = legacy_policy_params(identity["policy_params"])
        text = json.dumps(identity, sort_keys=True, default=str)
        return "live-" + hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_record(self) -> dict[str, Any]:
        """The options stored with the run (no secrets: only environment variable names).

        Returns
        -------
        dict of str to Any
        """
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
        """Keyword arguments of :meth:`Store.publish_selection` for this run's scores.

        Returns
        -------
        dict of str to Any
            Keys ``benchmark``, ``metric`` and ``source_models``.
        """
        served = {m.name: m.served for m in self.models}
        metric = self.oracle_info.metric or self.scorer.spec
        return {"benchmark": self.benchmark_name, "metric": metric, "source_models": served}

    def build_policy(self, shape: tuple[int, int] | None = None) -> Policy:
        """A fresh policy object from ``[run] policy`` and ``[policy]``; with ``shape``
        (models, items) its size-like options are bounded by the data.

        Parameters
        ----------
        shape : tuple of (int, int), optional
            ``(n_models, n_items)`` of the run.

        Returns
        -------
        Policy

        Raises
        ------
        InputError
            For an unknown policy or option, or an option value outside its range.
        """
        where = f"{self.source}: [policy]"
        return make_policy(self.run.policy, self.policy_options, where=where, shape=shape)

    def _history_file(self) -> Path:
        """``[proxy] history``, checked: an existing file (else an error naming the key)."""
        assert self.history is not None
        where = f"{self.source}: [proxy] history = {str(self.history)!r}"
        if not self.history.exists():
            raise InputError(f"{where}: no such file; expected a response matrix file")
        if not self.history.is_file():
            raise InputError(f"{where}: not a file; expected a response matrix file")
        return self.history

    def build_proxy(self, item_ids: Sequence[str]) -> LowRankProxy | None:
        """Fit the low-rank proxy on ``[proxy] history`` (None when no history is given).

        Parameters
        ----------
        item_ids : sequence of str
            The run's items, in order: the history's columns are taken in this order.

        Returns
        -------
        LowRankProxy or None

        Raises
        ------
        InputError
            When the history lacks an item, or the ``[proxy]`` options are invalid.
        """
        checked = self._history_proxy(item_ids)
        if checked is None:
            return None
        proxy, H = checked
        return fit_history(proxy, H, f"[proxy] history ({self.history})")

    def _history_proxy(self, item_ids: Sequence[str]) -> tuple[LowRankProxy, np.ndarray] | None:
        """The unfitted proxy and the history's scores (shape (n_history, n_items), the
        columns in ``item_ids``' order), after every check :meth:`build_proxy` makes before
        its fit (None without a history): a policy that learns no proxy refuses the same
        histories without the fit it does not use."""
        if self.history is None:
            return None
        from latentbench.io import ResponseMatrix

        matrix = ResponseMatrix.read(self._history_file())
        columns = {str(i): k for k, i in enumerate(matrix.item_ids)}
        missing = [i for i in item_ids if i not in columns]
        if missing:
            raise InputError(
                f"{self.history}: history lacks {len(missing)} item(s) of the items file "
                f"(first {missing[0]!r}); expected a column for every item id"
            )
        H = matrix.scores[:, [columns[i] for i in item_ids]]
        params = {"random_state": self.run.seed, **self.proxy_options}
        _check_proxy_sizes(params, H.shape, f"{self.source}: [proxy]", self.history)
        try:
            proxy = LowRankProxy(**params)
        except (TypeError, ValueError) as exc:
            raise InputError(f"{self.source}: [proxy] {params!r}: {exc}") from None
        try:
            fit_input = proxy._fit_input(H)  # checks the options' values (sigma = -1)
        except InputError as exc:
            raise InputError(f"{self.source}: [proxy] {exc}") from None
        return proxy, fit_input

    def history_candidates(self) -> list[str]:
        """The ``[[models]]`` names that ``[proxy] history`` holds too (its model ids): the
        proxy has seen their answers, so the cells a run uses are optimistic for a new pool
        (``select replay`` says the same of its ``--history``). Empty without a history.

        Returns
        -------
        list of str
        """
        if self.history is None:
            return []
        from latentbench.io import ResponseMatrix

        held = {str(m) for m in ResponseMatrix.read(self._history_file()).model_ids}
        return [m for m in self.model_ids if m in held]

    def build_oracle(self, items: Sequence[dict[str, str]]) -> Oracle | StreamingOracle:
        """The inner oracle named by ``[oracle] kind`` (built by its registry entry).

        Parameters
        ----------
        items : sequence of dict of str to str
            The items, as :meth:`load_items` gives them.

        Returns
        -------
        Oracle or StreamingOracle
        """
        return self.oracle_info.build(self, items)


_ITERATIONS = {"max_iter": 100_000, "newton_iter": 10_000}
"""Upper bounds of the proxy's iteration counts (time, not memory, grows with them)."""


def _check_proxy_sizes(
    params: dict[str, Any], shape: tuple[int, int], where: str, history: Path
) -> None:
    """Bound every size-like ``[proxy]`` option by the data: ``rank`` and the ``cv_grid``
    ranks by min(history models, items), ``cv_cells`` and ``max_cells`` by the cells, the
    iteration counts by :data:`_ITERATIONS` (``rank = 100000`` asked for 74.5 GiB)."""
    m, n = shape
    top = max(1, min(m, n))
    limits: dict[str, tuple[int, str]] = {
        "rank": (top, f"min(history models, items) = {top} for {history.name}"),
        "cv_cells": (max(1, m * n), f"the {m * n:,} cells of {history.name}"),
        "max_cells": (2**62, "a positive integer"),
        **{k: (v, f"{v:,}") for k, v in _ITERATIONS.items()},
    }
    for key, (high, what) in limits.items():
        value = params.get(key)
        if value is None or (key == "rank" and value == "auto"):
            continue
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
            extra = " or 'auto'" if key == "rank" else ""
            raise InputError(
                f"{where} {key}={value!r}; expected an integer in [1, {high:,}]{extra} ({what})"
            )
    grid = params.get("cv_grid")
    if grid is not None:
        ok = isinstance(grid, (list, tuple)) and 0 < len(grid) <= 64
        ok = ok and all(
            isinstance(r, int) and not isinstance(r, bool) and 1 <= r <= top for r in grid
        )
        if not ok:
            raise InputError(
                f"{where} cv_grid={grid!r}; expected a list of 1-64 ranks in [1, {top}] "
                f"(min(history models, items) for {history.name})"
            )
        params["cv_grid"] = tuple(grid)
