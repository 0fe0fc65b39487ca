"""Progress in a log (stderr a pipe or a file: a CI job, ``nohup ... > log``, a scheduler):
every command printed nothing until its end there, so an experiment of an hour looked dead.
Now one mechanism (``_common.plain_progress``): no line for a command shorter than
``PROGRESS_LOG_EVERY`` (a minute), then ``PHASE ... DONE/TOTAL (N s)`` at most once a
minute, on stderr only, never under ``-q``."""

from __future__ import annotations

import io
import re
import threading
import time

import pytest
from rich.console import Console
from typer.testing import CliRunner

from latentbench.cli import _common, _register, app
from latentbench.synthetic import simulate_2pl

_register()
runner = CliRunner()


def _responses(tmp_path):
    path = tmp_path / "all.parquet"
    simulate_2pl(16, 60, random_state=4).matrix.to_long().to_parquet(path)
    return str(path)


def _experiments(tmp_path, name: str) -> list[tuple[list[str], str]]:
    path = _responses(tmp_path)
    return [
        (["experiment", path, "--seeds", "2", "--budget", "100", "--jobs", "1",
          "--out", str(tmp_path / f"{name}-a")], "runs"),
        (["experiment", path, "--task", "estimate", "--seeds", "1", "--budgets", "30",
          "--models", "model_00,model_01", "--out", str(tmp_path / f"{name}-b")],
         "held-out runs"),
    ]  # fmt: skip


def test_a_long_experiment_says_its_runs_in_a_log(tmp_path, monkeypatch):
    monkeypatch.setattr(_common, "PROGRESS_LOG_EVERY", 0.0)  # every run lasts "a minute"
    for argv, phase in _experiments(tmp_path, "long"):
        outcome = runner.invoke(app, argv)
        assert outcome.exit_code == 0, outcome.output
        said = re.findall(rf"^{phase} \.\.\. (\d+)(?:/(\d+))? \(\d+ s\)$", outcome.stderr, re.M)
        assert said and said[-1][0] == said[-1][1] != "", outcome.stderr  # the last: n/n
        assert f"{phase} ..." not in outcome.stdout and "wrote " in outcome.stdout
        assert "\x1b" not in outcome.stderr and "\r" not in outcome.stderr
        quiet = runner.invoke(app, [*argv[:-1], argv[-1] + "-q", "-q"])
        assert quiet.exit_code == 0, quiet.output
        assert f"{phase} ..." not in quiet.output


def test_a_short_experiment_prints_what_it_printed_in_a_log(tmp_path):
    assert _common.PROGRESS_LOG_EVERY == 60.0
    for argv, phase in _experiments(tmp_path, "short"):
        outcome = runner.invoke(app, argv)
        assert outcome.exit_code == 0, outcome.output
        assert f"{phase} ..." not in outcome.output, outcome.stderr


@pytest.fixture()
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    return now


def test_log_lines_come_after_a_minute_then_once_a_minute(clock):
    buffer = io.StringIO()
    stream = Console(file=buffer, width=80)  # a file: not a terminal
    show = _common.plain_progress(False, stream, detail=lambda: "spent 12 cells")
    assert show is not None and _common.plain_progress(True, stream) is None  # -q: none
    show("choosing the prior", 1, 5)
    for sweep in range(1, 200):  # 2 s apart: 398 s in all
        clock[0] += 2.0
        show("fitting", sweep, None)
    lines = buffer.getvalue().splitlines()
    assert lines[0] == "fitting ... 30 (58 s): spent 12 cells"  # none before a minute
    assert len(lines) == 398 // 60  # then one a minute
    assert all(line.startswith("fitting ... ") for line in lines)


def test_progress_bar_gives_the_log_lines_on_a_pipe_and_none_for_a_short_call(clock):
    for quiet, minutes, expected in ((False, 0.5, 0), (False, 3, 3), (True, 3, 0)):
        buffer = io.StringIO()
        with _common.progress_bar(quiet, Console(file=buffer, width=80)) as progress:
            for k in range(int(minutes * 6)):
                clock[0] += 10.0
                progress("bootstrap refits", k + 1, 100)
        lines = buffer.getvalue().splitlines()
        assert len(lines) == expected, (quiet, minutes, lines)
        assert all(re.fullmatch(r"bootstrap refits \.\.\. \d+/100 \(\d+ s\)", x) for x in lines)


