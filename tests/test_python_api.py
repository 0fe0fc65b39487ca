"""A notebook user of the Python API: what they pass either works (missing stays missing) or
is refused with an :class:`InputError` naming the argument and the value, never a
``TypeError`` / ``AttributeError`` from deep inside the library; results print short."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import latentbench as lb
from latentbench import report, select
from latentbench.exceptions import InputError
from latentbench.io import ResponseMatrix


def _wide(n_models: int = 12, n_items: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(size=n_models), rng.normal(size=n_items)
    Y = (rng.random((n_models, n_items)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(float)
    return pd.DataFrame(
        Y, index=[f"m{i}" for i in range(n_models)], columns=[f"q{j}" for j in range(n_items)]
    )


@pytest.fixture(scope="module")
def matrix() -> ResponseMatrix:
    return ResponseMatrix.from_wide(_wide())


@pytest.fixture(scope="module")
def answers() -> pd.Series:
    return _wide(1, 40, seed=3).iloc[0].rename("new")


@pytest.fixture(scope="module")
def fit(matrix: ResponseMatrix) -> lb.IRTResult:
    return lb.TwoPL().fit(matrix)


# ------------------------------------------------------------------ ResponseMatrix(...)
def _first_row(wide: pd.DataFrame) -> pd.DataFrame:
    mask = pd.DataFrame(False, index=wide.index, columns=wide.columns)
    mask.iloc[0] = True
    return mask


@pytest.mark.parametrize(
    "make",
    [
        lambda w: w.astype("Float64").mask(_first_row(w)),
        lambda w: w.astype(object).mask(_first_row(w), pd.NA),
        lambda w: w.astype("boolean").mask(_first_row(w)).to_numpy(),
    ],
    ids=["Float64 frame", "object frame with pd.NA", "boolean array with pd.NA"],
)
def test_constructor_reads_pd_na_as_missing(make) -> None:
    """Nullable pandas dtypes (and an object frame) mark missing cells with ``pd.NA``; the
    constructor read that as "not numeric" (from_wide read it as missing)."""
    wide = _wide(4, 6)
    m = ResponseMatrix(make(wide), list(wide.index), list(wide.columns))
    assert np.isnan(m.scores[0]).all()
    np.testing.assert_array_equal(m.scores[1:], wide.to_numpy(np.float32)[1:])


def test_constructor_refuses_ragged_rows() -> None:
    with pytest.raises(InputError, match=r"rows of different lengths.*expected a 2-D"):
        ResponseMatrix([[1, 0, 1], [1, 0]], ["a", "b"], ["x", "y", "z"])


def test_constructor_refuses_complex_scores() -> None:
    """numpy casts a complex array to float by dropping the imaginary part: a silent change."""
    with pytest.raises(InputError, match=r"complex.*expected scores in \[0, 1\]"):
        ResponseMatrix(np.ones((2, 2)) * 1j, ["a", "b"], ["x", "y"])


def test_constructor_refuses_missing_ids() -> None:
    with pytest.raises(InputError, match=r"model_ids=None; expected one id per row"):
        ResponseMatrix(np.ones((2, 2)), None, ["x", "y"])  # type: ignore[arg-type]


def test_constructor_refuses_a_string_of_ids() -> None:
    """A string is iterable: 'xy' for two items was read as the items 'x' and 'y', silently."""
    with pytest.raises(InputError, match=r"item_ids='xy'; expected one id per column"):
        ResponseMatrix(np.ones((2, 2)), ["a", "b"], "xy")  # type: ignore[arg-type]


def test_from_wide_refuses_a_multiindex_of_rows_naming_it() -> None:
    wide = _wide(4, 6)
    wide.index = pd.MultiIndex.from_tuples([(m, "chat") for m in wide.index])
    with pytest.raises(InputError, match=r"the rows have 2 levels.*\('m0', 'chat'\).*one model"):
        ResponseMatrix.from_wide(wide)


def test_summary_repr_is_short_on_many_constant_items() -> None:
    wide = _wide(6, 2000)
    wide.iloc[:, :900] = 1.0  # 900 constant items
    summary = ResponseMatrix.from_wide(wide).summary()
    assert len(summary.constant_items) >= 900
    assert len(repr(summary)) < 400, repr(summary)
    assert "q0" in repr(summary) and f"({len(summary.constant_items):,})" in repr(summary)


# ------------------------------------------------------------------ estimate / compare
@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("budget", "abc"),
        ("budget", float("nan")),
        ("budget", [10]),
        ("precision", "0.02"),
        ("floor", "0.5"),
        ("floor", None),
        ("model", 1.5),
        ("model", ["new"]),
    ],
)
def test_estimate_refuses_an_option_of_the_wrong_type(matrix, answers, option, value) -> None:
    with pytest.raises(InputError, match=rf"{option}={value!r}".replace("[", r"\[")):
        select.estimate(matrix, answers, **{option: value})


@pytest.mark.parametrize(("option", "value"), [("floor", "0.5"), ("model_a", 2.5)])
def test_compare_refuses_an_option_of_the_wrong_type(matrix, answers, option, value) -> None:
    other = _wide(1, 40, seed=4).iloc[0].rename("other")
    with pytest.raises(InputError, match=rf"{option}={value!r}"):
        select.compare(matrix, answers, other, **{option: value})


def test_estimate_experiment_refuses_a_text_precision(matrix) -> None:
    with pytest.raises(InputError, match=r"precision='0\.02'; expected a half-width"):
        select.estimate_experiment(matrix, models=matrix.model_ids[:1], precision="0.02")


@pytest.mark.parametrize("cache", [None, 3])
def test_a_cache_that_is_no_folder_is_named(matrix, answers, tmp_path, cache) -> None:
    """``cache=None`` was a pathlib ``TypeError`` for a file calibration and ignored for one
    in memory."""
    path = tmp_path / "cal.parquet"
    matrix.to_long().to_parquet(path)
    for calibration in (path, matrix):
        with pytest.raises(InputError, match=rf"cache={cache!r}; expected True"):
            select.tiny(calibration, 10, cache=cache)
        with pytest.raises(InputError, match=rf"cache={cache!r}; expected True"):
            select.estimate(calibration, answers, cache=cache)


def test_numpy_integers_are_integers(matrix, answers) -> None:
    """A count from numpy (``np.int64``: a DataFrame cell, ``len`` of an array's arithmetic)
    was refused as "rank=np.int64(1); expected an integer", or iterated as a list of seeds."""
    from latentbench.select._experiment import _seed_list

    one = np.int64(1)
    assert select.estimate(matrix, answers, rank=one, budget=10).to_dict() == (
        select.estimate(matrix, answers, rank=1, budget=10).to_dict()
    )
    assert select.tiny(matrix, 10, rank=one).equals(select.tiny(matrix, 10, rank=1))
    assert select.default_schedule(np.int64(29), np.int64(1700), None) == (16, 16)
    assert repr(select.NaivePooling(refit_every=np.int64(5))).startswith("NaivePooling(")
    assert _seed_list(np.int64(2)) == _seed_list(2)  # type: ignore[arg-type]


# ------------------------------------------------------------------ replay / run_selection
@pytest.mark.parametrize(
    ("option", "value"),
    [("batch_size", "2"), ("batch_size", 2.5), ("batch_size", True), ("init_batch", "3"),
     ("init_batch", 1.5)],
)  # fmt: skip
def test_replay_refuses_a_batch_of_the_wrong_type(matrix, option, value) -> None:
    candidates = matrix[matrix.model_ids[:4], :]
    with pytest.raises(InputError, match=rf"{option}={value!r}"):
        select.replay(candidates, no_history=True, policy="uniform", budget=40, **{option: value})


def test_replay_given_a_policy_object_says_it_takes_a_name(matrix) -> None:
    with pytest.raises(InputError, match=r"policy=Pulse\(\).*name.*run_selection"):
        select.replay(matrix, no_history=True, policy=select.Pulse())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: select.Pulse(a="x"), r"a='x'; expected a nonnegative number"),
        (lambda: select.Pulse(delta="0.1"), r"delta='0\.1'; expected a value in \(0, 1\)"),
        (lambda: select.make_policy("pulse:a=x"), r"a='x'; expected a nonnegative number"),
        (lambda: select.make_policy("pulse:target_weight=x"), r"target_weight='x'; expected"),
        (lambda: select.Pulse(certificate_grid="x"), r"certificate_grid='x'; expected"),
        (lambda: select.Pulse(certificate_grid=2.7), r"certificate_grid=2\.7; expected"),
        (lambda: select.Pulse(certificate_split="x"), r"certificate_split='x'; expected"),
        (lambda: select.Pulse(lam=0.5j), r"lam=0\.5j; expected"),
    ],
)
def test_policy_options_of_the_wrong_type_are_named(make, message) -> None:
    """``pulse:a=x`` (a policy spec's text value) was a ``TypeError`` from ``a < 0``."""
    with pytest.raises(InputError, match=message):
        make()


@pytest.mark.parametrize(
    ("option", "value"),
    [("sigma", "1"), ("l2", "x"), ("l2_model", "x"), ("nonneg", "x"), ("max_iter", "50"),
     ("newton_iter", 2.5), ("random_state", "0"), ("max_cells", "x"), ("newton_tol", "x"),
     ("cv_grid", "x"), ("cv_cells", "x")],
)  # fmt: skip
def test_low_rank_proxy_names_an_option_of_the_wrong_type(matrix, option, value) -> None:
    """Only rank, prior and l2_model were checked: the others were a ``TypeError`` (or a numpy
    ``UFuncTypeError``) from deep in the fit, and ``nonneg="x"`` ran as True."""
    with pytest.raises(InputError, match=rf"{option}={value!r}; expected"):
        select.LowRankProxy(1, **{option: value}).fit(matrix)


def test_parse_policy_refuses_a_non_string() -> None:
    with pytest.raises(InputError, match=r"policy=3; expected a policy name"):
        select.parse_policy(3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("option", "value"), [("rank", "2"), ("rank", 1.5), ("sigma", "1"), ("l2", "x")]
)
def test_fit_cbmm_names_an_option_of_the_wrong_type(matrix, option, value) -> None:
    from latentbench import irt

    with pytest.raises(InputError, match=rf"{option}={value!r}; expected"):
        irt.fit_cbmm(matrix.scores, **{option: value})


# ------------------------------------------------------------------ fit results, report
def test_standard_errors_refuses_a_text_level(fit, matrix) -> None:
    with pytest.raises(InputError, match=r"level='0\.9'; expected a number in \(0, 1\)"):
        fit.standard_errors(matrix, level="0.9")


@pytest.mark.parametrize(
    ("option", "value"),
    [("top", "10"), ("top", 10.5), ("top", 0), ("n_curves", "3"), ("notes", "one note")],
)
def test_build_report_refuses_a_count_of_the_wrong_type(fit, matrix, tmp_path, option, value):
    with pytest.raises(InputError, match=rf"{option}={value!r}"):
        report.build_report(fit, matrix, path=tmp_path / "r.html", **{option: value})
    assert not (tmp_path / "r.html").exists()


def test_build_report_and_rank_agreement_take_numpy_integers(fit, matrix, tmp_path) -> None:
    """``top=np.int64(5)`` (from a DataFrame cell or numpy arithmetic) reached
    ``rank_agreement``, which took only a Python int: "'numpy.int64' object is not iterable"."""
    from latentbench.irt.diagnostics import rank_agreement

    table = rank_agreement(fit, top=np.int64(5))
    assert "top 5" in table.to_string()
    report.build_report(fit, matrix, path=tmp_path / "r.html", top=np.int64(5))
    assert (tmp_path / "r.html").exists()


def test_report_from_checks_n_jobs_and_takes_numpy_integers(fit, matrix, tmp_path) -> None:
    fit.save(tmp_path / "fit", matrix)
    with pytest.raises(InputError, match=r"n_jobs=0; expected -1"):
        report.report_from(tmp_path / "fit", tmp_path / "a.html", n_jobs=0)
    page = report.report_from(tmp_path / "fit", tmp_path / "b.html", top=np.int64(5))
    assert (tmp_path / "b.html").exists() and page.path


def test_estimate_reads_pd_na_answers_and_refuses_records_and_none(matrix, answers) -> None:
    """An array of answers is read as the matrix constructor reads one (``pd.NA``: not
    answered); None or a list of records is refused naming its type, not a numpy error."""
    values = answers.to_numpy(dtype=object, copy=True)
    values[:5] = pd.NA
    masked = select.estimate(matrix, values, budget=10)
    nan = answers.to_numpy(dtype=float, copy=True)
    nan[:5] = np.nan
    assert masked.to_dict() == select.estimate(matrix, nan, budget=10).to_dict()
    with pytest.raises(InputError, match=r"responses=None; expected the new model's answers"):
        select.estimate(matrix, None)
    records = answers.rename("score").rename_axis("item").reset_index().to_dict("records")
    with pytest.raises(InputError, match=r"responses of type list are not scores"):
        select.estimate(matrix, records)


def test_estimate_says_a_percentage_scale(matrix, answers) -> None:
    with pytest.raises(InputError, match=r"outside \[0, 1\].*0-100 scale\? divide .* by 100"):
        select.estimate(matrix, answers * 100)


def test_from_long_names_index_levels_and_a_grouped_series() -> None:
    long = _wide(4, 6).rename_axis(index="model", columns="item").stack().rename("score")
    with pytest.raises(InputError, match=r"a Series indexed by \['model', 'item'\].*reset_index"):
        ResponseMatrix.from_long(long)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"'model' is a level of the index: frame\.reset_index"):
        ResponseMatrix.from_long(long.to_frame())
    assert ResponseMatrix.from_long(long.reset_index()).shape == (4, 6)


def test_read_given_a_dataframe_points_to_from_long(tmp_path) -> None:
    with pytest.raises(InputError, match=r"path of type DataFrame.*from_long\(frame\)"):
        ResponseMatrix.read(_wide(4, 6))  # type: ignore[arg-type]


# ------------------------------------------------------------------ synthetic
@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.simulate_2pl("10", 20), r"n_models='10'; expected an integer >= 2"),
        (lambda s: s.simulate_2pl(10, 20.5), r"n_items=20\.5; expected an integer >= 2"),
        (lambda s: s.simulate_2pl(10, 20, random_state=1.5), r"random_state=1\.5; expected"),
        (lambda s: s.simulate_2pl(10, 20, mechanism="mnra"), r"mechanism='mnra'; expected"),
        (lambda s: s.simulate_2pl(10, 20, missing="0.1"), r"missing rate='0\.1'; expected"),
        (lambda s: s.simulate_low_rank(10, 20, "2"), r"rank='2'; expected an integer >= 1"),
        (lambda s: s.simulate_stress(10, 100, random_state="0"), r"random_state='0'; expected"),
        (lambda s: s.leaderboard_like(10, "20"), r"n_items='20'; expected an integer >= 2"),
    ],
)
def test_synthetic_refuses_arguments_of_the_wrong_type(call, message) -> None:
    from latentbench import synthetic

    with pytest.raises(InputError, match=message):
        call(synthetic)


