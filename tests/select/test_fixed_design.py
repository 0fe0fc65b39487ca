"""Fixed designs (``tiny`` + ``estimate(items=)``) and ``compare`` against a hostile user: an
edited design is refused for what was edited, options a fixed design does not use are
refused, and two orders of one comparison mirror each other (hostile walk, 2026-12-05)."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import DataWarning, InputError
from latentbench.io import ResponseMatrix
from latentbench.select import compare, estimate, estimate_many, tiny
from latentbench.select._estimate import read_design
from latentbench.select._estimate_calibration import Calibration, from_matrix


def _matrix(seed: int = 5, m: int = 11, n: int = 60) -> tuple[ResponseMatrix, np.ndarray]:
    """``m`` models on ``2 n`` items, item ``n + j`` a copy of item ``j`` (the same responses,
    so the same fitted parameters and design probability: twins)."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=m)
    b = rng.normal(size=n)
    Y = (rng.random((m, n)) < 1 / (1 + np.exp(-(theta[:, None] + b)))).astype(np.float64)
    Y = np.hstack([Y, Y])
    frame = pd.DataFrame(
        Y[:-1], index=[f"m{i}" for i in range(m - 1)], columns=[f"q{j:03d}" for j in range(2 * n)]
    )
    return ResponseMatrix.from_wide(frame), Y[-1]


@pytest.fixture(scope="module")
def setup() -> tuple[Calibration, dict[str, float], ResponseMatrix]:
    M, new = _matrix()
    cal = from_matrix(M, rank=1)
    return cal, dict(zip(cal.item_ids, new, strict=True)), M


def _twin(cal: Calibration, item: str, taken: set[str]) -> str | None:
    """An item outside ``taken`` with exactly ``item``'s parameters (its copy)."""
    j = cal.item_ids.index(item)
    for k, other in enumerate(cal.item_ids):
        if other not in taken and np.allclose(cal.V[k], cal.V[j]) and cal.b[k] == cal.b[j]:
            return other
    return None


def test_a_swapped_item_with_the_same_probability_is_refused_by_the_replayed_draw(setup):
    """Finding 1: swapping a design item for an unregistered twin left every probability
    unchanged and was accepted; the draw is now replayed from the design's seed."""
    cal, answers, _ = setup
    design = tiny(cal, 20, seed=3)
    assert list(design.columns) == [
        "item", "order", "probability", "weight", "floor", "seed", "calibration_hash", "k",
    ]  # fmt: skip
    assert (design["k"] == 20).all()
    assert (design["seed"] == 3).all()
    taken = set(design["item"])
    order = next(k for k in range(20) if _twin(cal, design["item"].iloc[k], taken))
    twin = _twin(cal, design["item"].iloc[order], taken)
    edited = design.copy()
    edited.loc[order, "item"] = twin
    assert np.allclose(  # the probabilities cannot tell: the old check accepted it
        tiny(cal, 20, seed=3)["probability"], edited["probability"]
    )
    expected = design["item"].iloc[order]
    with pytest.raises(InputError) as err:
        estimate(cal, answers, items=edited)
    text = str(err.value)
    assert f"the row of order {order + 1} holds item {twin!r}" in text
    assert f"drawn at order {order + 1} by seed 3" in text and f"is {expected!r}" in text
    # cutting the last rows keeps a verified design, and the check still holds in it
    short = estimate(cal, answers, items=design.iloc[: order + 1])
    assert short.n_evaluated == order + 1 and short.options["seed"] == 3
    with pytest.raises(InputError, match=f"order {order + 1} holds item"):
        estimate(cal, answers, items=edited.iloc[: order + 1])
    # another seed written in the file draws other items: refused at the first that differs
    with pytest.raises(InputError, match=r"by seed 4 "):
        estimate(cal, answers, items=design.assign(seed=4))


def test_a_design_without_a_seed_column_is_read_with_one_warning(setup):
    cal, answers, _ = setup
    design = tiny(cal, 15).drop(columns="seed")  # as written before the seed was recorded
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = estimate(cal, answers, items=design)
    said = [str(w.message) for w in caught if "no 'seed' column" in str(w.message)]
    assert len(said) == 1 and "not that its items are the ones tiny drew" in said[0]
    assert result.n_evaluated == 15 and result.options["seed"] is None


