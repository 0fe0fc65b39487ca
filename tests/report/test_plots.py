"""Figure functions: they draw what they claim (artists and data), on a given or new axes."""

from __future__ import annotations

import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from latentbench.exceptions import InputError
from latentbench.irt.inference import standard_errors
from latentbench.report import plots


@pytest.fixture
def ax():
    fig = Figure()
    return fig.add_subplot()


def test_ability_accuracy(small_fit, ax):
    _, result = small_fit
    out = plots.plot_ability_accuracy(result, ax, annotate=3)
    assert out is ax
    offsets = ax.collections[0].get_offsets()
    np.testing.assert_allclose(offsets[:, 0], result.abilities["accuracy"])
    np.testing.assert_allclose(offsets[:, 1], result.abilities["theta"])
    labels = [t.get_text() for t in ax.texts]
    movers = result.abilities.loc[result.abilities["rank_shift"] != 0]
    assert len(labels) == min(3, len(movers))
    assert all(label.endswith(")") for label in labels)


def test_item_curves(small_fit, ax):
    matrix, result = small_fit
    chosen = [matrix.item_ids[1], 5, matrix.item_ids[9]]
    plots.plot_item_curves(result, chosen, ax, show_models=False)
    lines = ax.get_lines()
    assert len(lines) == 3
    for line, j in zip(lines, [1, 5, 9], strict=True):
        y = line.get_ydata()
        assert ((y > 0) & (y < 1)).all()
        if result.V[j, 0] > 0:
            assert np.all(np.diff(y) > 0)
    assert lines[0].get_label() == matrix.item_ids[1].replace("$", r"\$")
    with pytest.raises(InputError):
        plots.plot_item_curves(result, ["no-such-item"], ax)


def test_item_map_flags(small_fit, ax):
    matrix, result = small_fit
    flagged = np.zeros(len(result.items), dtype=bool)
    flagged[[2, 3, 4]] = True
    plots.plot_item_map(result, ax, flagged=flagged)
    assert len(ax.collections[0].get_offsets()) == len(result.items) - 3
    np.testing.assert_allclose(
        ax.collections[1].get_offsets()[:, 1], result.items["discrimination"].iloc[[2, 3, 4]]
    )
    ax2 = plots.plot_item_map(result.items, Figure().add_subplot(), flagged=[matrix.item_ids[7]])
    assert len(ax2.collections[1].get_offsets()) == 1


def test_item_map_refuses_flagged_ids_that_are_not_items(small_fit, ax):
    # an unknown id was silently not drawn: the map said "flagged (0)"
    matrix, result = small_fit
    with pytest.raises(InputError, match=r"flagged: 2 id\(s\) that are not items.*'nope', 'zz'"):
        plots.plot_item_map(result, ax, flagged=[matrix.item_ids[0], "zz", "nope"])
    with pytest.raises(InputError, match=r"flagged='q1': one item; expected a list"):
        plots.plot_item_map(result, ax, flagged="q1")
    with pytest.raises(InputError, match=r"boolean mask of shape \(3,\); expected shape"):
        plots.plot_item_map(result.items, ax, flagged=np.array([True, False, True]))
    assert not ax.collections  # nothing drawn before the refusal


def test_forest_plot(small_fit, ax):
    matrix, result = small_fit
    intervals = standard_errors(result, matrix).abilities
    plots.plot_abilities(intervals, ax, top=10)
    container = ax.containers[0]
    x = container.lines[0].get_xdata()
    assert len(x) == 10
    assert np.all(np.diff(x) >= 0)  # best on top: y grows with theta
    np.testing.assert_allclose(np.sort(x), np.sort(intervals["theta"].nlargest(10)))
    with pytest.raises(InputError):
        plots.plot_abilities(intervals.drop(columns="lower"), ax)


