"""Fork-based process pools (bootstrap, experiment) and Python 3.12+'s DeprecationWarning on a
fork with threads: silenced where the only other threads are numba's fork-safe workqueue (and
the BLAS's), kept with another Python thread alive."""

from __future__ import annotations

import threading
import time
import warnings

import numpy as np
import pytest

from latentbench._fork import fork_is_known_safe, forking
from latentbench.select import exact_gap_pool, run_experiment

SAID = (
    "This process (pid=12345) is multi-threaded, use of fork() may lead to deadlocks in the child."
)


@pytest.fixture(autouse=True)
def _no_other_thread():
    """Every test here is about the threads alive at a fork, so it starts with this one only.
    An earlier test in the same xdist worker may leave a daemon thread that is ending (a stand-in
    server's request handler after its client was killed, a browser's pipe reader after the
    browser closed): waited for, up to 20 s; one that stays is named, not ignored (under load
    such a thread failed ``fork_is_known_safe()`` here although nothing of this file made it)."""
    deadline = time.monotonic() + 20.0
    while threading.active_count() > 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    others = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
    assert not others, f"threads left by earlier tests: {others}"


def _start_numba_threads(monkeypatch) -> None:
    """One parallel kernel pass (numba even for a tiny matrix): numba's threads are running."""
    monkeypatch.setenv("LATENTBENCH_NUMPY_MAX_CELLS", "0")
    from latentbench.irt._kernels import residual_pass

    Y = np.full((4, 3), 0.5, np.float32)
    residual_pass(Y, np.zeros((4, 1)), np.zeros((3, 1)), np.zeros(3), 1.0, np.empty_like(Y))


def _fork_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [
        str(w.message) for w in caught if "use of fork() may lead to deadlocks" in str(w.message)
    ]


def test_a_forked_experiment_after_a_fit_raises_no_fork_warning(monkeypatch):
    _start_numba_threads(monkeypatch)
    rng = np.random.default_rng(0)
    scores = (rng.random((12, 60)) < np.linspace(0.2, 0.8, 12)[:, None]).astype(float)
    pools = {"gap": exact_gap_pool(scores.mean(axis=1), 0.02, 6)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_experiment(scores, pools, ["ucbe"], seeds=2, budget=96, batch_size=8, n_jobs=2)
    assert _fork_warnings(caught) == []


def test_the_fork_warning_is_silenced_only_without_another_python_thread(monkeypatch):
    _start_numba_threads(monkeypatch)
    assert fork_is_known_safe()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with forking():
            warnings.warn(SAID, DeprecationWarning, stacklevel=1)
    assert _fork_warnings(caught) == []
    release = threading.Event()
    other = threading.Thread(target=release.wait)  # a caller's thread, which may hold a lock
    other.start()
    try:
        assert not fork_is_known_safe()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with forking():
                warnings.warn(SAID, DeprecationWarning, stacklevel=1)
        assert _fork_warnings(caught) == [SAID]
    finally:
        release.set()
        other.join()


def test_another_numba_threading_layer_keeps_the_fork_warning(monkeypatch):
    import numba

    monkeypatch.setattr(numba, "threading_layer", lambda: "omp")  # GNU OpenMP aborts on fork
    assert not fork_is_known_safe()


def _terminal_bar():
    """A progress bar on a terminal console (as the CLI's on a tty), its output kept."""
    import io

    from rich.console import Console
    from rich.progress import Progress

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=80)
    return Progress(console=console, transient=True, auto_refresh=False), out


def test_the_cli_progress_display_stops_its_thread_while_a_pool_forks():
    """``latentbench demo`` on a terminal printed Python 3.12+'s fork-with-threads warning:
    rich's refresh thread was alive when ``run_experiment`` forked its workers (and a thread
    holding the console's lock at the fork leaves it held in the child). The CLI's display
    now redraws from a thread of its own, stopped (joined) for the fork and started after."""

    from latentbench.cli._common import shown

    before = threading.active_count()
    bar, out = _terminal_bar()
    with shown(bar):
        bar.add_task("fitting", total=None)
        assert threading.active_count() == before + 1  # the display's thread
        with forking():
            during = threading.active_count()
            safe = fork_is_known_safe()
        assert threading.active_count() == before + 1
        drawn = len(out.getvalue())
        end = time.monotonic() + 10.0  # a redraw, up to 10 s (was a fixed 0.5 s wait)
        while len(out.getvalue()) == drawn and time.monotonic() < end:
            time.sleep(0.01)
        assert len(out.getvalue()) > drawn  # redrawn after the fork
    assert (during, safe) == (before, True)
    assert threading.active_count() == before


def test_a_forked_experiment_under_the_cli_progress_display_raises_no_fork_warning():
    """The CLI's own display (``progress_bar``) on a terminal around a forked experiment."""
    import io

    from rich.console import Console

    from latentbench.cli._common import progress_bar

    rng = np.random.default_rng(0)
    scores = (rng.random((12, 60)) < np.linspace(0.2, 0.8, 12)[:, None]).astype(float)
    pools = {"gap": exact_gap_pool(scores.mean(axis=1), 0.02, 6)}
    terminal = Console(file=io.StringIO(), force_terminal=True, width=80)
    with progress_bar(stream=terminal), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert not fork_is_known_safe()  # the display's thread is alive ...
        run_experiment(scores, pools, ["ucbe"], seeds=2, budget=96, batch_size=8, n_jobs=2)
    assert _fork_warnings(caught) == []  # ... and stopped for the fork


def test_a_forked_experiment_under_the_cli_progress_lines_raises_no_fork_warning():
    """The CLI's plain progress lines in a log (``progress_bar`` on a file) keep a heartbeat
    thread alive for the block: it is stopped for the fork as the bar's is."""
    import io

    from rich.console import Console

    from latentbench.cli._common import progress_bar

    rng = np.random.default_rng(0)
    scores = (rng.random((12, 60)) < np.linspace(0.2, 0.8, 12)[:, None]).astype(float)
    pools = {"gap": exact_gap_pool(scores.mean(axis=1), 0.02, 6)}
    log = Console(file=io.StringIO(), width=80)  # a file: plain lines, not a bar
    with progress_bar(stream=log), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert not fork_is_known_safe()  # the lines' heartbeat thread is alive ...
        run_experiment(scores, pools, ["ucbe"], seeds=2, budget=96, batch_size=8, n_jobs=2)
    assert _fork_warnings(caught) == []  # ... and stopped for the fork


def test_a_bar_that_refreshes_itself_is_refused():
    """rich's own refresh thread cannot be joined before a fork: ``shown`` redraws instead."""
    from rich.console import Console
    from rich.progress import Progress

    from latentbench.cli._common import shown

    bar = Progress(console=Console(force_terminal=True))
    with pytest.raises(ValueError, match="auto_refresh=False"), shown(bar):
        pass
