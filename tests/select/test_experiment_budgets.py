"""What an experiment states about budgets to a target accuracy and the savings: the
crossing of all the seeds' curve (the bootstrap gives only its spread), "not reached" when
it never gets there, one set of numbers in summary.json, the table and the report, no NaN,
no "None", no interval from one seed."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from latentbench.select._experiment import ExperimentSettings, _summarise

GRID = np.arange(0, 401, 16)


def _rows(policy: str, when: list[float], init: int = 64) -> list[dict]:
    """Per-seed results: seed ``k`` recommends the true best from budget ``when[k]`` on
    (``inf``: never)."""
    return [
        {
            "pool": "p",
            "policy": policy,
            "seed": k,
            "correct": GRID >= w,
            "covered": True if policy == "pulse" else None,
            "init": init,
            "post": int(GRID[-1]),
            "certified": None,
            "final_correct": bool(np.isfinite(w)),
            "seconds": 0.1,
        }
        for k, w in enumerate(when)
    ]


def _experiment(
    runs: dict[str, list[float]], reference: str | None = "ucbe", stop: str | None = None, **row
):
    """The summary of ``runs`` (each policy's budget to the right answer per seed; ``row``:
    fields every run's row takes, e.g. a certified stop's)."""
    shared = ExperimentSettings(
        scores=np.zeros((4, 10), dtype=np.float32),
        pools={"p": np.arange(4)},
        budget=int(GRID[-1]),
        batch_size=16,
        init_batch=16,
        proxy=None,
        grid=GRID,
        **({} if stop is None else {"stop": stop}),
    )
    results = [{**r, **row} for policy, when in runs.items() for r in _rows(policy, when)]
    n = len(next(iter(runs.values())))
    policies = list(runs)
    res = _summarise(results, shared, shared.pools, policies, list(range(n)), 0.95, reference, 1.0)
    res.params["reference"] = reference if reference in runs else None
    return res, {r["policy"]: r for r in res.summary}


def _crossing(when: list[float], target: float = 0.95) -> float:
    curve = (GRID[None, :] >= np.asarray(when)[:, None]).mean(axis=0)
    ok = curve >= target - 1e-12
    return float(GRID[np.argmax(ok)]) if ok.any() else float("nan")


# 12 seeds. UCB-E: 11 right from 32, one never: 92 % at the end, never 95 %, although the
# resamples without that seed (a third of them) reach it at 32. PULSE: right from budgets
# spread out, so the mean of its resamples' crossings is not the crossing of all the seeds.
UCBE_NEVER = [32.0] * 11 + [np.inf]
PULSE = [0, 16, 16, 32, 48, 48, 64, 96, 128, 160, 256, 336]
UCBE_LATE = [48, 64, 96, 128, 128, 160, 176, 224, 256, 288, 320, 384]


def _table_text(res, capsys) -> str:
    from latentbench.cli._select import print_experiment_table

    print_experiment_table(res)
    return " ".join(capsys.readouterr().out.split())


def _page_text(res) -> str:
    from latentbench.report import build_experiment_report

    page = build_experiment_report(res)
    page = re.sub(r"data:image/png;base64,[^\"']+", "", page)
    return " ".join(re.sub(r"<[^>]+>", " ", page).split())


def test_the_budget_is_the_crossing_of_all_the_seeds_and_the_savings_use_it(tmp_path, capsys):
    """The budget column held the mean of the bootstrap resamples' crossings, the saving the
    crossing of all the seeds: one row said two things (1 - 64/74 printed as 20 %)."""
    res, rows = _experiment({"pulse": PULSE, "ucbe": UCBE_LATE})
    pulse, ucbe = rows["pulse"], rows["ucbe"]
    x, y = _crossing(PULSE), _crossing(UCBE_LATE)
    assert pulse["budget_post_init"] == x and ucbe["budget_post_init"] == y
    assert pulse["budget_total"] == x + 64
    assert pulse["budget_post_init_90"] == _crossing(PULSE, 0.9) <= x
    assert pulse["saved_post_init_pct"] == pytest.approx(100 * (y - x) / y)
    assert pulse["saved_total_pct"] == pytest.approx(100 * (1 - (x + 64) / (y + 64)))
    # 12 seeds: 95 % is first reached where all of them are right, the slowest seed's
    # budget; its bootstrap crossings can only move down, so they give no SD (a number
    # printed as its spread until 2026-12-07), and the table says why; at 90 % one may be
    # wrong (12 x 0.1 = 1.2): that budget keeps its SD
    assert pulse["budget_post_init_sd"] is None and pulse["budget_post_init_90_sd"] > 0
    assert "no SD for the budgets to 95 %: with 12 seeds" in res.params["budget_sd_note"]
    assert "(20 or more seeds give one)" in res.params["budget_sd_note"]
    assert "no SD for the budgets to 95 %: with 12 seeds" in _table_text(res, capsys)
    # 24 seeds (each twice: the same crossings), where one may still be wrong: the spread
    _, doubled = _experiment({"pulse": PULSE * 2, "ucbe": UCBE_LATE * 2})
    assert doubled["pulse"]["budget_post_init"] == x
    assert doubled["pulse"]["budget_post_init_sd"] > 0  # the bootstrap: the spread only
    # the table and the report print those numbers
    paths = res.save(tmp_path)
    assert [p.name for p in paths] == ["summary.json", "summary.csv", "curves.csv"]
    stored = json.loads((tmp_path / "summary.json").read_text())["summary"]
    assert stored[0]["budget_post_init"] == x
    with pytest.warns(DeprecationWarning, match="use ExperimentResult.save"):
        again = res.write(tmp_path / "old")  # the name before save: the same files
    assert [p.read_text() for p in again] == [p.read_text() for p in paths]
    page = _page_text(res)
    assert f"pulse saves {pulse['saved_post_init_pct']:.1f} %" in page
    assert "no SD for the budgets to 95 %: with 12 seeds" in page  # said where it is read


def test_a_curve_that_never_reaches_the_target_has_no_budget(tmp_path, capsys):
    """UCB-E's curve of all the seeds ends at 92 %: it was printed as needing 32 cells (the
    resamples that reached 95 %), fewer than PULSE's, with a saving of "-"."""
    res, rows = _experiment({"pulse": PULSE, "ucbe": UCBE_NEVER})
    ucbe = rows["ucbe"]
    assert ucbe["budget_post_init"] is None and ucbe["budget_total"] is None
    assert ucbe["reached"] is False and 0 < ucbe["reached_fraction"] < 1
    assert ucbe["final_accuracy"] == pytest.approx(11 / 12)
    assert rows["pulse"]["saved_post_init_pct"] is None
    assert rows["pulse"]["reached"] is True
    text = _table_text(res, capsys)
    assert "not reached (final accuracy 92 %)" in text
    assert "ucbe not reached" in text  # pulse's saving: why there is none
    assert "nan" not in text.lower()
    page = _page_text(res)
    assert "ucbe does not reach 95 % accuracy within 400 post-init cells (final accuracy 92 %)" in (
        page
    )
    assert f"pulse reaches 95 % at {_crossing(PULSE):,.0f} post-init cells" in page
    assert "saves -" not in page and "nan" not in page.lower().split()


