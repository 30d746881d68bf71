"""A sweep resumes only what it would compute itself: checkpoints and stores carry a fingerprint of the
settings and of the factories' programs, a refusal says what differs and leaves the checkpoint as it is,
a damaged checkpoint or store is one line naming the file, and two writers never share an output."""

import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxbandit as jb
from jaxbandit.persist import formats
from jaxbandit.runner import checkpoint as checkpoint_lib
from jaxbandit.runner import driver
from jaxbandit.runner import fingerprint as fingerprint_lib
from jaxbandit.runner import store as store_lib

xr = pytest.importorskip("xarray")
ROOT = Path(__file__).resolve().parents[1]
WRITER = Path(__file__).parent / "scripts" / "writer.py"

T, D, K, CHUNK = 24, 3, 4, 8  # three chunks
GRID = {"beta_scale": [0.05, 0.5]}


def make_alg(p):
    return jb.oful(T, D, beta_scale=p["beta_scale"])


def student_t_env(df):
    """An environment factory closing over ``df``: the same name and module whatever ``df``."""

    def make_env(p):
        return jb.envs.linear(D, K, noise=jb.noise.student_t(df), corruption=jb.corruption.flip(3.0))

    return make_env


ENV3, ENV5 = student_t_env(3.0), student_t_env(5.0)


def run(env=ENV3, **kw):
    kw = {"horizon": T, "seeds": 3, "chunk_size": CHUNK} | kw
    return jb.sweep(make_alg, env, GRID, **kw)


class Stopped(Exception):
    """Stands for the process dying."""


def stop_after(monkeypatch, saves: int) -> list:
    """Stop the next sweep right after its ``saves``-th checkpoint; returns the saves' next rounds."""
    real, done = checkpoint_lib.save, []

    def save(path, **kw):
        real(path, **kw)
        done.append(kw["next_round"])
        if len(done) == saves:
            raise Stopped

    monkeypatch.setattr(checkpoint_lib, "save", save)
    return done


def files(directory: Path) -> dict:
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="module")
def reference():
    return run(), run(ENV5)


@pytest.fixture
def stopped(tmp_path, monkeypatch):
    """A checkpoint directory of the df = 3 sweep stopped after its first chunk."""
    ckpt = tmp_path / "ckpt"
    stop_after(monkeypatch, 1)
    with pytest.raises(Stopped):
        run(checkpoint=ckpt)
    monkeypatch.undo()
    assert sorted(p.name for p in ckpt.iterdir()) == ["algorithm-0.npz"]
    assert not list(tmp_path.glob(".*.lock"))  # released when the sweep stopped
    return ckpt


def test_a_closure_value_is_part_of_the_fingerprint(reference, stopped, monkeypatch):
    """Killed with Student-t df = 3 and run again with df = 5 under the same factory names, the sweep
    resumed and mixed the two. It is refused now, saying that the code differs, the checkpoint untouched;
    overwrite=True starts over, and df = 3 still resumes."""
    assert fingerprint_lib.program(make_alg, ENV3, ("beta_scale",), jb.runner.simulate.as_key(0)) != (
        fingerprint_lib.program(make_alg, ENV5, ("beta_scale",), jb.runner.simulate.as_key(0))
    )
    before = files(stopped)
    monkeypatch.setattr(driver, "run_algorithms", lambda *a, **k: pytest.fail("the sweep ran"))
    with pytest.raises(
        ValueError,
        match=r"^checkpoint='.*ckpt' holds algorithm-0.npz, written by another sweep: the code \(what the "
        r"factories compute, as traced on this backend\) differs; to start over, pass overwrite=True to "
        r"jb.sweep or delete '.*ckpt'",
    ):
        run(ENV5, checkpoint=stopped)
    assert files(stopped) == before
    monkeypatch.undo()
    done = stop_after(monkeypatch, 99)
    res5 = run(ENV5, checkpoint=stopped, overwrite=True)
    assert done == [8, 16, 24]  # from the start
    np.testing.assert_array_equal(res5.cumulative_regret, reference[1].cumulative_regret)
    done.clear()
    shutil.rmtree(stopped)
    stop_after(monkeypatch, 1)
    with pytest.raises(Stopped):
        run(checkpoint=stopped)
    done = stop_after(monkeypatch, 99)
    res3 = run(checkpoint=stopped)
    assert done == [16, 24]  # resumed
    np.testing.assert_array_equal(res3.cumulative_regret, reference[0].cumulative_regret)


