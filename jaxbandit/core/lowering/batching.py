"""Batching rules that ``jb.sweep`` chooses for its programs on a CPU: how a ``vmap`` batch runs a solver
loop whose lanes stop at different times, and its LAPACK calls. Each is traced in a context
(:func:`stragglers_one_by_one`, :func:`lapack_per_matrix`) and gives the same values every way.

Stragglers. Under ``vmap``, ``lax.while_loop`` with a condition that depends on the lane runs until every
lane has stopped: each iteration computes the body for the whole batch and keeps the lanes that have
stopped as they were. A loop that almost every lane leaves after one iteration, and a few after several,
then costs the batch as many full iterations as its slowest lane needs. GAdaOFUL's warm-started refit is
such a loop (``robust_regression.solve``): 1.0 passes over the history a lane and round, but 1.4–1.9
iterations of a 500-lane batch, each a pass and a 10 × 10 Cholesky solve for every lane.

:func:`while_loop` is ``lax.while_loop`` for one run. Under ``vmap`` inside :func:`stragglers_one_by_one`,
its batching rule iterates the whole batch, as ``lax.while_loop`` would, while more than a fraction
(``straggler_fraction``) of its lanes is running, and then runs the stragglers one by one, each alone to
its end (a loop over them: take the first lane still running out of the batch, run its loop unbatched,
write it back) — or ``straggler_group`` at a time, a batched loop over each group. One by one suits a
body whose cost is its arithmetic (a refit's pass over the history); groups a body of many small
operations, whose kernels cost about the same for 1 lane as for 16 (the projection onto the ball). Nested
``vmap`` s are one batch of all their lanes. Every lane runs the same iterations on the same values as in
the plain loop, so the results are the plain loop's wherever the body computes a lane the same alone and
in a batch (as the library's refits do for d ≤ ``linalg.DOT_UNROLL_MAX_DIM``).

It suits a CPU, where a lane alone, or a small group, costs little more than its share of a batched
iteration; a GPU would run one lane at a time with the rest of the device idle, and a batch sharded over
devices would gather each lane across them. ``jb.sweep`` enables it on one CPU device.

LAPACK. :func:`lapack` is one batched LAPACK call under ``vmap``, or inside :func:`lapack_per_matrix` a
loop of calls on one matrix each (the same routine on the same matrices: the same bits), which
``jb.sweep`` chooses wherever several batched calls could run at once on a CPU's thread pool.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import Any, cast

import jax
import jax.extend as jex
import jax.numpy as jnp
from jax.custom_batching import custom_vmap
from jax.interpreters import batching as vmap_rules
from jax.interpreters import mlir

from .. import validation as V
from . import options

Array = jax.Array


def stragglers_one_by_one(enabled: bool = True) -> contextlib.AbstractContextManager:
    """Within it, the :func:`while_loop` s that a traced program makes run, under ``vmap``, batched while
    many lanes are running and then each lane still running alone (the trace option
    ``stragglers_one_by_one``). ``jb.sweep`` traces its rounds so on one CPU device. A function jitted
    before is not traced again: the context applies to new traces."""
    return options.tracing(stragglers_one_by_one=V.check_flag("enabled", enabled))


def one_by_one_now() -> bool:
    """Whether :func:`while_loop` s traced now run their stragglers one by one (within
    :func:`stragglers_one_by_one`). A jitted function that calls :func:`while_loop` takes it as a static
    argument, so that a trace made outside the context is not reused within it, nor the reverse."""
    return options.current().stragglers_one_by_one


def lapack_per_matrix(enabled: bool = True) -> contextlib.AbstractContextManager:
    """Within it, the :func:`lapack` calls that a traced program makes run one matrix per call under
    ``vmap`` (the trace option ``lapack_per_matrix``). ``jb.sweep`` traces its rounds so where several
    such calls could run at once on a CPU: several CPU devices of one process, or several algorithms in
    lockstep (see :func:`lapack`)."""
    return options.tracing(lapack_per_matrix=V.check_flag("enabled", enabled))


def lapack_per_matrix_now() -> bool:
    """Whether :func:`lapack` calls traced now run one matrix per call (within :func:`lapack_per_matrix`).
    A jitted function that calls :func:`lapack` takes it as a static argument, like
    :func:`one_by_one_now`: JAX's cache of its traces does not see the context, and a trace made outside
    it reused within would call LAPACK batched where several calls could run at once."""
    return options.current().lapack_per_matrix


def lapack(fn: Callable, *args: Array) -> Any:
    """``fn(*args)``: a LAPACK routine (``jnp.linalg.eigh``, ``jnp.linalg.cholesky``, a triangular
    solve) on one run's operands.

    Under ``vmap`` it is one batched LAPACK call, except inside :func:`lapack_per_matrix`, where the batch
    runs as a loop (``lax.map``) of calls on one matrix each: the same routine on the same matrices, so
    the same bits, at about the same speed (0.94–1.06× the time of GAdaOFUL, Heavy-OFUL and TOFU runs on
    2 cores; docs/performance.md, *LAPACK one matrix a call*).

    Why: jaxlib 0.10's CPU kernels split a large batch (64 matrices of 10 × 10; 32 were not split) over
    XLA's intra-op thread pool (a thread per core) and block the calling pool thread until the pieces are
    done. As many such calls at once as the pool has threads leave no thread to run the pieces, and the
    program never finishes: on 2 cores, a GAdaOFUL sweep of 128 runs over 2 CPU devices hung so, and so
    did GAdaOFUL and Heavy-OFUL in lockstep on one device (256 runs, T = 100; every pool thread's stack in
    ``ParallelBatchMap``). A call on one matrix is not split."""
    if not callable(fn):
        raise ValueError(f"fn={fn!r} is invalid: it must be a LAPACK routine to call, e.g. jnp.linalg.eigh")
    if not lapack_per_matrix_now():
        return fn(*args)

    @custom_vmap
    def one(*xs):
        return fn(*xs)

    @one.def_vmap
    def per_matrix(axis_size, in_batched, *xs):
        batched = [x for x, b in zip(xs, in_batched) if b]

        def call(ys):
            it = iter(ys)
            return one(*(next(it) if b else x for x, b in zip(xs, in_batched)))

        return _batched_result(jax.lax.map(call, batched))

    return one(*args)


def cond_any(pred: Array, true_fun: Callable, false_fun: Callable, *operands: Any, group: int = 16) -> Any:
    """``lax.cond(pred, true_fun, false_fun, *operands)`` for one run; under ``vmap``, ``true_fun`` only
    for the lanes whose ``pred`` holds — where ``lax.cond`` runs both branches for every lane, always.

    A batch (nested ``vmap`` s count as one batch of all their lanes) runs ``false_fun`` for every lane,
    then ``true_fun`` for the lanes whose ``pred`` holds, ``group`` at a time (gathered, the last group
    padded) — for the whole batch at once where they are more than a quarter of it, and not at all where
    there are none; each lane keeps its own branch's value. A lane's value
    is its value alone wherever ``true_fun`` computes a lane the same alone and in a batch. For a branch
    that few lanes take and that costs much more than the other (GAdaOFUL's projection onto the ball,
    ``robust_regression``). The branches may close over traced values, as ``lax.cond`` 's may."""
    group = V.check_int("group", group)
    pred = jnp.asarray(pred)
    if pred.shape != () or pred.dtype != jnp.bool_:
        raise ValueError(
            f"pred of shape {pred.shape} and dtype {pred.dtype} is invalid: it must be a bool scalar"
        )
    if not callable(true_fun) or not callable(false_fun):
        bad, value = ("true_fun", true_fun) if not callable(true_fun) else ("false_fun", false_fun)
        raise ValueError(f"{bad}={value!r} is invalid: it must be a function of the operands")
    true_h, true_consts, true_out = _hoisted(lambda o: true_fun(*o), operands)
    false_h, false_consts, out = _hoisted(lambda o: false_fun(*o), operands)
    types = lambda tree: [(x.shape, x.dtype) for x in jax.tree.leaves(tree)]
    same_structure = cast(Any, jax.tree.structure(true_out)) == jax.tree.structure(out)  # (typeshed)
    if not same_structure or types(true_out) != types(out):
        raise ValueError(
            f"true_fun and false_fun are invalid: they must return the same structure of the same shapes "
            f"and dtypes, not {true_out} and {out}"
        )
    # the result's types, for the primitive's abstract evaluation (weak only where both branches' are)
    out_types = tuple(
        jax.core.ShapedArray(t.shape, t.dtype, weak_type=t.weak_type and f.weak_type)
        for t, f in zip(jax.tree.leaves(true_out), jax.tree.leaves(out))
    )
    branches = _Branches(true_h, false_h, len(true_consts), group, out_types)
    leaves, tree = jax.tree.flatten((pred, operands, (*true_consts, *false_consts)))
    result = _COND_ANY_P.bind(*leaves, branches=branches, tree=tree, lanes=0)
    return jax.tree.unflatten(jax.tree.structure(out), result)


