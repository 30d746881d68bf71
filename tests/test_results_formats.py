"""SweepResult in every format: .npz (and the files older versions wrote), .nc and .zarr."""

from pathlib import Path

import numpy as np

import jaxbandit as jb

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
