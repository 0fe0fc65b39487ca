"""``python _lm_eval_local_tasks.py run ...``: lm-eval's own command line (``python -m lm_eval
run ...``, same arguments, same evaluator, outputs and version; the lm-eval first on
``PYTHONPATH``), with two costs of its start-up left out that a run of a local task on an API
or dummy model never uses:

- the task index holds only the ``--include_path`` folders, not lm-eval's ~14,000 built-in task
  files. lm-eval (0.4.10-0.4.13) parses every built-in task file in each process
  (``TaskManager`` always indexes its defaults; no command-line option turns that off): about
  6 s of CPU per process, measured;
- torch is left unimported, as in lm-eval's torch-free install (``lm-eval[api]``): lm-eval
  imports it only to seed it (``set_torch_seed``) and to describe the environment in the results
  file (``pretty_env_info``: torch's ``collect_env``, which runs ``pip list`` in a subprocess).
  About 2.3 s of CPU per process, measured (4.1 s -> 1.8 s); the results file then says
  ``"pretty_env_info": "N/A (torch not installed)"``. These runs' models never use torch.

Every test of a real lm-eval run runs only tasks of its own ``--include_path``, and uses this
command (``LM_EVAL_LOCAL_TASKS``); that it is lm-eval's command line with only the
``--include_path`` tasks indexed is checked by
``test_lm_eval_bridge.py::test_the_local_tasks_command_is_lm_eval_indexing_only_the_include_path``.
Refuses to run (exit 2) with an lm-eval whose
``TaskManager`` has no ``include_defaults`` or that has no ``is_torch_available``, rather than
silently indexing the defaults or importing torch.
"""

from __future__ import annotations

import inspect
import runpy
import sys

import lm_eval.utils
from lm_eval.tasks import TaskManager

if "include_defaults" not in inspect.signature(TaskManager.__init__).parameters:
    sys.exit(f"{__file__}: this lm-eval's TaskManager has no include_defaults argument")
if not callable(getattr(lm_eval.utils, "is_torch_available", None)):
    sys.exit(f"{__file__}: this lm-eval has no lm_eval.utils.is_torch_available")

_init = TaskManager.__init__


def _local_tasks_only(self, *args, **kwargs):
    kwargs["include_defaults"] = False
    _init(self, *args, **kwargs)


def _no_torch() -> bool:
    return False


TaskManager.__init__ = _local_tasks_only  # type: ignore[method-assign]
# read at call time by set_torch_seed and add_env_info (``from lm_eval.utils import ...`` inside)
lm_eval.utils.is_torch_available = _no_torch
sys.argv = ["lm_eval", *sys.argv[1:]]
runpy.run_module("lm_eval", run_name="__main__", alter_sys=True)