def test_summary_json_is_strict_json_with_null_for_what_is_missing(tmp_path):
    """Bare NaN tokens: not JSON (JSON.parse fails on them)."""
    res, _ = _experiment({"pulse": [np.inf] * 4, "ucbe": [np.inf] * 4})
    res.save(tmp_path)

    def refuse(token):
        raise AssertionError(f"summary.json holds {token}")

    data = json.loads((tmp_path / "summary.json").read_text(), parse_constant=refuse)
    row = data["summary"][0]
    assert row["budget_post_init"] is None and row["saved_post_init_pct"] is None
    assert row["final_accuracy"] == 0


def test_no_reference_policy_gives_no_saving_columns_and_says_so(capsys):
    """`--policies pulse,naive` printed '% saved post vs None' and the report 'against None'."""
    res, rows = _experiment({"pulse": PULSE, "naive": UCBE_LATE}, reference=None)
    assert "saved_post_init_pct" not in rows["pulse"]
    text = _table_text(res, capsys)
    assert "None" not in text and "% saved" not in text
    assert "no reference policy" in text
    page = _page_text(res)
    assert "None" not in page and "no reference policy" in page


def test_one_seed_gives_no_spread_and_says_so(capsys):
    """One seed: '1,440 ± 0' and '-11.1 ± 0.0 [-11.1, -11.1]', '1 seeds per policy'."""
    res, rows = _experiment({"pulse": [48.0], "ucbe": [96.0]})
    pulse = rows["pulse"]
    assert pulse["budget_post_init"] == 48 and pulse["budget_post_init_sd"] is None
    assert pulse["saved_post_init_pct"] == 50
    for part in ("se", "lo", "hi"):
        assert pulse[f"saved_post_init_pct_{part}"] is None
    text = _table_text(res, capsys)
    assert "±" not in text and "[50.0" not in text
    assert "1 seed: every figure is that of one run, with no uncertainty" in text
    page = _page_text(res)
    assert "1 seed per policy and pool" in page and "1 seeds" not in page
    assert "pulse saves 50.0 % post-init, 30.0 % in total." in page
    assert "95 % interval" not in page


