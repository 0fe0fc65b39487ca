"""HELM ``per_instance_stats.json`` (``docs/formats.md``, HELM).

A run folder ``benchmark_output/runs/<suite>/<run_name>/`` holds ``per_instance_stats.json``, a
list of ``{instance_id, perturbation, train_trial_index, stats: [Stat]}``. The score is the
``mean`` of the chosen stat. Perturbed instances are excluded unless ``include_perturbed``;
when included, their ``filter`` is the perturbation name. ``train_trial_index`` is the trial.

The model comes from ``run_spec.json`` (``adapter_spec.model``) before the ``model=`` argument
of the run name; the benchmark is the run name without its ``model=`` and
``model_deployment=`` arguments (e.g. ``mmlu:subject=anatomy,method=multiple_choice_joint``).
HELM files carry no run timestamp, so ``run_timestamp`` is empty.

Splits: every stat names the split of its instance (``valid``, ``test``). The split is recorded
in ``split``; only one split is kept, ``test`` by default (``split=`` chooses another), and
instances of other splits are dropped with a reason, never merged.

Metrics: only item scores are offered (stats whose every mean lies in [0, 1], excluding
counts, costs, runtimes, token numbers, log-probabilities and finish reasons such as
``batch_size``, ``num_prompt_tokens`` or ``training_co2_cost``). A correctness stat
(``exact_match`` and its kin) stays offered when a value lies outside: that cell is refused,
naming its instance.

Stats where lower is better (``toxic_frac``, ``expected_max_toxicity``, an error rate) are no
item scores either: every fit reads 1 as a correct answer. They are not offered, and one asked
for is refused. HELM's own metadata says which: the ``schema.json`` that ``helm-summarize``
writes in the suite folder (``metrics[].lower_is_better``), else the names its schemas and
metric classes mark so (``_LOWER_IS_BETTER``).

``display_predictions.json`` (written by ``helm-summarize``: ``instance_id``,
``train_trial_index``, ``stats: {name: value}``) is read when a run folder has no
``per_instance_stats.json``; its split comes from ``instances.json`` when present.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pandas as pd

from latentbench._checks import bounded_score
from latentbench.exceptions import InputError
from latentbench.io._arrival import unpacked_path
from latentbench.io.formats._common import (
    UNKNOWN_SPLIT,
    Choice,
    Columns,
    LoadReport,
    beside,
    coerce_score,
    load_json,
    lower_is_better_error,
    only_lower_is_better_error,
    requested,
    resolve,
    where,
)
from latentbench.io.formats._registry import reader

PATTERNS = ("**/per_instance_stats.json", "**/display_predictions.json")

DEFAULT_SPLIT = "test"

_NOT_SCORES_PREFIX = ("num_", "finish_reason_", "training_", "inference_", "logprob", "idealized_")
_NOT_SCORES_SUFFIX = ("_tokens", "_cost", "_runtime", "_time", "_perplexity")
_NOT_SCORES = frozenset(
    {
        "batch_size",
        "prompt_truncated",
        "max_prob",
        "num_bytes",
        "perplexity",
        "bits_per_byte",
        "logprob_per_byte",
        "predicted_index",  # the option chosen (0, 1, 2, ...): an index, never a score
    }
)


_CORRECTNESS = re.compile(
    r"^(?:(?:quasi_|prefix_|quasi_prefix_|quasi_leave_articles_|final_number_)?exact_match"
    r"(?:@\d+)?(?:_indicator)?|"
    r"(?:f1|f1_score|rouge_[12l]|bleu_[14]|chinese_bleu_1|chinese_rouge_[12]|"
    r"(?:exact|iou|f1)_set_match|math_equiv(?:_chain_of_thought)?|code_eval_acc|pass|"
    r"cleva_math_result_match|ifeval_strict_accuracy|omni_math_accuracy|"
    r"wildbench_score_rescaled|chain_of_thought_correctness|equivalent|accuracy)"
    r")$"
)
"""HELM's correctness stats, scores in [0, 1] by definition (``wildbench_score`` is a 1-10
judge score: only its ``_rescaled`` form is one): one value outside is a bad cell (refused
naming it). Any other stat is an item score only when every value lies in [0, 1]
(an index such as ``predicted_index``, 0 to 3, takes 0 and 1 too)."""


_LOWER_IS_BETTER = frozenset(
    {
        "absolute_value_difference",
        "bbq_metric_ambiguous_bias",
        "bbq_metric_unambiguous_bias",
        "blacked_out_frac",
        "blacked_out_frac_given_toxic_prompt=False",
        "blacked_out_frac_given_toxic_prompt=True",
        "cer_score",
        "chinese_cer_score",
        "chinese_mer_score",
        "chinese_wer_score",
        "copyright_human",
        "decodingtrust_privacy_leakage_rate",
        "demographic_parity_difference",
        "distance",
        "ece_10_bin",
        "ece_1_bin",
        "equalized_odds_difference",
        "error_rate",
        "expected_lpips_score",
        "expected_max_nsfw_score",
        "expected_max_nsfw_score_given_toxic_prompt=False",
        "expected_max_nsfw_score_given_toxic_prompt=True",
        "expected_max_toxicity",
        "expected_max_watermark_prob",
        "fid",
        "fractal_dimension_loss",
        "gender_imbalance",
        "kernel_inception_distance",
        "longest_common_prefix_length",
        "max_nsfw_probability",
        "max_nsfw_probability_given_toxic_prompt=False",
        "max_nsfw_probability_given_toxic_prompt=True",
        "max_toxicity_probability",
        "mer",
        "mer_score",
        "nsfw_frac",
        "nsfw_frac_given_toxic_prompt=False",
        "nsfw_frac_given_toxic_prompt=True",
        "nudity_frac",
        "platt_ece_10_bin",
        "platt_ece_1_bin",
        "skin_tone_imbalance",
        "toxic_frac",
        "toxic_prompt_openai",
        "toxic_prompt_perspective_api",
        "watermark_frac",
        "wer",
        "wer_score",
    }
)
"""HELM's stats where lower is better (``lower_is_better: true`` in the schemas HELM ships and
in its metric classes' metadata, crfm-helm's main branch of 2025), counts and costs aside.
``edit_similarity`` is lower-is-better only in the copyright scenario (``_LOWER_IN_SCENARIO``):
image2struct marks it higher-is-better."""

_LOWER_IS_BETTER_PATTERN = re.compile(r"^bias_metric:|(?:^|_)error_rate$")
"""HELM's bias stats (``bias_metric:mode=...,demographic_category=...``) and error rates."""