def while_loop(
    cond_fun: Callable,
    body_fun: Callable,
    init_val: Any,
    *,
    straggler_fraction: float = 0.25,
    straggler_group: int = 1,
    peel: int = 0,
) -> Any:
    """``lax.while_loop(cond_fun, body_fun, init_val)`` for one run; under ``vmap`` inside
    :func:`stragglers_one_by_one` (a batch of at least the trace option ``straggler_min_lanes``, 64 by
    default), iterations of the whole batch while more than ``straggler_fraction`` of its lanes is running,
    then the lanes still running in groups of ``straggler_group`` (module docstring): 1, each alone.
    ``straggler_fraction`` 0 is the plain batched loop, 1 the stragglers' groups from the start. ``cond_fun``
    and ``body_fun`` may close over batched values.

    ``peel``: the first iterations run before the loop, outside it, for every lane (each lane running
    ``cond_fun`` false keeps its carry, as in a batched loop): the same values, with no loop condition or
    body launch for them. A GPU launches a loop's body as a CUDA graph's conditional node, which waited
    ~140 µs a time on the H200 (docs/development/performance-record.md), so a loop that nearly always
    iterates once pays for a peeled iteration's kernels in the rounds where no lane would iterate."""
    if not callable(cond_fun) or not callable(body_fun):
        bad = "cond_fun" if not callable(cond_fun) else "body_fun"
        value = cond_fun if bad == "cond_fun" else body_fun
        raise ValueError(f"{bad}={value!r} is invalid: it must be a function of the loop's carry")
    fraction = straggler_fraction
    if isinstance(fraction, bool) or V.is_traced(fraction):
        raise ValueError(f"straggler_fraction={fraction!r} is invalid: it must be a number in [0, 1]")
    fraction = float(V.check_range("straggler_fraction", fraction, 0.0, 1.0, required=True))
    group = V.check_int("straggler_group", straggler_group)
    for _ in range(V.check_int("peel", peel, low=0)):
        init_val = _masked_iteration(cond_fun, body_fun, init_val)
    traced_with = options.current()
    if not traced_with.stragglers_one_by_one:
        return jax.lax.while_loop(cond_fun, body_fun, init_val)
    # What the functions close over becomes explicit operands: a batching rule sees only its arguments.
    cond_h, cond_consts, _ = _hoisted(cond_fun, init_val)
    body_h, body_consts, body_out = _hoisted(body_fun, init_val)
    # a weakly typed initial value that the body makes strong is made strong first (as lax.while_loop does)
    init_val = jax.tree.map(
        lambda x, o: jax.lax.convert_element_type(x, o.dtype) if jax.typeof(x).weak_type > o.weak_type else x,
        init_val,
        body_out,
    )
    loop = _Loop(cond_h, body_h, len(cond_consts), fraction, group, traced_with.straggler_min_lanes)
    leaves, tree = jax.tree.flatten((init_val, (*cond_consts, *body_consts)))
    carry = len(jax.tree.leaves(init_val))
    out = _STRAGGLER_LOOP_P.bind(*leaves, loop=loop, tree=tree, carry=carry, lanes=0)
    return jax.tree.unflatten(jax.tree.structure(init_val), out)