def test_a_design_without_a_k_column_is_sized_for_its_rows_with_one_warning(setup):
    """A design without its registered ``k`` (written before k was recorded, or with the
    column removed) was sized for its rows without a word: a cut design then got the narrower
    interval of a design of that size (hostile walk, 2026-12-06)."""
    cal, answers, _ = setup
    design = tiny(cal, 30)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cut = estimate(cal, answers, items=design.iloc[:12].drop(columns="k"))
    said = [str(w.message) for w in caught if "no 'k' column" in str(w.message)]
    assert len(said) == 1 and "sized for its 12 rows" in said[0], said
    assert any("no 'k' column" in w for w in cut.warnings)
    assert cut.options["k"] == 12  # what the interval was sized for, in estimate.json
    asked = {i: answers[i] for i in design["item"].iloc[:12]}  # (other answers: said unused)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the design as tiny wrote it: nothing to say
        registered = estimate(cal, asked, items=design.iloc[:12])
    assert registered.options["k"] == 30 and registered.to_dict()["options"]["k"] == 30
    assert "k" not in estimate(cal, answers, budget=12).options  # an adaptive run: its budget


def test_a_design_k_above_the_calibrated_items_is_refused(setup):
    """tiny draws at most the calibration's items; a larger ``k`` (edited) dropped the
    sizing silently (hostile walk, 2026-12-06)."""
    cal, answers, _ = setup
    design = tiny(cal, 20)
    with pytest.raises(InputError, match=rf"column 'k' holds 5000 .*at most the {cal.n_items}"):
        estimate(cal, answers, items=design.assign(k=5000))
    assert estimate(cal, answers, items=design.assign(k=cal.n_items)).n_evaluated == 20


def test_a_design_row_without_an_item_is_named_as_such(setup, tmp_path):
    """An empty ``item`` cell was reported as item 'nan' not in the calibration, 'the design
    was made from another calibration' (hostile walk, 2026-12-06)."""
    cal, answers, _ = setup
    design = tiny(cal, 10).astype({"item": object})
    design.loc[3, "item"] = None
    path = tmp_path / "items.csv"
    design.to_csv(path, index=False)
    for given, where in ((design, "row 4"), (path, "line 5")):
        with pytest.raises(InputError, match=rf"column 'item' is empty on {where} \(order 4\)"):
            estimate(cal, answers, items=given)
    trailing = tmp_path / "trailing.csv"  # a spreadsheet's empty last row: no order either
    trailing.write_text(tiny(cal, 10).to_csv(index=False) + ",,,,,,,\n")
    with pytest.raises(InputError, match=r"empty on line 12; expected .*the row is empty"):
        estimate(cal, answers, items=trailing)


def test_a_design_item_edited_or_in_another_layout_is_named_as_such(setup, tmp_path):
    """An item id padded with spaces in a design of this calibration (its hash matches) was
    said to come from 'another calibration'; a design saved with ';' (a spreadsheet's
    locale) or a column renamed 'Item' lacked columns without saying which it had (hostile
    walk, 2026-12-06)."""
    cal, answers, _ = setup
    design = tiny(cal, 10)
    padded = design.assign(item=" " + design["item"])
    with pytest.raises(InputError) as err:
        estimate(cal, answers, items=padded)
    text = str(err.value)
    assert "was edited" in text and "another calibration" not in text, text
    assert f"did you mean {design['item'].iloc[0]!r}" in text
    other = padded.assign(calibration_hash="f" * 64).drop(columns="seed")
    with pytest.raises(InputError, match=r"made from calibration 'ffff"):
        estimate(cal, answers, items=other)
    semicolons = tmp_path / "items.csv"
    design.to_csv(semicolons, sep=";", index=False)
    with pytest.raises(
        InputError,
        match=r"lacks column\(s\) item, order, probability; .*found "
        r"columns \['item;order;probability",
    ):
        estimate(cal, answers, items=semicolons)
    with pytest.raises(
        InputError,
        match=r"lacks column\(s\) item, probability; .*found columns "
        r"\['Item', 'order'\]",
    ):
        estimate(cal, answers, items=design.rename(columns={"item": "Item"})[["Item", "order"]])


def test_a_seed_above_2_to_the_53_is_replayed_exactly(setup, tmp_path):
    """A CSV seed was read through a float: 2**53 + 1 became 2**53, the replay drew other
    items and the design was called edited (review, 2026-12-05)."""
    cal, answers, _ = setup
    seed = 2**53 + 1
    path = tmp_path / "big.csv"
    tiny(cal, 12, seed=seed).to_csv(path, index=False)
    assert str(seed) in path.read_text()
    result = estimate(cal, answers, items=path)
    assert result.n_evaluated == 12 and result.options["seed"] == seed