_LOWER_IN_SCENARIO = {"copyright": frozenset({"edit_similarity"})}
"""Stats lower-is-better in one scenario only (the run name's part before ``:``)."""


def is_score_name(name: str) -> bool:
    """False for HELM stats that are not item scores (counts, costs, runtimes, logprobs)."""
    return not (
        name in _NOT_SCORES
        or name.startswith(_NOT_SCORES_PREFIX)
        or name.endswith(_NOT_SCORES_SUFFIX)
    )


_MODEL_ARGS = ("model", "model_deployment")


_COPIED_RUN_NAME = re.compile(r"^(?P<scenario>[A-Za-z0-9_.]+)-(?P<args>[A-Za-z_]+=.*)$")
"""A run folder's name where ``:`` could not be kept (a copy through Windows or a repository:
``narrative_qa-model=openai_gpt2`` for ``narrative_qa:model=openai_gpt2``)."""


def _split_run_name(run_name: str) -> tuple[str, str | None]:
    """(benchmark, model argument) from ``scenario:arg=v,...,model=org_name`` (or the folder
    name of a copy, ``scenario-arg=v,...``: without ``run_spec.json`` it was the model and
    the benchmark name, whole)."""
    scenario, sep, args = run_name.partition(":")
    if not sep:
        copied = _COPIED_RUN_NAME.match(run_name)
        if copied is None:
            return run_name, None
        scenario, args = copied["scenario"], copied["args"]
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


def _run_meta(run_dir: Path) -> tuple[str, str | None]:
    """(run name, model) from ``run_spec.json`` or the folder name."""
    run_name = run_dir.name
    spec_model = None
    spec_path = beside(run_dir, "run_spec.json")
    if spec_path is not None:
        spec = load_json(spec_path)
        if isinstance(spec, dict):
            run_name = str(spec.get("name") or run_name)
            spec_model = (spec.get("adapter_spec") or {}).get("model")
    return run_name, spec_model