def _masked_iteration(cond_fun: Callable, body_fun: Callable, carry: Any) -> Any:
    """``body_fun(carry)`` where ``cond_fun(carry)``, else ``carry``: an iteration of a batched loop (its
    select of each lane's new or old carry), typed as the body returns it."""
    going = cond_fun(carry)

    def kept(new, old):
        out = jnp.where(going, new, old)
        return out if out.dtype == new.dtype else out.astype(new.dtype)  # (PRNG keys have no astype)

    return jax.tree.map(kept, body_fun(carry), carry)


def _hoisted(fun: Callable, example) -> tuple[Callable, list, Any]:
    """``fun`` as ``(g, consts, out)`` with ``g(c, *consts) == fun(c)``: every traced value ``fun`` closes
    over (integers included, which ``jax.closure_convert`` leaves closed over) becomes an argument;
    ``out``: the types of ``fun(example)``."""
    closed, out_shape = jax.make_jaxpr(fun, return_shape=True)(example)
    traced = [isinstance(c, jax.core.Tracer) for c in closed.consts]
    fixed = [c for c, t in zip(closed.consts, traced) if not t]
    out_tree = jax.tree.structure(out_shape)

    def g(c, *hoisted):
        given, kept = iter(hoisted), iter(fixed)
        consts = [next(given) if t else next(kept) for t in traced]
        out = jex.core.jaxpr_as_fun(jex.core.ClosedJaxpr(closed.jaxpr, consts))(*jax.tree.leaves(c))
        return jax.tree.unflatten(out_tree, out)

    return g, [c for c, t in zip(closed.consts, traced) if t], out_shape