@pytest.mark.parametrize(
    "change, differs",
    [
        (dict(horizon=T - 4), "the horizon and the recorded rounds (record=) differ"),
        (dict(seeds=[0, 1, 4]), "the seeds differs"),
        (dict(key=7), "the key differs"),
        (dict(record=4), "the recorded rounds (record=) differs"),
        (dict(chunk_size=4), "the chunk size (chunk_size=) differs"),
        (dict(seeds=4, chunk_size=12), "the seeds and the chunk size (chunk_size=) differ"),
    ],
)
def test_a_changed_setting_is_refused_naming_it(stopped, monkeypatch, change, differs):
    before = files(stopped)
    monkeypatch.setattr(driver, "run_algorithms", lambda *a, **k: pytest.fail("the sweep ran"))
    with pytest.raises(ValueError, match=rf"written by another sweep: {re.escape(differs)}; to start over"):
        run(checkpoint=stopped, **change)
    assert files(stopped) == before


@pytest.mark.parametrize("change", ["XLA_FLAGS", "threefry"])
def test_a_changed_jax_build_or_setting_is_refused(stopped, monkeypatch, change):
    """Battery row F: resumed with JAX_THREEFRY_PARTITIONABLE flipped or XLA_FLAGS set to fast math, the
    sweep was accepted and its result equalled neither uninterrupted run. The fingerprint now holds what
    changes the bits outside the jaxpr (jax/jaxlib versions, threefry mode, XLA_FLAGS)."""
    before = files(stopped)
    monkeypatch.setattr(driver, "run_algorithms", lambda *a, **k: pytest.fail("the sweep ran"))
    if change == "XLA_FLAGS":
        monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", "") + " --xla_cpu_enable_fast_math=true")
    else:
        was = getattr(jax.config, "jax_threefry_partitionable")  # noqa: B009
        jax.config.update("jax_threefry_partitionable", not was)
    try:
        with pytest.raises(
            ValueError,
            match=r"written by another sweep: the JAX build and settings \(jax/jaxlib versions, "
            r"JAX_THREEFRY_PARTITIONABLE, XLA_FLAGS\) differs; to start over",
        ):
            run(checkpoint=stopped)
    finally:
        if change == "threefry":
            jax.config.update("jax_threefry_partitionable", was)
    assert files(stopped) == before
    assert fingerprint_lib.build()["jax"] == jax.__version__
    # the device count places the runs without changing their bits: a checkpoint resumes across it
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=3")
    three = fingerprint_lib.build()
    monkeypatch.setenv("XLA_FLAGS", "")
    assert three == fingerprint_lib.build()


def test_a_changed_grid_is_refused(stopped, monkeypatch):
    monkeypatch.setattr(driver, "run_algorithms", lambda *a, **k: pytest.fail("the sweep ran"))
    with pytest.raises(ValueError, match=r"written by another sweep: the grid differs"):
        jb.sweep(
            make_alg,
            ENV3,
            {"beta_scale": [0.05, 0.6]},
            horizon=T,
            seeds=3,
            chunk_size=CHUNK,
            checkpoint=stopped,
        )


