"""Numbers and labels a report page shows twice agree with each other and with the fit's files:
the rank-shift table's rank intervals are the Abilities table's, the rank agreement is of the
abilities the page ranks, a model without a cell is listed last, and the scale is said as it
is (the models that set it)."""

from __future__ import annotations

import html as htmllib
import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from latentbench.io import ResponseMatrix
from latentbench.irt import TwoPL
from latentbench.irt._reported import reported_abilities
from latentbench.irt.inference import bootstrap
from latentbench.report import build_report
from latentbench.synthetic import simulate_2pl


def page_table(page: str, name: str) -> pd.DataFrame:
    """The table ``name`` (its ``data-name``) of a report page, as the text of its cells."""
    start = page.index(f'data-name="{name}"')
    body = page[start : page.index("</table>", start)]
    head, rows_html = body.split("<tbody>")
    header = [htmllib.unescape(h) for h in re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", head)]
    cell = r"<(t[dh])\b[^>]*>(.*?)</\1>"  # a row's header is a th (scope="row"), the rest td
    rows = [
        [htmllib.unescape(re.sub(r"<[^>]+>", "", c)) for _, c in re.findall(cell, r)]
        for r in re.findall(r"<tr>(.*?)</tr>", rows_html, flags=re.S)
    ]
    return pd.DataFrame([r for r in rows if r], columns=header)


def section_text(page: str, section: str) -> str:
    part = page.split(f'id="{section}"')[1].split("</section>")[0]
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", " ", part)).split())


def _by_model(table: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    return table.set_index("model")[columns]


@pytest.fixture(scope="module")
def sim25():
    data = simulate_2pl(25, 60, missing=0.05, random_state=3)
    return data.matrix


def test_a_joint_ml_fits_rank_shifts_have_the_abilities_tables_rank_intervals(sim25):
    """The rank-shift table drew its rank intervals from the se without the joint-ML scale
    correction that the Abilities table (and abilities.csv) use: model_24's rank interval read
    [6, 19] in one table and [7, 19] in the other on the same page."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL(prior=None).fit(sim25)
        page = build_report(result, sim25)
    abilities = page_table(page, "abilities").rename(columns={"rank": "rank_theta"})
    shifts = page_table(page, "rank-shifts")
    columns = ["theta", "rank_theta", "rank_lower", "rank_upper", "rank_accuracy"]
    left, right = _by_model(abilities, columns), _by_model(shifts, columns)
    pd.testing.assert_frame_equal(left, right.loc[left.index])
    # "significant" is read off those intervals
    for row in shifts.itertuples():
        outside = not int(row.rank_lower) <= int(row.rank_accuracy) <= int(row.rank_upper)
        assert (row.significant == "yes") == outside, row.model


def test_a_bootstrap_pages_rank_shifts_are_its_abilities_tables(sim25):
    """With --bootstrap, the Abilities table ranks the fit's theta with the bootstrap's rank
    intervals; the rank-shift table (and the findings' largest shifts) ranked another theta
    with plug-in intervals beside it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(sim25)
        boot = bootstrap(result, sim25, n_boot=30, method="items", random_state=0)
        page = build_report(result, sim25, bootstrap=boot)
    abilities = page_table(page, "abilities").rename(columns={"rank": "rank_theta"})
    shifts = page_table(page, "rank-shifts")
    columns = ["theta", "rank_theta", "rank_lower", "rank_upper", "rank_accuracy"]
    left, right = _by_model(abilities, columns), _by_model(shifts, columns)
    pd.testing.assert_frame_equal(left, right.loc[left.index])
    # the table's theta is the fit's own (abilities.csv's theta_fit), and the page says so
    fit_theta = result.abilities.set_index("model")["theta"]
    assert (left["theta"] == [f"{fit_theta[m]:.3f}" for m in left.index]).all()
    assert "abilities.csv's theta_fit" in section_text(page, "abilities")


@pytest.fixture(scope="module")
def with_unevaluated():
    """20 simulated models, one with every answer right and one never evaluated."""
    data = simulate_2pl(20, 60, missing=0.05, random_state=5)
    scores = np.vstack([data.matrix.scores, np.ones((1, 60)), np.full((1, 60), np.nan)])
    models = [*data.matrix.model_ids, "perfect", "never evaluated"]
    matrix = ResponseMatrix(scores, models, data.matrix.item_ids)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(matrix)
        page = build_report(result, matrix)
        table = reported_abilities(result, result.standard_errors(matrix))
    return matrix, result, page, table


def test_an_unevaluated_model_is_listed_last(
    with_unevaluated,
):
    """A model without an observed cell stood among the ranked ones in the Abilities table
    (by its prior's theta; abilities.csv and the printed table list it last), and the
    rank-shift table printed its rank bounds as 7.000, 21.000 beside it."""
    _, _, page, table = with_unevaluated
    abilities = page_table(page, "abilities")
    assert abilities["model"].tolist() == table["model"].astype(str).tolist()
    assert abilities["model"].iloc[-1] == "never evaluated"
    assert abilities["rank"].iloc[-1] == ""
    # the findings count the 21 ranked models, as the table ranks them
    findings = section_text(page, "findings")
    assert "leads 21 models on 60 items (1 more without an observed cell, not ranked)" in findings
    assert "with 21 models" in findings and "with 21 models" in section_text(page, "flagged-items")
    # the rank bounds of the rank-shift table are whole numbers, as in the Abilities table
    shifts = page_table(page, "rank-shifts")
    assert shifts["rank_lower"].str.fullmatch(r"\d*").all()


def test_the_rank_agreement_is_of_the_ranked_models_reported_abilities(with_unevaluated):
    """The rank agreement correlated the fit's own theta (its top 10 by that theta), and the
    unevaluated model's missing accuracy made the row over all models blank, counting 22."""
    _, _, page, table = with_unevaluated
    agreement = page_table(page, "rank-agreement").set_index("subset")
    ranked = table[table["n_observed"] > 0]
    assert agreement.loc["all", "n_models"] == str(len(ranked)) == "21"
    # of the abilities the page shows (the reported theta), over the ranked models
    rho = spearmanr(ranked["theta"], ranked["accuracy"]).statistic
    assert agreement.loc["all", "spearman"] == f"{rho:.3f}"
    top = ranked.head(10)
    rho_top = spearmanr(top["theta"], top["accuracy"]).statistic
    assert agreement.loc["top 10", "spearman"] == f"{rho_top:.3f}"


def test_the_scale_is_said_over_the_models_that_set_it(with_unevaluated, tmp_path):
    """'mean 0, sd 1 over the fitted models': the perfect and the unevaluated model do not set
    the scale, and over all 22 the abilities have another sd."""
    matrix, result, page, table = with_unevaluated
    text = section_text(page, "summary")
    assert "over the 20 of 22 models that set it" in text
    assert "perfect, never evaluated" in text
    reference = table[~table["model"].isin(["perfect", "never evaluated"])]
    assert reference["theta"].mean() == pytest.approx(0, abs=1e-9)
    assert reference["theta"].std(ddof=0) == pytest.approx(1, abs=1e-9)
    assert abs(table["theta"].std(ddof=0) - 1) > 0.05  # over all of them it is not 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result.save(tmp_path / "fit", matrix)
    record = json.loads((tmp_path / "fit" / "fit.json").read_text())
    assert record["off_scale_models"] == ["perfect", "never evaluated"]
    assert "off_scale_models" in record["normalisation"]


def test_a_rank_two_fits_scale_is_not_called_sd_1(sim25):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL(rank=2).fit(sim25)
    assert np.std(result.theta) < 0.95  # theta = U w: centred, its sd not fixed
    text = section_text(build_report(result), "summary")
    assert "sd 1" not in text and "mean 0" in text


def test_identical_models_share_their_rank():
    """Two models with the same answers: the fit left their abilities 6e-7 apart (its
    convergence tolerance), printed the same, and ranked them 1st and 2nd; their accuracy
    ranks were both 1."""
    data = simulate_2pl(40, 120, random_state=3)
    scores = data.matrix.scores
    best = int(np.argmax(np.nanmean(scores, axis=1)))
    matrix = ResponseMatrix(
        np.vstack([scores, scores[best]]), [*data.matrix.model_ids, "twin"], data.matrix.item_ids
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = TwoPL().fit(matrix)
        table = reported_abilities(result, result.standard_errors(matrix))
    pair = [data.matrix.model_ids[best], "twin"]
    for frame in (table, result.abilities):
        rows = frame.set_index("model").loc[pair]
        assert rows["rank_theta"].tolist() == [1, 1]
        assert rows["rank_shift"].tolist() == [0, 0]


def test_a_selection_pages_share_is_the_printed_lines(selection_run):
    """One cell short of a full evaluation: `select replay` printed >99.9% of a full
    evaluation, the report 100.0% (and 0.0% saved)."""
    from latentbench.cli._select import spend_line
    from latentbench.select import SelectionRecord

    data = json.loads(selection_run.to_json())
    full = 6 * 1000
    data["arms"][0]["n_observed"] += full - 1 - data["evaluations_total"]
    data["evaluations_post_init"] = full - 1 - data["evaluations_init"]
    data["evaluations_total"] = full - 1
    data["params"] = {"n_items": 1000}
    printed = spend_line(SelectionRecord.from_dict(data))
    assert "5,999 of 6,000 (>99.9% of a full evaluation)" in printed
    text = section_text(build_report(selection=data), "selection-summary")
    assert ">99.9% of a full evaluation (6 models x 1,000 items = 6,000 cells): <0.1% saved" in (
        text
    )


def test_a_selection_pages_stop_reads_as_the_printed_lines(selection_run):
    """`select replay` says "stopped: confidence (...)"; the page's details said it otherwise
    (and the printed word was "certified", which selection.json does not hold)."""
    from latentbench.cli._select import spend_line
    from latentbench.select import SelectionRecord

    for stopped, said in (
        ("confidence", "confidence (best certified)"),  # this record holds no delta
        ("budget", "budget (budget spent)"),
        ("exhausted", "exhausted (every cell revealed)"),
    ):
        data = json.loads(selection_run.to_json())
        data["stopped"] = stopped
        assert spend_line(SelectionRecord.from_dict(data)).endswith(f"stopped: {said}")
        table = page_table(build_report(selection=data), "selection-details")
        assert table.set_index("quantity").loc["stopped", "value"] == said


def test_a_fit_directory_without_responses_shows_one_table_of_abilities(with_unevaluated, tmp_path):
    """Without the responses the Abilities table shows abilities.csv, but the rank-shift table
    showed the fit's own theta and its ranks (another order), and the ranks read back as
    1.000, 2.000 where a model is not ranked."""
    from latentbench.irt import IRTResult

    matrix, result, _, table = with_unevaluated
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result.save(tmp_path / "fit", matrix)
        loaded = IRTResult.load(tmp_path / "fit")
        page = build_report(loaded)
    abilities = page_table(page, "abilities").rename(columns={"rank": "rank_theta"})
    shifts = page_table(page, "rank-shifts")
    assert abilities["model"].tolist() == table["model"].astype(str).tolist()
    columns = ["theta", "rank_theta", "rank_lower", "rank_upper", "rank_accuracy"]
    left, right = _by_model(abilities, columns), _by_model(shifts, columns)
    pd.testing.assert_frame_equal(left.loc[right.index], right)
    assert abilities["rank_theta"].str.fullmatch(r"\d*").all()
    assert shifts["rank_theta"].str.fullmatch(r"\d*").all()