def test_report_refuses_incomplete_or_hand_edited_experiment_directories(tmp_path):
    """No summary.json gave 'lacks abilities.csv, items.csv, fit.json' (a fit's files); a
    word in curves.csv a ValueError traceback; no params 'against None'."""
    from latentbench.exceptions import InputError
    from latentbench.report import report_from

    res, _ = _experiment({"pulse": PULSE, "ucbe": UCBE_LATE})
    res.save(tmp_path / "ok")
    report_from(tmp_path / "ok")  # the complete directory reports
    (tmp_path / "ok" / "summary.json").rename(tmp_path / "summary.json")
    with pytest.raises(InputError, match=r"ok holds curves\.csv, summary\.csv of an experiment "
                       r"directory but no summary\.json") as caught:  # fmt: skip
        report_from(tmp_path / "ok")
    assert "fit.json" not in str(caught.value)
    (tmp_path / "summary.json").rename(tmp_path / "ok" / "summary.json")
    curves = tmp_path / "ok" / "curves.csv"
    good = curves.read_text()
    lines = good.splitlines()
    lines[3] = ",".join([*lines[3].split(",")[:3], "abc", "0.1"])
    curves.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"curves\.csv: column 'accuracy', line 4: value 'abc'; "
                       r"expected a share in \[0, 1\]"):  # fmt: skip
        report_from(tmp_path / "ok")
    curves.write_text(good)
    summary = tmp_path / "ok" / "summary.json"
    data = json.loads(summary.read_text())
    data["summary"][0]["budget_post_init"] = "soon"
    summary.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"summary\[0\] \(p, pulse\): budget_post_init is 'soon'"):
        report_from(tmp_path / "ok")
    data["summary"][0]["budget_post_init"] = None
    data["params"]["reference"] = "naive"
    summary.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"params\.reference is 'naive', which has no row"):
        report_from(tmp_path / "ok")
    del data["params"]
    summary.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"summary\.json: no 'params' object"):
        report_from(tmp_path / "ok")


def test_a_bad_number_in_curves_csv_is_named_as_written(tmp_path):
    """An accuracy of 1.5 was named 'value np.float64(1.5)' (numpy's repr), an empty cell
    'value nan'."""
    from latentbench.exceptions import InputError
    from latentbench.report import report_from

    res, _ = _experiment({"pulse": PULSE, "ucbe": UCBE_LATE})
    res.save(tmp_path / "ok")
    curves = tmp_path / "ok" / "curves.csv"
    lines = curves.read_text().splitlines()
    for cell, said in (("1.5", "value 1.5; expected a share"), ("", "an empty cell; expected")):
        edited = [*lines[:3], ",".join([*lines[3].split(",")[:3], cell, "0.1"]), *lines[4:]]
        curves.write_text("\n".join(edited) + "\n")
        with pytest.raises(InputError, match=r"column 'accuracy', line 4: ") as caught:
            report_from(tmp_path / "ok")
        assert said in str(caught.value) and "np." not in str(caught.value)


def test_an_old_summary_gets_its_budgets_again_from_the_curves(tmp_path):
    # (review) a summary.json written before the budgets were the crossing of all the seeds'
    # curve held the mean over the resamples that reached 95 %: a number even where the curve
    # never reaches it, shown as the crossing
    import json

    from latentbench.select import ExperimentRecord

    res = _six_models("all", n_jobs=1)
    res.save(tmp_path / "exp")
    path = tmp_path / "exp" / "summary.json"
    data = json.loads(path.read_text())
    fresh = {r["policy"]: r["budget_post_init"] for r in data["summary"]}
    for row in data["summary"]:  # as an earlier version wrote it
        row.pop("reached")
        row["budget_post_init"] = 123.0
    path.write_text(json.dumps(data))
    record = ExperimentRecord.read(tmp_path / "exp")
    assert {r["policy"]: r["budget_post_init"] for r in record.summary} == fresh
    assert "budgets recomputed" in record.params["budgets_recomputed"]


