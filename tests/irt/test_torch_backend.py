"""The PyTorch backend gives the NumPy path's estimates.

Every test runs on CPU tensors (skipped without torch) and again on ``cuda`` where PyTorch
sees a GPU (skipped otherwise): the GPU's float32 reductions run in another order, so the
tolerances are those of single-precision products, the same on both devices.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

from latentbench import ConvergenceWarning, InputError, TwoPL
from latentbench.irt import fit_cbmm
from latentbench.synthetic import simulate_2pl, simulate_low_rank


@pytest.fixture(params=["cpu", "cuda"])
def device(request: pytest.FixtureRequest) -> str:
    """The device each test runs on. PyTorch is imported here, not at collection: its import
    (about 2 CPU-s) is then paid only by the pytest-xdist worker that runs these tests."""
    torch = pytest.importorskip("torch", reason="PyTorch (extra 'torch') is not installed")
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("no GPU visible to torch")
    return str(request.param)


def test_rank1_iterates_match_numpy_path(device: str) -> None:
    # same algorithm, sweep by sweep (default MAP prior, no acceleration so that no step-size
    # decision can branch differently); the only difference is the single-precision products
    data = simulate_2pl(400, 150, missing=0.2, random_state=1)
    kwargs = {"max_iter": 40, "accelerate": False, "tol": 1e-15}
    with pytest.warns(ConvergenceWarning):
        ours = TwoPL(**kwargs).fit(data.matrix)
    with pytest.warns(ConvergenceWarning):
        on_torch = TwoPL(device=device, **kwargs).fit(data.matrix)
    np.testing.assert_allclose(on_torch.theta, ours.theta, atol=1e-6)
    np.testing.assert_allclose(on_torch.discrimination, ours.discrimination, atol=1e-6)
    np.testing.assert_allclose(on_torch.b, ours.b, atol=1e-6)
    np.testing.assert_allclose(on_torch.loss_history, ours.loss_history, rtol=1e-8)


def test_rank1_converged_fits_agree(device: str) -> None:
    # both stop at tol=1e-10, which guarantees the objective to ~tol relative and the
    # parameters to the stopping rule's Newton-step bound 10 * sqrt(tol) * scale
    data = simulate_2pl(400, 150, missing=0.2, random_state=1)
    tol = 1e-10
    ours = TwoPL(tol=tol, max_iter=20000).fit(data.matrix)
    on_torch = TwoPL(tol=tol, max_iter=20000, device=device).fit(data.matrix)
    assert ours.converged and on_torch.converged
    np.testing.assert_allclose(on_torch.loss_history[-1], ours.loss_history[-1], rtol=1e-8)
    scale = 1.0 + float(np.abs(ours.theta).max())
    bound = 10 * np.sqrt(tol) * scale
    np.testing.assert_allclose(on_torch.theta, ours.theta, atol=bound)
    np.testing.assert_allclose(on_torch.discrimination, ours.discrimination, atol=bound)
    np.testing.assert_allclose(on_torch.b, ours.b, atol=bound)


def test_rank2_iterates_match_numpy_path(device: str) -> None:
    data = simulate_low_rank(150, 80, rank=2, missing=0.1, random_state=2)
    kwargs = {"rank": 2, "max_iter": 40, "accelerate": False}
    with pytest.warns(Warning):
        ours = fit_cbmm(data.matrix.scores, **kwargs)
    with pytest.warns(Warning):
        on_torch = fit_cbmm(data.matrix.scores, device=device, **kwargs)
    X_ours = ours.U @ ours.V.T + ours.b
    X_torch = on_torch.U @ on_torch.V.T + on_torch.b
    np.testing.assert_allclose(X_torch, X_ours, atol=1e-5)
    np.testing.assert_allclose(on_torch.loss_history, ours.loss_history, rtol=1e-6)


def test_unknown_device_is_a_clear_error():
    data = simulate_2pl(20, 10, random_state=0)
    with pytest.raises(InputError, match="device='nonsense'"):
        fit_cbmm(data.matrix.scores, device="nonsense")


# well-formed (each parses as torch.device) and malformed device strings
WELL_FORMED = ["cpu", "cuda", "cuda:0", "cuda:12", "cpu:0", "mps", "xpu", "meta", "hip", "xla",
               "privateuseone", "mkldnn"]  # fmt: skip
MALFORMED = ["nonsense", "auto", "", "CUDA", "Cpu", " cpu", "cpu ", "cuda:", "cuda:01",
             "cuda:-1", "cuda:+1", "cuda:a", "cuda:0:1", "cuda: 1", "cuda:\u0663"]  # fmt: skip


@pytest.mark.parametrize("value", [*MALFORMED, 3, b"cuda"])
def test_a_malformed_device_is_refused_before_any_work_without_pytorch(value, monkeypatch):
    """``fit_cbmm(device="nonsense")`` read the scores and imported PyTorch before PyTorch
    refused the string in its own words; a device that cannot be one is refused first now,
    PyTorch blocked (a None module: its import would raise), and ``TwoPL`` refuses the same at
    ``validate``, in the same words (``fit`` checks them before its data)."""
    monkeypatch.setitem(sys.modules, "torch", None)
    expected = "; expected None (the NumPy kernels) or a PyTorch device: cpu, cuda, mps, "
    with pytest.raises(InputError) as said:
        fit_cbmm(object(), device=value)  # type: ignore[arg-type]
    assert str(said.value).startswith(f"device={value!r}{expected}")
    assert "alone or with an index (cuda:1)" in str(said.value)
    with pytest.raises(InputError) as by_model:
        TwoPL(device=value).validate()  # type: ignore[arg-type]
    assert str(by_model.value) == str(said.value)


def test_well_formed_devices_are_left_to_pytorch(monkeypatch):
    """A device PyTorch would take (``cuda`` on a machine without one too) passes the early
    check; whether it is there is said when the fit starts, as before."""
    for value in WELL_FORMED:
        assert TwoPL(device=value).validate().device == value
    data = simulate_2pl(20, 10, random_state=0)
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(InputError, match=r"^device='cuda:1' needs PyTorch"):
        fit_cbmm(data.matrix.scores, device="cuda:1")


def test_the_early_check_takes_what_torch_device_parses():
    """The early check is no narrower nor wider than PyTorch's own parser (``DEVICE_TYPES``
    is its list): every string of both lists, and each type alone and with an index."""
    torch = pytest.importorskip("torch", reason="PyTorch (extra 'torch') is not installed")
    from latentbench.irt._cbmm import DEVICE_TYPES, is_device

    def parses(value: str) -> bool:
        try:
            with warnings.catch_warnings():  # 'mkldnn' is deprecated as a device type
                warnings.simplefilter("ignore")
                torch.device(value)
        except RuntimeError:
            return False
        return True

    for value in [*WELL_FORMED, *MALFORMED, *DEVICE_TYPES, *(f"{t}:3" for t in DEVICE_TYPES)]:
        assert is_device(value) == parses(value), value


def test_a_backend_registered_by_a_plugin_is_asked_of_the_imported_pytorch(monkeypatch):
    """A plugin can register a backend under its own name (Ascend's ``npu``): in a process that
    has imported PyTorch, a name outside ``DEVICE_TYPES`` is asked of ``torch.device`` rather
    than refused; without PyTorch imported it is refused early, as a typo is."""
    from types import SimpleNamespace

    from latentbench.irt._cbmm import is_device

    def device(value: str) -> str:
        if value.split(":")[0] not in ("cpu", "npu"):
            raise RuntimeError(f"Expected one of cpu, npu device type at start of {value}")
        return value

    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(device=device))
    assert is_device("npu") and is_device("npu:1")
    assert TwoPL(device="npu:1").validate().device == "npu:1"
    assert not is_device("nonsense") and not is_device("npu:01") and not is_device("NPU")
    monkeypatch.setitem(sys.modules, "torch", None)
    assert not is_device("npu")


def test_fit_cbmm_takes_a_torch_device_object(device: str) -> None:
    """``fit_cbmm(device=torch.device("cpu"))`` ran before the early check of h208 (PyTorch
    takes its own device objects) and was then refused as no device string; it runs again,
    giving the fit of the same device named by its string."""
    import torch

    scores = simulate_2pl(20, 10, random_state=0).matrix.scores
    with pytest.warns(ConvergenceWarning):
        by_name = fit_cbmm(scores, device=device, max_iter=20)
    with pytest.warns(ConvergenceWarning):
        by_object = fit_cbmm(scores, device=torch.device(device), max_iter=20)
    np.testing.assert_array_equal(by_object.U, by_name.U)
    assert by_object.loss_history == by_name.loss_history


PLUGIN_TORCH = '''
"""A stand-in for PyTorch: loads the backend plugins of its entry points when imported, as
PyTorch does (torch._import_device_backends), and knows a plugin's device only then."""
import os
from importlib.metadata import entry_points

types = {"cpu", "cuda"}
if os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") == "1":
    for plugin in entry_points(group="torch.backends"):
        plugin.load()()


def device(value):
    if value.split(":")[0] not in types:
        raise RuntimeError(f"Expected one of {', '.join(sorted(types))} device type")
    return value
'''


@pytest.fixture
def torch_not_imported(tmp_path, monkeypatch):
    """A process that has not imported PyTorch, whose ``import torch`` gets the stand-in
    above (the real one stays as it was in ``sys.modules`` for the other tests)."""
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(PLUGIN_TORCH)
    for name in ("torch", "fake_npu"):  # each restored (or removed) after the test
        monkeypatch.setitem(sys.modules, name, None)
        del sys.modules[name]
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _install_npu_plugin(folder) -> None:
    """A package that registers the backend ``npu`` when PyTorch is imported (as Ascend's
    torch_npu does, through the entry point group ``torch.backends``)."""
    plugin = "def load():\n    import torch\n    torch.types.add('npu')\n"
    (folder / "fake_npu.py").write_text(plugin)
    info = folder / "fake_npu-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-npu\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[torch.backends]\nnpu = fake_npu:load\n")


def test_a_plugin_backend_is_taken_before_pytorch_is_imported(torch_not_imported, monkeypatch):
    """``latentbench fit --device npu`` (and ``TwoPL(device="npu")`` in a session that had not
    imported PyTorch) ran on a plugin's backend before h208: PyTorch, imported by the fit,
    loads its installed backend plugins. The early check refused ``npu`` as a typo there; it
    imports PyTorch for a name outside its list only where such a plugin is installed."""
    from latentbench.irt._cbmm import is_device

    assert not is_device("npu") and "torch" not in sys.modules  # no plugin: a typo, no import
    _install_npu_plugin(torch_not_imported)
    monkeypatch.setenv("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")  # PyTorch would load no plugin
    assert not is_device("npu") and "torch" not in sys.modules
    monkeypatch.delenv("TORCH_DEVICE_BACKEND_AUTOLOAD")
    assert TwoPL(device="npu:1").validate().device == "npu:1"
    assert "torch" in sys.modules  # imported for it, its plugins loaded
    assert not is_device("nonsense") and not is_device("npu:01")