class _Written(io.StringIO):
    """A log file that tells a waiting test when its n-th line is written."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = threading.Condition()

    def write(self, text: str) -> int:
        with self.changed:
            n = super().write(text)
            self.changed.notify_all()
        return n

    def lines(self) -> list[str]:
        with self.changed:
            return self.getvalue().splitlines()

    def wait_lines(self, n: int, timeout: float = 5.0) -> list[str]:
        with self.changed:
            self.changed.wait_for(lambda: len(self.getvalue().splitlines()) >= n, timeout)
            return self.getvalue().splitlines()


def _heartbeats() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "latentbench-progress-lines"]


def test_a_long_step_that_reports_nothing_is_said_alive_in_a_log(monkeypatch):
    # one long step (a fit's long phase, a huge file's ingest, a calibration) reported once:
    # a log said nothing for its whole length, as if the command had hung; now a line every
    # PROGRESS_LOG_EVERY seconds (patched short here) while it lasts, none after the block
    monkeypatch.setattr(_common, "PROGRESS_LOG_EVERY", 0.02)
    log = _Written()
    with _common.progress_bar(False, Console(file=log, width=80)) as progress:
        progress("calibration", 3, 10)  # then nothing: the long step
        said = log.wait_lines(3)  # the fake long step: until three heartbeats are written
    after = log.lines()
    assert len(said) >= 3, said
    assert all(re.fullmatch(r"calibration \.\.\. 3/10 \(\d+ s\)", x) for x in after), after
    assert not _heartbeats()  # stopped and joined with the block: no line can follow
    assert log.lines() == after


def test_the_heartbeat_says_the_phase_seconds_and_its_last_count(clock, monkeypatch):
    # a fake clock for the line's seconds; the thread waits the (patched) interval for real
    monkeypatch.setattr(_common, "PROGRESS_LOG_EVERY", 0.01)
    log = _Written()
    lines = _common.progress_lines(Console(file=log, width=80), log=True,
                                   detail=lambda: "spent 12 cells")  # fmt: skip
    with lines:
        lines("reading the answers", None, None)
        lines("fitting", 40, None)  # its phase starts: no line due yet (the clock stands)
        clock[0] += 125.0  # a long sweep
        assert log.wait_lines(1) == ["fitting ... 40 (125 s): spent 12 cells"]
        lines("fitting", 41, None)  # not due: the heartbeat's line was just now
        clock[0] += 60.0
        assert log.wait_lines(2)[1] == "fitting ... 41 (185 s): spent 12 cells"
    assert not _heartbeats()


def test_a_dumb_terminal_gets_the_heartbeat_and_forks_pause_it(monkeypatch):
    from latentbench._fork import forking

    monkeypatch.setattr(_common, "PROGRESS_LINE_EVERY", 0.02)
    out = _Written()
    with _common.progress_lines(Console(file=out, width=80), log=False) as lines:
        assert len(_heartbeats()) == 1
        lines("bootstrap refits", 7, None)
        said = out.wait_lines(3)
        assert said[0] == "bootstrap refits ..."  # then the heartbeat's (seconds: real ones)
        assert re.fullmatch(r"bootstrap refits \.\.\. 7 \(\d+ s\)", said[1]), said
        with forking():  # a fork-based pool starts its workers with no other Python thread
            assert not _heartbeats()
        assert len(_heartbeats()) == 1
    assert not _heartbeats()
    assert all(re.fullmatch(r"bootstrap refits \.\.\.( 7 \(\d+ s\))?", x) for x in out.lines())


def test_a_short_block_prints_nothing_more_and_leaves_no_thread(clock):
    buffer = io.StringIO()
    with _common.progress_bar(False, Console(file=buffer, width=80)) as progress:
        assert len(_heartbeats()) == 1
        progress("fitting", 1, 5)
    assert buffer.getvalue() == "" and not _heartbeats()


def _stalls():
    """A library call that reports nothing for a long step, then fails (exit 2): what a log
    shows meanwhile is the command's heartbeat only."""

    def stalled(*args: object, **kwargs: object) -> None:
        # the long step lasts until the heartbeat has said it alive twice in the command's
        # stderr (a line ends with its seconds), 10 s at most (was a fixed 0.4 s sleep)
        import sys

        stream, end = sys.stderr.buffer, time.monotonic() + 10.0
        while stream.getvalue().count(b" s)\n") < 2 and time.monotonic() < end:
            time.sleep(0.005)
        from latentbench.exceptions import InputError

        raise InputError("stalled on purpose")

    return stalled


