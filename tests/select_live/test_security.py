"""API keys stay in the environment; item text is data; bad keys are errors, not zeros."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from latentbench.cli import _register, app
from latentbench.exceptions import InputError
from latentbench.io import load_items
from latentbench.io.store import Store
from latentbench.select.live import LiveConfig, run_live


def _store_bytes(path) -> bytes:
    data = path.read_bytes()
    wal = path.with_name(path.name + ".wal")
    return data + (wal.read_bytes() if wal.exists() else b"")


def test_key_never_stored_or_printed(live_setup):
    s = live_setup
    config = s.write_config()
    store = s.tmp / "cli.duckdb"
    _register()
    result = CliRunner().invoke(
        app, ["select", "live", "--config", str(config), "--store", str(store), "--json"]
    )
    assert result.exit_code == 0, result.output
    output = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "best model" in output and s.api_key not in output
    assert json.loads(result.stdout[result.stdout.index("{") :])["status"] == "done"
    assert s.api_key.encode() not in _store_bytes(store)
    with Store(store, read_only=True) as db:
        stored = db.connection.execute("SELECT config FROM selection_runs").fetchall()[0][0]
    assert s.key_env in stored and s.api_key not in stored


def test_bad_key_is_a_per_cell_error_not_retried(live_setup, monkeypatch):
    s = live_setup
    wrong = "sk-wrong-DO-NOT-LEAK-123"
    monkeypatch.setenv(s.key_env, wrong)
    cfg = LiveConfig.from_toml(s.write_config())
    path = s.tmp / "badkey.duckdb"
    result = run_live(cfg, path)
    assert result.status == "failed"
    assert len(result.errors) == cfg.run.init_batch  # the first batch, every cell failed
    for error in result.errors["error"]:
        assert error.startswith("HTTP 401") and "***" in error and wrong not in error
    assert len(s.state.requests) == 0  # the server refused before logging a cell
    assert s.state.n_unauthorized == cfg.run.init_batch  # one attempt per cell: 401 is final
    assert wrong.encode() not in _store_bytes(path)
    with Store(path, read_only=True) as db:
        rows = db.selection_observations(result.run_id)
    assert rows["score"].isna().all() and len(rows) == cfg.run.init_batch


def test_missing_env_and_inline_key_are_refused(live_setup, monkeypatch):
    s = live_setup
    cfg = LiveConfig.from_toml(s.write_config())
    monkeypatch.delenv(s.key_env)
    with pytest.raises(InputError, match=s.key_env):
        run_live(cfg, s.tmp / "x.duckdb")
    text = s.write_config().read_text().replace("api_key_env", "api_key", 1)
    bad = s.tmp / "inline.toml"
    bad.write_text(text)
    with pytest.raises(InputError, match="api_key is not allowed"):
        LiveConfig.from_toml(bad)


def test_item_text_is_data(tmp_path):
    marker = tmp_path / "PWNED"
    prompt = f"__import__('os').system('touch {marker}') {{config}} $(touch {marker})"
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps({"id": 1, "prompt": prompt, "answer": "x"}) + "\n")
    items = load_items(path)
    assert items == [{"id": "1", "prompt": prompt, "answer": "x"}]
    assert not marker.exists()


def test_redirects_are_refused(live_setup):
    s = live_setup
    for item in s.items:
        s.state.faults[("model-0", item["id"])] = ["redirect"]
    result = run_live(LiveConfig.from_toml(s.write_config()), s.tmp / "redirect.duckdb")
    assert result.status == "failed" and len(result.errors) == 8
    for error in result.errors["error"]:
        assert error.startswith("HTTP 302: redirects are not followed")
        assert "after 1 attempt(s)" in error
    assert s.state.other_paths == []  # the key was not sent anywhere else


def _fragments(key: str, size: int = 8) -> list[str]:
    return [key[i : i + size] for i in range(len(key) - size + 1)]


def test_a_key_echoed_in_every_fashion_appears_nowhere(live_setup, capsys, caplog):
    # issue 15, item 1a: bodies were cut to 300 (60) bytes before redaction, leaving 36 of 37
    # characters; a \\u-escaped echo was stored whole
    s = live_setup
    kinds = ["echo_whole", "echo_long", "echo_truncated", "echo_escaped", "echo_split",
             "echo_ok_garbage"]  # fmt: skip
    for k, item in enumerate(s.items):
        for name in s.names:
            s.state.faults[(name, item["id"])] = [kinds[k % len(kinds)]] * 10
    config = s.write_config(oracle={"retries": 1})
    store = s.tmp / "echo.duckdb"
    _register()
    cli = CliRunner().invoke(
        app, ["select", "live", "--config", str(config), "--store", str(store), "--json"]
    )
    result = run_live(LiveConfig.from_toml(config), s.tmp / "api.duckdb")
    assert result.status == "failed" and len(result.errors) > 0
    errors = " ".join(result.errors["error"])
    assert "***" in errors
    captured = capsys.readouterr()
    texts = {
        "cli output": cli.output,
        "errors": errors,
        "exception": repr(cli.exception),
        "stdout/stderr": captured.out + captured.err,
        "logs": caplog.text,
        "result": json.dumps(result.to_dict(), default=str),
    }
    blobs = {"cli store": _store_bytes(store), "api store": _store_bytes(s.tmp / "api.duckdb")}
    # the HTML report of a run where one model's endpoint echoes the key (the others answer):
    # the page reports the failed cells, and no piece of the key is in it
    for item in s.items:
        for name in s.names[1:]:
            s.state.faults.pop((name, item["id"]), None)
    lenient = s.write_config(
        s.tmp / "lenient.toml", oracle={"retries": 1}, run={"on_error": "zero"}
    )
    partial = s.tmp / "partial.duckdb"
    ran = CliRunner().invoke(
        app, ["select", "live", "--config", str(lenient), "--store", str(partial)]
    )
    page = s.tmp / "echo.html"
    shown = CliRunner().invoke(app, ["report", str(partial), "--out", str(page), "-q"])
    assert shown.exit_code == 0, shown.output
    texts["report"] = page.read_text(encoding="utf-8")
    assert re.search(r"[1-9][\d,]* failed cell", texts["report"]), "the report hides the failures"
    texts["report output"] = ran.output + shown.output
    blobs["partial store"] = _store_bytes(partial)
    for piece in _fragments(s.api_key):
        for where, text in texts.items():
            assert piece not in text, (where, piece)
        for where, blob in blobs.items():
            assert piece.encode() not in blob, (where, piece)


def test_a_key_with_a_trailing_newline_works_and_bad_keys_are_not_printed(live_setup, monkeypatch):
    # issue 15, item 1b: a trailing newline gave a ValueError traceback printing the key
    s = live_setup
    monkeypatch.setenv(s.key_env, s.api_key + "\n")
    result = run_live(LiveConfig.from_toml(s.write_config()), s.tmp / "nl.duckdb")
    assert result.status == "done"
    monkeypatch.setenv(s.key_env, s.api_key[:10] + "\n" + s.api_key[10:])
    with pytest.raises(InputError) as info:
        run_live(LiveConfig.from_toml(s.write_config()), s.tmp / "nl2.duckdb")
    assert "control" in str(info.value)
    for piece in _fragments(s.api_key, 6):
        assert piece not in str(info.value)


@pytest.mark.parametrize("pasted", ["sk-proj-abc123DEF456ghi789", "sk_live_abc123DEF456ghi789"])
def test_a_key_pasted_as_api_key_env_is_not_echoed_nor_stored(live_setup, pasted):
    # issue 15, item 1c: the value was echoed in the refusal and, when it looked like a
    # variable name, stored in selection_runs.config (the run row was written first)
    s = live_setup
    text = s.write_config().read_text().replace(f'"{s.key_env}"', f'"{pasted}"')
    config = s.tmp / "pasted.toml"
    config.write_text(text)
    path = s.tmp / "pasted.duckdb"
    with pytest.raises(InputError) as info:
        run_live(LiveConfig.from_toml(config), path)
    assert pasted not in str(info.value)
    for piece in _fragments(pasted):
        assert piece not in str(info.value)
        if path.exists():
            assert piece.encode() not in _store_bytes(path)


def test_a_short_placeholder_key_is_redacted_where_it_stands_alone_not_inside_words():
    """A local server's placeholder key (``x``, ``EMPTY``) was replaced everywhere: the key
    ``x`` turned the stored note "no text" into "no te***t", and the summary lost its count.
    A key of ``_FRAGMENT`` characters or more is still redacted in any run of them."""
    from latentbench.select.oracles._openai import _redact

    assert (
        _redact("no text (content null); max tokens", "x") == "no text (content null); max tokens"
    )
    assert _redact("bad key x, expected another", "x") == "bad key ***, expected another"
    assert _redact("Authorization: Bearer EMPTY", "EMPTY") == "Authorization: Bearer ***"
    assert _redact("EMPTYING the queue", "EMPTY") == "EMPTYING the queue"
    # (review) an edge that is punctuation has no word to be inside of; unicode letters and
    # underscores are word characters
    assert _redact("id9-ab! here", "-ab!") == "id9*** here"
    assert _redact("ab_c \u00e9ab ab", "ab") == "ab_c \u00e9ab ***"
    key = "sk-abcdef123456"
    assert "abcdef" not in _redact(f"echo {key[:9]}... truncated", key)


_LM_EVAL = (
    '[items]\npath = "items.jsonl"\n[scorer]\nkind = "exact_match"\n[oracle]\n'
    'kind = "lm-eval"\ntask = "t"\nsamples_dir = "out"\nplan_dir = "plans"\n{oracle}'
    '[[models]]\nname = "a"\nlm_eval_model = "m-a"\nmodel_args = {args}\n'
)
SECRET = "sk-SECRETabc123DEF456"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("model_args", f"model=m-a,base_url=https://user:{SECRET}@api.example.com/v1"),
        ("model_args", f"model=m-a,base_url=https://{SECRET}@api.example.com/v1"),
        ("model_args", f"model=m-a,api_key={SECRET}"),
        ("model_args", f"pretrained=org/m,token={SECRET}"),
        ("model_args", f"pretrained=org/m,think_end_token=</think>,hf_token={SECRET}"),
        ("model_args", "pretrained=org/m,hf_token=hf_SECRETabc123DEF456"),
        ("model_args", "pretrained=org/m,access_token=123456789012345678"),
        ("model_args", f"model=m-a,openai_key={SECRET}"),
        ("model_args", "model=m-a,access_key=AKIAIOSFODNN7EXAMPLE"),
        ("model_args", f"model=m-a,sort_key={SECRET}"),  # a key's value whatever its name
        ("model_args", f"model=m-a,header={{'Authorization': 'Bearer {SECRET}'}}"),
        ("extra_args", f"--apply_chat_template --hf_hub_log_args token={SECRET}"),
        ("command", f"env OPENAI_API_KEY={SECRET} lm_eval"),
        ("command", f"lm_eval --model_args base_url=http://u:{SECRET}@127.0.0.1:8000/v1"),
    ],
)
def test_a_key_in_the_harness_arguments_is_refused_and_never_stored(tmp_path, field, value):
    """``model_args``, ``extra_args`` and ``command`` went into the stored run configuration
    (``selection_runs.config``), the printed plan command and the progress output: a key
    written there (lm-eval's ``api_key=``, a ``base_url`` with a password, an ``Authorization``
    header, ``OPENAI_API_KEY=...``) was kept in the store, although ``[[models]] base_url``
    with credentials and ``api_key`` are refused. lm-eval reads its key from the environment."""
    from latentbench.select.live import LiveConfig

    (tmp_path / "items.jsonl").write_text('{"id": "1"}\n')
    oracle = f"{field} = {json.dumps(value)}\n" if field != "model_args" else ""
    args = json.dumps(value if field == "model_args" else "model=m-a")
    config = tmp_path / "run.toml"
    config.write_text(_LM_EVAL.format(oracle=oracle, args=args))
    with pytest.raises(InputError, match=rf"{field} holds .*not shown.*environment") as info:
        LiveConfig.from_toml(config)
    for piece in _fragments(SECRET):
        assert piece not in str(info.value)


@pytest.mark.parametrize(
    "args",
    [
        "pretrained=org/m,add_bos_token=True,use_auth_token=True,trust_remote_code=True",
        "model=m-a,base_url=http://127.0.0.1:8000/v1/chat/completions,tokenizer_backend=None",
        "model=m-a,max_tokens=256,tokenized_requests=False,num_concurrent=4",
        "model=authorization-bearer_bonds-qa",  # words, not a header
        # lm-eval's documented special-token arguments (vLLM, SGLang and HF backends): a
        # token's text or id, not a key; configs of the last release that ran were refused
        "pretrained=Qwen/Qwen3-32B,enable_thinking=True,think_end_token='</think>'",
        "pretrained=org/m,add_bos_token=True,think_end_token=</think>,max_gen_toks=32000",
        "pretrained=org/m,think_start_token=<think>,think_end_token=151668",
        "pretrained=org/m,eos_token=<|endoftext|>,pad_token=[PAD]",
        # a field's name ending in _key, not a credential: refused as one
        "model=m-a,sort_key=score,max_tokens=512,cache_key=run-7",
        "pretrained=org/m,metric_key=acc_norm,group_key=subject",
    ],
)
def test_harness_arguments_without_a_key_are_kept(tmp_path, args):
    from latentbench.select.live import LiveConfig

    (tmp_path / "items.jsonl").write_text('{"id": "1"}\n')
    config = tmp_path / "run.toml"
    config.write_text(_LM_EVAL.format(oracle="", args=json.dumps(args)))
    assert LiveConfig.from_toml(config).models[0].model_args == args


def test_a_python_oracles_error_quoting_a_key_from_the_environment_is_redacted(monkeypatch):
    """A ``python`` oracle's function calls an API with a key from the environment; its
    exception (``requests``' "400 Client Error for url: ...?key=AIza...", Gemini's key in the
    query) or a text it returned was stored and printed whole as the cell's error. The
    values of variables named like ``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*`` are
    redacted as the lm-eval bridge redacts its harness's output."""
    import numpy as np

    from latentbench.select.oracles import CallableOracle

    secret = "AIzaSy-SECRET-0123456789abcdef"
    monkeypatch.setenv("GEMINI_API_KEY", secret)
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # a flag, not a key: left as it is

    def raising(model, items):
        url = f"https://generativelanguage.googleapis.com/v1/m:generate?key={secret}"
        raise RuntimeError(f"400 Client Error: Bad Request for url: {url} (false)")

    def texting(model, items):
        return [f"error: bad key {secret[:-2]}"] * len(items)

    for score, said in ((raising, "RuntimeError: 400 Client Error"), (texting, "returned text")):
        oracle = CallableOracle(score, ["m"], ["a", "b"])
        errors = [cell.error for cell in oracle.evaluate_cells(0, np.arange(2))]
        for error in errors:
            assert said in error and "***" in error, error
            for piece in _fragments(secret):
                assert piece not in error, (piece, error)
            assert score is texting or error.endswith("(false)"), error  # the flag is kept


