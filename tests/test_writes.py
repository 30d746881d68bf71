"""What jaxbandit writes: files with the umask's mode, one writer at a time (real processes), a killed
writer's leftovers cleaned, a full disk an OSError (never a crashed interpreter)."""

import errno
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import jaxbandit as jb
from jaxbandit.persist import lock
from jaxbandit.report import results
from jaxbandit.runner import checkpoint as checkpoint_lib

ROOT = Path(__file__).resolve().parents[1]
WRITER = Path(__file__).parent / "scripts" / "writer.py"


def a_result(rounds: int = 6) -> jb.SweepResult:
    rng = np.random.default_rng(5)
    dims = ("algorithm", "seed", "round")
    coords = {"algorithm": np.asarray(["a", "b"]), "seed": np.arange(3), "round": np.arange(1, rounds + 1)}
    data = {
        "cumulative_regret": rng.exponential(size=(2, 3, rounds)).astype(np.float32),
        "action": rng.integers(0, 5, size=(2, 3, rounds)).astype(np.int32),
    }
    return jb.SweepResult(dims, coords, data, {"horizon": rounds})


@pytest.fixture
def umask():
    """Set the process umask for the test body (restored after)."""
    before = os.umask(0o022)
    os.umask(before)
    yield lambda mask: os.umask(mask)
    os.umask(before)


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_every_written_file_gets_the_umask_mode(tmp_path, umask, mask):
    """A temporary file made by tempfile is 0o600 whatever the umask: results could not be shared."""
    umask(mask)
    res = a_result()
    written = [res.save(tmp_path / "r.npz"), res.save(tmp_path / "r.nc")]
    results.atomic_write_json(tmp_path / "settings.json", {"a": 1})
    results.atomic_write_bytes(tmp_path / "report.md", lambda f: f.write(b"# report"))
    checkpoint_lib.save(
        tmp_path / "ckpt" / "algorithm-0.npz", carry_arrays={}, kept={}, next_round=1, finger="f"
    )
    written += [tmp_path / "settings.json", tmp_path / "report.md", tmp_path / "ckpt" / "algorithm-0.npz"]
    for path in written:
        assert path.stat().st_mode & 0o777 == 0o666 & ~mask, path
    store = res.save(tmp_path / "r.zarr")
    assert store.stat().st_mode & 0o777 == 0o777 & ~mask
    assert (store / ".zattrs").stat().st_mode & 0o777 == 0o666 & ~mask


def start_writer(mode: str, target: Path) -> subprocess.Popen:
    """The writer script (tests/scripts/writer.py) in ``mode``, returned once it says it is ready."""
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), mode, str(target)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_a_second_writer_is_refused_naming_the_holder(tmp_path):
    target = tmp_path / "r.zarr"
    proc = start_writer("hold", target)
    try:
        info = lock.holder(target)
        assert info["pid"] == proc.pid and "writer.py" in info["command"]
        with pytest.raises(
            ValueError, match=rf"'.*r.zarr' is being written by another process \(pid {proc.pid} on "
        ):
            a_result().save(target)
        with pytest.raises(ValueError, match=rf"^out='.*r.zarr' is being written .*pid {proc.pid}.*stop it"):
            with results.writing(target, what="out="):
                pass
        assert not target.exists()
    finally:
        proc.communicate("go\n", timeout=60)  # the holder finishes and releases the lock
    assert proc.returncode == 0 and not lock.lock_file(target).exists()
    a_result().save(target)
    assert [p.name for p in tmp_path.iterdir()] == ["r.zarr"]


def test_a_killed_writer_leaves_its_lock_free_and_its_leftovers_are_removed(tmp_path):
    """Killed (SIGKILL) in the middle of an atomic write: the kernel releases its lock, and the next write
    of the same target removes its half-written temporary file, and nothing of another target."""
    target = tmp_path / "r.npz"
    a_result().save(target)
    before = target.read_bytes()
    other = tmp_path / ".r.npz.json.abcdefgh.tmp"  # another target's leftover ("r.npz.json"), kept
    other.write_bytes(b"")
    proc = start_writer("write", target)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    leftover = {p.name for p in tmp_path.iterdir()} - {"r.npz", "r.json", other.name}
    assert len(leftover) == 2 and ".r.npz.lock" in leftover  # the lock file and the half-written file
    (half,) = leftover - {".r.npz.lock"}
    assert (tmp_path / half).read_bytes() == b"half" and target.read_bytes() == before
    a_result(rounds=4).save(target)
    assert {p.name for p in tmp_path.iterdir()} == {"r.npz", other.name}
    assert jb.SweepResult.load(target).coords["round"].tolist() == [1, 2, 3, 4]


def test_a_directory_set_aside_by_a_killed_swap_is_put_back(tmp_path):
    """Without renameat2 a store is swapped by renaming the old one aside first: a writer killed between
    the two renames leaves no store but the set-aside one, which the next writer puts back."""
    path = a_result().save(tmp_path / "r.zarr")
    os.rename(path, tmp_path / ".r.zarr.Ab3_xyz9.old")
    (tmp_path / ".r.zarr.Zz3_xyz9.tmp").mkdir()  # the new version, unfinished
    with results.writing(path):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.zarr"]
    results_equal = jb.SweepResult.load(path)
    np.testing.assert_array_equal(results_equal.cumulative_regret, a_result().cumulative_regret)


