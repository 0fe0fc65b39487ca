"""Collection settings for the whole suite.

``--doctest-modules`` (pyproject) runs the docstring examples of ``src``; the helper modules of
the tests and the fixture generators under ``tests/data`` are not doctest material (some import
optional harnesses), so they are left out of collection here.
"""

collect_ignore_glob = ["harness/_*.py", "data/*"]


import os  # noqa: E402

# Each pytest-xdist worker is one process per core: its numba kernels and BLAS calls run on one
# thread, so two workers on two cores do not oversubscribe them (set before numba is imported;
# an explicit setting in the environment wins).
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture
def store_held():
    """``with store_held(path, read_only) as pid:`` another process holds the DuckDB store at
    ``path`` open (reading or writing) until the block ends; yields its PID.

    The holder is a bare DuckDB connection to the file, which is what holds the lock a Store
    meets (``Store`` opens its file with ``duckdb.connect(path, read_only=...)``), without
    latentbench's imports (~0.8 s of CPU per holder, was ``Store(path)``)."""
    import contextlib
    import subprocess
    import sys

    @contextlib.contextmanager
    def hold(path, read_only):
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys, duckdb; "
                f"c = duckdb.connect({str(path)!r}, read_only={bool(read_only)}); "
                "print('ready', flush=True); sys.stdin.readline()",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
            yield holder.pid
        finally:
            assert holder.stdin is not None
            holder.stdin.close()
            holder.wait(timeout=30)

    return hold


_RAM_FOLDER = Path("/dev/shm")
"""A memory-backed folder (tmpfs) where the system has one: a file's ``fsync`` there returns at
once, where on the disk it waits for the device."""


def _basetemp_chosen(config: pytest.Config) -> bool:
    """Whether the user named ``--basetemp`` (on the command line or in ``PYTEST_ADDOPTS``).

    Not ``config.getoption("basetemp")``: pytest-xdist gives every worker a ``--basetemp`` of
    its own (``.../popen-gw0``), so in the suite's own command (``-n auto``) that was always
    set and the files never went to memory."""
    import shlex

    if not hasattr(config, "workerinput"):  # not an xdist worker: the option is the user's
        return config.getoption("basetemp") is not None
    given = [*map(str, config.invocation_params.args)]
    given += shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    return any(arg == "--basetemp" or arg.startswith("--basetemp=") for arg in given)


@pytest.fixture(scope="session")
def basetemp_chosen(request) -> bool:
    """Whether the user named ``--basetemp`` (xdist's own per-worker one aside)."""
    return _basetemp_chosen(request.config)


@pytest.fixture(scope="session")
def _ram_root(request):
    """This session's (this worker's) folder under :data:`_RAM_FOLDER`, removed at its end;
    None without a usable one (no such folder, not writable, under 1 GiB free) or when the
    run names its own ``--basetemp``."""
    import shutil
    import tempfile

    if _basetemp_chosen(request.config):  # the user chose where files go
        yield None
        return
    try:
        usable = (
            _RAM_FOLDER.is_dir()
            and os.access(_RAM_FOLDER, os.W_OK | os.X_OK)
            and shutil.disk_usage(_RAM_FOLDER).free >= 1 << 30
        )
        root = Path(tempfile.mkdtemp(prefix="pytest-ram-", dir=_RAM_FOLDER)) if usable else None
    except OSError:
        root = None
    yield root
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def ram_tmp_path(request, _ram_root, tmp_path_factory):
    """A test's own empty folder in memory (:data:`_RAM_FOLDER`), removed after the test; the
    usual ``tmp_path`` where there is none. A folder's conftest that names it as its
    ``tmp_path`` keeps its tests' files off the disk: a DuckDB store syncs its file at every
    commit (a live run commits every paid cell), which on this suite's machines waited for the
    disk for longer than the commit took (``tests/select_live``: 1.6 times the CPU time, in
    wall time). Nothing of what these tests check depends on the device: a killed process's
    writes are in the page cache either way. ``--basetemp DIR`` puts them back under DIR."""
    import re
    import shutil
    import tempfile

    name = re.sub(r"[\W]", "_", request.node.name)[:30]
    if _ram_root is None:
        yield tmp_path_factory.mktemp(name, numbered=True)
        return
    path = Path(tempfile.mkdtemp(prefix=name, dir=_ram_root))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def shared_fit(tmp_path_factory):
    """``shared_fit(name) -> (fit_dir, output)``: ``latentbench fit`` of a shared matrix, run
    once per test session and shared by every test (and every xdist worker) that reads it.

    The fit directory is read-only for the tests: one that needs to change it copies it first.
    ``output`` is what ``fit`` printed (not quiet). Skips when the shared data is absent.
    """
    from filelock import FileLock
    from typer.testing import CliRunner

    from latentbench.cli import _register, app

    _register()
    # all workers share the parent of their own base temp folder
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    cache = root / "shared-fits"
    cache.mkdir(exist_ok=True)

    def get(name: str) -> tuple[Path, str]:
        path = SHARED_DATA / f"{name}.parquet"
        if not path.exists():
            pytest.skip(f"shared data not found at {path}")
        out = cache / name
        log = cache / f"{name}.out"
        with FileLock(str(cache / f"{name}.lock")):
            if not log.exists():
                outcome = CliRunner().invoke(app, ["fit", str(path), "--out", str(out)])
                assert outcome.exit_code == 0, outcome.output
                log.write_text(outcome.output)
        return out, log.read_text()

    return get