def test_raw_fit_and_synthetic_data_print_one_short_line() -> None:
    """``fit_cbmm(...)`` and ``simulate_2pl(...)`` as a notebook cell's last line printed every
    array and the whole loss history (tens of kB)."""
    from latentbench import irt, synthetic

    # 40 x 400 (was 300 x 3000: 1.5 s of CPU for the fit, 0.16 s now): the fields' own
    # reprs are ~18-21 kB on 540-560 lines at this size already, what the one line replaces
    data = synthetic.simulate_2pl(40, 400, random_state=0)
    raw = irt.fit_cbmm(data.matrix.scores, max_iter=400, tol=1e-14)
    assert len(raw.loss_history) > 100
    for obj, start in ((data, "SyntheticData(ResponseMatrix(40 models"), (raw, "CBMMFit(40")):
        text = repr(obj)
        assert text.startswith(start) and "\n" not in text and len(text) < 200, text


def test_a_progress_or_callback_that_is_no_function_is_named(matrix, tmp_path) -> None:
    """``progress=True`` (a notebook user asking for a bar) was a ``TypeError: 'bool' object is
    not callable`` from inside the library, after work had started."""
    with pytest.raises(InputError, match=r"callback=3; expected a function"):
        lb.TwoPL().fit(matrix, callback=3)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"progress=True; expected a function"):
        lb.TwoPL().fit(matrix, progress=True)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"progress='yes'; expected a function"):
        select.replay(matrix, no_history=True, policy="uniform", budget=40, progress="yes")


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_matrices_and_calibrations_stay_read_only_when_copied(matrix, how) -> None:
    """``scores`` is documented read-only (margins are cached on it); a matrix sent to a
    worker (joblib, multiprocessing) or deep-copied came back writeable."""
    import copy
    import pickle

    from latentbench.select._estimate_calibration import from_matrix

    def again(obj):
        return pickle.loads(pickle.dumps(obj)) if how == "pickle" else copy.deepcopy(obj)

    rows, cols = np.nonzero(np.random.default_rng(0).random(matrix.shape) < 0.1)
    values = matrix.scores[rows, cols]
    sparse = ResponseMatrix.from_cells(rows, cols, values, matrix.model_ids, matrix.item_ids)
    assert sparse.is_sparse
    for m in (matrix, sparse):
        copied = again(m)
        assert not copied.scores.flags.writeable
        np.testing.assert_array_equal(copied.scores, m.scores)
        with pytest.raises(ValueError, match="read-only"):
            copied.scores[0, 0] = 5.0
    cells = again(sparse).observed_cells()
    assert not cells.row_values.flags.writeable and not cells.col_values.flags.writeable
    calibration = again(from_matrix(matrix, rank=1))
    assert not calibration.V.flags.writeable and not calibration.model_scores.flags.writeable