def _instance_splits(run_dir: Path) -> dict[str, str]:
    """instance id -> split from ``instances.json`` (written by ``helm-summarize``)."""
    path = beside(run_dir, "instances.json")
    if path is None:
        return {}
    data = load_json(path)
    if not isinstance(data, list):
        return {}
    return {
        str(entry["id"]): str(entry["split"])
        for entry in data
        if isinstance(entry, dict) and "id" in entry and entry.get("split")
    }


def _entries(path: Path) -> tuple[list[dict[str, Any]], bool]:
    """(entries, flat): per-instance stats as ``[(name, split, mean)]`` rows per entry."""
    data = load_json(path)
    if not isinstance(data, list):
        raise InputError(
            f"{path}: top level is {type(data).__name__}; expected a list of per-instance stats"
        )
    flat = unpacked_path(path).name == "display_predictions.json"
    splits = _instance_splits(path.parent) if flat else {}
    entries = []
    for index, entry in enumerate(data):
        loc = where(path, record=index)
        if not isinstance(entry, dict) or "instance_id" not in entry:
            raise InputError(f"{loc}: expected an object with 'instance_id' and 'stats'")
        stats = entry.get("stats")
        values: list[tuple[str, str, Any, bool]] = []  # (name, split, mean, has mean)
        if flat:
            if not isinstance(stats, dict):
                raise InputError(
                    f"{loc}: field 'stats': value {stats!r}; expected a mapping of stat name to "
                    "value (display_predictions.json)"
                )
            split = splits.get(str(entry["instance_id"]), UNKNOWN_SPLIT)
            values = [(str(k), split, v, True) for k, v in stats.items()]
        else:
            if not isinstance(stats, list):
                raise InputError(f"{loc}: field 'stats': value {stats!r}; expected a list of Stat")
            for stat in stats:
                stat_name = (stat.get("name") or {}) if isinstance(stat, dict) else {}
                if isinstance(stat_name, dict) and stat_name.get("name"):
                    values.append(
                        (
                            str(stat_name["name"]),
                            str(stat_name.get("split") or UNKNOWN_SPLIT),
                            stat.get("mean"),
                            "mean" in stat,
                        )
                    )
        entries.append({**entry, "_values": values})
    return entries, flat


@reader(
    "helm",
    summary="HELM run folders (per_instance_stats.json, display_predictions.json)",
    patterns=PATTERNS,
    item_field="instance_id",
    packed=True,
)
def read(
    path: Path,
    report: LoadReport,
    *,
    benchmark: str | None,
    metric: Choice,
    model: str | None,
    include_perturbed: bool = False,
    split: str | None = None,
) -> pd.DataFrame:
    """Read one ``per_instance_stats.json`` (or ``display_predictions.json``) into rows."""
    run_dir = path.parent
    flat = unpacked_path(path).name == "display_predictions.json"
    if flat and beside(run_dir, "per_instance_stats.json") is not None:
        report.skip_file(path, "per_instance_stats.json of the same run is read instead")
        return Columns().frame("helm", str(path), None)
    run_name, spec_model = _run_meta(run_dir)
    bench, arg_model = _split_run_name(run_name)
    source_model = str(spec_model or arg_model or run_dir.name)
    canonical = model or source_model
    if not spec_model and model is None:  # said, as lm-eval says a model named by a folder
        missing = (  # the file itself, where the folder has none (not a field of it)
            "no run_spec.json"
            if beside(run_dir, "run_spec.json") is None
            else "no model in run_spec.json (adapter_spec.model)"
        )
        report.notes.append(
            f"{run_dir}: {missing}; the model is {source_model!r}, from the run's name "
            "(HELM's run_spec names it 'org/name': model= sets it)"  # the CLI: --model
        )
    name = benchmark or bench
    report.rename(benchmark, bench)

    entries, flat = _entries(path)
    report.records_read += len(entries)
    offered, splits = _offered_stats(entries)
    lower = _lower_is_better(run_dir, bench, offered, report)
    chosen = _choose_stat(path, report, name, metric, offered, lower)
    report.choose(name, "filter", "none" if not include_perturbed else "perturbation", "default")
    keep_split = _keep_split(split, splits)
    report.choose(name, "split", keep_split, "given" if split is not None else "default")

    out = Columns(split=keep_split)
    for index, entry in enumerate(entries):
        _read_entry(
            out,
            report,
            path,
            entry,
            (canonical, name, source_model, chosen),
            index=index,
            keep_split=keep_split,
            include_perturbed=include_perturbed,
            flat=flat,
        )
    return out.frame("helm", str(path), None)


