"""What both checkers share: the failure report, tree helpers, the synthetic problems and the runs."""

from __future__ import annotations

import contextlib
import functools
import re
import traceback
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..core.dtypes import float_dtype
from ..core.linalg import dot
from ..core.lowering.xla_options import library_jit
from ..core.types import Algorithm, select_action, update_state
from ..runner.simulate import AGENT_KEY

Array = jax.Array


#: The seed of every synthetic problem and key (``np.random.default_rng(SEED + i)``, ``jax.random.key``).
SEED = 20250601
#: Default rounds per run, or the algorithm's or environment's own horizon where that is shorter: long
#: enough to reach the phases algorithms and adversaries typically switch on (warm-ups of K or d·log T
#: rounds, doubling epochs up to 64, a budget running out). A bug that shows only later is found with
#: ``horizon=`` set longer. The extreme-reward stream needs ``MIN_HORIZON`` to hold each extreme once.
DEFAULT_HORIZON = 128
MIN_HORIZON = 12
#: Rounds run eagerly, select and update chained, for ``jit_equals_eager`` (an eager update of an
#: algorithm with an inner solver compiles the solver's loops anew on every call: seconds each).
EAGER_ROUNDS = 3
#: Runs (agent keys from seeds ``SEED + i``) in whose first ``EAGER_SELECT_ROUNDS`` rounds
#: ``jit_equals_eager`` calls select eagerly (a few tens of milliseconds a call on a busy 2-core CPU).
EAGER_KEYS, EAGER_SELECT_ROUNDS = 3, 16
#: Runs in the ``vmap`` batch, and the lane that must equal the run alone.
BATCH, LANE = 5, 2
#: The ν_t the synthetic streams reveal, and the other values ``uses_revealed_nu`` tries.
NU, OTHER_NU, BIG_NU = 1.3, 3.7, 1e3


_BATCH_HINT = (
    " (sums over d should use jb.linalg.dot / matvec: XLA's CPU dots and reductions round "
    "differently with the batch shape)"
)


def _rtol() -> float:
    """The tolerance between two programs that may round differently (eager vs jit; float32, float64):
    relative to a value's magnitude, or to 1 when that is smaller."""
    return 1e-10 if float_dtype() == jnp.float64 else 1e-4


# --------------------------------------------------------------------------------------------------------
# Reporting


class _Failure(AssertionError):
    """A failed property, its message already in the checker's format."""


class _Report:
    """Formats failures as ``"<checker>(<name>): property '<id>' failed in round <t>: <detail>"``."""

    def __init__(self, checker: str, name: str):
        self.prefix = f"{checker}({name})"
        #: The functions under test by name (``init``, ``select``, ``update``, ``corrupt``, ...): an
        #: exception raised in one of them is reported as raised there.
        self.functions: dict = {}

    def fail(self, prop: str, detail: str, t=None, cause: BaseException | None = None):
        where = "" if t is None else f" in round {int(t) + 1}"
        raise _Failure(f"{self.prefix}: property {prop!r} failed{where}: {detail}") from cause

    @contextlib.contextmanager
    def guard(self, prop: str):
        """Report any exception raised while checking ``prop`` as that property's failure."""
        try:
            yield
        except _Failure:
            raise
        except Exception as err:  # whatever the code under test raised
            where = self._raised_in(err)
            who = f"{where} raised" if where else "it raised"
            hint = ""
            if isinstance(err, _TRACER_ERRORS):
                hint = (
                    f"; {where or 'the code'} uses a traced value in Python control flow "
                    "(if/while/bool()/int() on an array): use jnp.where, lax.cond or lax.select"
                )
            self.fail(prop, f"{who} {type(err).__name__}: {_first_line(err)}{hint}", cause=err)

    def _raised_in(self, err: BaseException) -> str | None:
        """The name of the function under test whose code raised ``err`` (the innermost), if any."""
        codes = {getattr(f, "__code__", None): name for name, f in self.functions.items()}
        found = None
        for frame, _ in traceback.walk_tb(err.__traceback__):
            found = codes.get(frame.f_code, found)
        return found


_TRACER_ERRORS = (
    jax.errors.TracerBoolConversionError,
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerIntegerConversionError,
)


def _first_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return lines[0] if lines else repr(err)


def _num(x) -> str:
    """A number as NumPy prints it (shortest round-trip form of its own dtype: 0.3962295, inf)."""
    return str(np.asarray(x)[()])


