"""Best-model identification: PULSE and baselines.

PULSE (Prediction-powered Unbiased Low-rank Sequential Evaluation) picks which (model, item)
cells to evaluate with a UCB-E rule, and estimates every model's mean with a doubly robust
estimate whose proxy is a low-rank logistic model learned from historical models. Estimates
are unbiased whatever the proxy, and the intervals are anytime-valid confidence sequences.
"""

from latentbench.select._bounds import EBConfSeq, FreedmanConfSeq, eb_confseq
from latentbench.select._estimators import (
    dr_draw_estimates,
    dr_round_estimate,
    dr_round_variance,
    plugin_lambda,
)
from latentbench.select._experiment import (
    ExperimentResult,
    budget_to_accuracy,
    exact_gap_pool,
    experiment_from_matrix,
    run_experiment,
    split_models,
)
from latentbench.select._live import (
    CallableOracle,
    CellResult,
    ChatCompletionsOracle,
    ChatEndpoint,
    DurableOracle,
    LiveConfig,
    LiveProgress,
    LiveResult,
    LmEvalBridgeOracle,
    run_live,
)
from latentbench.select._oracles import MatrixOracle, Oracle
from latentbench.select._policies import (
    UCBE,
    UCBELRF,
    FullEvaluation,
    NaivePooling,
    Observation,
    Policy,
    Pulse,
    SelectionState,
    Uniform,
)
from latentbench.select._proxy import LowRankProxy
from latentbench.select._run import SelectionResult, interval_trajectories, run_selection
from latentbench.select._scorers import exact_match, multiple_choice
from latentbench.select._simulator import LeaderboardSimulator

__all__ = [
    "UCBE",
    "UCBELRF",
    "CallableOracle",
    "CellResult",
    "ChatCompletionsOracle",
    "ChatEndpoint",
    "DurableOracle",
    "EBConfSeq",
    "ExperimentResult",
    "FreedmanConfSeq",
    "FullEvaluation",
    "LeaderboardSimulator",
    "LiveConfig",
    "LiveProgress",
    "LiveResult",
    "LmEvalBridgeOracle",
    "LowRankProxy",
    "MatrixOracle",
    "NaivePooling",
    "Observation",
    "Oracle",
    "Policy",
    "Pulse",
    "SelectionResult",
    "SelectionState",
    "Uniform",
    "budget_to_accuracy",
    "dr_draw_estimates",
    "dr_round_estimate",
    "dr_round_variance",
    "eb_confseq",
    "exact_gap_pool",
    "exact_match",
    "experiment_from_matrix",
    "interval_trajectories",
    "multiple_choice",
    "plugin_lambda",
    "run_experiment",
    "run_live",
    "run_selection",
    "split_models",
]
