"""SweepResult: saved and loaded exactly, and converted to xarray / pandas and back without loss."""

import numpy as np
import pytest

import jaxbandit as jb

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