def test_a_lock_is_reentrant_on_its_thread_only(tmp_path):
    target = tmp_path / "r.npz"
    errors = []

    def other_thread():
        try:
            with results.writing(target):
                pass
        except ValueError as err:
            errors.append(str(err))

    with results.writing(target), results.writing(target):  # a sweep's lock covers its own writes
        a_result().save(target)
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
        assert lock.lock_file(target).exists()
    assert len(errors) == 1 and "another thread of this process" in errors[0]
    assert not lock.lock_file(target).exists()


def test_a_file_system_without_locks_writes_with_a_warning(tmp_path, monkeypatch):
    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(lock.fcntl, "flock", no_locks)
    with pytest.warns(UserWarning, match=r"written without a lock \(its file system cannot lock files"):
        a_result().save(tmp_path / "r.nc")
    monkeypatch.undo()
    assert jb.SweepResult.load(tmp_path / "r.nc").cumulative_regret.shape == (2, 3, 6)


# ---- a full disk while writing netCDF --------------------------------------------------------------


def test_a_failing_disk_under_a_nc_save_raises_and_the_process_lives_on(tmp_path):
    """A real write error: the file-size limit (RLIMIT_FSIZE, with SIGXFSZ ignored) makes the kernel
    fail the write with EFBIG, as a full disk fails it with ENOSPC. HDF5 writing the file itself
    crashed the interpreter after such an error (exit 139); now it is an OSError and the previous file
    stays."""
    pytest.importorskip("h5netcdf")
    path = a_result().save(tmp_path / "r.nc")
    before = path.read_bytes()
    code = textwrap.dedent(
        f"""
        import resource, signal, numpy as np, jaxbandit as jb
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        res = jb.SweepResult(("seed", "round"), {{"seed": np.arange(8), "round": np.arange(1, 20001)}},
                             {{"cumulative_regret": np.ones((8, 20000))}})
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
        try:
            res.save({str(path)!r})
        except OSError as err:
            print("OSError", err.errno)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["OSError", str(errno.EFBIG)]
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["r.nc"]


def test_a_full_disk_at_fsync_leaves_the_previous_nc(tmp_path, monkeypatch):
    pytest.importorskip("h5netcdf")
    path = a_result().save(tmp_path / "r.nc")
    before = path.read_bytes()

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left on device"):
        a_result(rounds=3).save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["r.nc"]


def test_a_damaged_byte_in_a_nc_file_is_an_error_not_a_value(tmp_path):
    """Every numeric variable of a .nc file carries a Fletcher-32 checksum."""
    pytest.importorskip("h5netcdf")
    res = jb.SweepResult(("seed", "round"), {"seed": np.arange(2), "round": np.arange(1, 4)}, {})
    res.data["cumulative_regret"] = np.asarray([[1.5, 2.5, 3.5], [4.5, 5.5, 6.5]])
    path = res.save(tmp_path / "r.nc")
    raw = bytearray(path.read_bytes())
    at = raw.find(np.float64(5.5).tobytes())
    raw[at] ^= 1
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"'.*r.nc' is damaged"):
        jb.SweepResult.load(path)


def test_a_full_disk_while_the_lock_records_its_holder_leaks_no_lock(tmp_path, monkeypatch):
    """Battery row I: a disk full while the lock file's holder record was written leaked the lock's
    descriptor, and every later save of that path in the process was refused as "being written by another
    process (pid ? on ?)". The failing write is an OSError, and the next save takes the lock."""
    target = tmp_path / "r.npz"
    real = os.write
    calls = []

    def full(fd, data):
        if not calls:
            calls.append(fd)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError, match="No space left"):
        a_result().save(target)
    monkeypatch.undo()
    assert a_result().save(target) == target
    assert jb.SweepResult.load(target).coords["round"].tolist() == list(range(1, 7))


def test_a_save_never_deletes_a_folder_that_is_not_a_result(tmp_path):
    """Battery row M: res.save("r.zarr") over a non-empty folder that was not a result deleted it without
    warning. It is refused, naming the path and the fix, the folder untouched; an empty folder, a result
    and a store jb.sweep wrote are replaced."""
    folder = tmp_path / "r.zarr"
    folder.mkdir()
    (folder / "thesis.tex").write_text("years of work")
    with pytest.raises(
        ValueError,
        match=r"^'.*r\.zarr' exists and is not a jaxbandit result \(a folder of 1 other files.*\); a save "
        r"would delete it: save to another path, or move or delete it first$",
    ):
        a_result().save(folder)
    assert (folder / "thesis.tex").read_text() == "years of work"
    file = tmp_path / "f.zarr"
    file.write_text("notes")
    with pytest.raises(ValueError, match=r"^'.*f\.zarr' exists and is a file"):
        a_result().save(file)
    assert file.read_text() == "notes"
    (folder / "thesis.tex").unlink()
    a_result().save(folder)  # an empty folder
    a_result(rounds=4).save(folder)  # a result
    assert jb.SweepResult.load(folder).coords["round"].tolist() == [1, 2, 3, 4]


def test_a_save_through_a_symlink_writes_its_target(tmp_path):
    """A save through a symbolic link replaced the link with the result and left its target stale."""
    for name in ("r.npz", "r.zarr"):
        real = tmp_path / "real" / name
        real.parent.mkdir(exist_ok=True)
        a_result().save(real)
        link = tmp_path / name
        link.symlink_to(real)
        a_result(rounds=4).save(link)
        assert link.is_symlink()
        assert jb.SweepResult.load(real).coords["round"].tolist() == [1, 2, 3, 4]
