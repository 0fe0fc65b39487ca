"""HELM ``per_instance_stats.json`` (``docs/formats.md``, HELM).

A run folder ``benchmark_output/runs/<suite>/<run_name>/`` holds ``per_instance_stats.json``, a
list of ``{instance_id, perturbation, train_trial_index, stats: [Stat]}``. The score is the
``mean`` of the chosen stat. Perturbed instances are excluded unless ``include_perturbed``;
when included, their ``filter`` is the perturbation name. ``train_trial_index`` is the trial.

The model comes from ``run_spec.json`` (``adapter_spec.model``) before the ``model=`` argument
of the run name; the benchmark is the run name without its ``model=`` and
``model_deployment=`` arguments (e.g. ``mmlu:subject=anatomy,method=multiple_choice_joint``).
HELM files carry no run timestamp, so ``run_timestamp`` is empty.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from latentbench.exceptions import InputError
from latentbench.io.formats._common import (
    Choice,
    Columns,
    LoadReport,
    coerce_score,
    load_json,
    resolve,
    where,
)
from latentbench.io.formats._registry import reader

PATTERNS = ("**/per_instance_stats.json",)

_MODEL_ARGS = ("model", "model_deployment")


def _split_run_name(run_name: str) -> tuple[str, str | None]:
    """(benchmark, model argument) from ``scenario:arg=v,...,model=org_name``."""
    scenario, sep, args = run_name.partition(":")
    if not sep:
        return run_name, None
    kept: list[str] = []
    model = None
    for part in args.split(","):
        key, _, value = part.partition("=")
        if key == "model":
            model = value
        if key in _MODEL_ARGS:
            continue
        kept.append(part)
    return (f"{scenario}:{','.join(kept)}" if kept else scenario), model


def _perturbation_name(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, dict):
        return str(value.get("name") or "perturbed")
    return str(value)


@reader(
    "helm",
    summary="HELM run folders (per_instance_stats.json)",
    patterns=PATTERNS,
)
def read(
    path: Path,
    report: LoadReport,
    *,
    benchmark: str | None,
    metric: Choice,
    model: str | None,
    include_perturbed: bool = False,
) -> pd.DataFrame:
    """Read one ``per_instance_stats.json`` into canonical rows."""
    run_dir = path.parent
    run_name = run_dir.name
    spec_model = None
    spec_path = run_dir / "run_spec.json"
    if spec_path.exists():
        spec = load_json(spec_path)
        if isinstance(spec, dict):
            run_name = str(spec.get("name") or run_name)
            spec_model = (spec.get("adapter_spec") or {}).get("model")
    bench, arg_model = _split_run_name(run_name)
    source_model = str(spec_model or arg_model or run_dir.name)
    canonical = model or source_model
    name = benchmark or bench

    data = load_json(path)
    if not isinstance(data, list):
        raise InputError(
            f"{path}: top level is {type(data).__name__}; expected a list of per-instance stats"
        )
    report.records_read += len(data)
    available: set[str] = set()
    for index, entry in enumerate(data):
        if not isinstance(entry, dict) or "instance_id" not in entry:
            raise InputError(
                f"{where(path, record=index)}: expected an object with 'instance_id' and 'stats'"
            )
        stats = entry.get("stats")
        if not isinstance(stats, list):
            raise InputError(
                f"{where(path, record=index)}: field 'stats': value {stats!r}; expected a "
                "list of Stat"
            )
        for stat in stats:
            stat_name = (stat.get("name") or {}) if isinstance(stat, dict) else {}
            if isinstance(stat_name, dict) and stat_name.get("name"):
                available.add(str(stat_name["name"]))
    chosen, how = resolve("metric", metric, name, sorted(available), str(path))
    report.choose(name, "metric", chosen, how)
    report.choose(name, "filter", "none" if not include_perturbed else "perturbation", "default")

    out = Columns()
    for index, entry in enumerate(data):
        perturbation = _perturbation_name(entry.get("perturbation"))
        if perturbation is not None and not include_perturbed:
            report.drop("perturbed instance (include_perturbed=False)")
            continue
        loc = where(path, record=index)
        matches = [
            stat
            for stat in entry["stats"]
            if isinstance(stat, dict) and (stat.get("name") or {}).get("name") == chosen
        ]
        if not matches:
            report.drop("stat absent (HELM drops NaN stats)")
            continue
        if len(matches) > 1:
            raise InputError(
                f"{loc}: stat {chosen!r} appears {len(matches)} times for instance "
                f"{entry['instance_id']!r}; expected one"
            )
        stat = matches[0]
        if "mean" not in stat:
            raise InputError(f"{loc}: stat {chosen!r} has no field 'mean'; expected a HELM Stat")
        score = coerce_score(stat["mean"], loc, f"{chosen}.mean")
        if score is None:
            report.drop("metric value missing (null/NaN)")
            continue
        trial = entry.get("train_trial_index", 0)
        if not isinstance(trial, int) or isinstance(trial, bool):
            raise InputError(
                f"{loc}: field 'train_trial_index': value {trial!r}; expected an integer"
            )
        out.add(
            canonical,
            name,
            str(entry["instance_id"]),
            score,
            chosen,
            perturbation or "none",
            trial,
            source_model,
            index,
        )
    return out.frame("helm", str(path), None)