@pytest.mark.parametrize("how", ["fresh", "pickle", "deepcopy", "load"])
def test_a_fits_factors_are_read_only(matrix, how, tmp_path) -> None:
    """``IRTResult.U``, ``V`` and ``b`` were returned writeable: ``fit.U[0] = 3`` changed every
    prediction while ``abilities``, ``items`` and the cached standard errors kept the old
    values, with no word. They are read-only; ``.copy()`` gives an array to edit."""
    import copy
    import pickle

    fit = lb.TwoPL().fit(matrix)
    if how == "pickle":
        fit = pickle.loads(pickle.dumps(fit))
    elif how == "deepcopy":
        fit = copy.deepcopy(fit)
    elif how == "load":
        fit.save(tmp_path / "fit")
        fit = lb.IRTResult.load(tmp_path / "fit")
    before = fit.predict_proba()
    for name in ("U", "V", "b"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(fit, name)[0] = 3.0
    np.testing.assert_array_equal(fit.predict_proba(), before)
    edited = fit.U.copy()
    edited[0] = 3.0  # a copy is the user's
    assert not np.array_equal(edited, fit.U)


def test_constructor_names_the_cell_that_is_no_number() -> None:
    """The error named the value only, through numpy's words (``np.str_('yes')``)."""
    with pytest.raises(
        InputError, match=r"scores are not numeric: scores\[0, 1\] = 'yes'; expected"
    ):
        ResponseMatrix(np.array([["1", "yes"], ["0", "1"]]), ["a", "b"], ["x", "y"])
    with pytest.raises(InputError, match=r"scores\[1, 0\] = \{'score': 1\}"):
        ResponseMatrix([[1, 0], [{"score": 1}, 1]], ["a", "b"], ["x", "y"])


@pytest.mark.parametrize("bad", [3, None])
def test_a_path_argument_that_is_no_path_is_named(fit, matrix, answers, bad) -> None:
    """``save(3)``, ``load(None)``: pathlib's "expected str, bytes or os.PathLike object, not
    int" named no argument."""
    estimate = select.estimate(matrix, answers, budget=10)
    many = select.estimate_many(matrix, answers.to_frame().T, budget=10)
    compare = select.compare(matrix, answers, _wide(1, 40, seed=4).iloc[0].rename("b"), budget=20)
    calls = [
        (lambda: fit.save(bad, matrix), "directory"),
        (lambda: lb.IRTResult.load(bad), "directory"),
        (lambda: estimate.save(bad), "out"),
        (lambda: many.save(bad), "out"),
        (lambda: compare.save(bad), "out"),
        (lambda: select.EstimateSet.read(bad), "path"),
        (lambda: select.CompareResult.read(bad), "path"),
        (lambda: report.report_from(bad), "source"),
    ]
    if bad is not None:  # path=None: no file written
        calls.append((lambda: report.build_report(fit, matrix, path=bad), "path"))
    for call, name in calls:
        with pytest.raises(InputError, match=rf"{name}={bad!r}; expected a path"):
            call()


@pytest.mark.parametrize(
    "call",
    ["estimate_many", "estimate_live", "estimate_experiment", "run_experiment",
     "experiment_from_matrix", "run_live"],
)  # fmt: skip
def test_stop_event_that_is_no_event_is_refused_first(call: str) -> None:
    """stop_event=True failed mid-run with "'bool' object has no attribute 'is_set'"."""
    import latentbench.select as select
    from latentbench.select.live import run_live

    function = run_live if call == "run_live" else getattr(select, call)
    n_required = {"run_experiment": 3, "estimate_live": 3, "run_live": 2, "estimate_many": 2}
    args = [None] * n_required.get(call, 1)
    with pytest.raises(InputError, match=r"stop_event=True; expected None or a threading\.Event"):
        function(*args, stop_event=True)


def test_a_fit_of_one_model_is_refused_not_fitted_silently() -> None:
    """A selection of one row (m[["m1"], :]) gets past the readers' two-model rule; TwoPL fitted
    it without a word (theta 0, nothing to compare it with)."""
    from latentbench.irt import TwoPL

    scores = (np.random.default_rng(0).random((5, 30)) < 0.5).astype(float)
    matrix = ResponseMatrix(scores, [f"m{i}" for i in range(5)], [f"q{j}" for j in range(30)])
    with pytest.raises(InputError, match=r"a matrix of 1 model\(s\) \('m1'\); expected at least 2"):
        TwoPL().fit(matrix[["m1"], :])


# ------------------------------------------------------------------ on/off options
def _flag_calls(matrix, fit, tmp_path):
    """One call per public on/off option: ``value`` given where True or False is expected."""
    candidates = matrix[matrix.model_ids[:4], :]
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "q0", "prompt": "p", "answer": "a"}\n')
    html = tmp_path / "r.html"
    return {
        "replay(no_history)": lambda v: select.replay(
            candidates, no_history=v, policy="uniform", budget=40
        ),
        "build_report(force)": lambda v: report.build_report(fit, matrix, path=html, force=v),
        "report_from(force)": lambda v: report.report_from(tmp_path / "fit", html, force=v),
        "build_experiment_report(force)": lambda v: report.build_experiment_report(
            tmp_path / "x", path=html, force=v
        ),
        "build_estimate_experiment_report(force)": (
            lambda v: report.build_estimate_experiment_report(tmp_path / "x", path=html, force=v)
        ),
        "plot_item_curves(show_models)": lambda v: report.plot_item_curves(
            fit, ["q0"], show_models=v
        ),
        "Store(read_only)": lambda v: lb.Store(":memory:", read_only=v),
        "Store.export(force)": lambda v: lb.Store(":memory:").export(tmp_path / "e.csv", force=v),
        "read_results(include_perturbed)": lambda v: lb.read_results(
            "lm-eval", tmp_path / "none", include_perturbed=v
        ),
        "load_items(require_prompt)": lambda v: lb.io.load_items(items, require_prompt=v),
        "load_items(require_answer)": lambda v: lb.io.load_items(items, require_answer=v),
        "SelectionResult.to_dict(trace)": lambda v: select.replay(
            candidates, no_history=True, policy="uniform", budget=40
        ).to_dict(trace=v),
        "SelectionResult.to_json(trace)": lambda v: select.replay(
            candidates, no_history=True, policy="uniform", budget=40
        ).to_json(trace=v),
        "Pulse(doubling)": lambda v: select.Pulse(doubling=v),
        "Pulse(revisit)": lambda v: select.Pulse(revisit=v),
        "Pulse(legacy_stale_predictions)": lambda v: select.Pulse(legacy_stale_predictions=v),
        "UCBE(doubling)": lambda v: select.UCBE(doubling=v),
        "fit_cbmm(nonneg)": lambda v: lb.irt.fit_cbmm(matrix.scores, nonneg=v),
        "fit_cbmm(accelerate)": lambda v: lb.irt.fit_cbmm(matrix.scores, accelerate=v),
        "fit_cbmm(check_monotone)": lambda v: lb.irt.fit_cbmm(matrix.scores, check_monotone=v),
        "standard_errors(normalisation)": lambda v: fit.standard_errors(matrix, normalisation=v),
        "standard_errors(scale_correction)": (
            lambda v: fit.standard_errors(matrix, scale_correction=v)
        ),
        "LowRankProxy.fit(warm_start)": lambda v: select.LowRankProxy(1).fit(matrix, warm_start=v),
    }