class _PerLane:
    """A computation with a form for one lane (``alone``) and one for a batch of lanes on their leading
    axis (``batch``), both on the operands ``tree`` unflattens: what a primitive of this module lowers to."""

    def __init__(self) -> None:
        self._expanded: dict = {}

    def alone(self, *args):
        raise NotImplementedError

    def batch(self, *args):
        raise NotImplementedError

    def expanded(self, tree, lanes: int, avals: tuple) -> jex.core.ClosedJaxpr:
        """:meth:`alone`, or :meth:`batch` of ``lanes``, on flat operands of types ``avals``, traced once: a
        program traced again (a sweep from new factory objects) lowers it again."""
        key = (tree, lanes, avals)
        if key not in self._expanded:
            run = lambda *args: jax.tree.leaves(
                (self.batch if lanes else self.alone)(*jax.tree.unflatten(tree, args))
            )
            self._expanded[key] = jax.make_jaxpr(run)(*avals)
        return self._expanded[key]


class _Loop(_PerLane):
    """The loop of one :func:`while_loop` call: ``cond(c, *consts[:num_cond])``,
    ``body(c, *consts[num_cond:])``; ``alone`` runs it for one lane, ``batch`` for a batch of lanes."""

    def __init__(
        self,
        cond: Callable,
        body: Callable,
        num_cond: int,
        straggler_fraction: float,
        group: int,
        min_lanes: int,
    ):
        super().__init__()
        self.min_lanes = min_lanes
        self.cond = lambda c, k: cond(c, *k[:num_cond])
        self.body = lambda c, k: body(c, *k[num_cond:])
        self.straggler_fraction = straggler_fraction
        self.group = group

    def alone(self, c, k):
        """The plain loop on one lane's carry ``c`` and operands ``k``."""
        return jax.lax.while_loop(lambda c: self.cond(c, k), lambda c: self.body(c, k), c)

    def batch(self, c, k):
        """The loop on a batch of lanes (every array of ``c`` and ``k`` with the same leading axis)."""
        n = jax.tree.leaves(c)[0].shape[0]
        if n < self.min_lanes:  # the plain batched loop: too few lanes to lose much to stragglers
            return jax.vmap(self.alone)(c, k)
        stragglers = math.floor(self.straggler_fraction * n)
        # (carry, which lanes are running): the condition is evaluated once per lane and iteration

        def many_running(s):
            return jnp.count_nonzero(s[1]) > stragglers

        def batched_iteration(s):
            c, running = s
            stepped = jax.vmap(self.body)(c, k)
            c = jax.tree.map(lambda new, old: _where_lanes(running, new, old), stepped, c)
            return c, jax.vmap(self.cond)(c, k)

        s = (c, jax.vmap(self.cond)(c, k))
        if stragglers < n:  # (a fraction of 1: the stragglers' groups from the start, no batch loop)
            s = jax.lax.while_loop(many_running, batched_iteration, s)

        def any_running(s):
            return jnp.any(s[1])

        def next_lane(s):
            c, running = s
            i = jnp.argmax(running)
            lane = lambda a: jax.lax.dynamic_index_in_dim(a, i, keepdims=False)
            done = self.alone(jax.tree.map(lane, c), jax.tree.map(lane, k))
            c = jax.tree.map(lambda a, b: jax.lax.dynamic_update_index_in_dim(a, b, i, 0), c, done)
            return c, running.at[i].set(False)

        group = min(self.group, n)

        def next_group(s):
            # the first `group` lanes still running, filled up with a lane that is not (its loop
            # stops at once and it is written back unchanged)
            c, running = s
            idx = jnp.nonzero(running, size=group, fill_value=jnp.argmin(running))[0]
            take = lambda a: a[idx]
            done = jax.vmap(self.alone)(jax.tree.map(take, c), jax.tree.map(take, k))
            c = jax.tree.map(lambda a, b: a.at[idx].set(b), c, done)
            return c, running.at[idx].set(False)

        # one by one: each lane's loop unbatched (next_group would run it as a batch of one)
        c, _ = jax.lax.while_loop(any_running, next_lane if group == 1 else next_group, s)
        return c


