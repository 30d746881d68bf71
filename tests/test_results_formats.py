"""SweepResult in every format: .npz (and the files older versions wrote), .nc and .zarr."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

import jaxbandit as jb
from jaxbandit.report import results
from jaxbandit.report.results import LazyArray

xr = pytest.importorskip("xarray")

DATA = Path(__file__).parent / "data"


def legacy_result() -> jb.SweepResult:
    """What tests/data/legacy-result.{npz,json} holds, written by SweepResult.save before the .nc and
    .zarr formats existed (commit 0644619): every dtype a result may carry, string and 1-based round
    coordinates, non-ASCII metadata. The fixture was made by ``legacy_result().save(...)``."""
    rng = np.random.default_rng(14)
    dims = ("algorithm", "C", "seed", "round")
    shape = (2, 2, 3, 4)
    coords = {
        "algorithm": np.asarray(["cr_hvt_ucb", "oful"]),
        "C": np.asarray([0.0, 100.0]),
        "seed": np.arange(3),
        "round": np.arange(1, 5),
    }
    regret = rng.exponential(size=shape).astype(np.float32)
    data = {
        "cumulative_regret": np.cumsum(regret, axis=-1),
        "corruption_spent": rng.uniform(size=shape),
        "regret": regret,
        "action": rng.integers(0, 20, size=shape).astype(np.int32),
        "count": rng.integers(-(2**40), 2**40, size=shape).astype(np.int64),
        "flag": rng.uniform(size=shape) < 0.5,
    }
    meta = {"horizon": 4, "record": "all", "stream_axes": [], "streams": 3, "devices": 1, "note": "légacy"}
    return jb.SweepResult(dims, coords, data, meta)


def assert_same(a: jb.SweepResult, b: jb.SweepResult):
    """Same dims, meta, coordinates and arrays, bitwise and dtype for dtype."""
    assert a.dims == b.dims and a.meta == b.meta
    assert list(a.coords) == list(b.coords) and set(a.data) == set(b.data)
    for k in a.coords:
        x, y = np.asarray(a.coords[k]), np.asarray(b.coords[k])
        assert x.dtype == y.dtype, (k, x.dtype, y.dtype)
        np.testing.assert_array_equal(x, y)
    for k in a.data:
        x, y = np.asarray(a.data[k]), np.asarray(b.data[k])
        assert x.dtype == y.dtype, (k, x.dtype, y.dtype)
        assert x.shape == y.shape, k
        assert x.tobytes() == y.tobytes(), k


def test_an_old_npz_result_loads_identically():
    expected = legacy_result()
    for path in (DATA / "legacy-result.npz", DATA / "legacy-result.json", DATA / "legacy-result"):
        assert_same(expected, jb.SweepResult.load(path))


# ---- save / load in every format ------------------------------------------------------------------


def a_result() -> jb.SweepResult:
    """The legacy result plus a field with NaN, ±inf and -0.0 (stored bit for bit, never masked)."""
    res = legacy_result()
    odd = np.linspace(-1.0, 1.0, res.regret.size).reshape(res.regret.shape)
    odd.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    res.data["odd"] = odd
    return res


@pytest.mark.parametrize("suffix", [".npz", ".nc", ".zarr"])
def test_every_format_round_trips_exactly(tmp_path, suffix):
    res = a_result()
    path = res.save(tmp_path / f"r{suffix}")
    assert path == tmp_path / f"r{suffix}"
    assert_same(res, jb.SweepResult.load(path))
    # saving again replaces the result
    other = a_result()
    other.data["regret"] = other.regret + np.float32(1)
    other.meta["horizon"] = 5
    assert other.save(path) == path
    assert_same(other, jb.SweepResult.load(path))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        {"r.npz", "r.json"} if suffix == ".npz" else {f"r{suffix}"}
    )


@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_nc_and_zarr_are_labelled_datasets_with_meta_attributes(tmp_path, suffix):
    res = a_result()
    path = res.save(tmp_path / f"r{suffix}")
    engine = "h5netcdf" if suffix == ".nc" else "zarr"
    with xr.open_dataset(path, engine=engine) as ds:
        assert set(ds.data_vars) == set(res.data) and tuple(ds["regret"].dims) == res.dims
        assert ds.attrs["horizon"] == res.meta["horizon"] and ds.attrs["note"] == res.meta["note"]
        assert "stream_axes" not in ds.attrs  # lists live in the JSON only
        assert json.loads(ds.attrs["jaxbandit_meta"]) == res.meta
        np.testing.assert_array_equal(
            ds["action"].sel(algorithm="oful", C=100.0).values, res.sel(algorithm="oful", C=100.0).action
        )


def test_suffixes_choose_the_format(tmp_path):
    res = a_result()
    assert res.save(tmp_path / "plain") == tmp_path / "plain.npz"
    assert res.save(tmp_path / "r.json") == tmp_path / "r.npz"
    assert_same(res, jb.SweepResult.load(tmp_path / "plain"))
    assert results.result_format("a.NC") == ".nc" and results.result_format("a.zarr") == ".zarr"
    with pytest.raises(FileNotFoundError):
        jb.SweepResult.load(tmp_path / "missing.nc")
    with pytest.raises(FileNotFoundError):
        jb.SweepResult.load(tmp_path / "missing.zarr")


def test_xarray_and_dataframe_of_a_loaded_result(tmp_path):
    res = a_result()
    assert_same(res, jb.SweepResult.from_xarray(res.to_xarray()))
    loaded = jb.SweepResult.load(res.save(tmp_path / "r.nc"))
    df = loaded.to_dataframe()
    assert df.shape == (res.regret.size, len(res.data)) and list(df.index.names) == list(res.dims)
    assert df.equals(res.to_dataframe())


def test_a_zarr_store_loads_lazily(tmp_path):
    res = a_result()
    lazy = jb.SweepResult.load(res.save(tmp_path / "r.zarr"), lazy=True)
    arr = lazy.data["count"]
    assert isinstance(arr, LazyArray)
    assert (arr.shape, arr.dtype, arr.ndim, arr.size, len(arr)) == (
        res.count.shape,
        res.count.dtype,
        4,
        res.count.size,
        2,
    )
    np.testing.assert_array_equal(arr[1, :, 2], res.count[1, :, 2])
    np.testing.assert_array_equal(lazy.final_regret, res.final_regret)
    sub = lazy.sel(algorithm="oful", C=100.0)
    assert sub.flag.dtype == bool
    np.testing.assert_array_equal(sub.flag, res.sel(algorithm="oful", C=100.0).flag)
    assert_same(res, lazy)  # np.asarray reads whole arrays
    assert_same(res, jb.SweepResult.load(lazy.save(tmp_path / "copy.npz")))
    for suffix in (".npz", ".nc"):
        with pytest.raises(ValueError, match=r"lazy=True is invalid .* only zarr stores"):
            jb.SweepResult.load(tmp_path / f"r{suffix}", lazy=True)


# ---- atomic writes ---------------------------------------------------------------------------------


def _changed(res: jb.SweepResult) -> jb.SweepResult:
    new = jb.SweepResult(res.dims, dict(res.coords), dict(res.data), dict(res.meta))
    new.data["regret"] = res.regret * np.float32(2)
    return new


def _failing(real, *, after_writing: bool):
    """``real`` (a writer whose first argument is the target) failing midway or after writing."""

    def write(self, target, *args, **kwargs):
        if after_writing:  # the whole new version, then a failure before it is moved into place
            real(self, target, *args, **kwargs)
        elif hasattr(target, "write"):  # np.savez's open file
            target.write(b"half")
        else:  # half a netCDF file, or one file of a zarr store's directory
            target = Path(target)
            (target / "partial" if target.is_dir() else target).write_bytes(b"half")
        raise OSError("disk full")

    return write


@pytest.mark.parametrize("suffix", [".npz", ".nc", ".zarr"])
@pytest.mark.parametrize("after_writing", [False, True])
def test_a_failing_write_leaves_the_previous_result(tmp_path, monkeypatch, suffix, after_writing):
    res = a_result()
    path = res.save(tmp_path / f"r{suffix}")
    before = sorted(p.name for p in tmp_path.iterdir())
    if suffix == ".npz":
        real_savez = np.savez
        savez = _failing(lambda _, f, **arrays: real_savez(f, **arrays), after_writing=after_writing)
        monkeypatch.setattr(np, "savez", lambda f, **arrays: savez(None, f, **arrays))
    else:
        method = "to_netcdf" if suffix == ".nc" else "to_zarr"
        real = getattr(xr.Dataset, method)
        monkeypatch.setattr(xr.Dataset, method, _failing(real, after_writing=after_writing))
    with pytest.raises(OSError, match="disk full"):
        _changed(res).save(path)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no temporary left behind
    assert_same(res, jb.SweepResult.load(path))


def test_a_zarr_store_is_replaced_safely_without_an_atomic_exchange(tmp_path, monkeypatch):
    """Where renameat2 is missing, the old store is moved aside, and put back if the new one cannot be
    moved in."""
    res = a_result()
    path = res.save(tmp_path / "r.zarr")
    monkeypatch.setattr(results, "_exchange", lambda a, b: False)
    new = _changed(res)
    new.save(path)
    assert_same(new, jb.SweepResult.load(path))
    real_rename = os.rename

    def rename(src, dst):
        if Path(dst) == path and str(src).endswith(".tmp"):
            raise OSError("rename failed")
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(OSError, match="rename failed"):
        res.save(path)
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["r.zarr"]
    assert_same(new, jb.SweepResult.load(path))