_FLAGS = [
    "replay(no_history)", "build_report(force)", "report_from(force)",
    "build_experiment_report(force)", "build_estimate_experiment_report(force)",
    "plot_item_curves(show_models)", "Store(read_only)", "Store.export(force)",
    "read_results(include_perturbed)", "load_items(require_prompt)", "load_items(require_answer)",
    "SelectionResult.to_dict(trace)", "SelectionResult.to_json(trace)", "Pulse(doubling)",
    "Pulse(revisit)", "Pulse(legacy_stale_predictions)", "UCBE(doubling)",
    "LowRankProxy.fit(warm_start)", "fit_cbmm(nonneg)", "fit_cbmm(accelerate)",
    "fit_cbmm(check_monotone)", "standard_errors(normalisation)",
    "standard_errors(scale_correction)",
]  # fmt: skip


@pytest.mark.parametrize("value", ["no", 1, None])
@pytest.mark.parametrize("call", _FLAGS)
def test_an_on_off_option_refuses_a_non_bool(matrix, fit, tmp_path, call, value) -> None:
    """``force="no"`` (a truthy string) overwrote the file, ``no_history="yes"`` or ``1`` ran
    as True: every on/off option was taken by its truth, unsaid."""
    fit.save(tmp_path / "fit", matrix)
    name = call[call.index("(") + 1 : -1]
    with pytest.raises(InputError, match=rf"^{name}={value!r}; expected True or False$"):
        _flag_calls(matrix, fit, tmp_path)[call](value)