def _offered_stats(entries: list[dict[str, Any]]) -> tuple[dict[str, bool], dict[str, None]]:
    """Per stat name, whether it is offered as an item score; and the splits, in order.

    A stat is an item score when its name is one and every value lies in [0, 1] (a rounding
    past 0 or 1 is the bound; a count, a cost, a token number or an index is not); for a
    correctness stat (exact_match, ...) a value outside is a bad cell, refused when read,
    naming its instance.
    """
    n_numeric: dict[str, int] = {}
    n_outside: dict[str, int] = {}
    splits: dict[str, None] = {}
    for entry in entries:
        for stat_name, stat_split, mean, _has in entry["_values"]:
            splits.setdefault(stat_split, None)
            numeric = isinstance(mean, (int, float)) and not isinstance(mean, bool)
            # (a rounding past 0 or 1, 1.0000000000000002, is the bound: read as one)
            outside = numeric and (mean != mean or bounded_score(float(mean)) is None)
            n_numeric[stat_name] = n_numeric.get(stat_name, 0) + int(numeric)
            n_outside[stat_name] = n_outside.get(stat_name, 0) + int(outside)
    offered = {
        n: is_score_name(n)
        and (
            n_outside[n] == 0 or (_CORRECTNESS.match(n) is not None and n_outside[n] < n_numeric[n])
        )
        for n in n_numeric
    }
    return offered, splits


def _schema_path(run_dir: Path) -> Path | None:
    """The ``schema.json`` that ``helm-summarize`` writes in the suite folder above a run."""
    return beside(run_dir.parent, "schema.json")


@functools.lru_cache(maxsize=8)
def _schema_marks_of(path: str, _stamp: tuple[int, int]) -> tuple[tuple[str, bool, int], ...]:
    """(stat name, lower_is_better, index in ``metrics``) for each metric of a HELM
    ``schema.json`` that says which way it goes (``_stamp``: the file's mtime and size, so a
    file written again is read again)."""
    data = load_json(Path(path))
    metrics = data.get("metrics") if isinstance(data, dict) else None
    if not isinstance(metrics, list):
        return ()
    return tuple(
        (str(m["name"]), m["lower_is_better"], index)
        for index, m in enumerate(metrics)
        if isinstance(m, dict) and m.get("name") and isinstance(m.get("lower_is_better"), bool)
    )


def _schema_marks(run_dir: Path, report: LoadReport) -> tuple[Path | None, dict[str, tuple]]:
    """HELM's ``schema.json`` above ``run_dir`` and its marks, name -> (lower, index); none
    when there is no such file, or when it cannot be read (said in a note)."""
    path = _schema_path(run_dir)
    if path is None:
        return None, {}
    stat = path.stat()
    try:
        marks = _schema_marks_of(str(path), (stat.st_mtime_ns, stat.st_size))
    except InputError as error:
        note = (
            f"{error}; HELM's metric metadata in it (metrics[].lower_is_better) was not read: "
            "the stats where lower is better are those HELM's own schemas mark so"
        )
        if note not in report.notes:
            report.notes.append(note)
        return None, {}
    return path, {name: (low, index) for name, low, index in marks}