#: The loop of a :func:`while_loop` call under ``stragglers_one_by_one``: operands the carry's leaves, then
#: the operands' (``tree`` of both; ``carry`` of them are the carry's), for one lane (``lanes`` = 0) or a
#: batch of ``lanes`` on their leading axis. A primitive, not a traced function: its batching rule
#: (nested ``vmap`` s merged into one batch of all their lanes) only changes ``lanes``, and the loop is
#: traced once, for the batch it ends up with, when the program is lowered (a ``custom_vmap`` traced the
#: plain loop and the batched loop of every ``vmap`` level: CR-Hvt-UCB's projection under a sweep's two
#: ``vmap`` s traced in 0.40 s, now 0.13 s, and lowers 0.14 s longer).
_STRAGGLER_LOOP_P = jex.core.Primitive("jaxbandit_straggler_loop")
_STRAGGLER_LOOP_P.multiple_results = True


@_STRAGGLER_LOOP_P.def_abstract_eval
def _straggler_loop_abstract(*avals, loop, tree, carry, lanes):
    return avals[:carry]


def _lanes_merged(primitive: jex.core.Primitive) -> Callable:
    """The batching rule of ``primitive`` (a parameter ``lanes``: 0 for one lane, else the batch on the
    leading axis of every operand): every operand batched on its leading axis, a batch of batches merged
    into one batch of all their lanes."""

    def rule(args, dims, *, lanes, **params):
        size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
        at_front = [
            jnp.broadcast_to(a, (size, *jnp.shape(a))) if d is None else jnp.moveaxis(a, d, 0)
            for a, d in zip(args, dims)
        ]
        if lanes:  # a batch of batches: one batch of all their lanes
            flat = [a.reshape((size * lanes, *a.shape[2:])) for a in at_front]
            out = primitive.bind(*flat, lanes=size * lanes, **params)
            out = [a.reshape((size, lanes, *a.shape[1:])) for a in out]
        else:
            out = primitive.bind(*at_front, lanes=size, **params)
        return out, [0] * len(out)

    return rule


def _expanded_call(*args, tree, lanes, **params):
    """What a primitive of this module computes (its lowering, and its value outside ``jit``): the
    :meth:`_PerLane.expanded` form of its one ``_PerLane`` parameter (``loop`` or ``branches``)."""
    (per_lane,) = (v for v in params.values() if isinstance(v, _PerLane))
    closed = per_lane.expanded(tree, lanes, tuple(jax.typeof(a) for a in args))
    return jex.core.jaxpr_as_fun(closed)(*args)