def test_a_fixed_design_honours_point_and_refuses_budget_and_seed(setup):
    """Findings 2 and 3: point= was ignored but recorded; budget= and seed= were accepted,
    ignored and (seed) recorded."""
    cal, answers, _ = setup
    design = tiny(cal, 25, seed=2)
    dr = estimate(cal, answers, items=design)
    model = estimate(cal, answers, items=design, point="model")
    assert model.options["point"] == "model" and dr.options["point"] == "dr"
    assert model.score != dr.score and (model.lower, model.upper) == (dr.lower, dr.upper)
    assert dr.options["seed"] == 2 and dr.options["budget"] is None  # the design's seed
    for bad, said in (
        (dict(budget=5), r"budget=5 with a fixed design"),
        (dict(budget=0), r"budget=0 with a fixed design"),
        (dict(budget=100), r"budget=100 with a fixed design"),
        (dict(budget=None), r"budget=None with a fixed design"),
        (dict(seed=7), r"seed=7 with a fixed design"),
        (dict(seed=0), r"seed=0 with a fixed design"),
    ):
        with pytest.raises(InputError, match=said):
            estimate(cal, answers, items=design, **bad)  # type: ignore[arg-type]
        with pytest.raises(InputError, match=said):
            estimate_many(cal, pd.Series(answers), items=design, **bad)
    assert estimate(cal, answers, budget=100, seed=0).options["seed"] == 0  # adaptive: fine


def test_bad_design_files_are_named(setup, tmp_path):
    """Finding 4: a header-only file, a directory and a parquet design raised tracebacks."""
    cal, answers, _ = setup
    header = tmp_path / "empty.csv"
    header.write_text("item,order,probability,weight,floor,seed,calibration_hash\n")
    blank = tmp_path / "blank.csv"
    blank.write_text("")
    binary = tmp_path / "items.bin"
    binary.write_bytes(b"PAR1\xd0\xff\xfe\x00\x01")
    for path, said in (
        (header, rf"items {header}: no rows; expected the output of `latentbench tiny`"),
        (blank, rf"items {blank}: is empty"),
        (tmp_path, rf"items {tmp_path}: is a directory; expected the design file"),
        (binary, rf"items {binary}: is not a CSV file"),
    ):
        with pytest.raises(InputError, match=said):
            read_design(path)
    design = tiny(cal, 12)
    design.to_parquet(tmp_path / "items.parquet", index=False)
    design.to_csv(tmp_path / "items.csv", index=False)
    from_parquet = estimate(cal, answers, items=tmp_path / "items.parquet")
    from_csv = estimate(cal, answers, items=tmp_path / "items.csv")
    assert (from_parquet.score, from_parquet.items) == (from_csv.score, from_csv.items)


def test_rows_of_a_design_must_agree_and_a_rounded_probability_is_accepted(setup, tmp_path):
    """Findings 7 and 13: a 6-significant-digit round-trip was refused with two identical
    printed values; rows with another hash or floor were accepted silently."""
    cal, answers, _ = setup
    design = tiny(cal, 20)
    rounded = tmp_path / "rounded.csv"
    design.to_csv(rounded, index=False, float_format="%.6g")
    assert estimate(cal, answers, items=rounded).n_evaluated == 20
    edited = design.assign(probability=design["probability"] * ([1.0] * 4 + [1.001] * 16))
    with pytest.raises(InputError) as err:
        estimate(cal, answers, items=edited)
    recorded, derived = (float(f["probability"].iloc[4]) for f in (edited, design))
    assert f"has probability {recorded!r} but this calibration gives {derived!r}" in str(err.value)
    assert "relative difference 0.001" in str(err.value)
    for column, value in (("calibration_hash", "deadbeef"), ("floor", 0.3), ("seed", 9)):
        mixed = design.copy()
        mixed.loc[10:, column] = value
        with pytest.raises(InputError, match=rf"column '{column}' holds .* at order 11"):
            estimate(cal, answers, items=mixed)
    short = design.assign(calibration_hash=design["calibration_hash"].str[:12])
    with pytest.raises(InputError, match=r"the first 12 of the 64 characters .* truncated"):
        estimate(cal, answers, items=short)


