"""SweepResult in every format: .npz (and the files older versions wrote), .nc and .zarr."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import matplotlib
import numpy as np
import pytest

import jaxbandit as jb
from jaxbandit import cli
from jaxbandit.persist import atomic
from jaxbandit.report import results
from jaxbandit.report.results import LazyArray
from jaxbandit.runner import checkpoint as checkpoint_lib
from jaxbandit.runner import driver
from jaxbandit.runner import store as store_lib

matplotlib.use("Agg")
xr = pytest.importorskip("xarray")
ROOT = Path(__file__).resolve().parents[1]

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
        {"r.npz"} if suffix == ".npz" else {f"r{suffix}"}
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


# ---- verified stores, foreign and damaged files ----------------------------------------------------


def _flip_a_byte(path: Path, at: int | None = None) -> None:
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2 if at is None else at] ^= 0x10
    path.write_bytes(bytes(raw))


def _flip_in_member(path: Path, member: str) -> None:
    """Flip the last byte of ``member``'s data in the zip archive ``path`` (not in a header)."""
    import zipfile

    with zipfile.ZipFile(path) as z:
        info = z.getinfo(member)
    raw = path.read_bytes()
    name_len, extra_len = np.frombuffer(raw[info.header_offset + 26 : info.header_offset + 30], "<u2")
    _flip_a_byte(path, info.header_offset + 30 + int(name_len) + int(extra_len) + info.compress_size - 1)


def _unlisted(store: Path, key: str) -> None:
    """Delete ``key`` from the store and from its manifest (a chunk never written, as the manifest says)."""
    (store / key).unlink()
    manifest = json.loads((store / "jaxbandit_manifest.json").read_text())
    del manifest["files"][key]
    (store / "jaxbandit_manifest.json").write_text(json.dumps(manifest))