def _host(tree):
    """``tree`` with NumPy leaves (PRNG keys as their raw data)."""

    def leaf(x):
        if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        return np.asarray(x)

    return jax.tree_util.tree_map(leaf, tree)


def _at(tree, i):
    """Entry ``i`` of every leaf's leading axis."""
    return jax.tree_util.tree_map(lambda x: x[i], tree)


def _one_round(tree):
    """``tree`` as NumPy with a leading round axis of length 1."""
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[None], tree)


def _paths(tree):
    return [
        (jax.tree_util.keystr(p) or "<state>", leaf) for p, leaf in jax.tree_util.tree_leaves_with_path(tree)
    ]


def _is_float(x) -> bool:
    return np.issubdtype(np.asarray(x).dtype, np.floating)


def _first_difference(a, b, rtol=None):
    """First round (leading axis) where the host trees ``a`` and ``b`` differ, as ``(t, path, x, y)``.

    Bitwise (NaN equal to NaN) when ``rtol`` is None, else |x − y| ≤ rtol·max(1, max|y|) per leaf and
    round (see :func:`_scaled`).
    """
    first = None
    for (path, x), (_, y) in zip(_paths(a), _paths(b)):
        x2, y2 = x.reshape(x.shape[0], -1), y.reshape(y.shape[0], -1)
        same = (x2 == y2) | (np.isnan(x2) & np.isnan(y2)) if _is_float(x2) else x2 == y2
        if rtol is not None and _is_float(x2):
            with np.errstate(invalid="ignore", over="ignore"):
                scale = np.maximum(np.max(np.abs(y2), axis=1, keepdims=True), 1.0)
                same = same | (np.abs(x2 - y2) <= rtol * scale)
        bad = np.flatnonzero(~same.all(axis=1))
        if bad.size and (first is None or bad[0] < first[0]):
            t = int(bad[0])
            k = int(np.argmin(same[t]))
            first = (t, path, x2[t, k], y2[t, k])
    return first


def _first_nonfinite(tree):
    """First round (leading axis) with a non-finite floating leaf, as ``(t, path)``, or None."""
    first = None
    for path, x in _paths(tree):
        if not _is_float(x):
            continue
        bad = np.flatnonzero(~np.isfinite(x.reshape(x.shape[0], -1)).all(axis=1))
        if bad.size and (first is None or bad[0] < first[0]):
            first = (int(bad[0]), path)
    return first


def _check_leaves(rep: _Report, prop: str, tree, what: str):
    """Every leaf of ``tree`` is a JAX array and every floating leaf has the default float dtype."""
    for path, leaf in _paths(tree):
        if not isinstance(leaf, jax.Array):
            rep.fail(prop, f"{what} leaf {path} is a {type(leaf).__name__}, not a JAX array")
        if jnp.issubdtype(leaf.dtype, jnp.floating) and leaf.dtype != float_dtype():
            rep.fail(
                prop,
                f"{what} leaf {path} has dtype {leaf.dtype}, not the default float dtype "
                f"{np.dtype(float_dtype()).name} (jaxbandit.core.dtypes.float_dtype())",
            )


def _program(fn, *args):
    """``fn(*args)`` traced afresh (a new function object, so no trace is reused) as (the jaxpr's text
    with memory addresses removed, its constants as NumPy): what a jitted call of ``fn`` would run."""
    closed = jax.make_jaxpr(lambda *a: fn(*a))(*args)
    text = re.sub(r" at 0x[0-9a-fA-F]+", "", str(closed.jaxpr))
    return text, _host(list(closed.consts))


def _program_difference(a, b) -> str | None:
    """None when the programs ``a`` and ``b`` (:func:`_program`) are the same, else the first line of the
    first trace's jaxpr that the second lacks (or which constant differs)."""
    (text_a, consts_a), (text_b, consts_b) = a, b
    if text_a != text_b:
        lines_b = text_b.splitlines()
        for i, line in enumerate(text_a.splitlines()):
            if i >= len(lines_b) or line != lines_b[i]:
                other = lines_b[i].strip() if i < len(lines_b) else "nothing"
                return f"the first trace has `{_short(line.strip())}` where the second has `{_short(other)}`"
        return "the second trace is longer"
    for i, (x, y) in enumerate(zip(consts_a, consts_b)):
        if x.shape != y.shape or x.dtype != y.dtype or _first_difference(x[None], y[None]) is not None:
            return f"constant {i} of the program ({x.dtype}{list(x.shape)}) differs between the traces"
    return None


