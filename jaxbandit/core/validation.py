"""Eager input checks: a ``ValueError`` naming the parameter, its value and the valid range.

Checks run only on concrete values (Python numbers, NumPy or JAX arrays). A traced value (inside a
user's ``jit``/``vmap``) passes unchecked, so the factories stay traceable; ``sweep`` validates its grid
by calling the factories once per grid point with concrete numbers before anything is traced.

Every message has the form ``"<name>=<value> is invalid: it must be <what> in <range>"`` so that a user
(or a sweep, which prefixes the grid point) sees what was wrong and what would be right.
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Mapping

import jax
import numpy as np

from .dtypes import float_dtype


def is_traced(value) -> bool:
    """True when ``value`` is (or contains) a JAX tracer, so its numbers are unknown now."""
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(value))


def _interval(low, high, low_open, high_open, allow_inf=False) -> str:
    left = "(" if low_open or (low is None and not allow_inf) else "["
    right = ")" if high_open or (high is None and not allow_inf) else "]"
    lo = "-inf" if low is None else f"{low:g}"
    hi = "inf" if high is None else f"{high:g}"
    return f"{left}{lo}, {hi}{right}"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _as_float_array(name: str, value, expected: str) -> np.ndarray:
    """``value`` as a float64 array, refusing what only looks like a number (bools, strings, objects)."""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise ValueError(f"{name}={_short(value)} is invalid: it must be {expected}")
    try:
        raw = np.asarray(value)
    except Exception:
        raise ValueError(f"{name}={_short(value)} is invalid: it must be {expected}") from None
    if raw.dtype == bool or not (
        np.issubdtype(raw.dtype, np.integer) or np.issubdtype(raw.dtype, np.floating)
    ):
        raise ValueError(f"{name}={_short(value)} is invalid: it must be {expected}")
    return raw.astype(np.float64)


def check_range(
    name: str,
    value,
    low=None,
    high=None,
    *,
    low_open=False,
    high_open=False,
    allow_inf=False,
    required=False,
    why: str = "",
):
    """Raise ``ValueError`` unless every element of ``value`` lies in the interval.

    NaN is always rejected; ±inf only where ``allow_inf`` and the interval admits it; a finite value
    that overflows the default float dtype (float32 unless x64 is on) counts as infinite. ``None``
    passes (a default applies) unless ``required``. ``why`` is appended to the message (e.g. the reason
    for the range). Returns ``value``.
    """
    rng = _interval(low, high, low_open, high_open, allow_inf)
    what = f"a finite number in {rng}" if not allow_inf else f"a number in {rng}"
    suffix = f" ({why})" if why else ""
    if value is None:
        if required:
            raise ValueError(f"{name}=None is invalid: it must be {what}{suffix}")
        return value
    if is_traced(value):
        return value
    arr = _as_float_array(name, value, what + suffix)
    bad = np.isnan(arr)
    if not allow_inf:
        with np.errstate(over="ignore"):
            bad |= np.isinf(arr) | np.isinf(arr.astype(float_dtype()))
    if low is not None:
        bad |= (arr <= low) if low_open else (arr < low)
    if high is not None:
        bad |= (arr >= high) if high_open else (arr > high)
    if np.any(bad):
        shown = float(arr.flat[int(np.argmax(bad.ravel()))])
        where = "" if arr.ndim == 0 else f" (an element of {name})"
        with np.errstate(over="ignore"):
            overflow = (
                not allow_inf
                and math.isfinite(shown)
                and bool(np.isinf(np.float64(shown).astype(float_dtype())))
            )
        if overflow:
            suffix += f"; it overflows {np.dtype(float_dtype()).name}"
        raise ValueError(f"{name}={shown!r}{where} is invalid: it must be {what}{suffix}")
    return value


def check_positive(name: str, value, *, allow_inf=False, required=False, why: str = ""):
    """``value`` > 0 (and finite unless ``allow_inf``)."""
    return check_range(name, value, 0.0, None, low_open=True, allow_inf=allow_inf, required=required, why=why)


def check_nonnegative(name: str, value, *, allow_inf=False, required=False, why: str = ""):
    """``value`` ≥ 0 (and finite unless ``allow_inf``)."""
    return check_range(name, value, 0.0, None, allow_inf=allow_inf, required=required, why=why)


def check_eps(value, name: str = "eps"):
    """The moment order ε of Assumption ass:noise: ε ∈ (0, 1]. Required."""
    return check_range(
        name,
        value,
        0.0,
        1.0,
        low_open=True,
        required=True,
        why="the moment order ε of the noise assumption, E|η_t|^(1+ε) ≤ ν^(1+ε)",
    )


def check_int(name: str, value, low: int = 1) -> int:
    """A static integer ≥ ``low`` (shapes, horizons, iteration counts). Returns it as ``int``.

    A whole float (``1e6``) is accepted; bools, strings, fractions and traced values are not (shapes
    must be known when the program is built).
    """
    if is_traced(value):
        raise ValueError(
            f"{name} is a traced value: it must be a static Python integer >= {low} "
            "(it sets array shapes or loop lengths)"
        )
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        if (
            isinstance(value, (float, np.floating))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and float(value).is_integer()
        ):
            value = int(value)
        else:
            raise ValueError(f"{name}={_short(value)} is invalid: it must be an integer >= {low}")
    if value < low:
        raise ValueError(f"{name}={value!r} is invalid: it must be an integer >= {low}")
    return int(value)


def _folded(text: str) -> str:
    """``text`` lower-cased without separators: ``"CR-Hvt-UCB"``, ``"cr_hvt_ucb"`` → ``"crhvtucb"``."""
    return "".join(ch for ch in text.lower() if ch.isalnum())


def check_names(name: str, given, valid, labels: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """``given`` (a name or names) as a non-empty tuple of distinct members of ``valid`` (CLI lists of
    algorithms, adversaries, noises). A name is also found by its display label (``labels``: label →
    name, such as ``"CR-Hvt-UCB"`` → ``"cr_hvt_ucb"``), ignoring case, hyphens, underscores and spaces;
    the ``ValueError`` for one that is not names the closest valid one and lists them all."""
    given = (given,) if isinstance(given, str) else tuple(given)
    valid = tuple(valid)
    lookup = {_folded(v): v for v in valid}
    lookup.update({_folded(label): v for label, v in (labels or {}).items() if v in valid})
    found: list[str] = []
    bad: list = []
    for g in given:
        match = g if g in valid else lookup.get(_folded(str(g)))
        if match is None:
            bad.append(g)
        else:
            found.append(match)
    if not given or bad:
        hint = ""
        if bad:
            close = difflib.get_close_matches(_folded(str(bad[0])), list(lookup), n=1, cutoff=0.6)
            hint = f"{bad[0]!r} is not one of them" + (
                f" (did you mean {lookup[close[0]]!r}?)" if close else ""
            )
            hint = "; " + hint
        raise ValueError(f"{name}={list(given)!r} is invalid: choose from {list(valid)}{hint}")
    if len(set(found)) != len(found):
        raise ValueError(f"{name}={list(given)!r} is invalid: a name is given twice")
    return tuple(found)


def check_choice(name: str, options, index) -> list:
    """``options`` as a non-empty list, and a concrete ``index`` checked to pick one of them (a traced
    index is checked at its grid values by the sweep's validation of the factories)."""
    options = list(options)
    if not options:
        raise ValueError(f"{name}=[] is invalid: give at least one to choose from")
    if not is_traced(index):
        i = np.asarray(index, np.float64)
        if i.ndim != 0 or not float(i).is_integer() or not 0 <= float(i) < len(options):
            raise ValueError(
                f"index={_short(index)} is invalid: it must be an integer in [0, {len(options) - 1}] "
                f"(one of the {len(options)} {name})"
            )
    return options


def check_whole(name: str, value, *, allow_inf=True):
    """A count ≥ 0 that may be a float (``inf`` allowed): concrete values must be whole numbers."""
    check_nonnegative(name, value, allow_inf=allow_inf, required=True)
    if not is_traced(value):
        arr = np.asarray(value, dtype=np.float64)
        frac = np.isfinite(arr) & (arr != np.floor(arr))
        if np.any(frac):
            raise ValueError(
                f"{name}={float(arr.flat[int(np.argmax(frac.ravel()))])!r} is invalid: it must be a "
                "whole number >= 0 (or inf)"
            )
    return value


def check_flag(name: str, value) -> bool:
    """``value`` is a bool (Python's or NumPy's); returned as ``bool``."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}={value!r} is invalid: it must be True or False")
    return bool(value)


def check_instance(name: str, value, cls, what: str):
    """``value`` is an instance of ``cls`` (described to the user as ``what``)."""
    if not isinstance(value, cls):
        raise ValueError(f"{name}={_short(value)} is invalid: it must be {what}")
    return value


def check_finite_array(name: str, value, shape=None):
    """A concrete numeric array with only finite entries and, if given, this exact shape."""
    if is_traced(value):
        return value
    try:
        arr = np.asarray(value)
    except Exception:
        raise ValueError(
            f"{name}={_short(value)} is invalid: it must be an array of finite numbers"
        ) from None
    if shape is not None and tuple(arr.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(arr.shape)}, expected {tuple(shape)}")
    if arr.dtype == bool or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise ValueError(f"{name} has dtype {arr.dtype}: it must be an array of finite real numbers")
    finite = np.isfinite(arr)
    if not np.all(finite):
        idx = tuple(int(i) for i in np.unravel_index(int(np.argmin(finite.ravel())), arr.shape))
        at = f"[{', '.join(map(str, idx))}]" if idx else ""
        raise ValueError(
            f"{name}{at}={float(arr[idx])!r} is invalid: {name} must contain only finite numbers"
        )
    with np.errstate(over="ignore"):
        if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr.astype(float_dtype()))):
            raise ValueError(
                f"{name} has entries that overflow {np.dtype(float_dtype()).name}: it must "
                "contain only finite numbers"
            )
    return value