def test_the_reference_policy_is_checked_and_stripped_before_the_runs():
    import numpy as np
    import pytest

    from latentbench.exceptions import InputError
    from latentbench.select import run_experiment

    S = (np.random.default_rng(0).random((6, 100)) < 0.5).astype(float)
    with pytest.raises(InputError, match=r"reference='pulse'; expected one of the policies"):
        run_experiment(S, {"all": np.arange(6)}, ["uniform", "ucbe"], seeds=2, budget=100,
                       reference="pulse", n_jobs=1)  # fmt: skip
    res = run_experiment(S, {"all": np.arange(6)}, ["uniform", " ucbe"], seeds=2, budget=100,
                         n_jobs=1)  # fmt: skip
    assert res.params["reference"] == "ucbe"


def test_the_report_words_the_runs_own_target(tmp_path):
    # (review) run_experiment(target=0.6): the report said "reaches 95 %" and titled the
    # columns "to 95 %"

    from latentbench.report import report_from

    res = _six_models("all", target=0.6, n_jobs=1)
    res.save(tmp_path / "exp")
    html = report_from(tmp_path / "exp").html
    assert "to 60 % (post-init)" in html and "to 95 % (post-init)" not in html
    assert "reaches 95 %" not in html and "reach 95 %" not in html


def test_an_old_summary_with_a_numeric_pool_name_finds_its_curves(tmp_path):
    # (review) curves.csv read "2024" as a number: no curve matched, every budget None;
    # and the sustained budget kept the old bootstrap mean
    import json

    from latentbench.select import ExperimentRecord

    res = _six_models("2024", n_jobs=1)
    res.save(tmp_path / "exp")
    path = tmp_path / "exp" / "summary.json"
    data = json.loads(path.read_text())
    fresh = {r["policy"]: (r["budget_post_init"], r["budget_post_init_sustained"])
             for r in data["summary"]}  # fmt: skip
    for row in data["summary"]:
        row.pop("reached")
        row["budget_post_init_sustained"] = 999.0
    path.write_text(json.dumps(data))
    record = ExperimentRecord.read(tmp_path / "exp")
    again = {r["policy"]: (r["budget_post_init"], r["budget_post_init_sustained"])
             for r in record.summary}  # fmt: skip
    assert again == fresh


def _six_models(pool: str, **options):
    """An experiment on 6 models x 200 items (uniform against UCB-E, 3 seeds, 400 cells)."""
    import numpy as np

    from latentbench.select import run_experiment

    rng = np.random.default_rng(0)
    S = (rng.random((6, 200)) < np.linspace(0.3, 0.7, 6)[:, None]).astype(float)
    return run_experiment(S, {pool: np.arange(6)}, ["uniform", "ucbe"], seeds=3, budget=400,
                          **options)  # fmt: skip


def test_the_report_gives_no_sd_beside_a_budget_not_reached(capsys):
    """The printed table said "not reached (final accuracy 92 %)" for UCB-E; the report's
    table put an SD (that of the bootstrap resamples that happen to reach 95 %) beside its
    "not reached", the spread of a budget that is not there."""
    from latentbench.report._experiment import experiment_table

    # 24 seeds (each twice: 22 of them right from 32, 92 % at the end): a spread to keep
    res, rows = _experiment({"pulse": PULSE * 2, "ucbe": UCBE_NEVER * 2})
    assert rows["ucbe"]["budget_post_init_sd"] is not None  # summary.json keeps the spread
    table = experiment_table(res).set_index("policy")
    assert table.loc["ucbe", "to 95 % (post-init)"] == "not reached"
    assert np.isnan(table.loc["ucbe", "to 95 % SD"])
    assert "not reached (final accuracy 92 %)" in _table_text(res, capsys)  # no ± there
    assert table.loc["pulse", "to 95 % SD"] == pytest.approx(rows["pulse"]["budget_post_init_sd"])


def test_reading_an_estimate_experiment_as_a_selection_one_names_its_reader(tmp_path):
    """``ExperimentRecord.read`` of an ``experiment --task estimate --out DIR`` folder said
    "no curves.csv; expected the output of `latentbench experiment --out DIR`", which it is;
    it names the reader of that folder instead (``EstimateExperiment.read``)."""
    from latentbench.exceptions import InputError
    from latentbench.select import EstimateExperiment, ExperimentRecord

    folder = tmp_path / "exp"
    folder.mkdir()
    for name in ("runs.csv", "summary.csv", "summary.json"):  # what --task estimate writes
        (folder / name).write_text("{}" if name.endswith(".json") else "model\n")
    with pytest.raises(InputError, match=r"--task estimate.*EstimateExperiment\.read"):
        ExperimentRecord.read(folder)
    assert callable(EstimateExperiment.read)  # the reader named exists