def _shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder every xdist worker of this session shares (the parent of each
    worker's own base temp folder), or the base temp folder without xdist."""
    root = tmp_path_factory.getbasetemp()
    return root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root


DEMO_OUT = "./a_folder_name_as_long_as_the_ones_ci_workspaces_have/and_one_more_level/my demo"
"""The ``--out`` of :func:`shared_demo`'s run, as given: a leading ``./`` (pathlib drops it),
longer than 80 columns with its text, and a space (its printed command must still paste)."""


@pytest.fixture(scope="session")
def shared_demo(tmp_path_factory):
    """``(folder, out, output, twin)``: ``latentbench demo --out DEMO_OUT`` run once per test
    session in ``folder`` (shared by every xdist worker, as :func:`shared_fit`), its ``--out``
    as given (:data:`DEMO_OUT`), what it printed, and the :class:`~latentbench.DemoResult`
    the command got from ``latentbench.demo`` (the Python twin, recorded as the command ran;
    a copy, unpickled).

    The demo costs ~10 s of CPU: the tests of its checks (``test_fit_cli``) and of its wrote
    lines (``test_wrote_as_given``) read one run instead of two (the second was a
    ``--seeds 2`` demo, ~4 s). The folder is read-only for the tests, which run relative
    paths from it (``monkeypatch.chdir(folder)``).
    """
    import pickle

    from filelock import FileLock
    from typer.testing import CliRunner

    import latentbench
    from latentbench.cli import _register, app

    _register()
    root = _shared_root(tmp_path_factory)
    folder = root / "shared-demo"
    printed, recorded = folder / "output.txt", folder / "twin.pickle"
    with FileLock(str(root / "shared-demo.lock")):
        if not printed.exists():
            folder.mkdir(exist_ok=True)
            twins = []
            python_twin = latentbench.demo

            def demo(*args, **kwargs):
                twins.append(python_twin(*args, **kwargs))
                return twins[-1]

            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(latentbench, "demo", demo)
                patch.chdir(folder)
                outcome = CliRunner().invoke(app, ["demo", "--out", DEMO_OUT])
            assert outcome.exit_code == 0, outcome.output
            assert len(twins) == 1  # the command is a shell over one latentbench.demo call
            recorded.write_bytes(pickle.dumps(twins[0]))
            printed.write_text(outcome.output)
    return folder, DEMO_OUT, printed.read_text(), pickle.loads(recorded.read_bytes())


def _registered(typer_app, pinned: list) -> tuple:
    """What a Typer app's click command is built from, by identity: the app, its callback,
    its commands and its groups, nested; each object is kept in ``pinned`` (so that no id is
    reused)."""
    callback = typer_app.registered_callback  # a new one at each app.callback()
    pinned += [typer_app, callback, *typer_app.registered_commands, *typer_app.registered_groups]
    groups = tuple(
        (id(g), _registered(g.typer_instance, pinned)) for g in typer_app.registered_groups
    )
    return (id(typer_app), id(callback), tuple(map(id, typer_app.registered_commands)), groups)


@pytest.fixture(autouse=True, scope="session")
def _cli_command_built_once():
    """typer's ``CliRunner.invoke(app, ...)`` builds the app's click command at every call,
    evaluating the annotations of every command again (~15 ms a call; 229 calls in 10 of
    the suite's CLI test files, 3.2 s): built once per app and set of registered commands
    (a test that registers one gets a new build), as a ``latentbench`` process builds it once.
    Each invocation still parses, runs and prints through a context of its own."""
    import typer.testing

    build = getattr(typer.testing, "_get_command", None)
    if build is None:  # a typer that builds the command elsewhere: left as it is
        yield
        return
    built: dict[tuple, tuple[list, object]] = {}

    def get_command(typer_app):
        pinned: list = []
        key = _registered(typer_app, pinned)
        if key not in built:
            built[key] = (pinned, build(typer_app))
        return built[key][1]

    typer.testing._get_command = get_command
    yield
    typer.testing._get_command = build


def pytest_collection_modifyitems(config, items):
    """Start each pytest-xdist worker on its share of the ``slow`` tests.

    The work-stealing scheduler (pyproject: ``--dist worksteal``) gives the first half of the
    collection to one worker and the second half to the other, and an idle worker steals from
    the end of the other's queue. The slow tests (a minute each on a loaded machine) are
    dealt alternately to the front of both halves, so the suite's tail is made of short tests
    and neither worker waits alone on a long one at the end. The order within each group is
    the collection's; without xdist the slow tests simply run first.
    """
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if not slow or len(slow) == len(items):
        return
    fast = [item for item in items if item.get_closest_marker("slow") is None]
    first, second = slow[0::2], slow[1::2]
    room = len(items) // 2 - len(first)  # fast tests in the first half
    if room < 0:
        return
    items[:] = first + fast[:room] + second + fast[room:]