def test_a_matrix_in_memory_and_its_file_are_another_calibration_said_so(setup, tmp_path):
    """Finding 8: the message listed other causes (rank, store) but not this one."""
    _, answers, M = setup
    path = tmp_path / "cal.parquet"
    M.to_long().to_parquet(path)
    design = tiny(ResponseMatrix.read(path), 10, cache=False)
    with pytest.raises(InputError) as err:
        estimate(path, answers, items=design, cache=False)
    assert "passed in Python as a ResponseMatrix" in str(err.value)
    assert "made from calibration '" in str(err.value)


def test_every_missing_design_item_is_named_in_one_error(setup):
    """Finding 9: only the first missing item was named."""
    cal, answers, _ = setup
    design = tiny(cal, 20)
    gone = list(design["item"].iloc[[2, 5, 6, 9, 11, 17]])
    partial = {k: v for k, v in answers.items() if k not in gone}
    with pytest.raises(InputError) as err:
        estimate(cal, partial, items=design)
    text = str(err.value)
    assert "did not answer 6 of the 20 items of the design" in text
    assert all(f"{g!r} (order" in text for g in gone[:5]) and text.count("(order") == 5


def test_a_run_that_stopped_early_is_told_it_may_cut_the_design(setup):
    """A model that answered only the first rows of a design (its run stopped) was told to
    run exactly those items, not that the first rows are a valid design (docs: cutting the
    last rows keeps one) (hostile walk, 2026-12-06)."""
    cal, answers, _ = setup
    design = tiny(cal, 20)
    first = {k: v for k, v in answers.items() if k in set(design["item"].iloc[:12])}
    with pytest.raises(
        InputError,
        match=r"answered its first 12: keep only the design's rows "
        r"of order 1 to 12",
    ):
        estimate(cal, first, items=design)
    assert estimate(cal, first, items=design.iloc[:12]).n_evaluated == 12
    gaps = {k: v for k, v in answers.items() if k != design["item"].iloc[3]}
    with pytest.raises(InputError) as err:
        estimate(cal, gaps, items=design)
    assert "keep only" not in str(err.value)  # a gap is not a cut


def test_a_design_refused_by_its_own_calibration_names_other_code_as_a_cause(setup):
    """A matrix file is refitted by each version of latentbench's code (the cache is keyed
    on it), so a design pre-registered under one version can be refused under another with
    the calibration's hash matching; the message only said the design was edited (hostile
    walk, 2026-12-06). Simulated: the same calibration (same hash) with other intercepts."""
    import dataclasses

    cal, answers, _ = setup
    design = tiny(cal, 15)
    refitted = dataclasses.replace(cal, b=np.asarray(cal.b) + 0.3)
    assert refitted.hash == cal.hash
    for given in (design, design.drop(columns="seed")):  # the replayed draw; the probabilities
        with pytest.raises(InputError, match=r"edited.*or made by other latentbench code"):
            estimate(refitted, answers, items=given)


def test_compare_says_when_the_ridge_proxy_asked_for_is_not_available(setup):
    """compare(proxy="ridge") on a calibration without responses (a fit directory) ran the
    IRT predictions with options["proxy"] = "irt" and no word, where estimate warns (hostile
    walk, 2026-12-06)."""
    import dataclasses

    cal, answers, _ = setup
    bare = dataclasses.replace(cal, item_features=None)  # as a fit directory's
    a = pd.Series(answers).rename("a")
    b = (1 - pd.Series(answers)).rename("b")
    with pytest.warns(DataWarning, match=r"proxy 'irt' instead of 'ridge'"):
        result = compare(bare, a, b, proxy="ridge", budget=10)
    assert result.options["proxy"] == "irt"
    assert any("instead of 'ridge'" in w for w in result.warnings)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compare(cal, a, b, proxy="ridge", budget=10).options["proxy"] == "ridge"


@pytest.mark.parametrize("column", ["floor", "seed", "calibration_hash", "k"])
def test_a_design_column_left_empty_is_named_as_empty(setup, tmp_path, column):
    """A column emptied by hand read 'holds nan at order 1 but nan at order 1' (hostile walk,
    2026-12-06)."""
    cal, answers, _ = setup
    design = tiny(cal, 10).astype({column: object})
    design.loc[:, column] = None
    path = tmp_path / "items.csv"
    design.to_csv(path, index=False)
    with pytest.raises(
        InputError,
        match=rf"items .*items\.csv: column '{column}' is empty at "
        r"order 1; expected",
    ):
        estimate(cal, answers, items=path)