def test_a_certified_stop_run_says_why_its_budgets_have_no_sd(capsys):
    """With ``stop='confidence'`` the budgets of fewer than 20 seeds got no SD as any run's,
    but ``params['budget_sd_note']`` was left out: the report's budget table, which a stop's
    run shows too, printed its 'to 95 % SD' cells empty and said nothing of why (seen with
    ``latentbench experiment bfcl_v2.parquet --seeds 6 --stop confidence`` then ``report``).
    The note is kept and the report says it; the printed table, which shows the cells at
    the stop and no budget, does not."""
    res, _ = _experiment(
        {"pulse": PULSE, "ucbe": UCBE_LATE}, stop="confidence", certified=True, post=200
    )
    assert all(row["budget_post_init_sd"] is None for row in res.summary)
    assert "no SD for the budgets to 95 %: with 12 seeds" in res.params["budget_sd_note"]
    assert "no SD for the budgets" in _page_text(res)
    assert "no SD for the budgets" not in _table_text(res, capsys)


def test_no_run_certified_measures_no_saving(tmp_path, capsys):
    """``experiment --stop confidence --budget 3000`` where no run certified printed
    "saves 0.0 % ± 0.0 (95 % interval 0.0 to 0.0)": both policies counted their whole budget,
    which measures nothing. The saving is null, its ``_no_interval`` says why, the table says
    "not measured" with the why under it, the report says no saving was measured; and an
    earlier version's summary.json (0.0 written) reads back the same."""
    from latentbench.select import ExperimentRecord

    res, rows = _experiment(
        {"pulse": PULSE, "ucbe": UCBE_LATE}, stop="confidence", certified=False, post=400
    )
    names = ("saved_post_init_pct", "saved_total_pct")
    for name in names:
        assert all(rows["pulse"][f"{name}{part}"] is None for part in ("", "_se", "_lo", "_hi"))
        assert rows["pulse"][f"{name}_no_interval"].startswith(
            "no saving measured: no run of the policy or of ucbe certified within the budget "
            "(400 post-init cells), so both counted their whole budget"
        )
    table = _table_text(res, capsys)
    assert "0.0 ± 0.0" not in table and "not measured: no run certified" in table
    assert "a larger --budget is needed" in table
    page = _page_text(res)
    assert "saves 0.0" not in page and "pulse: no saving measured: no run of" in page
    res.save(tmp_path / "exp")
    path = tmp_path / "exp" / "summary.json"
    data = json.loads(path.read_text())
    for row in data["summary"]:  # as an earlier version wrote it
        for name in names:
            row.update({name: 0.0, f"{name}_se": 0.0, f"{name}_lo": 0.0, f"{name}_hi": 0.0})
            row[f"{name}_no_interval"] = None
    path.write_text(json.dumps(data))
    old = {r["policy"]: r for r in ExperimentRecord.read(tmp_path / "exp").summary}
    assert old["pulse"]["saved_post_init_pct"] is None
    assert old["pulse"]["saved_total_pct_no_interval"].startswith("no saving measured")
    # where the runs certified, a saving is measured (here none: both stop at 200 cells)
    rows = _experiment(
        {"pulse": PULSE, "ucbe": UCBE_LATE}, stop="confidence", certified=True, post=200
    )[1]
    assert rows["pulse"]["saved_post_init_pct"] == 0.0
    assert rows["pulse"]["saved_post_init_pct_no_interval"] is None


def _stopped(pulse: list[float | None], ucbe: list[float | None]):
    """A certified-stop experiment of 6 seeds from each run's post-init cells at its
    certificate (None: it never certified, so counts the whole budget, 400)."""
    when = {"pulse": pulse, "ucbe": ucbe}
    shared = ExperimentSettings(
        scores=np.zeros((4, 10), dtype=np.float32), pools={"p": np.arange(4)},
        budget=int(GRID[-1]), batch_size=16, init_batch=16, proxy=None, grid=GRID,
        stop="confidence",
    )  # fmt: skip
    results = [
        {**r, "post": int(GRID[-1]) if cells is None else cells, "certified": cells is not None}
        for policy, stops in when.items()
        for r, cells in zip(_rows(policy, [0.0] * len(stops)), stops, strict=True)
    ]
    seeds = list(range(len(pulse)))
    res = _summarise(results, shared, shared.pools, list(when), seeds, 0.95, "ucbe", 1.0)
    return res, {r["policy"]: r for r in res.summary}


