"""Wall time of ``latentbench fit FILE --out DIR`` with the library's cell limit of the
item bootstrap overridden (issue 28: what raising them costs a plain
fit of MMLU-Pro's whole 29 x 12,032 matrix).

Usage::

    python benchmarks/time_cli_fit.py /work/shared/data/mmlu_pro.parquet --out /tmp/x
    python benchmarks/time_cli_fit.py /work/shared/data/mmlu_pro.parquet --out /tmp/x \\
        --item-bootstrap-max-cells 400000
"""

from __future__ import annotations

import argparse
import sys
import time

from latentbench.cli import main as cli_main
from latentbench.irt import _fitted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path")
    parser.add_argument("--out", required=True)
    parser.add_argument("--item-bootstrap-max-cells", type=int, default=None)
    args = parser.parse_args()
    if args.item_bootstrap_max_cells is not None:
        _fitted.ITEM_BOOTSTRAP_MAX_CELLS = args.item_bootstrap_max_cells
    sys.argv = ["latentbench", "fit", args.path, "--out", args.out]
    start = time.perf_counter()
    try:
        cli_main()
    except SystemExit as exc:  # the CLI exits with its status
        if exc.code not in (0, None):
            raise
    print(
        f"latentbench fit {args.path} (ITEM_BOOTSTRAP_MAX_CELLS "
        f"{_fitted.ITEM_BOOTSTRAP_MAX_CELLS}): {time.perf_counter() - start:.1f} s wall",
        flush=True,
    )


if __name__ == "__main__":
    main()