def test_selection_plots(selection_run, ax):
    plots.plot_selection_evaluations(selection_run, ax)
    widths = sorted(p.get_width() for p in ax.patches)
    assert widths == sorted(selection_run.n_observed.tolist())
    ax2 = plots.plot_selection_intervals(selection_run, Figure().add_subplot())
    step = ax2.get_lines()[0]
    np.testing.assert_array_equal(step.get_xdata(), selection_run.trace_evaluations)
    # with per-round bounds (a dict in the selection.json layout): one band per shown arm
    record = selection_run.to_dict()
    rounds = len(selection_run.trace_evaluations)
    record["trace"]["lower"] = [list(selection_run.lower - 0.1 / (r + 1)) for r in range(rounds)]
    record["trace"]["upper"] = [list(selection_run.upper + 0.1 / (r + 1)) for r in range(rounds)]
    ax3 = plots.plot_selection_intervals(record, Figure().add_subplot(), top=4)
    bands = [c for c in ax3.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 4


def test_new_figure_when_no_axes(small_fit):
    _, result = small_fit
    ax = plots.plot_ability_accuracy(result)
    assert ax.figure is not None
    plt.close(ax.figure)


def test_plots_name_the_object_they_were_given(small_fit, ax):
    # plot_abilities(result.standard_errors()) and plot_ability_accuracy(matrix) raised
    # AttributeError ('Uncertainty' object has no attribute 'columns', 'ResponseMatrix' ...
    # 'abilities'); plot_item_curves(result, "q01") read the id as its characters
    # ("unknown item 'q'")
    matrix, result = small_fit
    with pytest.raises(InputError, match=r"intervals: a Uncertainty; expected a DataFrame.*"
                                         r"standard_errors\(\)\.abilities"):  # fmt: skip
        plots.plot_abilities(standard_errors(result, matrix), ax)
    with pytest.raises(InputError, match=r"result: a ResponseMatrix; expected an IRTResult"):
        plots.plot_ability_accuracy(matrix, ax)
    one = matrix.item_ids[1]
    with pytest.raises(InputError, match=re.escape(f"items={one!r}: one item; expected a list")):
        plots.plot_item_curves(result, one, ax)


def test_the_figures_render_without_pyparsing_deprecations():
    """matplotlib before 3.10.7 calls pyparsing's pre-PEP 8 names (``parseString``,
    ``resetCache``, ``oneOf``, ...), which pyparsing 3.3 deprecates: ``latentbench demo`` and
    ``report`` printed about 20 ``PyparsingDeprecationWarning`` lines (the CLI shows every
    warning). The floor is matplotlib>=3.10.7 (pyproject); this checks the installed one in a
    fresh process (matplotlib imported, a report figure and mathtext drawn)."""
    import subprocess
    import sys

    code = (
        "import io, warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    from matplotlib.figure import Figure\n"
        "    import pandas as pd\n"
        "    from latentbench.report import plots\n"
        "    figure = Figure()\n"
        "    ax = figure.subplots()\n"
        "    intervals = pd.DataFrame({'model': ['a', 'b'], 'theta': [0.0, 1.0],\n"
        "                              'lower': [-1.0, 0.0], 'upper': [1.0, 2.0]})\n"
        "    plots.plot_abilities(intervals, ax)\n"
        "    ax.set_xlabel(r'$\\theta$ (sd units)')\n"
        "    figure.savefig(io.BytesIO(), format='png')\n"
        "print(sorted({type(w.message).__name__ + ': ' + str(w.message) for w in caught\n"
        "              if 'pyparsing' in type(w.message).__module__}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]", done.stdout


def test_a_fifth_series_without_any_value_is_drawn_not_an_index_error(ax):
    # past four series a marker is added, placed every tenth of the line's length: a line
    # with no finite point (a policy whose accuracy is missing at every evaluation) made
    # matplotlib raise IndexError when the figure was drawn
    import io

    import pandas as pd

    curves = pd.DataFrame(
        [
            {
                "pool": "p",
                "policy": f"policy{k}",
                "evaluations": e,
                "se": 0.1,
                "accuracy": np.nan if k == 4 else 0.5,
            }
            for k in range(5)
            for e in (10, 20, 30)
        ]
    )
    drawn = plots.plot_experiment_curves(curves, "p", ax)
    drawn.figure.savefig(io.BytesIO(), format="png")
    assert len(drawn.get_legend_handles_labels()[1]) == 5
    assert drawn.lines[4].get_marker() not in ("", "None")  # still told apart by its marker
