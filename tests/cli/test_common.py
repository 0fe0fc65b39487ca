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


def test_refused_option_values_are_spelled_as_flags():
    from latentbench.cli._common import cli_spelling

    cases = {
        "budget=-3; expected an integer >= 0": "--budget -3; expected an integer >= 0",
        "policy: delta=2.0; expected (0, 1)": "policy: --delta 2.0; expected (0, 1)",
        "k=0; expected an integer in [1, 40]": "--k 0; expected an integer in [1, 40]",
        "rank=0; expected an integer >= 1": "--rank 0; expected an integer >= 1",
        "sigma=-1.0; expected a number": "--sigma -1.0; expected a number",
        "epsilon=0.7; expected a tolerance": "--epsilon 0.7; expected a tolerance",
        "--budget -1; expected a nonnegative integer or None": (
            "--budget -1; expected a nonnegative integer"
        ),
        "method='x'; expected 'items' or 'parametric'": "--method 'x'; expected 'items' or "
        "'parametric'",
        "path=out.html is a directory; expected": "--out out.html is a directory; expected",
        "n_boot=3 needs the responses (responses=FILE)": "--bootstrap 3 needs the responses "
        "(--responses FILE)",
    }
    for text, flag in cases.items():
        assert cli_spelling(text) == flag
    for text in ("margin=-1.0; expected", "floor=0.0; expected", "precision=0.0; expected"):
        assert cli_spelling(text).startswith("--")
    assert cli_spelling("pass margin=M to stop") == "pass --margin M to stop"
    assert cli_spelling("pool_size=1; expected") == "--pool-size 1; expected"
    assert cli_spelling("split='dates'; expected") == "--split 'dates'; expected"
    assert cli_spelling("include_perturbed=True: an option of helm; source 'table' does not") == (
        "--include-perturbed True: an option of helm; source 'table' does not"
    )
    assert (
        cli_spelling("heldout fraction=1.5; expected a number")
        == "--holdout 1.5; expected a number"
    )
    assert (
        cli_spelling("x; pass metric=, filter= and split=")
        == "x; pass --metric, --filter and --split"
    )
    # not an option's value: left alone
    corrupt = "fit/fit.json: rank=0; expected an integer >= 1"
    assert cli_spelling(corrupt) == corrupt  # a file's field, not --rank
    assert cli_spelling("rank=2 for a matrix of 3 models") == "rank=2 for a matrix of 3 models"
    assert cli_spelling("a k=3 split; fine") == "a k=3 split; fine"
    toml = "run.toml: [run] budget=-1; expected an integer >= 0"
    assert cli_spelling(toml) == toml  # a configuration file's key, not a flag
