"""``python _lm_eval_local_tasks.py run ...``: the installed lm-eval's own command line
(``python -m lm_eval run ...``, same arguments, same evaluator, outputs and version), except
that its task index holds only the ``--include_path`` folders, not lm-eval's ~14,000 built-in
task files.

lm-eval 0.4.13 parses every built-in task file in each process (``TaskManager`` always indexes
its defaults; no command-line option turns that off): about 60% of the CPU of each harness
process of these tests (11.6 s -> 4.5 s CPU, measured), and the bridge tests run one process per
batch. The tests that use this command run only tasks of their own ``--include_path``; the ones
that check lm-eval exactly as users run it (``test_lm_eval_real.py``, ``test_lm_eval_tiny.py``)
keep ``python -m lm_eval``. Refuses to run (exit 2) with an lm-eval whose ``TaskManager`` has no
``include_defaults``, rather than silently indexing the defaults.
"""

from __future__ import annotations

import inspect
import runpy
import sys

from lm_eval.tasks import manager

if "include_defaults" not in inspect.signature(manager.TaskManager.__init__).parameters:
    sys.exit(f"{__file__}: this lm-eval's TaskManager has no include_defaults argument")

_init = manager.TaskManager.__init__


def _local_tasks_only(self, *args, **kwargs):
    kwargs["include_defaults"] = False
    _init(self, *args, **kwargs)


manager.TaskManager.__init__ = _local_tasks_only  # type: ignore[method-assign]
sys.argv = ["lm_eval", *sys.argv[1:]]
runpy.run_module("lm_eval", run_name="__main__", alter_sys=True)