def test_a_checkpoint_resumes_with_another_worker_count(reference, tmp_path, monkeypatch):
    """Written by one program over 3 streams, resumed by two groups over 4 (padded): the same numbers."""
    ckpt = tmp_path / "ckpt"
    stop_after(monkeypatch, 1)
    with pytest.raises(Stopped):
        run(checkpoint=ckpt, options=jb.ExecutionOptions(cpu_workers=1))
    monkeypatch.undo()
    done = stop_after(monkeypatch, 99)
    res = run(checkpoint=ckpt, options=jb.ExecutionOptions(cpu_workers=2))
    assert done == [16, 24]
    for field in res.data:
        np.testing.assert_array_equal(res.data[field], reference[0].data[field])


def test_resume_under_x64_and_a_float32_checkpoint_refused(stopped, tmp_path, monkeypatch):
    """float64 runs resume bitwise too; the float32 checkpoint is refused under x64, naming the dtype."""
    with jax.enable_x64(True):
        with pytest.raises(ValueError, match=r"written by another sweep: the float dtype \(x64\)"):
            run(checkpoint=stopped)
        ckpt = tmp_path / "ckpt64"
        stop_after(monkeypatch, 2)
        with pytest.raises(Stopped):
            run(checkpoint=ckpt)
        done = stop_after(monkeypatch, 99)
        res = run(checkpoint=ckpt)
        assert done == [24] and res.cumulative_regret.dtype == np.float64
        np.testing.assert_array_equal(res.cumulative_regret, run().cumulative_regret)


def _garble(path: Path):
    path.write_bytes(b"PK\x03\x04" + os.urandom(64))


DAMAGED = {
    "truncated": (lambda p: p.write_bytes(p.read_bytes()[:200]), "BadZipFile"),
    "garbled": (_garble, "BadZipFile"),
    "empty": (lambda p: p.write_bytes(b""), "EOFError"),
    "pickled": (lambda p: p.write_bytes(pickle.dumps({"x": 1})), "contains pickled"),
    "no fingerprint": (
        lambda p: np.savez(open(p, "wb"), next_round=np.asarray(8)),
        "KeyError: 'fingerprint is not a file",
    ),
    "a directory": (lambda p: (p.unlink(), p.mkdir()), "IsADirectoryError"),
}


@pytest.mark.parametrize("damage", list(DAMAGED))
def test_a_damaged_checkpoint_is_one_line_naming_the_file(stopped, monkeypatch, damage, capsys):
    do, raw = DAMAGED[damage]
    do(stopped / "algorithm-0.npz")
    monkeypatch.setattr(driver, "run_algorithms", lambda *a, **k: pytest.fail("the sweep ran"))
    with pytest.raises(
        ValueError,
        match=rf"^checkpoint='.*ckpt' holds algorithm-0.npz, which is damaged or not a "
        rf"jaxbandit checkpoint \(.*{raw}.*\); to start over, pass overwrite=True",
    ) as err:
        run(checkpoint=stopped)
    assert "\n" not in str(err.value)


def test_an_old_checkpoint_is_refused_as_another_version(stopped, monkeypatch):
    path = stopped / "algorithm-0.npz"
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    np.savez(path, **{**arrays, "fingerprint": np.asarray("9f" * 32)})  # as versions before this one
    monkeypatch.setattr(driver, "run_algorithms", lambda *a, **k: pytest.fail("the sweep ran"))
    with pytest.raises(
        ValueError, match=r"written by another sweep: the checkpoint format \(another jaxbandit"
    ):
        run(checkpoint=stopped)


# ---- stores ---------------------------------------------------------------------------------------


@pytest.fixture
def stopped_store(tmp_path, monkeypatch):
    """The df = 3 sweep streamed into s.zarr and stopped after its second chunk's checkpoint."""
    out, ckpt = tmp_path / "s.zarr", tmp_path / "ckpt"
    stop_after(monkeypatch, 2)
    with pytest.raises(Stopped):
        run(out=out, checkpoint=ckpt)
    monkeypatch.undo()
    return out, ckpt


