"""Oracle (d): the lm-evaluation-harness, driven one written plan at a time."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from latentbench.exceptions import InputError, PlanPending
from latentbench.select.oracles._protocol import CellResult

__all__ = ["LmEvalBridgeOracle"]


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
