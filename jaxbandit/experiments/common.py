"""What every experiment (demo, Figure 1, the benchmark, the scaling study) shares: the provenance written
beside a result (package versions, the device, the time) and the checks of their list arguments."""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import os
import platform
from pathlib import Path

import jax
import numpy as np

import jaxbandit as jb

from ..core import validation as V
from ..core.dtypes import float_dtype
from ..persist.formats import require, write_netcdf
from ..report.results import SweepResult


def save_result(result: SweepResult, path, dataset=None) -> list[Path]:
    """``result`` as ``path`` (``.npz``: always) and beside it as ``.nc`` (the Dataset
    ``dataset``, default ``result.to_xarray()``) when xarray and h5netcdf are installed: the files
    ``python -m jaxbandit plot``, ``jb.SweepResult.load`` and ``xarray.open_dataset`` read."""
    path = Path(path).with_suffix(".npz")
    written = [result.save(path)]
    try:
        require("h5py", "h5netcdf", "xarray", what=f"{path.with_suffix('.nc').name}")
    except ImportError:
        return written
    ds = result.to_xarray() if dataset is None else dataset
    return [*written, write_netcdf(ds, path.with_suffix(".nc"))]


def versions() -> dict:
    """Package versions a result depends on."""
    import jaxlib
    import matplotlib

    return {
        "jaxbandit": jb.__version__,
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
        "matplotlib": matplotlib.__version__,
        "python": platform.python_version(),
    }


def cpu_model() -> str | None:
    """The CPU's model name as Linux reports it (``/proc/cpuinfo``), or None elsewhere. Two machines of the
    same core count and architecture can differ 2.5x in speed (a 2-core AMD EPYC and Intel Xeon do)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return None
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), None)


def device_info() -> dict:
    """The devices and machine a result ran on."""
    devs = jax.devices()
    return {
        "backend": jax.default_backend(),
        "devices": [str(d) for d in devs],
        "device_kind": devs[0].device_kind,
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "system": f"{platform.system()} {platform.release()}",
        "dtype": str(np.dtype(float_dtype())),
    }


def now() -> str:
    """The time in UTC, ISO 8601 to the second."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def read_json(path, name: str) -> tuple:
    """The JSON content of the file ``path`` and the SHA-256 of its bytes (read once); a ``ValueError``
    beginning with ``name`` (the file as the caller names it) when it cannot be read or parsed."""
    try:
        raw = Path(path).read_bytes()
        return json.loads(raw.decode()), hashlib.sha256(raw).hexdigest()
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{name} is invalid: not a readable JSON file ({err})") from None


def jsonable(x):
    """``x`` with arrays as lists and the floats JSON cannot hold (inf, nan) as strings."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, (np.ndarray, np.generic, jax.Array)):
        return jsonable(np.asarray(x).tolist())
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return x


def seed_list(seeds, name: str) -> list[int]:
    """A count n (seeds 0..n−1) or distinct non-negative integer seeds, as a list."""
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        return list(range(V.check_int(name, seeds, 1)))
    try:
        ids = [int(s) for s in seeds]
    except (TypeError, ValueError):
        raise ValueError(
            f"{name}={seeds!r} is invalid: give a count >= 1 or non-negative integer seeds"
        ) from None
    if (
        not ids
        or min(ids) < 0
        or len(set(ids)) != len(ids)
        or any(isinstance(s, bool) or not float(s).is_integer() for s in seeds)
    ):
        raise ValueError(
            f"{name}={seeds!r} is invalid: give a count >= 1 or distinct non-negative integer seeds"
        )
    return ids


def check_numbers(
    name: str,
    values,
    low: float,
    high: float = math.inf,
    *,
    low_open: bool = False,
    integer: bool = False,
    at_least: int = 1,
) -> tuple:
    """``values`` as a sorted tuple of at least ``at_least`` distinct finite numbers in [low, high]
    (``(low, high]`` when ``low_open``), whole numbers as ``int`` when ``integer``; a ``ValueError``
    names ``name`` and the valid range otherwise."""
    interval = f"{'(' if low_open else '['}{low:g}, {high:g}]"
    count = f"at least {at_least} distinct" if at_least > 1 else "distinct"
    what = "integers" if integer else "numbers"
    wrong = ValueError(f"{name}={values!r} is invalid: give {count} {what} in {interval}")
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise wrong
    vals = tuple(values)
    ok = all(
        not isinstance(v, (bool, np.bool_))
        and isinstance(v, (int, np.integer, float, np.floating))
        and math.isfinite(v)
        and (v > low if low_open else v >= low)
        and v <= high
        and (not integer or float(v).is_integer())
        for v in vals
    )
    if not ok or len(vals) < at_least or len(set(vals)) != len(vals):
        raise wrong
    return tuple(sorted(int(v) if integer else float(v) for v in vals))