def test_a_store_damaged_while_stopped_is_not_built_upon(reference, stopped_store, monkeypatch):
    """A chunk deleted (it would read back as zeros) or changed in a region the checkpoint counts as
    written: the resumed sweep refuses before anything runs; overwrite=True starts over."""
    out, ckpt = stopped_store
    chunk = out / "regret" / "0.0.0"  # beta_scale 0, the seeds, the first chunk of rounds
    assert chunk.is_file()
    chunk.unlink()
    monkeypatch.setattr(driver, "run_algorithms", lambda *a, **k: pytest.fail("the sweep ran"))
    with pytest.raises(
        ValueError,
        match=r"^out='.*s.zarr' is damaged: the region \[\[0, 2\], \[0, 3\], \[0, 8\]\] of 'regret'.* "
        r"does not read back as written .*start over with overwrite=True",
    ):
        run(out=out, checkpoint=ckpt)
    monkeypatch.undo()
    res = run(out=out, checkpoint=ckpt, overwrite=True)
    np.testing.assert_array_equal(res.regret, reference[0].regret)
    assert not (out / store_lib.JOURNAL).exists() and (out / "jaxbandit_manifest.json").is_file()


def test_a_resumed_store_ends_verified_and_clean(reference, stopped_store):
    """What a killed writer leaves inside the store (zarr's .partial chunk write, the last journal line
    half-written) is cleaned or tolerated; the store ends with its manifest and verifies."""
    out, ckpt = stopped_store
    (out / "regret" / "0.0.2.3f2a.partial").write_bytes(b"half a chunk")
    with open(out / store_lib.JOURNAL, "a") as f:
        f.write('{"field": "regret", "reg')
    res = run(out=out, checkpoint=ckpt)
    np.testing.assert_array_equal(res.regret, reference[0].regret)
    assert not list(out.rglob("*.partial")) and not (out / store_lib.JOURNAL).exists()
    np.testing.assert_array_equal(jb.SweepResult.load(out).regret, reference[0].regret)
    # resumed when complete, with nothing left to run, it is verified and left as it was
    before = files(out)
    run(out=out, checkpoint=ckpt)
    assert files(out) == before
    (out / "regret" / "1.0.1").write_bytes(b"\0" * 16)
    with pytest.raises(ValueError, match=r"^out='.*s.zarr' is damaged: chunk 1.0.1 of the array 'regret' "):
        run(out=out, checkpoint=ckpt)


def test_a_zarray_edited_while_stopped_is_refused(stopped_store, monkeypatch):
    """Battery row B: one byte of a stopped store's cumulative_regret/.zarray changed (<f4 -> <i4, valid
    JSON) was not refused: the check before resuming read .zmetadata, the writer .zarray, and a verified
    load then returned wrong values. Both read the array's own metadata now, and it must agree with
    .zmetadata; without .zmetadata the journaled regions, read as the writer reads them, are refused."""
    out, ckpt = stopped_store
    meta = out / "cumulative_regret" / ".zarray"
    assert '"<f4"' in meta.read_text()
    meta.write_text(meta.read_text().replace('"<f4"', '"<i4"'))
    monkeypatch.setattr(driver, "run_algorithms", lambda *a, **k: pytest.fail("the sweep ran"))
    with pytest.raises(
        ValueError,
        match=r"^out='.*s.zarr' is damaged: cumulative_regret/.zarray differs from what its .zmetadata says "
        r"of it .*start over with overwrite=True",
    ):
        run(out=out, checkpoint=ckpt)
    (out / ".zmetadata").unlink()
    with pytest.raises(
        ValueError,
        match=r"^out='.*s.zarr' is damaged: the region .* of 'cumulative_regret' cannot be read \(its "
        r".zarray says int32, the store recorded float32\)",
    ):
        run(out=out, checkpoint=ckpt)