def test_an_on_off_option_takes_numpy_bools(matrix, answers, fit, tmp_path) -> None:
    """``np.True_`` (a DataFrame cell, a comparison's result) is a bool."""
    fit.save(tmp_path / "fit", matrix)
    calls = _flag_calls(matrix, fit, tmp_path)
    run, same = calls["replay(no_history)"](np.True_), calls["replay(no_history)"](True)
    assert run.to_frame().equals(same.to_frame()) and run.best_id == same.best_id
    calls["build_report(force)"](np.False_)
    assert (tmp_path / "r.html").exists()
    calls["build_report(force)"](np.True_)  # overwrites
    with pytest.raises(InputError, match="exists; pass force=True"):
        calls["build_report(force)"](np.False_)
    assert "trace" not in calls["SelectionResult.to_dict(trace)"](np.False_)
    assert calls["Pulse(revisit)"](np.True_).revisit is True
    assert calls["UCBE(doubling)"](np.True_).doubling is True
    assert calls["load_items(require_answer)"](np.True_)[0]["answer"] == "a"
    calls["Store(read_only)"](np.False_).close()
    assert select.tiny(matrix, 10, cache=np.False_).equals(select.tiny(matrix, 10, cache=False))
    assert select.estimate(matrix, answers, budget=10, cache=np.False_).to_dict() == (
        select.estimate(matrix, answers, budget=10, cache=False).to_dict()
    )