_FAST = [96.0, 112.0, 128.0, 144.0, 160.0, 176.0]
_SLOW = [224.0, 240.0, 256.0, 272.0, 288.0, 304.0]


@pytest.mark.parametrize(
    ("pulse", "ucbe", "said", "bound"),
    [
        (_FAST, [*_SLOW[:4], None, None], "2 of 6 runs of ucbe and 0 of 6 of pulse",
         "a lower bound (ucbe would have needed more cells)"),
        ([*_FAST[:5], None], _SLOW, "0 of 6 runs of ucbe and 1 of 6 of pulse",
         "an upper bound (pulse would have needed more cells)"),
        ([*_FAST[:5], None], [*_SLOW[:3], None, None, None],
         "3 of 6 runs of ucbe and 1 of 6 of pulse",
         "neither a lower nor an upper bound (both would have needed more cells)"),
    ],
    ids=["reference-censored", "policy-censored", "both-censored"],
)  # fmt: skip
def test_a_saving_on_censored_runs_says_which_bound_it_is(
    pulse, ucbe, said, bound, tmp_path, capsys
):
    """``experiment --stop confidence`` where some runs did not certify within the budget
    (each counts its whole budget, a cost under-stated) printed the saving as measured,
    ``6.1 ± 2.9 [2.0, 12.7]`` (bfcl_v2 gap 0.08, budget 2300: 5 of 6 PULSE runs and no
    UCB-E run certified). The numbers stay; ``saving_censored`` says how many runs of each
    did not certify and which bound the saving is, as the table (under the saving and under
    the table) and the report do; an earlier summary.json without the key gets it again."""
    from latentbench.select import ExperimentRecord

    res, rows = _stopped(pulse, ucbe)
    words = f"{said} did not certify within the budget and count it: the saving is {bound}"
    assert rows["pulse"]["saving_censored"] == words
    assert rows["ucbe"]["saving_censored"] is None  # the reference: no saving to label
    assert rows["pulse"]["saved_post_init_pct"] is not None  # the numbers are kept
    assert rows["pulse"]["saved_post_init_pct_se"] is not None
    table = _table_text(res, capsys)
    short = bound.split(" (")[0]
    assert table.count(f"({short})") == 2  # under both savings, post-init and total
    assert f"pool p, pulse: {words}" in table
    page = _page_text(res)
    assert f"{words[0].upper()}{words[1:]}." in page  # the finding
    assert page.count(f"({short})") >= 2  # the table's two saving cells
    res.save(tmp_path / "exp")
    path = tmp_path / "exp" / "summary.json"
    assert json.loads(path.read_text())["summary"][0]["saving_censored"] == words
    data = json.loads(path.read_text())
    for row in data["summary"]:  # as an earlier version wrote it
        del row["saving_censored"]
    path.write_text(json.dumps(data))
    old = {r["policy"]: r for r in ExperimentRecord.read(tmp_path / "exp").summary}
    assert old["pulse"]["saving_censored"] == words and old["ucbe"]["saving_censored"] is None


def test_a_saving_with_every_run_certified_or_none_measured_gets_no_censored_label(
    tmp_path, capsys
):
    """Every run certified: ``saving_censored`` null and nothing said; no run of either
    certified: no saving (its ``_no_interval`` says why), so nothing to label; a
    ``--stop budget`` summary.json (no such key) reads back without one."""
    from latentbench.select import ExperimentRecord

    res, rows = _stopped(_FAST, _SLOW)
    assert rows["pulse"]["saving_censored"] is None
    table = _table_text(res, capsys)
    assert "did not certify" not in table and "bound" not in table
    _, rows = _stopped([None] * 6, [None] * 6)
    assert rows["pulse"]["saved_post_init_pct"] is None
    assert rows["pulse"]["saving_censored"] is None
    res, _ = _experiment({"pulse": PULSE, "ucbe": UCBE_LATE})
    res.save(tmp_path / "budget")
    again = ExperimentRecord.read(tmp_path / "budget").summary
    assert all(row.get("saving_censored") is None for row in again)
