"""A sweep's grid: its axes as arrays, its factories, and the eager checks run before anything is traced."""

from __future__ import annotations

import collections
import itertools
import warnings
from collections.abc import Callable, Mapping, Sequence

import jax
import numpy as np

from ..core import validation as V
from ..core.dtypes import float_dtype
from ..core.types import Algorithm, Environment
from .simulate import check_pair

#: Checked point by point (a factory that cannot be built with all points at once), a grid above this
#: many points is checked on its corners and on each axis's values (each with the other axes at an
#: extreme) instead of on every point: every check in jaxbandit is an interval, so monotone. Each call
#: builds an algorithm and an environment (10-50 ms on a CPU), so checking every point of a 36 × 6 × 9
#: grid so would take longer than compiling.
FULL_VALIDATION_LIMIT = 256


def as_factory(obj, what: str) -> Callable:
    if isinstance(obj, (Algorithm, Environment)):
        return _Constant(obj)
    if callable(obj):
        return obj
    kind = "jb.Algorithm" if what == "algorithm" else "jb.Environment"
    raise ValueError(f"{what}={obj!r} is invalid: it must be a factory params -> {kind}, or a {kind}")


class _Constant:
    """A factory ignoring its parameters; hashable by its value so compiled code is reused."""

    def __init__(self, value):
        self.value = value

    def __call__(self, params):
        return self.value

    def __hash__(self):
        return hash(self.value)

    def __eq__(self, other):
        return isinstance(other, _Constant) and other.value is self.value


class RepeatedValueWarning(UserWarning):
    """A grid axis holds a value twice: legitimate where a batch is padded to one compiled width (the
    benchmark's tuning batches filter it), a slip elsewhere."""


def grid_arrays(grid: Mapping[str, Sequence[float]] | None) -> tuple[tuple[str, ...], tuple[np.ndarray, ...]]:
    """The grid's names and its axes as 1-D arrays, checked (names, non-empty, no NaN, no overflow); a
    value twice is a :class:`RepeatedValueWarning`."""
    if grid is None:
        return (), ()
    if not isinstance(grid, Mapping):
        raise ValueError(f"grid={grid!r} is invalid: it must be a dict name -> 1-D list of numbers")
    names, axes = [], []
    for name, values in grid.items():
        if not isinstance(name, str) or not name.isidentifier() or name in ("seed", "round", "algorithm"):
            raise ValueError(
                f"grid name {name!r} is invalid: use an identifier other than 'seed', 'round' and 'algorithm'"
            )
        arr = V._as_float_array(f"grid[{name!r}]", values, "a non-empty 1-D list of numbers")
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"grid[{name!r}] has shape {arr.shape}: expected a non-empty 1-D list")
        if np.any(np.isnan(arr)):
            raise ValueError(f"grid[{name!r}] contains NaN: every grid value must be a number")
        with np.errstate(over="ignore"):
            overflow = np.isfinite(arr) & ~np.isfinite(arr.astype(float_dtype()))
        if np.any(overflow):
            raise ValueError(
                f"grid[{name!r}] contains {arr[overflow][0]!r}, which overflows "
                f"{np.dtype(float_dtype()).name} (the dtype the runs use): use inf or a "
                "smaller number"
            )
        # as the runs see them: values apart in float64 may be one float32 value
        seen, counts = np.unique(arr.astype(float_dtype()), return_counts=True)
        if np.any(counts > 1):
            twice, times = seen[counts > 1][0].item(), counts[counts > 1][0]
            warnings.warn(
                f"grid[{name!r}] holds the value {twice!r} {times} times (in {np.dtype(float_dtype()).name}, "
                "the dtype the runs use): its runs are repeated, bitwise, and selecting it picks the first",
                RepeatedValueWarning,
                stacklevel=3,
            )
        names.append(name)
        axes.append(arr)
    return tuple(names), tuple(axes)


def validation_points(axes) -> list[tuple[int, ...]]:
    shape = tuple(a.size for a in axes)
    total = int(np.prod(shape)) if shape else 1
    if total <= FULL_VALIDATION_LIMIT:
        return list(itertools.product(*[range(n) for n in shape]))
    extremes = [sorted({int(np.argmin(a)), int(np.argmax(a))}) for a in axes]
    points = set(itertools.product(*extremes))
    for i, a in enumerate(axes):
        base = [e[0] for e in extremes]
        for j in range(a.size):
            points.add(tuple(base[:i] + [j] + base[i + 1 :]))
    return sorted(points)