def _lower_is_better(
    run_dir: Path, bench: str, offered: dict[str, bool], report: LoadReport
) -> dict[str, str]:
    """The offered stats where lower is better, each with what says so: the suite's
    ``schema.json`` (``metrics[i].lower_is_better``), else HELM's marks (``_LOWER_IS_BETTER``
    and the rest)."""
    schema, marks = _schema_marks(run_dir, report)
    scenario = bench.partition(":")[0]
    lower: dict[str, str] = {}
    for name, ok in offered.items():
        if not ok:
            continue
        if name in marks:
            low, index = marks[name]
            if low:
                lower[name] = f"{schema}: metrics[{index}] says lower_is_better: true"
        elif (
            name in _LOWER_IS_BETTER
            or _LOWER_IS_BETTER_PATTERN.search(name)
            or name in _LOWER_IN_SCENARIO.get(scenario, ())
        ):
            where_said = f" in scenario {scenario!r}" if name not in _LOWER_IS_BETTER else ""
            lower[name] = f"HELM's schemas mark it lower_is_better: true{where_said}"
    return lower


def _choose_stat(
    path: Path,
    report: LoadReport,
    name: str,
    metric: Choice,
    offered: dict[str, bool],
    lower: dict[str, str],
) -> str:
    """The stat read as the score (recorded in ``report``); a stat asked for that is no item
    score, or one where lower is better (``lower``: stat -> what says so), is refused."""
    available = sorted(n for n, ok in offered.items() if ok and n not in lower)
    wanted = requested(metric, name)
    if wanted is not None and wanted in offered and not offered[wanted]:
        raise InputError(
            f"{path}: stat {wanted!r} is not an item score (a count, cost, runtime, token number "
            f"or index: values outside [0, 1]); choose one of {', '.join(available) or '(none)'}"
        )
    if wanted is not None and wanted in lower:
        # a toxicity fraction or an error rate: stored as it is, 0 would be the best answer
        raise lower_is_better_error(str(path), "stat", wanted, lower[wanted], available)
    if wanted is None and not available and lower:
        raise only_lower_is_better_error(str(path), "stat", name, lower)
    chosen, how = resolve("metric", metric, name, available, str(path))
    report.choose(name, "metric", chosen, how)
    return chosen


def _keep_split(split: str | None, splits: dict[str, None]) -> str:
    """The split read: ``split`` when given, else the default one, or the only one."""
    if split is not None:
        return split
    if DEFAULT_SPLIT in splits or len(splits) != 1:
        return DEFAULT_SPLIT
    return next(iter(splits))


def _entry_stat(entry: dict[str, Any], chosen: str, loc: str) -> Any:
    """The instance's ``chosen`` stat (None when absent); a stat given twice is refused."""
    matches = [v for v in entry["_values"] if v[0] == chosen]
    if not matches:
        return None
    if len(matches) > 1:
        raise InputError(
            f"{loc}: stat {chosen!r} appears {len(matches)} times for instance "
            f"{entry['instance_id']!r}; expected one"
        )
    return matches[0]


def _read_entry(
    out: Columns,
    report: LoadReport,
    path: Path,
    entry: dict[str, Any],
    names: tuple[str, str, str, str],
    *,
    index: int,
    keep_split: str,
    include_perturbed: bool,
    flat: bool,
) -> None:
    """Add one instance's row to ``out`` (or say in ``report`` why it has none); ``names``
    is (model, benchmark, source model, stat)."""
    canonical, name, source_model, chosen = names
    perturbation = _perturbation_name(entry.get("perturbation"))
    if perturbation is not None and not include_perturbed:
        report.drop("perturbed instance (include_perturbed=False)")
        return
    loc = f"{where(path, record=index)} (instance {str(entry['instance_id'])!r})"
    stat = _entry_stat(entry, chosen, loc)
    if stat is None:
        report.drop("stat absent (HELM drops NaN stats)")
        return
    _stat, stat_split, mean, has_mean = stat
    if stat_split != keep_split:
        report.drop(f"other split ({stat_split}; --split {stat_split} keeps it)")
        return
    if not has_mean:
        raise InputError(f"{loc}: stat {chosen!r} has no field 'mean'; expected a HELM Stat")
    score = coerce_score(mean, loc, chosen if flat else f"{chosen}.mean")
    if score is None:
        report.drop("metric value missing (null/NaN)")
        return
    trial = entry.get("train_trial_index", 0)
    if not isinstance(trial, int) or isinstance(trial, bool):
        raise InputError(f"{loc}: field 'train_trial_index': value {trial!r}; expected an integer")
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