@pytest.mark.parametrize(
    ("argv", "target", "phase"),
    [
        (["select", "replay", "{data}", "--no-history", "--out", "{out}"], "replay",
         r"reading the responses \.\.\. \(\d+ s\)"),
        (["experiment", "{data}", "--seeds", "2", "--budget", "100", "--jobs", "1", "--out",
          "{out}"], "experiment_from_matrix", r"runs \.\.\. 0 \(\d+ s\)"),
        (["experiment", "{data}", "--task", "estimate", "--seeds", "1", "--budgets", "30",
          "--out", "{out}"], "estimate_experiment", r"held-out runs \.\.\. 0 \(\d+ s\)"),
    ],
)  # fmt: skip
def test_select_replay_and_experiments_keep_the_heartbeat_in_a_log(
    tmp_path, monkeypatch, argv, target, phase
):
    """``select replay`` and ``experiment`` made their plain lines themselves
    (``plain_progress``, beside their own spinner or bar), outside ``progress_bar``: a long
    step that reported nothing printed nothing in a log. They now run the lines' heartbeat
    for the block (stopped with it: no line after the error)."""
    import latentbench.select as select

    monkeypatch.setattr(_common, "PROGRESS_LOG_EVERY", 0.05)
    monkeypatch.setattr(select, target, _stalls())
    data = _responses(tmp_path)
    argv = [a.format(data=data, out=tmp_path / "out") for a in argv]
    outcome = runner.invoke(app, argv)
    assert outcome.exit_code == 2, outcome.output
    said = outcome.stderr.splitlines()
    assert said[-1] == "error: stalled on purpose", said
    assert said[:-1] and all(re.fullmatch(phase, line) for line in said[:-1]), said
    assert not _heartbeats()


def test_select_live_keeps_the_heartbeat_in_a_log(monkeypatch):
    """As ``select replay``: ``select live``'s plain lines had no heartbeat; a batch that
    takes long (a slow endpoint) is now seen alive in a log."""
    from types import SimpleNamespace

    import typer

    import latentbench.select.live as live
    from latentbench.cli import _select_live

    monkeypatch.setattr(_common, "PROGRESS_LOG_EVERY", 0.05)
    log = _Written()
    monkeypatch.setattr(_select_live, "err", Console(file=log, width=200))
    batch = SimpleNamespace(leader=None, n_errors=0, call=1, phase="init", model="m",
                            n_new=4, n_replayed=0, paid_total=4, budget_left=96,
                            planned=100, run_revealed=4)  # fmt: skip

    def run_live(cfg: object, store: object, progress: object, stop_event: object) -> None:
        progress(batch)  # the first batch, then a long one that reports nothing
        log.wait_lines(2)
        from latentbench.exceptions import InputError

        raise InputError("stalled on purpose")

    monkeypatch.setattr(live, "run_live", run_live)
    cfg = SimpleNamespace(run=SimpleNamespace(budget=None))
    with pytest.raises(typer.Exit):
        _select_live._run(cfg, "run.duckdb", False, "latentbench select live ...")  # type: ignore[arg-type]
    said = log.lines()
    assert said[-1] == "error: stalled on purpose", said
    line = r"select live \.\.\. 4/100 \(\d+ s\): batch 1 \(init, m\): 4 new, .*"
    assert len(said) >= 3 and all(re.fullmatch(line, x) for x in said[:-1]), said
    assert not _heartbeats()