#: Grids already validated: (factories, horizon, dtype, names, values) of a check that passed. Keyed on
#: the factory objects, as ``jax.jit`` keys its compiled programs, so a sweep run again (a notebook cell,
#: a benchmark's repeats) skips its checks; bounded, oldest dropped first.
_VALIDATED: collections.OrderedDict = collections.OrderedDict()
VALIDATED_MAX = 1024


def forget_validated() -> None:
    """Forget every grid already validated, so that the next sweep makes its checks again, as its first
    call did (a benchmark timing first calls; a factory whose module was reloaded)."""
    _VALIDATED.clear()


def validate_grid(make_algs: Mapping[str, Callable], make_env: Callable, names, axes, horizon):
    """Call every factory on concrete grid points; re-raise a ``ValueError`` naming the point.

    All points at once first: each factory is built once with every point's values, a name as the
    array of its values over the points (a number where they all agree). jaxbandit's checks test every
    element of an array (``core.validation``), so when that build passes, every point passes. A factory
    that cannot be built so (it reads a value in Python control flow, or shapes an array by it) or a
    grid with an invalid point is then checked point by point (:func:`validation_points`), which names
    the point.
    """
    # The runs see the grid as ``float_dtype()`` scalars, so validate exactly those values (a float64
    # value can round to an invalid float32 one, e.g. delta = 1 - 1e-9 becomes 1).
    dtype = float_dtype()
    values = tuple(np.asarray(a, dtype).astype(np.float64) for a in axes)
    grid_id = (tuple(names), tuple(v.tobytes() for v in values))
    for alg_name, make_alg in make_algs.items():
        key = (make_alg, make_env, horizon, str(dtype), grid_id)
        if key in _VALIDATED:
            _VALIDATED.move_to_end(key)
            continue
        if not _passes_at_once(make_alg, make_env, names, values, horizon):
            label = f"algorithm {alg_name!r}" if alg_name else "the sweep"
            for idx in validation_points(axes):
                _check_point(
                    make_alg,
                    make_env,
                    names,
                    {n: float(v[i]) for n, v, i in zip(names, values, idx)},
                    horizon,
                    label,
                )
        _VALIDATED[key] = None
        if len(_VALIDATED) > VALIDATED_MAX:
            _VALIDATED.popitem(last=False)


def _passes_at_once(make_alg, make_env, names, values, horizon) -> bool:
    """Whether the factories build and pass their checks with every grid point's values at once."""
    columns = np.meshgrid(*values, indexing="ij")
    point = {
        n: float(v[0]) if v.size == 1 else column.ravel() for n, v, column in zip(names, values, columns)
    }
    try:
        _build_and_check(make_alg, make_env, point, horizon)
    except Exception:  # an invalid point or a factory that needs scalars: checked point by point
        return False
    return True


def _check_point(make_alg, make_env, names, point: dict, horizon, label: str) -> None:
    try:
        _build_and_check(make_alg, make_env, point, horizon)
    except ValueError as err:
        where = ", ".join(f"{k}={v:g}" for k, v in point.items())
        raise ValueError(f"{label} at grid point ({where}): {err}") from None
    except KeyError as err:
        where = ", ".join(f"{k}={v:g}" for k, v in point.items())
        raise ValueError(
            f"{label} at grid point ({where}): a factory asked for the grid parameter "
            f"{err.args[0]!r}, which the grid does not define (it has {list(names)})"
        ) from None


#: What a factory raises when it needs concrete arrays (``if jnp.any(x < 0):``) rather than Python values.
_NEEDS_CONCRETE = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerBoolConversionError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.TracerArrayConversionError,
)


def _build_and_check(make_alg, make_env, point, horizon) -> None:
    """Build the point's algorithm and environment and run their checks. Staged (``make_jaxpr``): the
    checks run on the point's Python values while no array operation executes, so no eager operation
    compiles a program of its own (each one costs tens of milliseconds the first time). A factory that
    needs concrete arrays to check its input is built eagerly instead."""

    def build():
        check_pair(make_alg(point), make_env(point), horizon)

    try:
        jax.make_jaxpr(build)()
    except _NEEDS_CONCRETE:
        build()
