"""``latentbench.cli._common``: the one-line warnings of every command."""

from __future__ import annotations

import warnings

from latentbench.cli._common import clean_warnings
from latentbench.exceptions import DataWarning


def test_warnings_about_models_whose_names_differ_in_digits_are_all_shown():
    with clean_warnings() as shown:
        for name in ("Hermes-2-Pro-Llama-3-70B", "Hermes-2-Pro-Llama-3-8B"):
            warnings.warn(
                f"model {name!r} is in the calibration; it is ranked among the others",
                DataWarning,
                stacklevel=1,
            )
        for count in (3, 5):  # the same message with other numbers outside quotes: once
            warnings.warn(f"model 'x' answered {count} items", DataWarning, stacklevel=1)
    assert len(shown) == 3, shown
    assert "'Hermes-2-Pro-Llama-3-8B'" in shown[1]