def _short(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------------------------------------
# Synthetic problems and the run


class _Data(NamedTuple):
    """A synthetic problem: θ* `[d]`, contexts `[T, K, d]`, noise η `[T]` and revealed ν `[T]`."""

    theta: Array
    contexts: Array
    eta: Array
    nu: Array


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _as_data(theta, contexts, eta, nu) -> _Data:
    dtype = float_dtype()
    return _Data(*(jnp.asarray(a, dtype) for a in (theta, contexts, eta, nu)))


def _problem(seed: int, horizon: int, num_arms: int, dim: int) -> _Data:
    """θ* and contexts uniform on the unit sphere (L = S = 1), Student-t₃ noise, ν_t = ``NU``."""
    rng = np.random.default_rng(seed)
    theta = _unit(rng.normal(size=dim))
    contexts = _unit(rng.normal(size=(horizon, num_arms, dim)))
    return _as_data(theta, contexts, rng.standard_t(3.0, size=horizon), np.full(horizon, NU))


def _extreme_problem(horizon: int, num_arms: int, dim: int) -> _Data:
    """Even rounds cycle through η = +inf, −inf, +1e30, −1e30, +(float max), −(float max) (so r_t is ±inf,
    ±1e30 or a spike at the float range; ``MIN_HORIZON`` rounds hold each once), odd rounds are
    Student-t₃; a third of the contexts are ±e_i (norm exactly 1)."""
    rng = np.random.default_rng(SEED + 1)
    big = float(np.finfo(float_dtype()).max)
    pattern = np.array([np.inf, -np.inf, 1e30, -1e30, big, -big])
    t = np.arange(horizon)
    eta = np.where(t % 2 == 0, pattern[(t // 2) % pattern.size], rng.standard_t(3.0, size=horizon))
    contexts = _unit(rng.normal(size=(horizon, num_arms, dim)))
    idx = t[:, None] + np.arange(num_arms)[None, :]
    axis = np.eye(dim)[idx % dim] * np.where(idx % 2 == 0, 1.0, -1.0)[..., None]
    contexts = np.where((idx % 3 == 0)[..., None], axis, contexts)
    return _as_data(_unit(rng.normal(size=dim)), contexts, eta, np.full(horizon, NU))


def _agent_key(seed: int) -> Array:
    """A run's agent key, derived as the runner derives it from the run's key."""
    return jax.random.fold_in(jax.random.key(seed), AGENT_KEY)


def _round_keys(agent_key: Array, t) -> tuple[Array, Array]:
    """Round ``t``'s (select, update) keys, as ``jaxbandit.runner.simulate.rollout`` splits them."""
    keys = jax.random.split(jax.random.fold_in(agent_key, t))
    return keys[0], keys[1]


@functools.partial(jax.jit, static_argnums=1)
def _select_keys(agent_key: Array, n: int) -> Array:
    """The select keys of rounds 0..n−1 `[n]` (one program for every key)."""
    return jax.vmap(lambda t: _round_keys(agent_key, t)[0])(jnp.arange(n, dtype=jnp.int32))


def _step(alg: Algorithm, state, contexts, theta, eta, nu, agent_key, t):
    """One round: select, reward r_t = ⟨x, θ*⟩ + η_t, update; returns (action, state)."""
    k_select, k_update = _round_keys(agent_key, t)
    action = select_action(alg, state, contexts, k_select)
    x = contexts[action]
    return action, update_state(alg, state, x, dot(x, theta) + eta, nu, k_update)


def _compiled(fun):
    """``fun`` jitted as ``jb.simulate`` and ``jb.sweep`` compile their programs (the library's compiler
    options and lowering, ``library_jit``), so that a property is checked on the program a sweep runs."""
    return library_jit(())(fun)


def _run(alg: Algorithm, data: _Data, agent_key: Array):
    """A ``lax.scan`` over the rounds of ``data``; returns (actions `[T]`, states after each round `[T]`)."""

    def body(state, inputs):
        t, contexts, eta, nu = inputs
        action, state = _step(alg, state, contexts, data.theta, eta, nu, agent_key, t)
        return state, (action, state)

    rounds = jnp.arange(data.contexts.shape[0], dtype=jnp.int32)
    _, out = jax.lax.scan(body, alg.init(), (rounds, data.contexts, data.eta, data.nu))
    return out


def _check_name(name, default: str) -> str:
    if name is not None and not isinstance(name, str):
        raise ValueError(f"name={name!r} is invalid: it must be a str or None")
    return default if name is None else name