#: Damage done to a saved store, and what the refusal names.
DAMAGE = {
    "a chunk never written": (
        lambda s: _unlisted(s, "regret/0.0.0.0"),
        r"the array 'regret' lists 0 of its 1 chunks",
    ),
    "the manifest garbled": (
        lambda s: (s / "jaxbandit_manifest.json").write_text("{"),
        r"its manifest jaxbandit_manifest.json cannot be read",
    ),
    "a chunk deleted": (
        lambda s: (s / "regret" / "0.0.0.0").unlink(),
        r"chunk 0\.0\.0\.0 of the array 'regret' is missing",
    ),
    "an array deleted": (lambda s: shutil.rmtree(s / "odd"), r"the array 'odd' is missing"),
    "a byte flipped": (
        lambda s: _flip_a_byte(s / "count" / "0.0.0.0"),
        r"chunk 0\.0\.0\.0 of the array 'count' does not match",
    ),
    "metadata garbled": (
        lambda s: (s / ".zattrs").write_text("{not json"),
        r"the store's metadata \.zattrs does not match",
    ),
    "array metadata garbled": (
        lambda s: (s / "regret" / ".zarray").write_text("{"),
        r"the metadata \.zarray of the array 'regret' does not match",
    ),
    "a chunk added": (
        lambda s: shutil.copy(s / "C" / "0", s / "C" / "1"),
        r"it holds C/1, which its manifest does not list",
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_store_is_refused_naming_the_array_and_chunk(tmp_path, damage, capsys):
    """Arrays are written without a fill value: a deleted chunk read back as zeros, a flipped byte as a
    wrong value. The manifest names what is wrong, on load (lazy too) and in the plot command."""
    res = a_result()
    path = res.save(tmp_path / "r.zarr")
    do, named = DAMAGE[damage]
    do(path)
    for lazy in (False, True):
        with pytest.raises(ValueError, match=rf"^'.*r.zarr' is damaged: {named}.*verify=False"):
            jb.SweepResult.load(path, lazy=lazy)
    assert cli.main(["plot", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: FILE=") and "is damaged" in err and err.count("\n") == 1
    if damage == "a chunk deleted":  # unverified, the loss is silent
        assert np.all(jb.SweepResult.load(path, verify=False).regret == 0)


def test_a_store_without_a_manifest_is_read_only_unverified(tmp_path):
    res = a_result()
    res.to_xarray().to_zarr(tmp_path / "by_xarray.zarr", zarr_format=2)
    path = tmp_path / "by_xarray.zarr"
    with pytest.raises(ValueError, match=r"has no manifest .*verify=False\) reads it unchecked"):
        jb.SweepResult.load(path)
    assert_same(res, jb.SweepResult.load(path, verify=False))
    xr.Dataset({"x": ("a", np.arange(3.0))}).to_zarr(tmp_path / "foreign.zarr", zarr_format=2)
    with pytest.raises(ValueError, match=r"'.*foreign.zarr' is not a jaxbandit result .*from_xarray"):
        jb.SweepResult.load(tmp_path / "foreign.zarr", verify=False)


def _pickled(path):
    import pickle

    path.write_bytes(pickle.dumps({"data/regret": np.zeros(3)}))


#: Files at r.npz (and r.json) that are no jaxbandit result, and what the refusal says.
FOREIGN = {
    "a foreign npz": (
        lambda p: np.savez(p, x=np.zeros(3)),
        r"is not a jaxbandit result: it holds the arrays \['x'\]",
    ),
    "a stray key": (None, r"is not a jaxbandit result: it holds the arrays \['extra'\]"),
    "pickled": (_pickled, r"is damaged or not a jaxbandit result \(.*pickle"),
    "a .npy": (
        lambda p: np.save(open(p, "wb"), np.zeros(3)),
        r"is damaged or not a jaxbandit result \(.*not a .npz",
    ),
    "truncated": (
        lambda p: p.write_bytes(p.read_bytes()[:300]),
        r"is damaged or not a jaxbandit result \(BadZipFile",
    ),
    "a byte flipped": (
        lambda p: _flip_in_member(p, "data/regret.npy"),
        r"is damaged or not a jaxbandit result \(BadZipFile: Bad CRC-32",
    ),
    "its info garbled": (
        lambda p: _rewrite_info(p, "{"),
        r"is damaged or not a jaxbandit result \(JSONDecodeError",
    ),
    "its info without dims": (
        lambda p: _rewrite_info(p, "{}"),
        r"is not a jaxbandit result: its jaxbandit/info member has no list of dims",
    ),
    "its json missing": (
        lambda p: p.with_suffix(".json").unlink(),
        r"was saved by an earlier jaxbandit, which kept its dims and meta in the file r.json beside it, "
        r"and r.json is missing: copy it with the .npz",
    ),
    "its json garbled": (
        lambda p: p.with_suffix(".json").write_text("{"),
        r"is damaged or not a jaxbandit",
    ),
    "its json without dims": (
        lambda p: p.with_suffix(".json").write_text("{}"),
        r"is not a jaxbandit result's metadata: it has no list of dims",
    ),
    "other dims": (
        lambda p: p.with_suffix(".json").write_text(
            json.dumps({**json.loads(p.with_suffix(".json").read_text()), "dims": ["seed", "round"]})
        ),
        r"is not a jaxbandit result: its arrays' shapes \[\(2, 2, 3, 4\)\] and coordinates do not fit",
    ),
}


#: The cases of FOREIGN that damage the .json beside an .npz: made on a pair as earlier versions saved.
LEGACY = ("its json missing", "its json garbled", "its json without dims", "other dims")


def _rewrite_info(path, text):
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    np.savez(path, **{**arrays, "jaxbandit/info": np.asarray(text)})


def _legacy_pair(path):
    """tests/data/legacy-result.{npz,json} copied to ``path`` and the .json beside it."""
    shutil.copy(DATA / "legacy-result.npz", path)
    shutil.copy(DATA / "legacy-result.json", path.with_suffix(".json"))


class Killed(BaseException):
    """Stands for kill -9."""


def test_a_save_killed_after_its_rename_loads(tmp_path, monkeypatch):
    """Battery row L: killed between renaming s.npz and s.json, neither the old nor the new result
    loaded. The .npz now carries its dims and meta: one rename publishes it, and killed at any moment
    after that rename the new result loads. A pair saved by earlier versions loads, and a save over it
    removes its .json."""
    path = tmp_path / "s.npz"
    _legacy_pair(path)
    assert_same(legacy_result(), jb.SweepResult.load(path))
    a_result().save(path)
    assert not path.with_suffix(".json").exists()
    assert_same(a_result(), jb.SweepResult.load(path))
    _legacy_pair(path)
    real = os.replace

    def replace_then_die(src, dst):
        real(src, dst)
        raise Killed

    monkeypatch.setattr(os, "replace", replace_then_die)
    with pytest.raises(Killed):
        _changed(a_result()).save(path)
    monkeypatch.undo()
    assert_same(_changed(a_result()), jb.SweepResult.load(path))


def test_every_flipped_byte_of_an_npz_is_refused_or_harmless(tmp_path):
    """Battery row E: 95 of 396 one-byte flips of the .json sidecar changed the metadata silently (meta
    -> mets gave meta = {}). Each byte of what a save writes, flipped: the load is refused with a
    ValueError naming the file, or gives the result saved (a flip in a zip field nothing reads)."""
    res = legacy_result()
    path = res.save(tmp_path / "s.npz")
    written = sorted(tmp_path.iterdir())
    assert written == [path]
    original = path.read_bytes()
    refused = 0
    for i in range(len(original)):
        for bit in (0x01, 0x80):
            damaged = bytearray(original)
            damaged[i] ^= bit
            path.write_bytes(bytes(damaged))
            try:
                loaded = jb.SweepResult.load(path)
            except ValueError as err:
                assert str(err).startswith(f"{str(path)!r}") and "\n" not in str(err), (i, str(err))
                refused += 1
                continue
            assert_same(res, loaded)
    assert refused > len(original)  # most flips are refused


@pytest.mark.parametrize("kind", list(FOREIGN))
def test_a_foreign_or_damaged_npz_is_refused_naming_the_file(tmp_path, kind, capsys):
    """A foreign .npz loaded as an empty result with dims (); one with a stray key failed later with a
    KeyError."""
    path = tmp_path / "r.npz"
    _legacy_pair(path) if kind in LEGACY else a_result().save(path)
    make, said = FOREIGN[kind]
    if make is None:
        with np.load(path) as z:
            np.savez(path, extra=np.zeros(2), **{k: z[k] for k in z.files})
    else:
        make(path)
    with pytest.raises(ValueError, match=rf"^'.*r\.(npz|json)' {said}") as err:
        jb.SweepResult.load(path)
    assert "\n" not in str(err.value)
    assert cli.main(["plot", str(path)]) == 2
    assert "error: FILE=" in capsys.readouterr().err


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
    monkeypatch.setattr(atomic, "_exchange", lambda a, b: False)
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


# ---- jb.sweep(out="….zarr"): streamed, resumed, refused ---------------------------------------------

T, D, K, CHUNK = 40, 3, 4, 16  # three compiled chunks per algorithm, the last one padded
GRID = {"beta_scale": [0.05, 0.5]}
#: A cheap program to compile (OFUL, Gaussian noise), corrupted so that every field varies.
ENV = jb.envs.linear(D, K, noise=jb.noise.gaussian(1.0), corruption=jb.corruption.flip(5.0))


def make_alg(p):
    return jb.oful(T, D, beta_scale=p["beta_scale"])


#: Two algorithms (the algorithm axis, string coordinates) from one factory: compiled once.
ALGORITHMS = {"cr": make_alg, "cr_again": make_alg}


def streamed(out, **kw):
    return jb.sweep(ALGORITHMS, ENV, GRID, horizon=T, seeds=3, chunk_size=CHUNK, out=out, **kw)


@pytest.fixture(scope="module")
def in_memory():
    return jb.sweep(ALGORITHMS, ENV, GRID, horizon=T, seeds=3, chunk_size=CHUNK)


def store_attrs(path) -> dict:
    with xr.open_zarr(path) as ds:
        return dict(ds.attrs)


def test_a_streamed_sweep_equals_the_in_memory_one(in_memory, tmp_path):
    res = streamed(tmp_path / "s.zarr")
    assert all(isinstance(v, LazyArray) for v in res.data.values())
    assert_same(in_memory, res)
    assert_same(in_memory, jb.SweepResult.load(tmp_path / "s.zarr"))
    attrs = store_attrs(tmp_path / "s.zarr")
    assert attrs["jaxbandit_complete"] is True and attrs["horizon"] == T
    with xr.open_zarr(tmp_path / "s.zarr") as ds:  # one algorithm, one grid point, a compiled chunk
        assert ds["regret"].encoding["chunks"] == (1, 1, 3, CHUNK)
    # the same sweep again, without a checkpoint, rewrites its store
    assert_same(in_memory, streamed(tmp_path / "s.zarr"))
    assert store_attrs(tmp_path / "s.zarr")["jaxbandit_store_id"] != attrs["jaxbandit_store_id"]


class Stopped(Exception):
    """Stands for the process dying."""


def test_a_stopped_streamed_sweep_resumes_into_the_same_store(in_memory, tmp_path, monkeypatch):
    """Stopped after the second algorithm's second chunk is in the store but before its checkpoint (the
    worst moment), the store is incomplete; run again, the sweep resumes from the checkpoint and the
    store ends bitwise equal to an uninterrupted run."""
    out, ckpt = tmp_path / "s.zarr", tmp_path / "ckpt"
    real_save, saves = checkpoint_lib.save, []

    def save_or_stop(path, **kw):
        saves.append(kw["next_round"])
        if len(saves) == 5:  # algorithm 1, rounds 17..32: written to the store, not checkpointed
            raise Stopped
        real_save(path, **kw)

    monkeypatch.setattr(checkpoint_lib, "save", save_or_stop)
    with pytest.raises(Stopped):
        streamed(out, checkpoint=ckpt, lockstep=False)  # one program, and checkpoint, per algorithm
    assert saves == [16, 32, 40, 16, 32]
    with pytest.raises(ValueError, match="incomplete result"):
        jb.SweepResult.load(out)
    with pytest.raises(ValueError, match="incomplete result"):
        jb.SweepResult.load(out, lazy=True)
    with xr.open_zarr(out) as ds:  # the store runs ahead of the checkpoint, never behind it
        np.testing.assert_array_equal(ds["regret"][1, ..., 16:32].values, in_memory.regret[1, ..., 16:32])

    saves.clear()
    resumed = streamed(out, checkpoint=ckpt, lockstep=False)
    assert saves == [32, 40]  # only algorithm 1's last two chunks ran again
    assert_same(in_memory, resumed)
    assert_same(in_memory, jb.SweepResult.load(out))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names an fsync'ed descriptor by /proc")
@pytest.mark.parametrize("flush", ["syncfs", "fsync"])
def test_no_power_loss_leaves_a_checkpoint_ahead_of_the_store(tmp_path, monkeypatch, flush):
    """When a checkpoint is written, every file and directory of the store is on the disk as it is then
    (flushed since it last changed: the chunks the checkpoint says are done included), and each
    checkpoint's rename into place is flushed with its directory. Watched from outside the code: each
    ``fsync``'s path (``/proc/self/fd``) and the file's modification time at that moment; a ``syncfs``
    (Linux: one call for the file system) flushes every file as it is then. With ``flush="fsync"``, the
    file-by-file way of a system without ``syncfs``."""
    out, ckpt = tmp_path / "s.zarr", tmp_path / "ckpt"
    events = []  # ("fsync", path, mtime_ns) and ("replace", target), in order
    real_fsync, real_replace, real_save, real_syncfs = (
        os.fsync,
        os.replace,
        checkpoint_lib.save,
        atomic.syncfs,
    )
    if flush == "syncfs" and not real_syncfs(tmp_path):
        pytest.skip("no syncfs here")

    def syncfs(path):
        if flush == "fsync":
            return False
        assert real_syncfs(path)
        device = os.stat(path).st_dev
        events.extend(
            ("fsync", p, p.stat().st_mtime_ns) for p in [out, *out.rglob("*")] if p.stat().st_dev == device
        )
        return True

    # a store is built in a temporary directory beside it, then renamed: the same files
    built_as = re.compile(r"\.s\.zarr\.[A-Za-z0-9_]{8}\.tmp")

    def flushed():
        return {(e[1], e[2]) for e in events if e[0] == "fsync"}

    def fsync(fd):
        path = Path(built_as.sub("s.zarr", os.readlink(f"/proc/self/fd/{fd}")))
        if path == out / store_lib.JOURNAL:  # what it lists is on the disk already
            values = [p for p in out.rglob("*") if p.is_file() and p != path]
            assert {(p, p.stat().st_mtime_ns) for p in values} <= flushed()
            journaled.append(len(path.read_text().splitlines()))
        events.append(("fsync", path, os.fstat(fd).st_mtime_ns))
        real_fsync(fd)

    def replace(src, dst):
        real_replace(src, dst)
        events.append(("replace", Path(dst)))

    checked, journaled = [], []

    def save(path, **kw):
        on_disk = [p for p in [out, *out.rglob("*")] if not p.name.endswith(".lock")]
        assert on_disk and {(p, p.stat().st_mtime_ns) for p in on_disk} <= flushed()
        checked.append(kw["next_round"])
        real_save(path, **kw)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(checkpoint_lib, "save", save)
    monkeypatch.setattr(atomic, "syncfs", syncfs)
    streamed(out, checkpoint=ckpt)
    assert checked == [16, 32, 40]
    assert journaled == [10, 20, 30]  # a region per chunk, field and algorithm
    replaced = [i for i, e in enumerate(events) if e[0] == "replace" and e[1].parent == ckpt]
    assert len(replaced) >= 3  # one checkpoint file or more per chunk
    for i in replaced:
        assert any(e[0] == "fsync" and e[1] == ckpt for e in events[i + 1 :]), events[i]


def test_a_stopped_lockstep_sweep_resumes_from_its_one_checkpoint(in_memory, tmp_path, monkeypatch):
    """In lockstep the algorithms share one program and one checkpoint file: stopped after its second
    chunk's store write, the sweep resumes from the first chunk's checkpoint and ends bitwise equal to
    the uninterrupted sweep of one program per algorithm."""
    out, ckpt = tmp_path / "s.zarr", tmp_path / "ckpt"
    real_save, saves, stop_at = checkpoint_lib.save, [], [2]

    def save_or_stop(path, **kw):
        saves.append((path.name, kw["next_round"]))
        if len(saves) in stop_at:
            raise Stopped
        real_save(path, **kw)

    monkeypatch.setattr(checkpoint_lib, "save", save_or_stop)
    with pytest.raises(Stopped):
        streamed(out, checkpoint=ckpt)
    assert saves == [("algorithms-0-1.npz", 16), ("algorithms-0-1.npz", 32)]
    saves.clear()
    stop_at.clear()
    resumed = streamed(out, checkpoint=ckpt)
    assert saves == [("algorithms-0-1.npz", 32), ("algorithms-0-1.npz", 40)]
    assert_same(in_memory, resumed)
    assert_same(in_memory, jb.SweepResult.load(out))


@pytest.mark.parametrize("workers", [1, 2])
def test_each_chunk_starts_before_the_one_before_it_is_collected(in_memory, tmp_path, monkeypatch, workers):
    """A chunk is started before the previous one's kept rounds are collected (so that on an accelerator
    their copy to the host, the store's write and the checkpoint overlap the next chunk's rounds); a
    chunk that fails to start leaves the one before it collected and checkpointed, and the sweep resumed
    from there ends bitwise equal to the uninterrupted one."""
    options = jb.ExecutionOptions(cpu_workers=workers)
    real_start, real_save = driver.start_groups, checkpoint_lib.save
    events, saves, fail_at = [], [], [2 * CHUNK]

    def start(pool, statics, plan, carries, rounds, sel):
        t0 = int(rounds[0])
        if t0 in fail_at:
            raise Stopped
        events.append(("start", t0))
        carries, collect = real_start(pool, statics, plan, carries, rounds, sel)

        def logged_collect():
            events.append(("collect", t0))
            return collect()

        return carries, logged_collect

    def save(path, **kw):
        saves.append(kw["next_round"])
        real_save(path, **kw)

    monkeypatch.setattr(driver, "start_groups", start)
    monkeypatch.setattr(checkpoint_lib, "save", save)
    out, ckpt = tmp_path / "s.zarr", tmp_path / "ckpt"
    with pytest.raises(Stopped):
        streamed(out, checkpoint=ckpt, options=options)
    assert events == [("start", 0), ("start", CHUNK), ("collect", 0), ("collect", CHUNK)]
    assert saves == [CHUNK, 2 * CHUNK]
    events.clear(), saves.clear(), fail_at.clear()
    resumed = streamed(out, checkpoint=ckpt, options=options)
    assert events == [("start", 2 * CHUNK), ("collect", 2 * CHUNK)] and saves == [T]
    assert_same(in_memory, resumed)
    events.clear()
    kw = dict(horizon=T, seeds=3, chunk_size=CHUNK, options=options)
    assert_same(in_memory, jb.sweep(ALGORITHMS, ENV, GRID, **kw))
    assert events == [("start", 0), ("start", CHUNK), ("collect", 0), ("start", 2 * CHUNK)] + [
        ("collect", CHUNK),
        ("collect", 2 * CHUNK),
    ]


def checkpoint_files(ckpt: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(ckpt.iterdir())}


def test_a_checkpoint_resumes_only_into_its_own_store(in_memory, tmp_path, monkeypatch):
    """Checkpoints name the store they were written with: with the store deleted, or replaced by a run
    without checkpoint, the earlier rounds are not in the store, so resuming is refused before anything
    is written (the checkpoint untouched); overwrite=True starts over."""
    out, ckpt = tmp_path / "s.zarr", tmp_path / "ckpt"
    streamed(out, checkpoint=ckpt)
    before = checkpoint_files(ckpt)
    real_save, saves = checkpoint_lib.save, []
    monkeypatch.setattr(checkpoint_lib, "save", lambda path, **kw: (saves.append(1), real_save(path, **kw)))
    for replace in (lambda: shutil.rmtree(out), lambda: streamed(out)):
        replace()
        store = sorted(p.name for p in tmp_path.iterdir())
        with pytest.raises(
            ValueError,
            match=r"^checkpoint='.*ckpt' holds algorithms-0-1.npz, written by another sweep: the out= store "
            r"\(not the one the checkpoint was written with\) differs; to start over, pass overwrite=True",
        ):
            streamed(out, checkpoint=ckpt)
        assert checkpoint_files(ckpt) == before and sorted(p.name for p in tmp_path.iterdir()) == store
    saves.clear()
    assert_same(in_memory, streamed(out, checkpoint=ckpt, overwrite=True))
    assert len(saves) == 3  # every chunk of both algorithms (in lockstep: one program) ran
    saves.clear()
    assert_same(in_memory, streamed(out, checkpoint=ckpt))  # its own store: nothing left to run
    assert saves == []


def test_a_checkpoint_resumes_at_any_padding_and_refuses_another_layout(tmp_path):
    """The groups' carries are saved as one batch of streams and loaded into any number of groups of any
    size (another device or worker count pads the streams otherwise: padding streams copy the last one).
    A carry whose leaves' shapes or dtypes differ from the template's (state written by a library
    version that laid an algorithm's history out otherwise) is refused, not misread."""
    import jax
    import jax.numpy as jnp

    def carry(rows):
        keys = jax.random.split(jax.random.key(3), 3)[np.asarray(rows)]
        return {"key": keys, "hist": jnp.arange(15.0, dtype=jnp.float32).reshape(3, 5)[np.asarray(rows)]}

    written = [carry([0, 1]), carry([2, 2])]  # 3 streams padded to 4, in two groups
    path = tmp_path / "c.npz"
    finger = {"grid": "g", "code": "c"}
    arrays = checkpoint_lib.gather(written, np.asarray)
    checkpoint_lib.save(
        path, carry_arrays=arrays, kept={"x": [np.arange(8.0).reshape(4, 2)]}, next_round=7, finger=finger
    )
    for rows in ([[0, 1, 2]], [[0, 1], [2, 2], [2, 2]]):  # one group; three of two streams each
        template = [carry(r) for r in rows]
        loaded, kept, next_round = checkpoint_lib.load(path, template=template, finger=finger)
        assert next_round == 7 and len(loaded) == len(rows)
        for got, want in zip(loaded, template):
            np.testing.assert_array_equal(got["hist"], np.asarray(want["hist"]))
            np.testing.assert_array_equal(jax.random.key_data(got["key"]), jax.random.key_data(want["key"]))
        expected = np.concatenate([np.arange(8.0).reshape(4, 2), np.tile([[6.0, 7.0]], (2, 1))])
        np.testing.assert_array_equal(kept["x"][0], expected[: sum(len(r) for r in rows)])
    other_layouts = (
        [{**carry([0, 1, 2]), "hist": jnp.zeros((3, 4), jnp.float32)}],
        [{**carry([0, 1, 2]), "hist": carry([0, 1, 2])["hist"].astype(jnp.int32)}],
    )
    before = path.read_bytes()
    for other in other_layouts:
        with pytest.raises(ValueError, match=r"holds c.npz, whose state is laid out otherwise"):
            checkpoint_lib.load(path, template=other, finger=finger)
    with pytest.raises(
        ValueError, match=r"holds c.npz, written by another sweep: the code \(what the factories"
    ):
        checkpoint_lib.load(path, template=[carry([0, 1, 2])], finger={**finger, "code": "d"})
    assert path.read_bytes() == before


def test_irregular_kept_rounds_land_in_their_regions(tmp_path):
    """Chunks that keep 5, 1 and 2 rounds write across the store's chunks of 5 rounds (partial chunk
    writes), as the sweep's chunk loop hands them over; no compilation needed."""
    rounds = np.asarray([1, 2, 3, 15, 16, 17, 33, 40])
    full = np.random.default_rng(3).normal(size=(3, rounds.size))  # [seed, round]
    plan = SimpleNamespace(chunk=16, to_grid_order=lambda kept: kept[:, 0])  # [S, G = 1, k] -> [S, k]
    coords = {"seed": np.arange(3), "round": rounds}
    path = tmp_path / "s.zarr"
    writer, store_id = driver.open_store(path, ("seed", "round"), coords, {}, "f", False, plan, rounds)
    assert writer.chunks == (3, 5) and store_id == store_attrs(path)["jaxbandit_store_id"]
    for t0 in range(0, T, plan.chunk):
        mine = (rounds > t0) & (rounds <= t0 + plan.chunk)
        driver.write_chunks(writer, plan, rounds, [()], t0, [{"x": full[:, None, mine]}])
    with pytest.raises(ValueError, match="incomplete"):
        jb.SweepResult.load(path)
    writer.finish()
    assert_same(jb.SweepResult(("seed", "round"), coords, {"x": full}), jb.SweepResult.load(path))


def test_bad_out_is_refused_before_anything_runs(tmp_path, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("the sweep ran")

    monkeypatch.setattr(driver, "run_algorithms", never)
    for bad in ("r.nc", "r.npz", "r"):
        with pytest.raises(ValueError, match=rf"out='.*{bad}' is invalid: .* must end in '.zarr'"):
            streamed(tmp_path / bad)
    assert list(tmp_path.iterdir()) == []

    (tmp_path / "file.zarr").write_text("not a store")
    (tmp_path / "dir.zarr").mkdir()
    a_result().save(tmp_path / "saved.zarr")
    for other in ("file.zarr", "dir.zarr", "saved.zarr"):
        with pytest.raises(ValueError, match=r"out='.*' is invalid: it exists and is not a store streamed"):
            streamed(tmp_path / other, checkpoint=tmp_path / "ckpt")
    assert (tmp_path / "file.zarr").read_text() == "not a store"


def test_a_store_of_another_sweep_is_refused(in_memory, tmp_path, monkeypatch):
    out = tmp_path / "s.zarr"
    streamed(out)
    before = store_attrs(out)
    monkeypatch.setattr(driver, "run_algorithms", lambda *a, **k: pytest.fail("the sweep ran"))
    for change in (dict(seeds=[0, 1, 5]), dict(key=1), dict(chunk_size=8), dict(record=10)):
        kw = dict(horizon=T, seeds=3, chunk_size=CHUNK, out=out) | change
        for ckpt in (None, tmp_path / "ckpt"):
            with pytest.raises(ValueError, match=r"out='.*s.zarr' is invalid: it holds a different sweep"):
                jb.sweep(ALGORITHMS, ENV, GRID, checkpoint=ckpt, **kw)
    with pytest.raises(ValueError, match="holds a different sweep"):
        jb.sweep({"cr": make_alg}, ENV, GRID, horizon=T, seeds=3, chunk_size=CHUNK, out=out)
    assert store_attrs(out) == before
    assert_same(in_memory, jb.SweepResult.load(out))


# ---- optional dependencies, the CLI ---------------------------------------------------------------


def test_missing_extras_are_named(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "zarr", None)
    monkeypatch.setitem(sys.modules, "h5py", None)
    for suffix in (".zarr", ".nc"):
        with pytest.raises(ImportError, match=r'pip install "jaxbandit\[xarray\]"'):
            a_result().save(tmp_path / f"r{suffix}")
    with pytest.raises(ImportError, match=r"jb.sweep\(out=...\) needs zarr"):
        streamed(tmp_path / "s.zarr")
    assert list(tmp_path.iterdir()) == []


def test_import_jaxbandit_loads_no_xarray():
    optional = "{'xarray', 'zarr', 'h5netcdf', 'h5py', 'pandas'}"
    code = f"import sys, jaxbandit; print(sorted({optional} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_plot_cli_reads_nc_and_zarr(tmp_path, suffix, capsys):
    path = a_result().save(tmp_path / f"sweep{suffix}")
    assert cli.main(["plot", str(path)]) == 0
    assert (tmp_path / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "wrote" in capsys.readouterr().out
    assert cli.main(["plot", str(tmp_path / f"missing{suffix}")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: FILE=") and "does not exist" in err and err.count("\n") == 1


def test_plot_cli_refuses_an_incomplete_store(tmp_path, capsys):
    """As a stopped jb.sweep(out=...) leaves it: marked incomplete, and no manifest yet."""
    path = a_result().save(tmp_path / "sweep.zarr")
    with xr.open_zarr(path) as ds:
        attrs = dict(ds.attrs)
    import zarr

    (path / "jaxbandit_manifest.json").unlink()
    zarr.open_group(str(path), mode="r+").attrs.update({**attrs, "jaxbandit_complete": False})
    zarr.consolidate_metadata(str(path))
    assert cli.main(["plot", str(path)]) == 2
    err = capsys.readouterr().err
    assert "FILE=" in err and "incomplete result" in err and err.count("\n") == 1


# ---- the battery's rows D and A: what a load returns is what was saved, or a refusal ---------------


def _edited(data: bytes, old: bytes, new: bytes) -> bytes:
    assert len(old) == len(new) and data.count(old) >= 1, old
    return data.replace(old, new, 1)


#: One-byte edits of a .nc file's attributes that loaded silently: a dtype (float32 read back as
#: float16), the meta's horizon, a string coordinate.
NC_EDITS = {
    "a dtype": (b'"regret": "<f4"', b'"regret": "<f2"'),
    "the horizon": (b'"horizon": 4', b'"horizon": 5'),
    "a coordinate": (b"cr_hvt_ucb", b"cr_hvt_ucc"),
}


@pytest.mark.parametrize("edit", list(NC_EDITS))
def test_an_edited_nc_attribute_or_coordinate_is_refused(tmp_path, edit):
    """Battery row D: one-byte attribute edits of a .nc loaded silently (<f4 -> <f2 gave float16, the
    meta's horizon 300 -> 301, a coordinate LinTS -> LinTZ). The file carries a SHA-256 of all it holds,
    attributes and coordinates included, checked against what a load read."""
    path = legacy_result().save(tmp_path / "s.nc")
    path.write_bytes(_edited(path.read_bytes(), *NC_EDITS[edit]))
    with pytest.raises(
        ValueError,
        match=r"^'.*s\.nc' is damaged: what it holds does not match its checksum .*SweepResult.save$",
    ):
        jb.SweepResult.load(path)


def test_flipped_bytes_of_an_nc_are_refused_or_harmless(tmp_path):
    """Battery row D: a flipped byte in the chunk index loaded a field as all zeros. 400 bytes of the file,
    spread over it, each flipped: the load is refused with one line naming the file, or gives the result
    saved (a byte nothing reads)."""
    res = legacy_result()
    path = res.save(tmp_path / "s.nc")
    original = path.read_bytes()
    positions = np.random.default_rng(57).choice(len(original), size=400, replace=False)
    for i in sorted(positions):
        damaged = bytearray(original)
        damaged[i] ^= 0x10
        path.write_bytes(bytes(damaged))
        try:
            loaded = jb.SweepResult.load(path)
        except ValueError as err:
            assert str(err).startswith(f"{str(path)!r}") and "\n" not in str(err), (i, str(err))
            continue
        assert_same(res, loaded)


def test_a_damaged_nc_header_is_refused_without_noise(tmp_path, monkeypatch):
    """A byte of a .nc file's HDF5 header flipped: h5netcdf's File, failing to open it, printed "Exception
    ignored ... 'File' object has no attribute '_writable'" beside the refusal."""
    res = jb.SweepResult(("seed", "round"), {"seed": np.arange(2), "round": np.arange(1, 4)}, {})
    res.data["cumulative_regret"] = np.ones((2, 3), np.float32)
    path = res.save(tmp_path / "s.nc")
    original = path.read_bytes()
    unraisable: list = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    refused = 0
    for i in range(0, 400, 97):
        damaged = bytearray(original)
        damaged[i] ^= 0x10
        path.write_bytes(bytes(damaged))
        try:
            jb.SweepResult.load(path)
        except ValueError:
            refused += 1
    assert refused >= 3
    assert not [str(u.exc_value) for u in unraisable]


def test_a_verified_zarr_load_never_mixes_two_saves(tmp_path, monkeypatch):
    """Battery row A: a verified .zarr load racing a re-save by another process returned fields mixed from
    two saves (the manifest was checked, then the files read again). Here the other save lands after the
    load has opened the store and before it reads the arrays: the load returns the save it verified."""
    first, second = legacy_result(), _changed(legacy_result())
    second.meta["horizon"] = 99
    path = first.save(tmp_path / "s.zarr")
    real_open, saved = xr.open_dataset, []

    def open_then_resave(*args, **kwargs):
        ds = real_open(*args, **kwargs)
        if not saved:
            saved.append(True)
            second.save(path)  # another process's save, between opening and reading
        return ds

    monkeypatch.setattr(xr, "open_dataset", open_then_resave)
    assert_same(first, jb.SweepResult.load(path))
    monkeypatch.undo()
    assert saved and jb.SweepResult.load(path).meta["horizon"] == 99