def _register_per_lane(primitive: jex.core.Primitive) -> None:
    """``primitive``'s value outside ``jit``, its batching rule and its lowering."""
    primitive.def_impl(_expanded_call)
    vmap_rules.primitive_batchers[primitive] = _lanes_merged(primitive)
    mlir.register_lowering(primitive, mlir.lower_fun(_expanded_call, multiple_results=True))


_register_per_lane(_STRAGGLER_LOOP_P)


class _Branches(_PerLane):
    """The branches of one :func:`cond_any` call, ``true(o, *consts[:num_true])`` and
    ``false(o, *consts[num_true:])`` on its operands ``o``: ``alone`` for one lane, ``batch`` for a batch."""

    def __init__(self, true: Callable, false: Callable, num_true: int, group: int, out_types: tuple):
        super().__init__()
        self.true = lambda o, k: true(o, *k[:num_true])
        self.false = lambda o, k: false(o, *k[num_true:])
        self.group = group
        self.out_types = out_types  #: one lane's result types

    def alone(self, p, o, k):
        return jax.lax.cond(p, lambda: self.true(o, k), lambda: self.false(o, k))

    def batch(self, p, o, k):
        """``false`` for every lane, then ``true`` for the lanes whose ``p`` holds: ``group`` at a time, or
        for the whole batch at once when they are more than a quarter of it (as many groups would take
        long: on a GPU, a batch of 10⁵ lanes half of which take it)."""
        n = p.shape[0]
        group = min(self.group, n)

        def next_group(s):
            out, left = s
            # the first `group` lanes left, padded with an index past the batch: read clipped, not written
            idx = jnp.nonzero(left, size=group, fill_value=n)[0]
            take = lambda a: jnp.take(a, idx, axis=0, mode="clip")
            done = jax.vmap(self.true)(jax.tree.map(take, o), jax.tree.map(take, k))
            out = jax.tree.map(lambda a, b: a.at[idx].set(b, mode="drop"), out, done)
            return out, left.at[idx].set(False, mode="drop")

        def in_groups(out):
            return jax.lax.while_loop(lambda s: jnp.any(s[1]), next_group, (out, p))[0]

        def whole_batch(out):
            return jax.tree.map(lambda t, f: _where_lanes(p, t, f), jax.vmap(self.true)(o, k), out)

        out = jax.vmap(self.false)(o, k)
        if group >= n // 4:  # groups never fewer than the quarter: no whole-batch form to compile
            return in_groups(out)
        return jax.lax.cond(jnp.count_nonzero(p) > n // 4, whole_batch, in_groups, out)


#: A :func:`cond_any` call: operands the predicate, the operands' leaves and the branches' hoisted values
#: (``tree``), for one lane (``lanes`` = 0) or a batch of ``lanes``. A primitive for the reasons
#: ``_STRAGGLER_LOOP_P`` is one: nested ``vmap`` s become one batch, whose lanes are gathered across them,
#: and the branches are traced once, for that batch, when the program is lowered (a ``custom_vmap`` that
#: called itself under every ``vmap`` level compiled four copies of GAdaOFUL's projection: +5 s).
_COND_ANY_P = jex.core.Primitive("jaxbandit_cond_any")
_COND_ANY_P.multiple_results = True


@_COND_ANY_P.def_abstract_eval
def _cond_any_abstract(*avals, branches, tree, lanes):
    """The result types known when the branches were hoisted: no branch is traced again here."""
    return [a.update(shape=(lanes, *a.shape)) if lanes else a for a in branches.out_types]


_register_per_lane(_COND_ANY_P)


def _batched_result(out):
    """A custom_vmap rule's result: ``out``, every leaf batched."""
    return out, jax.tree.map(lambda _: True, out)


def _where_lanes(keep, new, old):
    """``new`` in the lanes where ``keep`` `[n]`, else ``old``."""
    return jnp.where(keep.reshape(keep.shape + (1,) * (new.ndim - 1)), new, old)
