"""SweepResult: saved and loaded exactly, and converted to xarray / pandas and back without loss."""

import numpy as np
import pytest

import jaxbandit as jb
from jaxbandit.report.results import LazyArray

xr = pytest.importorskip("xarray")


def a_result() -> jb.SweepResult:
    """A result shaped as jb.sweep returns one for two algorithms, every round recorded."""
    rng = np.random.default_rng(0)
    dims = ("algorithm", "C", "seed", "round")
    shape = (2, 3, 4, 5)
    coords = {
        "algorithm": np.asarray(["cr", "oful"]),
        "C": np.asarray([0.0, 10.0, 100.0]),
        "seed": np.arange(4),
        "round": np.arange(1, 6),
    }
    regret = rng.exponential(size=shape).astype(np.float32)
    data = {
        "cumulative_regret": np.cumsum(regret, axis=-1),
        "corruption_spent": rng.uniform(size=shape).astype(np.float32),
        "regret": regret,
        "action": rng.integers(0, 20, size=shape).astype(np.int32),
        "corruption": rng.normal(size=shape).astype(np.float32),
    }
    meta = {"horizon": 5, "record": "all", "stream_axes": [], "streams": 4, "devices": 1}
    return jb.SweepResult(dims, coords, data, meta)


def assert_same(a: jb.SweepResult, b: jb.SweepResult):
    assert a.dims == b.dims and a.meta == b.meta
    assert set(a.coords) == set(b.coords) and set(a.data) == set(b.data)
    for k in a.coords:
        np.testing.assert_array_equal(a.coords[k], b.coords[k])
    for k in a.data:
        assert a.data[k].dtype == b.data[k].dtype, k
        np.testing.assert_array_equal(a.data[k], b.data[k])


def test_npz_round_trip(tmp_path):
    res = a_result()
    assert_same(res, jb.SweepResult.load(res.save(tmp_path / "r.npz")))


def test_repr_is_a_short_summary():
    text = repr(a_result())
    lines = text.splitlines()
    assert lines[0] == "<jb.SweepResult> (algorithm: 2, C: 3, seed: 4, round: 5)"
    assert lines[1] == "Coordinates:" and lines[6] == "Data:"
    assert lines[2].split() == ["algorithm", "<U4", "'cr'", "'oful'"]
    assert lines[3].split() == ["C", "float64", "0.0", "10.0", "100.0"]
    assert lines[7].split() == ["cumulative_regret", "float32", "(2,", "3,", "4,", "5)"]
    assert lines[10].split() == ["action", "int32", "(2,", "3,", "4,", "5)"]
    assert lines[-1] == "Meta (5): horizon, record, stream_axes, streams, devices"


class _Unreadable:
    """A zarr variable's stand-in whose values must not be read."""

    shape, dtype = (3, 1, 1_000_000, 2000), np.dtype(np.float32)

    @property
    def values(self):
        raise AssertionError("repr read a lazy field")


def test_repr_stays_short_at_any_size():
    """A million seeds, long string coordinates, many meta keys, lazy fields: a few lines, none read."""
    dims = ("algorithm", "beta_scale", "seed", "round")
    coords = {
        "algorithm": np.asarray(["CR-Hvt-UCB", "x" * 200, "OFUL"]),
        "beta_scale": np.logspace(-6, 0, 16)[:1],
        "seed": np.arange(1_000_000),
        "round": np.arange(1, 2001),
    }
    data = {
        "cumulative_regret": LazyArray(_Unreadable(), "r.zarr", "cumulative_regret"),
        "action": np.broadcast_to(np.int32(0), (3, 1, 1_000_000, 2000)),  # no memory behind it
    }
    res = jb.SweepResult(dims, coords, data, {f"key{i}": "x" * 1000 for i in range(200)})
    text = repr(res)
    assert len(text) < 800 and max(map(len, text.splitlines())) <= 100
    lines = text.splitlines()
    assert lines[0] == "<jb.SweepResult> (algorithm: 3, beta_scale: 1, seed: 1000000, round: 2000)"
    assert lines[2].split() == ["algorithm", "<U200", "'CR-Hvt-UCB'", "'" + "x" * 20 + "...", "'OFUL'"]
    assert lines[4].split() == ["seed", "int64", "0", "1", "2", "...", "999997", "999998", "999999"]
    assert lines[7].split() == ["cumulative_regret", "float32", "(3,", "1,", "1000000,", "2000)", "(lazy)"]
    assert lines[8].split() == ["action", "int32", "(3,", "1,", "1000000,", "2000)"]
    assert lines[9].startswith("Meta (200): key0, key1, key2")


def test_xarray_round_trip_is_exact_and_labelled():
    res = a_result()
    ds = res.to_xarray()
    assert isinstance(ds, xr.Dataset)
    assert tuple(ds["cumulative_regret"].dims) == res.dims
    assert ds["action"].dtype == np.int32
    # xarray's selection agrees with SweepResult.sel
    np.testing.assert_array_equal(
        ds["cumulative_regret"].sel(algorithm="oful", C=10.0).values,
        res.sel(algorithm="oful", C=10.0).cumulative_regret,
    )
    assert_same(res, jb.SweepResult.from_xarray(ds))


def test_dataframe_has_one_row_per_index():
    res = a_result()
    df = res.to_dataframe()
    assert len(df) == np.prod(res.cumulative_regret.shape)
    assert list(df.index.names) == list(res.dims)
    row = df.loc[("cr", 100.0, 3, 5)]
    np.testing.assert_equal(row["regret"], res.sel(algorithm="cr", C=100.0).regret[3, 4])


def test_a_dataset_with_mixed_dims_is_refused():
    ds = a_result().to_xarray()
    ds["other"] = ("seed", np.zeros(4))
    with pytest.raises(ValueError, match="variable 'other' has dims"):
        jb.SweepResult.from_xarray(ds)
