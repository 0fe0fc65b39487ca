"""Best-model identification: PULSE and baselines.

PULSE (Prediction-powered Unbiased Low-rank Sequential Evaluation) picks which (model, item)
cells to evaluate with a UCB-E rule, and estimates every model's mean with a doubly robust
estimate whose proxy is a low-rank logistic model learned from historical models. Each
round's estimate is unbiased for a proxy fixed before its draw (a poor proxy costs variance,
not bias); the final estimates of an adaptive run are biased like any bandit's (the
recommended model's estimate tends to be high), so read them with their intervals, which
are anytime-valid confidence sequences.

:func:`replay` replays a selection on a recorded matrix (the twin of ``latentbench select
replay``); without a budget it stops when the best is certified at ``delta = 0.05``, with a
batch and start from :func:`default_schedule`. :class:`SelectionRecord` reads a finished run
back from its result, its ``selection.json`` or a store.

Submodules: :mod:`latentbench.select.oracles` (where scores come from) and
:mod:`latentbench.select.live` (durable, resumable runs against real endpoints).
"""

from latentbench.select._base import Policy
from latentbench.select._compare_live import compare_live, stored_comparisons
from latentbench.select._estimate import (
    EstimateResult,
    EstimateSet,
    check_tiny_options,
    estimate,
    estimate_many,
    lm_eval_samples,
    read_responses,
    tiny,
)
from latentbench.select._estimate_calibration import Calibration, load_calibration
from latentbench.select._estimate_compare import CompareResult, compare
from latentbench.select._estimate_experiment import (
    EstimateExperiment,
    estimate_experiment,
    summarize_estimate_experiment,
)
from latentbench.select._estimate_live import estimate_live
from latentbench.select._experiment import (
    ExperimentRecord,
    ExperimentResult,
    budget_to_accuracy,
    exact_gap_pool,
    experiment_from_matrix,
    release_dates,
    run_experiment,
    split_models,
)
from latentbench.select._online import OnlineProxy
from latentbench.select._policies import (
    POLICIES,
    UCBE,
    UCBELRF,
    FullEvaluation,
    NaivePooling,
    PolicyInfo,
    Uniform,
    make_policy,
    parse_policy,
    policy_help,
    refuse_spec_delta,
)
from latentbench.select._proxy import LowRankProxy
from latentbench.select._pulse import Pulse
from latentbench.select._record import SelectionRecord
from latentbench.select._replay import replay
from latentbench.select._run import SelectionResult, interval_trajectories, run_selection
from latentbench.select._schedule import default_schedule
from latentbench.select._scorers import exact_match, multiple_choice
from latentbench.select._state import Observation, SelectionState
from latentbench.select.live import LiveConfig, LiveResult, run_live
from latentbench.select.oracles import CallableOracle, MatrixOracle, Oracle
from latentbench.synthetic import LeaderboardSimulator

__all__ = [
    "POLICIES",
    "UCBE",
    "UCBELRF",
    "Calibration",
    "CallableOracle",
    "CompareResult",
    "EstimateExperiment",
    "EstimateResult",
    "EstimateSet",
    "ExperimentRecord",
    "ExperimentResult",
    "FullEvaluation",
    "LeaderboardSimulator",
    "LiveConfig",
    "LiveResult",
    "LowRankProxy",
    "MatrixOracle",
    "NaivePooling",
    "Observation",
    "OnlineProxy",
    "Oracle",
    "Policy",
    "PolicyInfo",
    "Pulse",
    "SelectionRecord",
    "SelectionResult",
    "SelectionState",
    "Uniform",
    "budget_to_accuracy",
    "check_tiny_options",
    "compare",
    "compare_live",
    "default_schedule",
    "estimate",
    "estimate_experiment",
    "estimate_live",
    "estimate_many",
    "exact_gap_pool",
    "exact_match",
    "experiment_from_matrix",
    "interval_trajectories",
    "lm_eval_samples",
    "load_calibration",
    "make_policy",
    "multiple_choice",
    "parse_policy",
    "policy_help",
    "read_responses",
    "refuse_spec_delta",
    "release_dates",
    "replay",
    "run_experiment",
    "run_live",
    "run_selection",
    "split_models",
    "stored_comparisons",
    "summarize_estimate_experiment",
    "tiny",
]