def test_results_show_as_escaped_tables_in_a_notebook(tmp_path) -> None:
    """A notebook showed every result as its one-line repr: the abilities, the arms and the
    estimates needed a second call. ``_repr_html_`` shows the result's words, then its main
    table's first rows (best first) and how many there are, every id escaped."""
    import html

    from latentbench._repr import HTML_ROWS

    wide = _wide(14, 40)
    hostile = '<script>alert("m")</script>'
    wide.index = [hostile, *wide.index[1:]]
    matrix = ResponseMatrix.from_wide(wide)
    fit = lb.TwoPL().fit(matrix)
    run = select.replay(matrix, no_history=True, policy="uniform", budget=140, random_state=0)
    answers = _wide(1, 40, seed=3).iloc[0].rename("<b>new</b>")
    one = select.estimate(matrix, answers, budget=10)
    many = select.estimate_many(matrix, answers.to_frame().T, budget=10)
    (tmp_path / "selection.json").write_text(run.to_json())
    record = select.SelectionRecord.read_json(tmp_path / "selection.json")
    shown = {
        "matrix": (matrix, None),
        "fit": (fit, ".abilities"),
        "run": (run, ".to_frame()"),
        "estimate": (one, None),
        "estimates": (many, None),
        "record": (record, ".to_frame()"),
    }
    for name, (obj, whole) in shown.items():
        page = obj._repr_html_()
        assert page.startswith('<div class="latentbench">') and page.endswith("</div>"), name
        assert "<script>" not in page and "<b>new" not in page, name  # escaped
        if whole is not None:
            assert page.count("<tr") == HTML_ROWS + 1, name  # header and the first rows
            assert f"first {HTML_ROWS} of 14 rows" in page and whole in page, name
    fit_page = fit._repr_html_()
    best = fit.abilities.sort_values("rank_theta").iloc[0]["model"]
    first_row = fit_page.split("<tbody>")[1].split("</tr>")[0]
    assert f'<th scope="row">{best}</th>' in first_row
    top = run.to_frame().sort_values("estimate", ascending=False).iloc[0]["model"]
    first_row = run._repr_html_().split("<tbody>")[1].split("</tr>")[0]
    assert f'<th scope="row">{html.escape(top)}</th>' in first_row
    assert "&lt;b&gt;new&lt;/b&gt;" in one._repr_html_()
    assert "score " in one._repr_html_() and "stopped: " in one._repr_html_()


