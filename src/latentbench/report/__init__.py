"""Figures and self-contained HTML reports for fits, selection runs and experiments."""

from latentbench.report._compare import COMPARE_SECTIONS, build_compare_report
from latentbench.report._estimate import ESTIMATE_SECTIONS, build_estimate_report
from latentbench.report._estimate_experiment import (
    ESTIMATE_EXPERIMENT_SECTIONS,
    build_estimate_experiment_report,
)
from latentbench.report._experiment import (
    EXPERIMENT_SECTIONS,
    build_experiment_report,
    experiment_table,
)
from latentbench.report._html import FIT_SECTIONS, SELECTION_SECTIONS, build_report
from latentbench.report._metadata import category_columns, read_item_metadata
from latentbench.report._source import Report, report_from
from latentbench.report.plots import (
    plot_abilities,
    plot_ability_accuracy,
    plot_estimate_errors,
    plot_estimate_intervals,
    plot_estimate_placement,
    plot_experiment_curves,
    plot_item_curves,
    plot_item_map,
    plot_selection_evaluations,
    plot_selection_intervals,
)

__all__ = [
    "COMPARE_SECTIONS",
    "ESTIMATE_EXPERIMENT_SECTIONS",
    "ESTIMATE_SECTIONS",
    "EXPERIMENT_SECTIONS",
    "FIT_SECTIONS",
    "SELECTION_SECTIONS",
    "Report",
    "build_compare_report",
    "build_estimate_experiment_report",
    "build_estimate_report",
    "build_experiment_report",
    "build_report",
    "category_columns",
    "experiment_table",
    "plot_abilities",
    "plot_ability_accuracy",
    "plot_estimate_errors",
    "plot_estimate_intervals",
    "plot_estimate_placement",
    "plot_experiment_curves",
    "plot_item_curves",
    "plot_item_map",
    "plot_selection_evaluations",
    "plot_selection_intervals",
    "read_item_metadata",
    "report_from",
]
