"""Battery rows J and K: what ended in a raw or late error is one line naming the argument or the file
and the fix, before anything runs or is allocated."""

import tracemalloc

import numpy as np
import pytest

import jaxbandit as jb
from jaxbandit import cli
from jaxbandit.persist import formats
from jaxbandit.runner import checkpoint as checkpoint_lib
from jaxbandit.runner import driver, memory

xr = pytest.importorskip("xarray")
T, D, K = 24, 3, 4
GRID = {"beta_scale": [0.05, 0.5]}


def make_alg(p):
    return jb.oful(T, D, beta_scale=p["beta_scale"])


ENV = jb.envs.linear(D, K, noise=jb.noise.gaussian(1.0))


def run(**kw):
    kw = {"horizon": T, "seeds": 3, "chunk_size": 8} | kw
    grid = kw.pop("grid", GRID)
    horizon = kw["horizon"]
    return jb.sweep(lambda p: jb.oful(horizon, D, beta_scale=p["beta_scale"]), ENV, grid, **kw)


@pytest.fixture
def no_run(monkeypatch):
    monkeypatch.setattr(driver, "run_algorithms", lambda *a, **k: pytest.fail("the sweep ran"))


# ---- K: sizes that cannot fit ----------------------------------------------------------------------

TOO_LARGE = {
    "seeds=10**9": dict(seeds=10**9),
    "horizon=10**9": dict(horizon=10**9, seeds=10),
    "a 10**7-point grid": dict(grid={"beta_scale": np.linspace(0.01, 1.0, 10**7)}, horizon=1000),
}


@pytest.mark.parametrize("case", list(TOO_LARGE))
def test_a_sweep_that_cannot_fit_is_refused_before_anything_is_allocated(no_run, monkeypatch, case):
    """Battery row K: seeds=10**9, horizon=10**9 or a 10**7-point grid allocated 7-8 GiB, then a raw
    MemoryError or RESOURCE_EXHAUSTED. The memory the results need is estimated from the arguments and an
    impossible sweep refused, saying what would fit, before 20 MiB are allocated."""
    monkeypatch.setattr(memory, "machine_memory", lambda: 8 * memory.GiB)  # the battery's machine
    kw = TOO_LARGE[case]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        with pytest.raises(
            ValueError,
            match=r"^seeds=\d+, horizon=\d+, record='all' over \d+ grid points and 1 algorithm\(s\) are too "
            r"many for this machine: its results alone would take [\d.e+]+ GiB \(.*\), more than its 8 GiB "
            r"of memory; record fewer rounds \(record=\('log', 100\)\), stream them to disk "
            r"\(out='….zarr'\), or run fewer seeds or grid points$",
        ):
            run(**kw)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20


def test_streaming_to_disk_fits_what_memory_does_not(no_run, monkeypatch, tmp_path):
    """With out= only one chunk of the results is in memory: 10**5 seeds over 10**5 rounds pass the check
    (the run itself is not started here), 10**9 seeds do not, with out= or without."""
    monkeypatch.setattr(memory, "machine_memory", lambda: 8 * memory.GiB)
    kw = dict(algorithms=1, points=2, horizon=10**5, record="all", itemsize=4)
    with pytest.raises(ValueError, match="its results alone would take"):
        memory.check_fits(seeds=10**5, streamed=False, **kw)
    memory.check_fits(seeds=10**5, streamed=True, **kw)
    with pytest.raises(ValueError, match=r"one chunk of them would take .*run fewer seeds or grid points"):
        run(seeds=10**9, out=tmp_path / "s.zarr")
    assert not (tmp_path / "s.zarr").exists()


def test_the_demo_with_a_billion_seeds_is_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(memory, "machine_memory", lambda: 8 * memory.GiB)
    assert cli.main(["demo", "--seeds", "1000000000", "--out", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "seeds=1000000000" in err and "too many for this machine" in err


# ---- J: raw errors -----------------------------------------------------------------------------------


def test_a_checkpoint_naming_a_file_is_refused_before_anything_runs(no_run, tmp_path):
    """checkpoint= naming an existing file gave a FileExistsError after the first chunk ran."""
    path = tmp_path / "ckpt"
    path.write_text("notes")
    with pytest.raises(ValueError, match=r"^checkpoint='.*ckpt' is invalid: it is a file; give a directory"):
        run(checkpoint=path)
    assert path.read_text() == "notes"


def test_a_zarray_that_is_not_text_is_one_line_before_resuming(tmp_path, monkeypatch):
    """A stopped store's .zarray that is not UTF-8 gave a UnicodeDecodeError in the middle of the run."""
    out, ckpt = tmp_path / "s.zarr", tmp_path / "ckpt"
    real, saves = checkpoint_lib.save, []

    def stop(path, **kw):
        real(path, **kw)
        saves.append(1)
        raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint_lib, "save", stop)
    with pytest.raises(KeyboardInterrupt):
        run(out=out, checkpoint=ckpt)
    monkeypatch.undo()
    (out / "regret" / ".zarray").write_bytes(b"\xff\xfe{")
    monkeypatch.setattr(driver, "run_algorithms", lambda *a, **k: pytest.fail("the sweep ran"))
    with pytest.raises(ValueError, match=r"^out='.*s.zarr' is damaged: regret/.zarray cannot be read") as err:
        run(out=out, checkpoint=ckpt)
    assert "\n" not in str(err.value)


def test_garbled_attributes_of_a_nc_without_a_checksum_are_one_line(tmp_path):
    """A .nc written before files carried their checksum, its meta attribute not JSON: a JSONDecodeError."""
    res = jb.SweepResult(("seed", "round"), {"seed": np.arange(2), "round": np.arange(1, 4)}, {})
    res.data["cumulative_regret"] = np.ones((2, 3), np.float32)
    ds = res.to_xarray()
    ds.attrs[formats.META_ATTR] = "{garbled"
    ds.to_netcdf(tmp_path / "r.nc", engine="h5netcdf")
    with pytest.raises(ValueError, match=r"^'.*r.nc' is damaged or not a jaxbandit result \(JSONDecodeError"):
        jb.SweepResult.load(tmp_path / "r.nc")


def test_an_impossible_dtype_in_an_unverified_zarr_is_one_line(tmp_path):
    """A dtype attribute edited to <f6 gave a TypeError (read with verify=False, past the manifest)."""
    res = jb.SweepResult(("seed", "round"), {"seed": np.arange(2), "round": np.arange(1, 4)}, {})
    res.data["cumulative_regret"] = np.ones((2, 3), np.float32)
    path = res.save(tmp_path / "r.zarr")
    for name in (".zattrs", ".zmetadata"):
        text = (path / name).read_text()
        (path / name).write_text(text.replace("<f4", "<f6"))
    with pytest.raises(ValueError, match=r"^'.*r.zarr' is damaged or not a jaxbandit result \(\w+Error: "):
        jb.SweepResult.load(path, verify=False)
    with pytest.raises(ValueError, match=r"^'.*r.zarr' is damaged: the store's metadata"):
        jb.SweepResult.load(path)
