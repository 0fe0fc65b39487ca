"""The findings of a report: what a reader should notice first in a fit or a selection run.

Items are flagged by severity (:data:`FLAG_SEVERITY`); the headline and the list of findings
are written from the ranking, the rank shifts, the diagnostics and the selection outcome.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from latentbench._compat import TEXT
from latentbench._text import percent
from latentbench.report._blocks import (
    _num,
)
from latentbench.select._certify import rivals
from latentbench.select._record import share_text

FLAG_SEVERITY = {
    "constant": (1, "drop", "one observed value: says nothing about differences between models"),
    "duplicate": (2, "drop one of the pair", "answers near-identical to another item"),
    "poor_fit": (
        3,
        "review",
        "responses do not follow the fitted curve (q <= 0.05): check the key and wording",
    ),
    "uninformative": (
        4,
        "advisory",
        "discrimination not distinguishable from 0 with this many models",
    ),
}


def _item_flags(diag: Any) -> pd.DataFrame:
    """Flagged items with their most severe flag, the action and the reason, most severe first
    (within a severity: lowest discrimination first)."""
    items = diag.flagged_items.copy()
    masks = {
        "constant": items["constant"].to_numpy(bool),
        "duplicate": (items["duplicate_of"] != "").to_numpy(bool),
        "poor_fit": items["poor_fit"].to_numpy(bool),
        "uninformative": items["uninformative"].to_numpy(bool),
    }
    severity = np.full(len(items), 9)
    flag = np.full(len(items), "", dtype=object)
    for name in reversed(list(FLAG_SEVERITY)):  # the most severe flag wins
        severity = np.where(masks[name], FLAG_SEVERITY[name][0], severity)
        flag = np.where(masks[name], name, flag)
    items.insert(1, "severity", severity)
    items.insert(2, "flag", flag)
    items.insert(3, "action", [FLAG_SEVERITY[f][1] if f else "" for f in flag])
    items["n_flags"] = sum(m.astype(int) for m in masks.values())
    reason = np.array([FLAG_SEVERITY[f][2] if f else "" for f in flag], dtype=object)
    dup = masks["duplicate"]
    reason[dup] = "answers near-identical to item " + items.loc[dup, "duplicate_of"].astype(TEXT)
    items["reason"] = reason
    return items.sort_values(["severity", "discrimination"], ascending=[True, True]).reset_index(
        drop=True
    )


def _findings(
    result: Any,
    ranks: pd.DataFrame | None,
    movers: pd.DataFrame,
    diag: Any | None,
    level: float,
    abilities: pd.DataFrame | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """The headline and the bullet findings of a fit (``abilities``: the table the report
    shows, default the fit's)."""
    from latentbench.irt._reported import measured_models

    out: list[dict[str, Any]] = []
    ab = result.abilities if abilities is None else abilities
    n_models, n_items = result.shape
    # the ranked models: one without an observed cell has no rank (listed last, not counted)
    measured = measured_models(ab)
    ranked = ab if measured is None or not measured.any() else ab[measured]
    n_ranked = len(ranked)
    if ranks is not None and ranks["rank"].notna().any():  # the "Leader:" line's model
        leader = ranks.dropna(subset=["rank"]).sort_values("rank").iloc[0]
    else:
        leader = ranked.sort_values("theta", ascending=False).iloc[0]
    headline = f"{leader['model']} leads {n_ranked:,} models on {n_items:,} items"
    if n_ranked < n_models:
        headline += f" ({n_models - n_ranked:,} more without an observed cell, not ranked)"
    split = getattr(result, "disconnected", None)
    if split and int(split.get("n_groups", 1)) > 1:
        outside = [str(m) for m in split.get("outside") or []]
        names = ", ".join(outside[:5]) + (
            f" and {len(outside) - 5} more" if len(outside) > 5 else ""
        )
        headline += f" (models in {int(split['n_groups'])} groups that share no item)"
        out.append(
            {
                "text": f"Not one scale: the observed cells split the models into "
                f"{int(split['n_groups'])} groups that share no item ({len(outside)} model(s) "
                f"outside the largest group: {names}). Abilities, ranks and the leader below "
                "compare models of different groups only through the priors, not the data; "
                "check the item ids, or fit each group separately.",
                "note": True,
            }
        )
    if getattr(result, "intercept_only", False):  # the fit warned it, fit.json keeps it
        out.append(
            {
                "text": "No signal: every item discrimination is ~0, so the fit is an "
                "intercept-only model (the data may carry no signal about model differences); "
                "the abilities and ranks below rest on the priors or the ridge, not the data.",
                "note": True,
            }
        )
    check = getattr(result, "joint_ml_check", None)
    if check and check["difference"] > 0.002:  # as `fit` prints it: warned, in fit.json
        out.append(
            {
                "text": "Overfitted: on 10% of the observed cells held out, the joint-ML fit "
                "(prior=None) made without them predicts worse than the additive model logit "
                f"p = c_i + b_j (log-loss {check['log_loss']:.3f} against "
                f"{check['additive_log_loss']:.3f}): its abilities and items overfit, and the "
                "ranks below rest on them; the default prior (prior='auto') predicts better "
                "on matrices of tens of models.",
                "note": True,
            }
        )
    if ranks is not None:
        # the ranked models (one without an observed cell has no rank)
        ordered = ranks.dropna(subset=["rank"]).sort_values("rank").reset_index(drop=True)
        top = ordered.iloc[0]
        contenders = ranks[(ranks["rank_lower"] <= 1).fillna(False).astype(bool)]
        contenders = contenders[contenders["model"] != top["model"]]
        if top["rank_upper"] <= 1 and len(contenders) == 0:
            headline += ", statistically separated from the rest."
            out.append(
                {
                    "text": f"Leader: {top['model']} ranks first with a {int(level * 100)}% rank "
                    f"interval of [1, 1]: no other model could plausibly be best."
                }
            )
        else:
            names = ", ".join(map(str, contenders["model"].head(6)))
            more = f" and {len(contenders) - 6} more" if len(contenders) > 6 else ""
            headline += ", but is not statistically separated from the next."
            out.append(
                {
                    "text": f"Leader: {top['model']} ranks first, but its {int(level * 100)}% rank "
                    f"interval is [{int(top['rank_lower'])}, {int(top['rank_upper'])}]: "
                    f"{len(contenders)} other model(s) could also be best ({names}{more})."
                }
            )
        k = min(10, len(ordered))
        tied = int(ordered["tied_with_next"].head(k - 1).sum()) if k > 1 else 0
        out.append(
            {
                "text": f"Ties: among the top {k}, {tied} of {k - 1} adjacent pairs are not "
                "significantly different ('~' in the ability order below); differences "
                "there are within noise."
            }
        )
    else:
        headline += "."
        out.append(
            {
                "text": "Standard errors, rank intervals and item flags were not computed: the "
                "report had no responses (pass responses=FILE in Python, --responses FILE on the "
                "command line, or keep the file that fit.json records).",
                "note": True,
            }
        )
    if len(movers):
        big = movers.reindex(movers["rank_shift"].abs().sort_values(ascending=False).index)
        big = big[big["rank_shift"].fillna(0) != 0].head(3)
        if len(big):
            parts = []
            for row in big.to_dict("records"):
                shift = int(row["rank_shift"])
                by_accuracy, by_theta = int(row["rank_accuracy"]), int(row["rank_theta"])
                sign = "up" if shift > 0 else "down"
                tag = " (significant)" if row.get("significant") is True else ""
                parts.append(
                    f"{row['model']} {sign} {abs(shift)} "
                    f"(accuracy #{by_accuracy} -> ability #{by_theta}){tag}"
                )
            out.append(
                {"text": "Largest rank shifts, ability vs accuracy: " + "; ".join(parts) + "."}
            )
    if diag is not None:
        items = diag.items
        constant = int(items["constant"].sum())
        duplicate = int((items["duplicate_of"] != "").sum())
        poor = int(items["poor_fit"].sum())
        weak = int(items["uninformative"].sum())
        drop = int((items["constant"] | (items["duplicate_of"] != "")).sum())
        out.append(
            {
                "text": f"Items to drop: {drop:,} of {n_items:,} ({constant:,} constant: every "
                f"model scored the same; {duplicate:,} duplicates of another item). Items to "
                f"review: {poor:,} fit the model poorly (q <= 0.05)."
            }
        )
        if weak:
            out.append(
                {
                    "text": f"Weakly informative: {weak:,} items ({weak / n_items:.0%}) have a "
                    f"discrimination not distinguishable from 0 with {n_ranked:,} models. This "
                    "is advisory: with few models even useful items cannot be shown to "
                    "discriminate; it is not a reason to drop them on its own.",
                    "note": weak / n_items > 0.25,
                }
            )
    return headline, out


def _baseline_text(arms: pd.DataFrame, row: Any, name: Any, total: int, n_items: Any) -> str:
    """How the policy spread its cells against an even spread, from the counts per model:
    an even (or complete) allocation is said as such, not as a saving on weaker models."""
    counts = pd.to_numeric(arms["n_observed"], errors="coerce").to_numpy(float)
    n_models = len(arms)
    leader_n = int(float(row["n_observed"]))
    if n_items and counts.size and (counts >= int(n_items)).all():
        return (
            f"Baseline: every model got all its {int(n_items):,} cells (every cell revealed), "
            "so no model was spared evaluations."
        )
    if counts.size and counts.max() - counts.min() <= 1:
        return (
            f"Baseline: the policy spread the {total:,} cells evenly ({leader_n:,} to the best "
            "model), as an even spread would."
        )
    others = counts[(arms["model"].astype(TEXT) != str(name)).to_numpy()]
    text = (
        f"Baseline: spread evenly, the same {total:,} cells would give every model "
        f"{total / max(n_models, 1):,.0f}; the policy gave the best model {leader_n:,}"
    )
    if others.size:
        text += (
            f" and the others a median of {np.median(others):,.0f} (fewest "
            f"{others.min():,.0f}, most {others.max():,.0f})"
        )
    return text + " (see 'Evaluations per model')."


def _nested(fields: dict[str, Any]) -> str:
    """A record inside the history's record (a store's ``input_store``: store, benchmark,
    metric, ...) as words, not Python's dict repr: ``(store s.duckdb, benchmark b, ...)``."""
    return "(" + ", ".join(f"{k} {v}" for k, v in fields.items()) + ")"


def _selection_findings(
    data: dict[str, Any], arms: pd.DataFrame
) -> tuple[str, list[dict[str, Any]]]:
    """Headline and findings of a selection run (a selection.json dict)."""
    out: list[dict[str, Any]] = []
    ranked = arms.sort_values("estimate", ascending=False).reset_index(drop=True)
    best = ranked.iloc[0]
    name = data.get("best_model", best["model"])
    matching = arms[arms["model"].astype(TEXT) == str(name)]
    row = matching.iloc[0] if len(matching) else best
    has_bounds = {"lower", "upper"} <= set(arms.columns) and arms["lower"].notna().all()
    params = data.get("params") or {}
    live = data.get("live_run") or {}
    # a live run's record keeps its items count in its configuration
    n_items = params.get("n_items") or (live.get("config") or {}).get("n_items")
    headline = f"Best model: {name} (estimate {_num(row['estimate'])}"
    if has_bounds:
        # the level as select's table caption says it (the run's delta), when recorded
        delta = params.get("delta")
        level = (
            f"{percent(1 - delta)} simultaneous anytime-valid "
            if isinstance(delta, int | float) and not isinstance(delta, bool) and 0 < delta < 1
            else ""
        )
        headline += f", {level}interval [{_num(row['lower'])}, {_num(row['upper'])}]"
        out += _certificate_findings(data, arms, name, row, n_items)
    elif n_items and "n_observed" in arms.columns and (arms["n_observed"] >= int(n_items)).all():
        exact = (
            "Exact: every cell of every model is revealed, so the best model is known without "
            "an interval (its mean is the largest)."
        )
        out.append({"text": exact})
    elif live and data.get("policy") == "live (unfinished)":  # no final decision yet
        unfinished = (
            f"Not certified: the run has not finished (status {live.get('status')}), so the "
            "estimates are the plain means of the cells stored so far, without intervals; "
            "resume it to finish."
        )
        out.append({"text": unfinished, "note": True})
    else:  # as select replay prints it ("no intervals, not certified"), not left unsaid
        out.append(_no_intervals_finding(str(data.get("policy", ""))))
    headline += ")."
    total = int(data.get("evaluations_total") or arms["n_observed"].sum())
    n_models = len(arms)
    out.append({"text": _evaluations_text(data, total, n_models, n_items)})
    first = _first_certified(data, n_models, n_items)
    if first is not None:
        out.append(first)
    out.append({"text": _baseline_text(arms, row, name, total, n_items)})
    history = params.get("history") or data.get("history")
    if isinstance(history, dict):
        parts = ", ".join(
            f"{k}: {_nested(v) if isinstance(v, dict) else v}"
            for k, v in history.items()
            if not isinstance(v, list)
        )
        out.append({"text": f"{_history_label(str(data.get('policy', '')))}: {parts}."})
    elif isinstance(history, str):
        out.append({"text": f"History: {history}"})
    crossed = params.get("certificate_crossed")
    if isinstance(crossed, dict) and crossed:  # said by the run, kept in selection.json
        out.append(_crossed_finding(crossed, params.get("delta")))
    if live:
        out.append(_live_finding(live))
    return headline, out


def _crossed_finding(crossed: dict[str, Any], delta: Any) -> dict[str, Any]:
    """The models whose certificate bounds cross (``params["certificate_crossed"]``, which the
    run said as it ended): one of the statements the certificate rests on is false there."""
    shown = ", ".join(
        f"{name} (lower {_num(pair[0])} > upper {_num(pair[1])})"
        if isinstance(pair, list | tuple) and len(pair) == 2
        else str(name)
        for name, pair in list(crossed.items())[:3]
    )
    more = f" and {len(crossed) - 3} more" if len(crossed) > 3 else ""
    text = (
        f"Bounds crossed: the certificate's one-sided bounds cross on {shown}{more}, so at "
        "least one of the statements it rests on is false there (an event of probability at "
        f"most delta = {delta}); read its certification with that in mind."
    )
    return {"text": text, "note": True}


def _history_label(policy: str) -> str:
    """How a selection's history finding opens: a policy without a proxy (UCB-E, uniform)
    learns nothing from it (it was "learns the proxy" for every policy)."""
    from latentbench.select import POLICIES

    info = POLICIES.get(policy.split(":")[0].strip().lower())
    if info is not None and not info.needs_proxy:
        return f"History (set aside, not candidates; {policy} uses no proxy)"
    return "History (learns the proxy, not candidates)"


def _no_intervals_finding(policy: str) -> dict[str, Any]:
    """A run without intervals: nothing certifies its recommendation (and the estimates of a
    policy that imputes cells are biased, as its summary in ``select.POLICIES`` says)."""
    from latentbench.select import POLICIES

    info = POLICIES.get(policy.split(":")[0].strip().lower())
    biased = info is not None and "(biased)" in info.summary
    text = (
        f"Not certified: {policy or 'the policy'} reports no intervals, so nothing bounds how "
        "far its recommendation is from the best"
        + ("; its estimates impute unrevealed cells and are biased" if biased else "")
        + " (stop='confidence' in Python, --stop confidence on the command line, certifies a "
        "policy that reveals uniform cells on those cells)."
    )
    return {"text": text, "note": True}


def _certificate_findings(
    data: dict[str, Any], arms: pd.DataFrame, name: Any, row: pd.Series, n_items: Any
) -> list[dict[str, Any]]:
    """Ties with the best model, then whether it is certified (and by which bounds);
    ``n_items`` (the run's items, or None) tells which models are fully revealed."""
    out: list[dict[str, Any]] = []
    others = arms[arms["model"].astype(TEXT) != str(name)]
    lo_col, hi_col, kind = "lower", "upper", "simultaneous anytime-valid intervals"
    if {"certificate_lower", "certificate_upper"} <= set(arms.columns):
        lo_col, hi_col = "certificate_lower", "certificate_upper"
        kind = "one-sided anytime-valid certificate bounds"
    # the certificate's tolerance (select --epsilon): a model within eps of the best
    eps = float((data.get("params") or {}).get("epsilon") or 0.0)
    # fully revealed rivals at or below a fully revealed best need no bound (the stop
    # rule's own selection, select._certify.rivals; a full row's estimate is its mean)
    revealed = (
        (arms["n_observed"] >= int(n_items)).to_numpy()
        if n_items and "n_observed" in arms.columns
        else np.zeros(len(arms), dtype=bool)
    )
    mine = (arms["model"].astype(TEXT) == str(name)).to_numpy()
    leader = int(np.argmax(mine)) if mine.any() else int(arms["estimate"].to_numpy().argmax())
    keep = rivals(leader, revealed, arms["estimate"].to_numpy(float), len(arms))[~mine]
    exact = pd.Series(revealed[~mine] & ~keep, index=others.index)  # decided exact rivals
    rivals_ = others[keep]
    overlap = int((rivals_[hi_col] - eps >= row[lo_col]).sum())
    if "difference_lower" in arms.columns and others["difference_lower"].notna().all():
        # the paired certificate (Pulse(certificate="paired")): lower bounds on the best's
        # lead over each other model
        kind = "paired anytime-valid certificate bounds on the differences"
        overlap = int((rivals_["difference_lower"] <= -eps).sum())
    tied = others[exact & (others["estimate"] == row["estimate"])]
    if len(tied):
        names = ", ".join(str(m) for m in tied["model"].head(3))
        out.append(
            {
                "text": f"Tied: {names} ha{'s' if len(tied) == 1 else 've'} the same "
                f"mean as {name} ({_num(row['estimate'])}), every cell of each revealed; "
                f"{name} is a best model, not the only one.",
                "note": True,
            }
        )
    out.append(_certified_finding(overlap, eps, kind, (data.get("params") or {}).get("delta")))
    return out


def _certified_finding(overlap: int, eps: float, kind: str, delta: Any = None) -> dict[str, Any]:
    """Certified (within ``eps``) when no rival's bound reaches the best's, else not; the
    certificate's level (``delta``, when the record has it) is said with it."""
    if isinstance(delta, int | float) and not isinstance(delta, bool) and 0 < delta < 1:
        best = "within {eps:g} of the best" if eps > 0 else "the best"
        kind += (
            f", at delta = {delta:g}: the certified model is {best.format(eps=eps)} with "
            f"probability at least {percent(1 - delta)}"
        )
    if overlap == 0 and eps > 0:
        return {
            "text": f"Certified within {eps:g} of the best: the recommended model's "
            f"lower bound exceeds every other model's upper bound minus {eps:g} "
            f"({kind}), so it is at most {eps:g} below the best."
        }
    if overlap == 0:
        return {
            "text": "Certified: the best model's lower bound exceeds every other "
            f"model's upper bound ({kind})."
        }
    return {
        "text": f"Not certified: {overlap} other model(s) have intervals reaching the "
        "best model's lower bound, so the data do not yet rule them out; a larger "
        "budget (or stop='confidence' in Python, --stop confidence on the command line) would "
        "separate them.",
        "note": True,
    }


def _evaluations_text(data: dict[str, Any], total: int, n_models: int, n_items: Any) -> str:
    """The cells evaluated, and their share of a full evaluation when the items are known."""
    text = f"Evaluations: {total:,} cells"
    if data.get("evaluations_init") is not None:
        text += f" ({int(data['evaluations_init']):,} in the initial batch)"
    if n_items:
        full = n_models * int(n_items)
        text += (
            f", {share_text(total, full)} of a full evaluation ({n_models:,} models x "
            f"{int(n_items):,} items = {full:,} cells): {share_text(full - total, full)} saved."
        )
    else:
        text += "."
    return text


def _first_certified(data: dict[str, Any], n_models: int, n_items: Any) -> dict[str, Any] | None:
    """When a run certified before it stopped: after how many cells (None otherwise)."""
    after = data.get("certified_after_post_init")
    post = data.get("evaluations_post_init")
    if after is None or post is None or int(after) >= int(post):
        return None
    paid = int(after) + int(data.get("evaluations_init") or 0)
    share = f", {share_text(paid, n_models * int(n_items))} of a full evaluation" if n_items else ""
    stopped = data.get("stopped")
    went_on = {
        "budget": "the run went on to its budget",
        "exhausted": "the run went on until every cell was revealed",
        "policy": "the run went on until the policy chose no arm",
    }.get(str(stopped), "the run went on" + (f" (stopped: {stopped})" if stopped else ""))
    return {
        "text": f"First certified after {paid:,} cells{share} "
        f"({data.get('certified_model')}): {went_on}; "
        "stop='confidence' in Python (--stop confidence on the command line) stops at the "
        "first certificate."
    }


def _live_finding(live: dict[str, Any]) -> dict[str, Any]:
    """The live run's status, failed cells and the other runs in its store."""
    text = (
        f"Live run {live.get('run_id')} in {live.get('store')}: status {live.get('status')}, "
        f"{int(live.get('failed_cells', 0)):,} failed cell(s)"
    )
    if int(live.get("runs_in_store", 1)) > 1:
        text += (
            f"; the store holds {live['runs_in_store']} runs (choose with run_id= in Python, "
            "--run-id on the command line)"
        )
    return {"text": text + ".", "note": live.get("status") != "done"}