_CRASH = """
import sys
from latentbench.cli import _register, app
_register()

@app.command("crash-for-test")
def crash() -> None:
    key = "sk-LOCAL-SECRET-4242"  # what a live run's request frames hold (key, headers)
    headers = {"Authorization": "Bearer " + key}
    raise RuntimeError("unexpected")

sys.argv = ["latentbench", "crash-for-test"]
app()
"""


def test_an_unexpected_crash_prints_no_local_variables(tmp_path):
    """The traceback of a bug (an exception no check turned into an ``error:`` line) was drawn
    by typer with each frame's local variables under typer 0.15.4 (``typer>=0.15.4`` is
    allowed; later versions default to off): the request frames of a live run hold the API
    key and its ``Authorization`` header. The CLI turns that off whatever the version."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("_TYPER")}
    env["COLUMNS"] = "200"
    done = subprocess.run(
        [sys.executable, "-c", _CRASH], capture_output=True, text=True, env=env, timeout=120
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "RuntimeError" in output, output
    assert "LOCAL-SECRET" not in output, output


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("extra_args", f"--apply_chat_template --api_key {SECRET}"),
        ("extra_args", f"--hf_token '{SECRET}'"),
        ("command", f"lm_eval --token {SECRET} --log_samples"),
        ("model_args", f"model=m-a,header={{'x-api-key': '{SECRET}'}}"),
        ("model_args", f'model=m-a,headers={{"api-key": "{SECRET}"}}'),
    ],
)
def test_a_key_given_after_its_option_is_refused_too(tmp_path, field, value):
    """``--api_key sk-...`` (the value after its option, a command line's usual spelling)
    and a header dict's ``'x-api-key': 'sk-...'`` passed the check that refused
    ``api_key=sk-...``: they were stored with the run and printed in its plan."""
    from latentbench.select.live import LiveConfig

    (tmp_path / "items.jsonl").write_text('{"id": "1"}\n')
    config = tmp_path / "run.toml"
    oracle = f"{field} = {json.dumps(value)}\n" if field != "model_args" else ""
    args = json.dumps(value if field == "model_args" else "model=m-a")
    config.write_text(_LM_EVAL.format(oracle=oracle, args=args))
    with pytest.raises(InputError, match=rf"{field} holds a value for .*not shown") as info:
        LiveConfig.from_toml(config)
    for piece in _fragments(SECRET):
        assert piece not in str(info.value)


@pytest.mark.parametrize(
    "extra", ["--log_samples --limit 10", "--max_tokens 512 --use_auth_token true",
              "--apply_chat_template --token --seed 1", "--output_path out/key",
              "--sort_key score --max_tokens 256", "--metadata_key task_alias"],
)  # fmt: skip
def test_options_around_a_flag_are_kept(tmp_path, extra):
    from latentbench.select.live import LiveConfig

    (tmp_path / "items.jsonl").write_text('{"id": "1"}\n')
    config = tmp_path / "run.toml"
    oracle = f"extra_args = {json.dumps(extra)}\n"
    config.write_text(_LM_EVAL.format(oracle=oracle, args=json.dumps("model=m-a")))
    assert LiveConfig.from_toml(config).oracle.extra_args == extra


def test_a_key_sent_over_plain_http_to_another_host_is_warned_once(monkeypatch):
    """A key with an ``http://`` base_url whose host is not this machine went out unencrypted
    without a word; https:// and a local server (loopback) stay quiet."""
    import warnings

    from latentbench.exceptions import DataWarning
    from latentbench.select.oracles import ChatCompletionsOracle, ChatEndpoint

    monkeypatch.setenv("REMOTE_KEY", SECRET)
    monkeypatch.delenv("UNSET_KEY", raising=False)

    def said(*urls: str, env: str | None = "REMOTE_KEY") -> list[str]:
        points = [ChatEndpoint(f"m{k}", url, "m", env) for k, url in enumerate(urls)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            oracle = ChatCompletionsOracle(points, [])
        assert [str(w.message) for w in caught] == oracle.notes
        assert all(w.category is DataWarning for w in caught)
        return oracle.notes

    (one,) = said("http://api.example.com/v1", "http://10.0.0.7:8000/v1")
    assert "\n" not in one and "plain http://" in one and "https://" in one
    assert "'m0' to api.example.com" in one and "'m1' to 10.0.0.7" in one
    assert SECRET not in one and "REMOTE_KEY" not in one  # neither the key nor its variable
    quiet = ["https://api.example.com/v1", "http://localhost:8000/v1",
             "http://127.0.0.1:8000/v1", "http://[::1]:8000/v1", "HTTP://LOCALHOST/v1"]  # fmt: skip
    assert said(*quiet) == []
    assert said("http://api.example.com/v1", env=None) == []  # no key: nothing to read


def test_a_key_sent_over_plain_http_is_recorded_with_the_run(live_setup, monkeypatch):
    """The warning is recorded in the run's stored configuration (``notes``) and in a live
    estimate's result, so a reader of the store or of estimate.json sees it too."""
    import pandas as pd

    from latentbench.exceptions import DataWarning
    from latentbench.io import ResponseMatrix
    from latentbench.select._estimate_live import estimate_live

    s = live_setup
    config = s.write_config(oracle={"retries": 0})
    config.write_text(
        config.read_text().replace(f"http://127.0.0.1:{s.port}/v1", "http://host.invalid/v1")
    )
    path = s.tmp / "plain.duckdb"
    with pytest.warns(DataWarning, match=r"plain http://.*'model-0' to host\.invalid"):
        result = run_live(LiveConfig.from_toml(config), path)
    assert result.status == "failed"  # the host does not exist: nothing sent
    with Store(path, read_only=True) as db:
        (note,) = db.selection_run(result.run_id)["config"]["notes"]
    assert "plain http://" in note and "host.invalid" in note
    hist = pd.read_csv(s.tmp / "history.csv").set_index("model")
    with pytest.warns(DataWarning) as caught:  # and: the run stopped early (unreachable)
        estimate = estimate_live(
            ResponseMatrix.from_wide(hist), config, path, model="model-0", budget=2
        )
    assert sum("plain http://" in str(w.message) for w in caught) == 1  # said once
    assert [w for w in estimate.warnings if "plain http://" in w] == [note]
    with Store(path, read_only=True) as db:
        run = db.selection_run(estimate.options["live"]["run_id"])
    assert run["config"]["notes"] == [note]


def test_short_settings_named_like_keys_are_not_redacted(monkeypatch):
    """``MAX_TOKENS=512`` (a name holding TOKEN) made every ``512`` of a stored error ``***``,
    and a variable set to ``1`` or ``true`` every such word: a value shorter than
    ``MIN_SECRET_LENGTH`` (8) of a variable not named by the user is a setting, not a key."""
    import numpy as np

    from latentbench.select.oracles import CallableOracle
    from latentbench.select.oracles._openai import environment_secrets, redact_environment

    settings = {"MAX_TOKENS": "512", "HF_TOKEN_ENABLED": "1", "USE_SECRET_STORE": "true",
                "DB_PASSWORD_ROUNDS": "1000000"}  # fmt: skip
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    monkeypatch.setenv("MY_PLACEHOLDER_KEY", "EMPTY")  # short: not a key unless named
    text = "max_tokens=512 and 1000000 rounds, retry 1 (true) with EMPTY"
    assert redact_environment(text) == text
    assert redact_environment(f"{text} {SECRET}") == f"{text} ***"
    assert redact_environment(text, ["MY_PLACEHOLDER_KEY"]) == text.replace("EMPTY", "***")
    assert set(environment_secrets()) >= {SECRET} and "512" not in environment_secrets()

    # a path named like a key (HF_TOKEN_PATH): every run of 6 of its characters in a
    # traceback's paths became ***
    import os

    folder = os.path.dirname(os.path.abspath(__file__))
    monkeypatch.setenv("HF_TOKEN_PATH", folder)
    trace = f'File "{folder}/x.py", line 3'
    assert redact_environment(trace) == trace

    def failing(model, items):
        raise RuntimeError(f"asked max_tokens=512 of {model}: 1 retry, true")

    (cell,) = CallableOracle(failing, ["m"], ["a"]).evaluate_cells(0, np.array([0]))
    assert cell.error == "score() raised RuntimeError: asked max_tokens=512 of m: 1 retry, true"


OLD_KEY = "sk-OLDSTORE-abc123DEF456ghi789"


def _fragments_in(text: str) -> list[str]:
    return [piece for piece in _fragments(OLD_KEY) if piece in text]


def test_a_key_an_earlier_version_stored_with_a_run_is_never_shown(live_setup):
    """Versions before the harness arguments and base_url were checked stored a key written
    there in ``selection_runs.config`` (lm-eval's ``model_args = "api_key=..."``, a
    ``base_url`` with a password, ``[[models]] api_key``). Reading such a store showed it: a
    resume's 'different configuration' error quoted the old ``model_args`` whole. Every read
    masks it now, and a resume replaces it by *** in the store, with one warning line."""
    import duckdb

    s = live_setup
    config = s.write_config()
    path = s.tmp / "old.duckdb"
    run_id = run_live(LiveConfig.from_toml(config), path).run_id
    with duckdb.connect(str(path)) as con:  # the record as an earlier version wrote it
        record = json.loads(con.execute("SELECT config FROM selection_runs").fetchone()[0])
        record["models"][0]["model_args"] = f"model=m-a,api_key={OLD_KEY},max_tokens=512"
        record["models"][1]["base_url"] = f"https://user:{OLD_KEY}@api.example.com/v1?x=1"
        record["models"][2]["api_key"] = OLD_KEY
        record["oracle"]["extra_args"] = f"--apply_chat_template --api_key '{OLD_KEY}'"
        answers = record["identity"]["answers"]["models"]["model-0"]
        answers["model_args"] = record["models"][0]["model_args"]
        con.execute("UPDATE selection_runs SET config = ?", [json.dumps(record)])
    with Store(path, read_only=True) as db:
        read = db.selection_run(run_id)["config"]
        assert [r["config"] for r in db.selection_runs()] == [read]
    assert not _fragments_in(json.dumps(read))
    assert read["models"][0]["model_args"] == "model=m-a,api_key=***,max_tokens=512"
    assert read["models"][1]["base_url"] == "https://***@api.example.com/v1?x=1"
    assert read["models"][2]["api_key"] == "***"
    assert read["oracle"]["extra_args"] == "--apply_chat_template --api_key '***'"
    _register()
    runner = CliRunner()
    shown = []
    for args in (["ls", "--store", str(path)], ["ls", "--store", str(path), "--json"],
                 ["export", str(s.tmp / "e.csv"), "--store", str(path)],
                 ["export", str(s.tmp / "eee"), "--format", "eee", "--store", str(path)],
                 ["report", str(path), "--out", str(s.tmp / "r.html")]):  # fmt: skip
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        shown.append(result.output)
    written = [s.tmp / "e.csv", s.tmp / "r.html", *(s.tmp / "eee").rglob("*.json*")]
    assert not _fragments_in("".join(shown) + "".join(p.read_text() for p in written))
    # a resume: the key is replaced in the store (said once), and the changed model_args
    # are named without it
    args = ["select", "live", "--config", str(config), "--store", str(path)]
    resumed = runner.invoke(app, args, catch_exceptions=False)
    output = resumed.output
    assert resumed.exit_code == 2 and "different configuration" in output, output
    said = " ".join(output.split())
    assert said.count("held a key") == 1, output
    assert (
        "held a key (identity.answers.models.model-0.model_args, models[0].model_args, "
        "models[1].base_url, ...); replaced by *** in the store" in said
    )
    assert 'model_args: "model=m-a,max_tokens=512" -> (not set)' in said, output
    assert not _fragments_in(output), output
    with duckdb.connect(str(path)) as con:
        stored = con.execute("SELECT config FROM selection_runs").fetchone()[0]
    assert not _fragments_in(stored) and json.loads(stored) == read


def test_answers_of_a_run_whose_stored_key_is_masked_are_reused_not_paid_again(live_setup):
    """An earlier version stored ``[[models]] api_key`` in a run's options, so the run's
    default id hashed the key; today's file (the key moved to ``api_key_env``) makes another
    id. The run is the same without the key (where answers are paid from, not what they
    are): it is resumed under its stored id, and its answers are reused, not asked again.
    The masked ``***`` made the stored options differ from today's: a new run that paid
    again for every cell of the model whose key was stored."""
    import duckdb

    s = live_setup
    config = s.write_config()
    path = s.tmp / "old.duckdb"
    first = run_live(LiveConfig.from_toml(config), path)
    assert first.status == "done" and first.n_paid > 0
    old_id = "live-0123456789abcdef"  # the id the key's hash made
    with duckdb.connect(str(path)) as con:  # the record as an earlier version wrote it
        record = json.loads(con.execute("SELECT config FROM selection_runs").fetchone()[0])
        record["models"][0]["api_key"] = OLD_KEY
        record["identity"]["answers"]["models"]["model-0"]["api_key"] = OLD_KEY
        con.execute("UPDATE selection_runs SET config = ?", [json.dumps(record)])
        for table in ("selection_runs", "selection_observations", "selection_decisions"):
            con.execute(f"UPDATE {table} SET run_id = ?", [old_id])
    n_posts = s.state.n_posts
    again = run_live(LiveConfig.from_toml(config), path)
    assert again.run_id == old_id and again.resumed and again.status == "done"
    assert s.state.n_posts == n_posts and again.n_paid == 0, (s.state.n_posts, again)
    assert again.message == first.message and again.selection is not None


@pytest.mark.parametrize(
    "text",
    [
        "model=m,base_url=https://host/v1/completions?key=abc123XYZ",
        "pretrained=m,base_url=https://host/v1?api-version=1&code=abcdef123",
        "--model_args base_url=http://10.0.0.5:8000/v1?token=abc,model=m",
        "model=m,base_url=http://localhost:8000/v1?auth_mode=none",
    ],
)
def test_what_the_harness_check_accepts_is_stored_unmasked(text):
    """A key in a URL's query inside a harness argument (``model_args``' ``base_url=...?key=``)
    passed today's check, so today's version stored it, and every read masked it: the run's
    stored options then differed from its file's, and each resume was refused as another
    configuration. The check refuses what the masking would change, as it refuses a
    ``base_url``'s secret query."""
    from latentbench.io._secrets import argument_secret, mask_argument

    assert mask_argument(text) != text
    assert argument_secret(text) == "a URL query parameter named like a key"
    for accepted in ("model=m,base_url=https://host/v1?api-version=2024-06-01", "sort_key=score",
                     "pretrained=org/m,max_tokens=512,think_end_token=</think>"):  # fmt: skip
        assert argument_secret(accepted) == "" and mask_argument(accepted) == accepted


@pytest.mark.parametrize("url", ["https://host/v1;sig=abc123", "https://host/v1?x=1;key=abc123"])
def test_a_base_url_with_a_key_after_a_semicolon_is_refused(url):
    # a read masks ;sig= and ;key= (mask_url): accepted, they were stored with the run (a key
    # in the store) and the stored base_url differed from the file's on every resume
    from latentbench.io._secrets import mask_url
    from latentbench.select.live._config import _check_base_url

    assert mask_url(url) != url
    with pytest.raises(InputError, match="base_url holds the query parameter"):
        _check_base_url(url, "m")
    _check_base_url("https://host/v1?api-version=2024-06-01;x=1", "m")  # no key: accepted