def test_a_notebook_shows_why_models_were_not_estimated() -> None:
    """An EstimateSet of failures only showed ``EstimateSet(0 model(s) estimated, 1 not)`` and
    an empty table: not which model failed nor why."""
    failed = select.EstimateSet(
        results=(), failures={"<b>m1</b>": "answered no calibrated item"}, not_estimated=("m2",)
    )
    page = failed._repr_html_()
    assert "&lt;b&gt;m1&lt;/b&gt;: not estimated (answered no calibrated item)" in page
    assert "interrupted: 1 model(s) not estimated (m2)" in page
    assert "<table" not in page  # no rows: no empty table


def test_a_fit_built_from_the_callers_arrays_leaves_them_writeable(matrix) -> None:
    """``dataclasses.replace(fit, U=mine)`` made the caller's own ``mine`` read-only (the
    flag was set on the array given, not on the result's copy): ``mine[0] = 0`` then raised
    in the caller's code."""
    import dataclasses

    fit = lb.TwoPL().fit(matrix)
    mine = fit.U.copy()
    other = dataclasses.replace(fit, U=mine)
    assert mine.flags.writeable and not other.U.flags.writeable
    mine[0] = 0.0  # the caller's array is still theirs to edit
    assert other.U[0, 0] == fit.U[0, 0]  # and the result keeps what it was given