@pytest.mark.parametrize("record", ["all", ("log", 20)])
def test_a_store_rolled_back_behind_its_checkpoint_is_refused(reference, tmp_path, monkeypatch, record):
    """Battery row C: a store rolled back to an older copy while the checkpoint is newer (a user restoring
    or copying folders) resumed without error into wrong values (with record=("log", 20) the verified
    load was wrong too). Each checkpoint records how far the store reaches; a store behind it is refused
    before anything runs, and overwrite=True starts over."""
    out, ckpt, copy = tmp_path / "s.zarr", tmp_path / "ckpt", tmp_path / "copy.zarr"
    stop_after(monkeypatch, 1)
    with pytest.raises(Stopped):
        run(out=out, checkpoint=ckpt, record=record)
    shutil.copytree(out, copy)
    monkeypatch.undo()
    done = stop_after(monkeypatch, 1)
    with pytest.raises(Stopped):
        run(out=out, checkpoint=ckpt, record=record)
    assert done == [16]
    monkeypatch.undo()
    shutil.rmtree(out)
    shutil.copytree(copy, out)
    monkeypatch.setattr(driver, "run_algorithms", lambda *a, **k: pytest.fail("the sweep ran"))
    with pytest.raises(
        ValueError,
        match=r"^out='.*s.zarr' is behind its checkpoint algorithm-0.npz: it holds \d+ of the \d+ regions "
        r"the checkpoint counts as written.*start over with overwrite=True$",
    ):
        run(out=out, checkpoint=ckpt, record=record)
    monkeypatch.undo()
    res = run(out=out, checkpoint=ckpt, record=record, overwrite=True)
    np.testing.assert_array_equal(
        jb.SweepResult.load(out).cumulative_regret, run(record=record).cumulative_regret
    )
    assert res.cumulative_regret.shape[-1] == len(jb.runner.sweep.record_rounds(record, T))


def test_a_complete_store_whose_manifest_was_never_written_gets_it(reference, tmp_path, monkeypatch):
    """Battery row H: stopped (kill -9, a full disk) between marking the store complete and writing its
    manifest, every later run returned normally and SweepResult.load refused the store for ever ("written
    by an older jaxbandit or another program"). The next run writes the manifest."""
    out, ckpt = tmp_path / "s.zarr", tmp_path / "ckpt"

    def full(store):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(formats, "write_manifest", full)
    with pytest.raises(OSError, match="No space left"):
        run(out=out, checkpoint=ckpt)
    monkeypatch.undo()
    assert xr.open_zarr(out).attrs["jaxbandit_complete"] is True
    assert not (out / "jaxbandit_manifest.json").exists()
    run(out=out, checkpoint=ckpt)
    assert (out / "jaxbandit_manifest.json").is_file() and not (out / store_lib.JOURNAL).exists()
    np.testing.assert_array_equal(jb.SweepResult.load(out).regret, reference[0].regret)


def test_a_store_with_damaged_metadata_is_named_damaged(stopped_store):
    out, ckpt = stopped_store
    for name in (".zattrs", ".zmetadata"):
        (out / name).write_text("{garbled")
    with pytest.raises(ValueError, match=r"^out='.*s.zarr' is a damaged store .*pass overwrite=True"):
        run(out=out, checkpoint=ckpt)
    run(out=out, checkpoint=ckpt, overwrite=True)
    assert jb.SweepResult.load(out).regret.shape == (2, 3, T)


def test_a_store_of_another_sweep_names_what_differs(tmp_path):
    out = tmp_path / "s.zarr"
    run(out=out)
    with pytest.raises(
        ValueError,
        match=r"it holds a different sweep \(the code \(what the factories compute, as traced on this "
        r"backend\) differs\); give another path, pass overwrite=True",
    ):
        run(ENV5, out=out)
    np.testing.assert_array_equal(
        run(ENV5, out=out, overwrite=True).cumulative_regret, run(ENV5).cumulative_regret
    )
    attrs = store_lib.read_attrs(out)
    assert set(json.loads(attrs[store_lib.SWEEP_ATTR])) == set(fingerprint_lib.LABELS) - {"store"}


