"""Figures and self-contained HTML reports for fits and selection runs."""

from latentbench.report._html import FIT_SECTIONS, SELECTION_SECTIONS, build_report
from latentbench.report._metadata import category_columns, read_item_metadata
from latentbench.report.plots import (
    plot_abilities,
    plot_ability_accuracy,
    plot_item_curves,
    plot_item_map,
    plot_selection_evaluations,
    plot_selection_intervals,
)

__all__ = [
    "FIT_SECTIONS",
    "SELECTION_SECTIONS",
    "build_report",
    "category_columns",
    "plot_abilities",
    "plot_ability_accuracy",
    "plot_item_curves",
    "plot_item_map",
    "plot_selection_evaluations",
    "plot_selection_intervals",
    "read_item_metadata",
]