@pytest.mark.parametrize("value", ["half", 1.5, 0, -0.2])
def test_a_design_floor_that_is_no_floor_is_named_in_the_file(setup, value):
    """floor 'half' raised a ValueError traceback; 1.5 and 0 were refused as '--floor 1.5',
    an option the user never gave (hostile walk, 2026-12-06)."""
    cal, answers, _ = setup
    design = tiny(cal, 10).astype({"floor": object}).assign(floor=value)
    with pytest.raises(
        InputError,
        match=rf"items: column 'floor' holds {value!r}; expected the "
        r"floor tiny drew the design with, a number in \(0, 1\]",
    ):
        estimate(cal, answers, items=design)


def test_a_design_probability_that_is_no_number_is_shown_as_written(setup):
    cal, answers, _ = setup
    design = tiny(cal, 10).astype({"probability": object})
    design.loc[3, "probability"] = "abc"
    with pytest.raises(InputError, match=r"\(order 4\) has probability 'abc' but"):
        estimate(cal, answers, items=design)


def test_tiny_k_must_be_an_integer(setup):
    """Finding 13: k=50.0 wrote float orders, k=None raised a TypeError."""
    cal, _, _ = setup
    for bad in (50.0, True, None, "5"):
        with pytest.raises(InputError, match=r"k=.*; expected an integer"):
            tiny(cal, bad)  # type: ignore[arg-type]
    assert tiny(cal, np.int64(3))["order"].tolist() == [1, 2, 3]


def test_a_fully_revealed_design_prints_the_exact_score(setup):
    """Finding 12: lower == upper printed as [0.906, 0.907]."""
    cal, answers, _ = setup
    result = estimate(cal, answers, items=tiny(cal, cal.n_items))
    assert result.lower == result.upper
    assert f"score {result.score:.3f} (exact) after {cal.n_items} of {cal.n_items}" in (
        result.summary()
    )


def test_a_design_given_as_responses_is_recognised(setup, tmp_path):
    cal, _, _ = setup
    path = tmp_path / "items.csv"
    tiny(cal, 5).to_csv(path, index=False)
    with pytest.raises(InputError, match=r"a fixed design .* give it as the design \(items=FILE\)"):
        estimate(cal, path)


def test_compare_margin_must_be_a_number_in_0_1(setup):
    """Finding 5: margin >= 1 certified any two models equivalent after one item."""
    cal, answers, _ = setup
    other = {k: 1.0 - v for k, v in answers.items()}
    for bad in (1, 2.0, math.inf, True, math.nan, 0, -0.1, "0.1"):
        with pytest.raises(InputError, match=r"margin=.*; expected a number in \(0, 1\)"):
            compare(cal, answers, other, model_a="a", model_b="b", margin=bad)  # type: ignore[arg-type]
    assert compare(cal, answers, other, model_a="a", model_b="b", margin=0.5).n_evaluated >= 1