# ---- one writer at a time -------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["out", "checkpoint"])
def test_a_sweep_refuses_an_output_another_process_writes(tmp_path, monkeypatch, target):
    """Two sweeps on the same out= or checkpoint= both ran and mixed their values. A process holding the
    lock (tests/scripts/writer.py) makes the second refuse before anything runs, naming it."""
    paths = {"out": tmp_path / "s.zarr", "checkpoint": tmp_path / "ckpt"}
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), "hold", str(paths[target])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        monkeypatch.setattr(driver, "run_algorithms", lambda *a, **k: pytest.fail("the sweep ran"))
        with pytest.raises(
            ValueError, match=rf"^{target}='.*' is being written by another process \(pid {proc.pid} "
        ):
            run(out=paths["out"], checkpoint=paths["checkpoint"])
        assert not paths["out"].exists() and not paths["checkpoint"].exists()
    finally:
        proc.communicate("go\n", timeout=60)


# ---- Ctrl-C on the command line -------------------------------------------------------------------


@pytest.mark.parametrize("command, then", [("demo", "run the command again"), ("bench", "with --resume")])
def test_ctrl_c_is_one_line_saying_how_to_go_on(monkeypatch, capsys, command, then):
    from jaxbandit import cli
    from jaxbandit.experiments import demo

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "run_demo", interrupted)
    monkeypatch.setattr(cli, "run_bench_command", interrupted)
    assert cli.main([command]) == 130
    err = capsys.readouterr().err
    assert err.startswith("interrupted: ") and then in err and err.count("\n") == 1


def test_a_real_sigint_prints_no_traceback(tmp_path):
    """SIGINT delivered to the process (as Ctrl-C sends it) while the command runs. The child restores
    Python's own SIGINT handler first, as a process started from a terminal has it: started from a
    background job, as a CI runner may start the suite, it inherits SIGINT ignored and would not see it."""
    code = (
        "import os, signal, sys\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from jaxbandit import cli\n"
        "from jaxbandit.experiments import demo\n"
        "demo.run_demo = lambda *a, **k: (os.kill(os.getpid(), signal.SIGINT), [0 for _ in range(10**6)])\n"
        "sys.exit(cli.main(['demo', '--out', sys.argv[1]]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 130, out.stderr
    assert (
        out.stderr.startswith("interrupted: ")
        and out.stderr.count("\n") == 1
        and "Traceback" not in out.stderr
    )


@pytest.mark.parametrize("edit", ["kept rounds", "next round"])
def test_a_checkpoint_that_does_not_fit_its_sweep_is_refused_before_a_chunk_runs(stopped, monkeypatch, edit):
    """Battery row J: a checkpoint whose fingerprint matched but whose kept rounds or next round did not fit
    the sweep (edited, or damaged and rewritten) was resumed, and the battery saw "cannot reshape ..." once
    chunks had run. It is one line naming the checkpoint, before any chunk runs."""
    path = stopped / "algorithm-0.npz"
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    if edit == "kept rounds":
        arrays["kept/regret"] = arrays["kept/regret"][..., :5]
    else:
        arrays["next_round"] = np.asarray(5)
    np.savez(path, **arrays)
    monkeypatch.setattr(driver, "start_groups", lambda *a, **k: pytest.fail("a chunk ran"))
    with pytest.raises(
        ValueError,
        match=r"^checkpoint='.*ckpt' holds algorithm-0.npz, which is damaged or not a jaxbandit checkpoint "
        r"\(its next round \d+ and kept rounds .* do not fit this sweep's chunks of 8 rounds "
        r".*overwrite=True",
    ) as err:
        run(checkpoint=stopped)
    assert "\n" not in str(err.value)
