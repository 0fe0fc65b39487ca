"""``estimate CAL RESP --model NAME`` on a file of many models reads that model's rows only
(a Parquet file through pyarrow's filter, a CSV in chunks): it read the whole file into
memory, every model's rows, for one model's answers."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest

from latentbench.exceptions import InputError
from latentbench.select import estimate_many, read_responses
from latentbench.synthetic import simulate_2pl


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rows")
    matrix = simulate_2pl(40, 60, random_state=5).matrix
    long = matrix.to_long()
    models = list(matrix.model_ids)
    calibration = long[long["model"].isin(models[:30])]
    new = long[long["model"].isin(models[30:])].reset_index(drop=True)
    calibration.to_parquet(folder / "cal.parquet")
    new.to_parquet(folder / "new.parquet", row_group_size=60)
    new.to_csv(folder / "new.csv", index=False)
    (folder / "new.csv.gz").write_bytes(gzip.compress((folder / "new.csv").read_bytes()))
    return folder, models[30:]


def _whole_read_refused(monkeypatch):
    from latentbench.io import _files

    def refuse(path):
        raise AssertionError(f"{path} read whole")

    monkeypatch.setattr(_files, "read_table_file", refuse)


@pytest.mark.parametrize("name", ["new.parquet", "new.csv", "new.csv.gz"])
def test_the_named_models_rows_only_are_read(files, name, monkeypatch):
    folder, new = files
    everyone = read_responses(folder / name)
    assert sorted(everyone) == sorted(new)
    _whole_read_refused(monkeypatch)
    from latentbench.io import _files

    monkeypatch.setattr(_files, "read_table_rows", _small_chunks(_files.read_table_rows))
    some = read_responses(folder / name, models=[new[3], new[1]])
    assert sorted(some) == sorted([new[1], new[3]])
    for model in some:
        pd.testing.assert_series_equal(some[model], everyone[model])


def _small_chunks(read):
    def chunked(path, column, values, **options):  # near=: the near twins' ids
        return read(path, column, values, chunk_rows=25, **options)  # several chunks a model

    return chunked


@pytest.mark.parametrize("name", ["new.parquet", "new.csv"])
def test_estimate_of_one_model_is_that_of_the_whole_read(files, name, monkeypatch):
    folder, new = files
    whole = estimate_many(folder / "cal.parquet", folder / name, budget=15, seed=1)
    _whole_read_refused(monkeypatch)
    one = estimate_many(folder / "cal.parquet", folder / name, models=[new[2]], budget=15, seed=1)
    (result,) = one.results
    same = next(r for r in whole.results if r.model == new[2])
    assert (result.score, result.lower, result.upper) == (same.score, same.lower, same.upper)


def test_a_name_the_file_lacks_lists_the_files_models(files):
    folder, new = files
    for name in ("new.parquet", "new.csv"):
        with pytest.raises(InputError, match=rf"no model 'nobody' \(models: {new[0]!r}"):
            estimate_many(folder / "cal.parquet", folder / name, models=["nobody"], budget=5)


def test_a_defect_in_the_rows_read_is_named_as_the_whole_read_names_it(files, tmp_path):
    folder, new = files
    frame = pd.read_csv(folder / "new.csv", dtype=str)
    position = int(np.flatnonzero(frame["model"] == new[4])[7])
    frame.loc[position, "score"] = "2"
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(
        InputError, match=rf"line {position + 2} \(model {new[4]!r}, item .*score 2.0 is outside"
    ) as whole:
        read_responses(path)
    with pytest.raises(InputError) as some:
        read_responses(path, models=[new[4]])
    assert str(some.value) == str(whole.value)


def test_a_model_column_of_numbers_is_read_whole(tmp_path):
    path = tmp_path / "ids.parquet"
    pd.DataFrame({"model": [1, 1, 2, 2], "item": ["a", "b", "a", "b"], "score": [1, 0, 0, 1]}
                 ).to_parquet(path)  # fmt: skip
    assert list(read_responses(path, models=["2"])) == ["1", "2"]


def test_a_file_that_cannot_be_read_by_rows_is_read_once(files, tmp_path, monkeypatch):
    """A file of one model without a 'model' column (or any file read whole): a name it lacks
    read it whole twice, and said each of its warnings twice."""
    import warnings

    from latentbench.io import _files

    folder, new = files
    rows = pd.read_csv(folder / "new.csv", dtype=str)
    one = rows[rows["model"] == new[0]].drop(columns="model")
    path = tmp_path / "resp.csv"
    pd.concat([one, one.head(2)]).to_csv(path, index=False)  # two repeated rows: warned
    reads = []
    whole = _files.read_table_file
    monkeypatch.setattr(_files, "read_table_file", lambda p: reads.append(p) or whole(p))
    for name in ("resp", "other"):
        reads.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            answers = read_responses(path, models=[name])
        assert list(answers) == ["resp"]
        assert len(reads) == 1
        said = [str(w.message) for w in caught]
        assert len(said) == 1 and "2 repeated (model, item) rows" in said[0]


def test_a_file_read_whole_that_fails_says_its_warnings_once(tmp_path):
    """A file read whole at the first try that then fails: its warnings said before the
    error are said once (they were said twice, the file read twice), and its error stands."""
    import warnings

    path = tmp_path / "two.csv"
    path.write_text("benchmark,item,score\nb1,a,1\nb1,b,0\nb2,c,1\nb2,c,0\n")
    said = {}
    for models in (None, ["two"], ["other"]):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(InputError, match="item 'c' is on line 5 again"):
                read_responses(path, models=models)
        said[str(models)] = [str(w.message) for w in caught]
    assert len(said["None"]) == 1 and "column 'benchmark' holds 2 benchmarks" in said["None"][0]
    assert said["['two']"] == said["['other']"] == said["None"]


def _with(files, tmp_path, name, change):
    """``new.csv`` of ``files`` changed by ``change(frame)``, written as ``name``."""
    folder, _ = files
    frame = pd.read_csv(folder / "new.csv", dtype=str)
    frame = change(frame)
    path = tmp_path / name
    frame.to_csv(path, index=False) if name.endswith(".csv") else frame.to_parquet(path)
    return path


def _row_of(frame, model, k):
    return int(np.flatnonzero(frame["model"] == model)[k])


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize(("blank", "said"), [(None, "is missing"), ("  ", "'  ' is blank")])
def test_a_row_with_no_model_id_is_refused_not_dropped(files, tmp_path, suffix, blank, said):
    """A row whose model is left out may be the named model's answer: the whole read refuses
    it naming its line; the read of one model's rows dropped it unsaid (the model then
    answered one item fewer)."""
    _, new = files

    def change(frame):
        frame.loc[_row_of(frame, new[2], 5), "model"] = blank
        return frame

    path = _with(files, tmp_path, f"blank{suffix}", change)
    with pytest.raises(InputError, match=rf"column 'model', (line|row) \d+: model id {said}"):
        read_responses(path)
    with pytest.raises(InputError, match=rf"column 'model', (line|row) \d+: model id {said}"):
        read_responses(path, models=[new[2]])


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_another_models_defects_do_not_stop_the_read_and_are_named_when_they_do(
    files, tmp_path, suffix
):
    """The rows of the other models are not read: their bad score or repeated item does not
    stop the named model's read; a defect in its own rows does, and when another model's
    row is the file's first defect the message names that row's model."""
    folder, new = files
    clean = read_responses(folder / "new.csv")[new[4]]

    def other(frame):
        frame.loc[_row_of(frame, new[1], 3), "score"] = "1.5"
        return pd.concat([frame, frame.loc[[_row_of(frame, new[1], 7)]].assign(score="0.5")])

    path = _with(files, tmp_path, f"other{suffix}", other)
    with pytest.raises(InputError, match=rf"\(model {new[1]!r}, item .*score 1.5 is outside"):
        read_responses(path)
    pd.testing.assert_series_equal(read_responses(path, models=[new[4]])[new[4]], clean)

    def both(frame):
        frame.loc[_row_of(frame, new[4], 2), "score"] = "2"
        return other(frame)

    path = _with(files, tmp_path, f"both{suffix}", both)
    with pytest.raises(InputError, match=rf"\(model {new[1]!r}, item .*score 1.5 is outside"):
        read_responses(path, models=[new[4]])

    def repeated(frame):
        row = frame.loc[[_row_of(frame, new[4], 7)]]
        return pd.concat([frame, row.assign(score=str(1 - float(row["score"].iloc[0])))])

    path = _with(files, tmp_path, f"repeated{suffix}", repeated)
    with pytest.raises(InputError, match=rf"give model {new[4]!r}, item .* different scores"):
        read_responses(path, models=[new[4]])