def test_compare_of_b_and_a_mirrors_compare_of_a_and_b(setup):
    """Finding 10: the stream was seeded on the ordered pair, so the two orders drew other
    items and could disagree."""
    cal, answers, M = setup
    Y = np.asarray(M.scores, dtype=np.float64)
    b = dict(zip(cal.item_ids, Y[3], strict=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        ab = compare(cal, answers, b, model_a="zeta", model_b="alpha", budget=40, seed=1)
        ba = compare(cal, b, answers, model_a="alpha", model_b="zeta", budget=40, seed=1)
    assert ab.items == ba.items and ab.probabilities == ba.probabilities
    assert ab.difference == -ba.difference
    assert (ab.lower, ab.upper) == (-ba.upper, -ba.lower)
    assert ab.higher == ba.higher and ab.stopped == ba.stopped
    assert ab.answers_a == ba.answers_b


def test_compare_grammar_for_one_item():
    """'all 1 evaluated items' read as a typo."""
    from latentbench.select import CompareResult

    one = CompareResult("a", "b", 0.0, -1.0, 1.0, 0.95, 1, 10, "budget", None, ("x",), (1.0,),
                        (1.0,), (0.1,), "s", "h")  # fmt: skip
    assert "the two answered the one evaluated item identically" in one.summary()


def test_an_edited_weight_column_is_said_not_followed(setup, tmp_path):
    """Hostile walk (2026-12-06): a design's ``weight`` column (tiny writes it for reading;
    the estimate weighs by the probability) edited by hand was ignored without a word; the
    estimate is unchanged, and the edit is said."""
    cal, answers, _ = setup
    design = tiny(cal, 20)
    rounded = tmp_path / "rounded.csv"
    design.to_csv(rounded, index=False, float_format="%.6g")
    answers = {i: answers[i] for i in design["item"]}  # (other answers: said unused)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the file as tiny wrote it: nothing to say
        plain = estimate(cal, answers, items=rounded)
    edited = design.assign(weight=design["weight"].where(design["order"] != 3, 5.0))
    with pytest.warns(
        DataWarning, match=r"column 'weight' disagrees .* in 1 row\(s\) \(e\.g\. order 3: 5"
    ):
        result = estimate(cal, answers, items=edited)
    assert (result.score, result.lower, result.upper) == (plain.score, plain.lower, plain.upper)
    assert any("column 'weight' disagrees" in w for w in result.warnings)


def test_a_design_and_a_refitted_fit_directory_say_to_pass_the_design_s_own(setup, tmp_path):
    """Upgrade walk: a design made from a fit directory of an earlier version, used with the
    directory refitted after the upgrade (the same responses, the same parameters; fit.json
    differs, so the hash does), was refused with 'make the design with this calibration',
    which throws the pre-registration away; the message says to pass the design's own fit
    directory first, and that a refit by any version is another calibration."""
    from latentbench.irt import TwoPL

    _, answers, M = setup
    old = tmp_path / "fit_old"
    TwoPL().fit(M).save(old)
    design = tiny(old, 10, cache=False)
    # the same fit written by an earlier version: fit.json with another version (and no
    # table hashes), its tables as they were
    refit = tmp_path / "fit_new"
    refit.mkdir()
    for name in ("abilities.csv", "items.csv"):
        (refit / name).write_bytes((old / name).read_bytes())
    info = json.loads((old / "fit.json").read_text())
    info["version"] = "0.0.1"
    info.pop("tables_sha256", None)
    (refit / "fit.json").write_text(json.dumps(info, indent=2))
    assert estimate(old, answers, items=design, cache=False).n_evaluated == 10
    with pytest.raises(InputError) as err:
        estimate(refit, answers, items=design, cache=False)
    said = " ".join(str(err.value).split())
    assert "made from calibration '" in said
    assert "pass the fit directory or file the design was made from" in said
    assert "a refit of the same responses, by this latentbench version or another" in said


def test_estimate_many_checks_a_design_once_for_all_its_models(setup, tmp_path, monkeypatch):
    """``estimate_many`` checked the design once, then each model's ``estimate`` read it and
    replayed its draws again (k draws over every item: a third of a 300-model call at 20,000
    items); it is checked once, and each model's result is the one ``estimate`` gives."""
    import latentbench.select._estimate as module

    cal, _, M = setup
    design = tiny(cal, 15, seed=2)
    path = tmp_path / "design.csv"
    design.drop(columns="seed").to_csv(path, index=False)  # a note every model carries
    calls = []
    check = module._checked_design
    monkeypatch.setattr(
        module, "_checked_design", lambda *a, **k: calls.append(1) or check(*a, **k)
    )
    with pytest.warns(DataWarning, match="no 'seed' column"):
        many = estimate_many(cal, M, items=str(path))
    assert len(calls) == 1 and len(many.results) == M.n_models
    for r in many.results[:3]:
        with pytest.warns(DataWarning, match="no 'seed' column"):
            one = estimate(cal, _row(M, r.model), model=r.model, items=str(path))
        assert (one.score, one.lower, one.upper, one.items) == (r.score, r.lower, r.upper, r.items)
        assert one.warnings == r.warnings and one.options == r.options


def _row(M: ResponseMatrix, model: str) -> pd.Series:
    k = list(M.model_ids).index(model)
    return pd.Series(np.asarray(M.scores[k], dtype=np.float64), index=list(M.item_ids))


def _pair_answers(setup) -> tuple[Calibration, dict[str, float], dict[str, float]]:
    cal, answers, M = setup
    Y = np.asarray(M.scores, dtype=np.float64)
    return cal, answers, dict(zip(cal.item_ids, Y[3], strict=True))


def test_compare_on_a_design_scores_its_items_for_the_full_benchmark(setup):
    """``compare(items=)`` (2026-12-06: it had none, so two checkpoints run on a ``tiny``
    design were compared on its k items alone): exactly the design's items in its order,
    with its probabilities, for the difference over every calibrated item; the design's
    seed, floor and k recorded; the same result from the design's file and its table; and
    the two orders mirror each other."""
    cal, a, b = _pair_answers(setup)
    design = tiny(cal, 25, seed=4)
    only = set(design["item"])
    a_only = {k: v for k, v in a.items() if k in only}  # answered the design's items only
    b_only = {k: v for k, v in b.items() if k in only}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # answers to the design's items only: nothing to say
        ab = compare(cal, a_only, b_only, model_a="zeta", model_b="alpha", items=design)
    assert list(ab.items) == design["item"].tolist() and ab.n_evaluated == 25
    assert ab.probabilities == tuple(design["probability"])
    assert ab.n_items == ab.n_calibrated == cal.n_items == 120 and ab.stopped == "items"
    assert ab.options["design"] == "fixed" and ab.options["budget"] is None
    assert (ab.options["seed"], ab.options["floor"], ab.options["k"]) == (4, 0.5, 25)
    assert ab.answers_a == tuple(a[i] for i in ab.items)
    assert "after 25 of 120 items" in ab.summary()
    full = compare(cal, a, b, model_a="zeta", model_b="alpha", items=design)  # more answers
    assert (full.difference, full.lower, full.upper) == (ab.difference, ab.lower, ab.upper)
    ba = compare(cal, b_only, a_only, model_a="alpha", model_b="zeta", items=design)
    assert ab.difference == -ba.difference and (ab.lower, ab.upper) == (-ba.upper, -ba.lower)
    assert ab.higher == ba.higher
    # a far-apart pair is certified from the design alone
    far = compare(cal, a, {k: 1.0 - v for k, v in a.items()}, model_a="a", model_b="b",
                  items=tiny(cal, 100, seed=1))  # fmt: skip
    truth = float(np.mean(list(a.values()))) * 2 - 1
    assert far.lower <= truth <= far.upper and far.higher == ("a" if truth > 0 else "b")


def test_answers_outside_a_design_are_said_to_be_unused(setup):
    """With items=, the answers to calibrated items outside the design were silently left
    out: compare and estimate now say how many (per model) in one line, warned and kept in
    the result's warnings (compare.json / estimate.json), and the result is unchanged."""
    cal, a, b = _pair_answers(setup)
    design = tiny(cal, 25, seed=4)
    only = set(design["item"])
    extra = [k for k in cal.item_ids if k not in only][:7]
    b_some = {k: v for k, v in b.items() if k in only or k in extra}
    said = (r"102 answers outside the 25 items of the design were not used \('zeta': 95, "
            r"'alpha': 7\): a fixed design is scored on the items it drew alone .*; without "
            r"--items \(items=\) compare chooses its items from all the answers")  # fmt: skip
    with pytest.warns(DataWarning, match=said):
        some = compare(cal, a, b_some, model_a="zeta", model_b="alpha", items=design)
    assert sum("were not used" in w for w in some.warnings) == 1
    assert "102 answers outside the 25 items" in json.dumps(some.to_dict())
    a_only = {k: v for k, v in a.items() if k in only}
    b_only = {k: v for k, v in b.items() if k in only}
    alone = compare(cal, a_only, b_only, model_a="zeta", model_b="alpha", items=design)
    assert (some.difference, some.lower, some.upper) == (alone.difference, alone.lower,
                                                           alone.upper)  # fmt: skip
    assert not any("not used" in w for w in alone.warnings)
    with pytest.warns(DataWarning, match=r"1 answer outside the 25 items of the design was "
                      r"not used \('zeta': 0, 'alpha': 1\)"):  # fmt: skip
        compare(cal, a_only, {**b_only, extra[0]: b[extra[0]]}, model_a="zeta",
                model_b="alpha", items=design)  # fmt: skip
    said = r"95 answers outside the 25 items of the design were not used: .* estimate chooses"
    with pytest.warns(DataWarning, match=said):
        one = estimate(cal, a, items=design)
    assert sum("were not used" in w for w in one.warnings) == 1
    assert one.score == estimate(cal, a_only, items=design).score


def test_compare_on_a_design_refuses_what_the_design_fixes_and_a_missing_answer(setup):
    cal, a, b = _pair_answers(setup)
    design = tiny(cal, 10, seed=2)
    for option, value in (("budget", 10), ("budget", 500), ("seed", 0), ("floor", 0.3)):
        with pytest.raises(InputError, match=rf"{option}={value!r} with a fixed design"):
            compare(cal, a, b, model_a="a", model_b="b", items=design, **{option: value})
    gap = dict(b)
    del gap[design["item"].iloc[6]]
    with pytest.raises(InputError, match=r"model 'b' did not answer 1 of the 10 items of the "
                       r"design: .*\(order 7\)"):  # fmt: skip
        compare(cal, a, gap, model_a="a", model_b="b", items=design)


def test_an_explicit_floor_or_proposal_is_refused_with_a_design_as_the_command_refuses_it(
    setup,
):
    """compare(items=, floor=0.5) and estimate(items=, floor=0.5 / proposal="residual") were
    accepted (a value equal to the default was taken for none), while the command refuses
    --floor (and --proposal) given with --items: an option the design fixes is refused
    whenever it is passed, and the defaults' results are unchanged."""
    cal, a, b = _pair_answers(setup)
    design = tiny(cal, 10, seed=2)
    ours = compare(cal, a, b, model_a="a", model_b="b", items=design)
    for option, value in (("floor", 0.5), ("budget", 500), ("seed", 0)):
        with pytest.raises(InputError, match=rf"{option}={value!r} with a fixed design"):
            compare(cal, a, b, model_a="a", model_b="b", items=design, **{option: value})
    assert compare(cal, a, b, model_a="a", model_b="b", items=design) == ours
    answers = a  # one model's answers, for estimate
    one = estimate(cal, answers, items=design)
    for option, value in (("floor", 0.5), ("proposal", "residual")):
        with pytest.raises(InputError, match=rf"{option}={value!r} with a fixed design"):
            estimate(cal, answers, items=design, **{option: value})
        with pytest.raises(InputError, match=rf"{option}={value!r} with a fixed design"):
            estimate_many(cal, pd.Series(answers), items=design, **{option: value})
    assert estimate(cal, answers, items=design) == one
    # adaptive runs take them as before
    assert estimate(cal, answers, floor=0.5, proposal="residual").options["floor"] == 0.5
    assert compare(cal, a, b, model_a="a", model_b="b", floor=0.5).options["floor"] == 0.5


def test_compare_on_some_items_points_at_items(setup):
    """Two models that answered only some items are compared on those (said), and the
    warning now names the design option that compares the full-benchmark scores."""
    cal, a, b = _pair_answers(setup)
    some = set(tiny(cal, 10, seed=2)["item"])
    with pytest.warns(DataWarning, match=r"share answers on 10 of 120 .* pass the design "
                      r"\(items=DESIGN\)"):  # fmt: skip
        compare(cal, {k: a[k] for k in some}, {k: b[k] for k in some}, model_a="a",
                model_b="b")  # fmt: skip


def test_compare_on_a_design_of_two_models_alike_there_does_not_call_their_difference_0(setup):
    """Two models with the same answers on a design's items but not elsewhere (review140,
    2026-12-06): the warning said "their difference is exactly 0", true of the items they
    share without ``items=`` but not of the full-benchmark difference a design estimates;
    it now says the estimate is 0 and the full-benchmark difference is only bounded by the
    interval (which still holds it)."""
    cal, a, _ = setup
    design = tiny(cal, 20, seed=5)
    only = set(design["item"])
    b = {k: (v if k in only else 1.0 - v) for k, v in a.items()}  # alike on the design only
    truth = float(np.mean([a[k] - b[k] for k in cal.item_ids]))
    assert truth != 0
    with pytest.warns(DataWarning) as said:
        r = compare(cal, a, b, model_a="a", model_b="b", items=design)
    text = " ".join(str(w.message) for w in said)
    assert "same answer on every one of the 20 items of the design" in text
    assert "exactly 0" not in text and "the interval" in text
    assert r.difference == 0 and r.lower <= truth <= r.upper


def test_compare_on_a_design_says_an_edited_weight_as_estimate_does(setup):
    """An edited ``weight`` column (not read: the probabilities weigh each item) is said by
    ``estimate(items=)``; ``compare(items=)`` accepted it silently (review140, 2026-12-06)."""
    cal, a, b = _pair_answers(setup)
    design = tiny(cal, 10, seed=2)
    design.loc[3, "weight"] = 5.0
    with pytest.warns(DataWarning, match=r"items: column 'weight' disagrees .* order 4: 5"):
        estimate(cal, a, items=design)
    with pytest.warns(DataWarning, match=r"items: column 'weight' disagrees .* order 4: 5"):
        compare(cal, a, b, model_a="a", model_b="b", items=design)
