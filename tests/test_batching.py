"""The batching rules: batching.while_loop under vmap inside stragglers_one_by_one (the first iterations
batched and then the lanes still running one by one — the plain loop's results, bitwise, with the
stragglers run unbatched; the robust regressions' refits and the projection onto the ball), and
batching.lapack inside lapack_per_matrix (one matrix a call, the same bits)."""

from __future__ import annotations

import functools
import re

import jax
import jax.extend as jex
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import record_programs
from test_linalg import random_spd

import jaxbandit as jb
from jaxbandit.agents import robust_regression as rr
from jaxbandit.core.lowering import batching, options


@pytest.fixture(autouse=True)
def small_batches_too():
    """The rule for the tests' batches of 7–21 lanes (below the trace option ``straggler_min_lanes`` a
    batch runs the plain loop)."""
    with options.tracing(straggler_min_lanes=1):
        yield


def newton_sqrt(a, scale, limit, straggler_fraction=0.25, straggler_group=1):
    """√a by Newton's method from a, to a relative residual of 1e-6: 1–14 iterations by lane. Closes over
    a batched float (``a``), a batched integer (``limit``) and an unbatched float (``scale``)."""

    def cond(c):
        x, k = c
        return (k < limit) & (jnp.abs(x * x - a) > 1e-6 * a)

    def body(c):
        x, k = c
        return (0.5 * (x + a / x)) * scale, k + 1

    return batching.while_loop(
        cond, body, (a, jnp.int32(0)), straggler_fraction=straggler_fraction, straggler_group=straggler_group
    )


def _while_carries(jaxpr, depth=0, found=None):
    """(nesting depth, carry shapes) of every while loop in ``jaxpr``, inner loops included, those of
    ``batching.while_loop`` as lowered."""
    found = [] if found is None else found
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "jaxbandit_straggler_loop":
            lowered = functools.partial(batching._expanded_call, **eqn.params)
            _while_carries(jax.make_jaxpr(lowered)(*(v.aval for v in eqn.invars)).jaxpr, depth, found)
            continue
        inner = depth
        if eqn.primitive.name == "while":
            found.append((depth, tuple(v.aval.shape for v in eqn.params["body_jaxpr"].jaxpr.outvars)))
            inner = depth + 1
        for sub in jex.core.jaxprs_in_params(eqn.params):
            _while_carries(sub, inner, found)
    return found


def _inputs():
    rng = np.random.default_rng(0)
    a = 10.0 ** rng.uniform(-3, 6, (3, 7))
    a[0, :2] = 1.0, 1.001  # done at once, done after one iteration
    a = jnp.asarray(a, jnp.float32)
    limit = jnp.asarray(rng.integers(3, 30, (3, 7)), jnp.int32)
    return a, limit


@pytest.mark.parametrize("fraction", [0.0, 0.25, 0.5, 1.0])
def test_stragglers_one_by_one_give_the_plain_loops_results_and_run_unbatched(fraction):
    a, limit = _inputs()
    loop = functools.partial(newton_sqrt, straggler_fraction=fraction)
    expected = jax.jit(jax.vmap(jax.vmap(loop, (0, None, 0)), (0, None, 0)))(a, 1.0, limit)
    # new functions: jit and make_jaxpr reuse a trace made outside the context
    loop = functools.partial(newton_sqrt, straggler_fraction=fraction)
    two_vmaps = jax.vmap(jax.vmap(loop, (0, None, 0)), (0, None, 0))
    with batching.stragglers_one_by_one():
        got = jax.jit(two_vmaps)(a, 1.0, limit)
        one_vmap = jax.jit(jax.vmap(loop, (0, None, 0)))(a[1], 1.0, limit[1])
        jaxpr = jax.make_jaxpr(two_vmaps)(a, 1.0, limit).jaxpr
        alone = jax.jit(loop)(a[2, 3], 1.0, limit[2, 3])
    iterations = np.asarray(expected[1])
    assert iterations.min() <= 1 and iterations.max() > 3
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))
    for e, g in zip(expected, one_vmap):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e)[1])
    for e, g in zip(expected, alone):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e)[2, 3])
    # the two vmaps are one batch of 21 lanes: a batched loop (carry and which lanes run; none with a
    # fraction of 1, where it could never run), then the stragglers' loop inside the loop over them, on
    # one lane's scalars
    batched = [(0, ((21,), (21,), (21,)))] if fraction < 1 else []
    assert _while_carries(jaxpr) == [*batched, (0, ((21,), (21,), (21,))), (1, ((), ()))]


@pytest.mark.parametrize("fraction, group", [(0.25, 3), (1.0, 4), (1.0, 21), (0.5, 64)])
def test_stragglers_in_groups_give_the_plain_loops_results(fraction, group):
    """The stragglers taken ``group`` at a time (a batched loop over each group, the last one filled up
    with a lane that has stopped), 21 lanes of 1–14 iterations: the plain loop's bits."""
    a, limit = _inputs()
    loop = functools.partial(newton_sqrt, straggler_fraction=fraction, straggler_group=group)
    expected = jax.jit(jax.vmap(jax.vmap(loop, (0, None, 0)), (0, None, 0)))(a, 1.0, limit)
    loop = functools.partial(newton_sqrt, straggler_fraction=fraction, straggler_group=group)
    two_vmaps = jax.vmap(jax.vmap(loop, (0, None, 0)), (0, None, 0))
    with batching.stragglers_one_by_one():
        got = jax.jit(two_vmaps)(a, 1.0, limit)
        jaxpr = jax.make_jaxpr(two_vmaps)(a, 1.0, limit).jaxpr
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))
    # the batched loop (none with a fraction of 1), the loop over groups, and inside it the loop of one
    # group (at most 21 lanes)
    lanes = min(group, 21)
    batched = [(0, ((21,), (21,), (21,)))] if fraction < 1 else []
    assert _while_carries(jaxpr) == [*batched, (0, ((21,), (21,), (21,))), (1, ((lanes,), (lanes,)))]


@pytest.mark.parametrize("min_lanes", [10, 22])
def test_min_lanes_counts_the_lanes_of_nested_vmaps_together(min_lanes):
    """3 × 7 lanes: the rule when ``straggler_min_lanes`` ≤ 21 even though each vmap alone is below it,
    else the plain batched loop; the plain loop's bits either way."""
    a, limit = _inputs()
    loop = functools.partial(newton_sqrt, straggler_group=4)
    f = jax.vmap(jax.vmap(loop, (0, None, 0)), (0, None, 0))
    expected = jax.jit(f)(a, 1.0, limit)
    loop = functools.partial(newton_sqrt, straggler_group=4)
    f = jax.vmap(jax.vmap(loop, (0, None, 0)), (0, None, 0))
    with options.tracing(straggler_min_lanes=min_lanes), batching.stragglers_one_by_one():
        got = jax.jit(f)(a, 1.0, limit)
        loops = _while_carries(jax.make_jaxpr(f)(a, 1.0, limit).jaxpr)
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))
    if min_lanes <= 21:  # the batched loop, the loop over groups, one group's loop
        assert loops == [(0, ((21,), (21,), (21,))), (0, ((21,), (21,), (21,))), (1, ((4,), (4,)))]
    else:
        assert loops == [(0, ((21,), (21,)))]


def test_outside_the_context_the_loop_is_lax_while_loop():
    a, limit = _inputs()
    f = jax.vmap(jax.vmap(functools.partial(newton_sqrt), (0, None, 0)), (0, None, 0))
    loops = _while_carries(jax.make_jaxpr(f)(a, 1.0, limit).jaxpr)
    assert loops == [(0, ((3, 7), (3, 7)))]


def test_lanes_that_never_run_and_lanes_done_after_one_iteration():
    a, limit = _inputs()
    f = jax.jit(jax.vmap(functools.partial(newton_sqrt), (0, None, 0)))
    zero = jnp.zeros_like(limit[0])  # no lane runs
    with batching.stragglers_one_by_one():
        got = f(a[0], 1.0, zero)
        short = f(a[0], 1.0, jnp.ones_like(zero))  # every lane done after the batched iteration
    np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(a[0]))
    np.testing.assert_array_equal(np.asarray(got[1]), 0)
    np.testing.assert_array_equal(np.asarray(short[0]), np.asarray(0.5 * (a[0] + 1.0)))


def test_refits_of_a_batch_are_bitwise_the_plain_loops_with_the_same_passes():
    """robust_regression.solve (GAdaOFUL's and Heavy-OFUL's refit) on lanes with different histories and
    warm starts: some take several Newton iterations and line-search halvings, most one."""
    rng = np.random.default_rng(3)
    lanes, d, horizon = 12, 4, 40
    hist = rr.History(
        XT=jnp.asarray(rng.normal(size=(lanes, d, horizon)), jnp.float32),
        r=jnp.asarray(rng.standard_t(2.0, size=(lanes, horizon)), jnp.float32),
        sigma=jnp.asarray(rng.uniform(0.5, 2.0, size=(lanes, horizon)), jnp.float32),
        tau=jnp.asarray(rng.uniform(0.2, 3.0, size=(lanes, horizon)), jnp.float32),
        filled=jnp.asarray(rng.integers(1, horizon + 1, lanes), jnp.int32),
    )
    theta0 = jnp.asarray(rng.normal(size=(lanes, d)) * rng.choice([0.0, 0.01, 3.0], (lanes, 1)), jnp.float32)

    def refit(th, h):
        start = rr.evaluate(th, h, 0.5, rr.pseudo_huber)
        return rr.solve(start, h, 0.5, 1.0, rr.pseudo_huber)

    # every other lane warm-started at its solution: done within one pass
    solved = jax.jit(jax.vmap(refit))(theta0, hist).theta
    theta0 = jnp.where((jnp.arange(lanes) % 2 == 0)[:, None], solved, theta0)
    expected = jax.jit(jax.vmap(refit))(theta0, hist)
    with batching.stragglers_one_by_one():
        got = jax.jit(jax.vmap(lambda th, h: refit(th, h)))(theta0, hist)
    passes = np.asarray(expected.passes)
    assert passes.min() <= 1 < passes.max()
    for e, g in zip(jax.tree.leaves(expected), jax.tree.leaves(got)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))


def _projection_inputs():
    """16 lanes of ``project_ball_in_metric``'s arguments (d = 10): 12 inside the ball, one barely outside,
    three far outside with an ill-conditioned V (many Newton iterations)."""
    rng = np.random.default_rng(5)
    lanes, d = 16, 10
    conds = [2.0] * 13 + [1e3] * 3
    A = np.stack([np.linalg.inv(random_spd(rng, d, c)) for c in conds])
    tt = rng.normal(size=(lanes, d))
    scales = [0.5] * 12 + [1.001, 50.0, 50.0, 20.0]
    tt = tt * np.asarray(scales)[:, None] / np.linalg.norm(tt, axis=1, keepdims=True)
    A = jnp.asarray((A + np.swapaxes(A, 1, 2)) / 2, jnp.float32)
    return jnp.asarray(tt, jnp.float32), A


def test_projections_of_a_batch_are_bitwise_the_plain_loops_with_the_runs_outside_in_groups():
    """linalg.project_ball_in_metric (CR-Hvt-UCB's and OMD-GLB's projection): a batch whose few lanes
    outside the ball iterate in a group of their own gives the plain batched loop's bits. The choice is
    part of the jitted projection's cache key: a trace made outside the context is not reused inside it,
    nor the reverse."""
    tt, A = _projection_inputs()
    project = lambda t, a: jb.linalg.project_ball_in_metric(t, a, 1.0)
    plain = jax.jit(jax.vmap(project))
    expected = plain(tt, A)
    with batching.stragglers_one_by_one():
        got = jax.jit(jax.vmap(lambda t, a: project(t, a)))(tt, A)
        inside = _while_carries(jax.make_jaxpr(jax.vmap(project))(tt, A).jaxpr)
    outside = _while_carries(jax.make_jaxpr(jax.vmap(project))(tt, A).jaxpr)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))
    norms = np.linalg.norm(np.asarray(got, np.float64), axis=1)
    assert np.all(norms[12:] <= 1.0 + 1e-6) and np.all(norms[12:] > 0.99)
    np.testing.assert_array_equal(np.asarray(got)[:12], np.asarray(tt)[:12])
    # (counter, μ, θ, converged): batched, then the loop over the stragglers' groups of 16 lanes
    batched = ((16,), (16,), (16, 10), (16,))
    assert inside == [(0, (*batched, (16,))), (0, (*batched, (16,))), (1, batched)]
    assert outside == [(0, batched)]


def test_a_sweep_runs_stragglers_one_by_one_on_one_cpu_device_unless_told_not_to(monkeypatch):
    programs = record_programs(monkeypatch)
    make_env = lambda p: jb.envs.linear(
        3, 4, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(0.0)
    )
    grid = {"C": [0.0]}
    alg = lambda p: jb.gadaoful(6, 3, nu=1.5, corruption=p["C"])
    run = lambda **kw: jb.sweep(alg, make_env, grid, horizon=6, **kw)
    run()
    assert programs and all(p.trace.stragglers_one_by_one for p in programs)
    programs.clear()
    run(options=jb.ExecutionOptions(stragglers_one_by_one=False))
    assert programs and not any(p.trace.stragglers_one_by_one for p in programs)
    with pytest.raises(ValueError, match=r"options\.stragglers_one_by_one='yes' is invalid"):
        run(options=jb.ExecutionOptions(stragglers_one_by_one="yes"))


@pytest.mark.parametrize("peel", [1, 2, 5])
@pytest.mark.parametrize("stragglers", [False, True])
def test_peeled_iterations_give_the_plain_loops_results(peel, stragglers):
    """The first ``peel`` iterations run before the loop, each lane's carry kept where its condition is
    false (lanes done at once, after one iteration, limits of 3 below 5 peeled iterations): bitwise
    ``lax.while_loop``'s results, under vmap (the whole batch, or with the stragglers one by one) and for
    a lane alone."""
    a, limit = _inputs()

    def plain(a, limit):
        return newton_sqrt(a, 1.0, limit)

    def peeled(a, limit):
        def cond(c):
            x, k = c
            return (k < limit) & (jnp.abs(x * x - a) > 1e-6 * a)

        def body(c):
            x, k = c
            return 0.5 * (x + a / x), k + 1

        return batching.while_loop(cond, body, (a, jnp.int32(0)), peel=peel)

    reference = jax.jit(jax.vmap(jax.vmap(plain)))(a, limit)  # outside the context: lax.while_loop
    with batching.stragglers_one_by_one(stragglers):
        got = jax.jit(jax.vmap(jax.vmap(peeled)))(a, limit)
        alone = jax.jit(peeled)(a[0, 3], limit[0, 3])
    assert int(jnp.min(limit)) == 3 and int(jnp.max(reference[1])) > 5  # lanes stop before and after
    for r, g in zip(reference, got):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(r))
    for r, g in zip(reference, alone):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(r[0, 3]))
    np.testing.assert_allclose(
        np.asarray(got[0])[got[1] < limit], np.sqrt(np.asarray(a))[got[1] < limit], rtol=1e-5
    )


def test_bad_arguments_are_named():
    body = lambda c: c + 1
    with pytest.raises(ValueError, match=r"cond_fun=1 is invalid: it must be a function"):
        batching.while_loop(1, body, 0)
    with pytest.raises(ValueError, match=r"body_fun=None is invalid"):
        batching.while_loop(lambda c: c < 3, None, 0)
    for bad in (-0.1, 1.5, True, "half", float("nan"), None):
        with pytest.raises(ValueError, match="straggler_fraction"):
            batching.while_loop(lambda c: c < 3, body, 0, straggler_fraction=bad)
    for bad in (0, -2, 1.5, True, "4"):
        with pytest.raises(ValueError, match="straggler_group"):
            batching.while_loop(lambda c: c < 3, body, 0, straggler_group=bad)
    for bad in (-1, 1.5, True, "1"):
        with pytest.raises(ValueError, match=f"peel={bad!r} is invalid"):
            batching.while_loop(lambda c: c < 3, body, 0, peel=bad)
    with pytest.raises(ValueError, match="enabled='yes' is invalid"):
        with batching.stragglers_one_by_one("yes"):
            pass


def _operand_shapes(jaxpr, primitive: str) -> list[tuple]:
    """The operand shapes of every ``primitive`` equation in ``jaxpr``, its loops' bodies included."""
    shapes = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == primitive:
            shapes += [tuple(v.aval.shape) for v in eqn.invars]
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    shapes += _operand_shapes(inner, primitive)
    return shapes


@pytest.mark.parametrize(
    "name, fn, primitive",
    [
        ("eigh", lambda A, b: batching.lapack(jnp.linalg.eigh, A), "eigh"),
        ("cholesky", lambda A, b: batching.lapack(jnp.linalg.cholesky, A), "cholesky"),
        (
            "triangular solve, right-hand side shared",
            lambda A, b: batching.lapack(
                functools.partial(jax.scipy.linalg.solve_triangular, lower=True), jnp.linalg.cholesky(A), b
            ),
            "triangular_solve",
        ),
    ],
)
def test_lapack_per_matrix_calls_the_routine_one_matrix_at_a_time_with_the_same_bits(name, fn, primitive):
    """Under two vmaps (streams, lanes), ``batching.lapack`` is one batched call `[3, 5, d, d]`; inside
    ``lapack_per_matrix()`` every call takes one `[d, d]` matrix (the batch is a loop), and the results are
    bitwise the batched call's (the same routine on the same matrices)."""
    rng = np.random.default_rng(0)
    A = jnp.asarray(np.stack([[random_spd(rng, 4, 50.0) for _ in range(5)] for _ in range(3)]), jnp.float32)
    b = jnp.asarray(rng.normal(size=4), jnp.float32)  # shared by the batch (not batched)
    batched = lambda: jax.vmap(jax.vmap(fn, in_axes=(0, None)), in_axes=(0, None))
    assert set(_operand_shapes(jax.make_jaxpr(batched())(A, b).jaxpr, primitive)) >= {(3, 5, 4, 4)}
    expected = jax.jit(batched())(A, b)
    with batching.lapack_per_matrix():
        shapes = _operand_shapes(jax.make_jaxpr(batched())(A, b).jaxpr, primitive)
        got = jax.jit(batched())(A, b)
    assert shapes and all(len(s) <= 2 for s in shapes), shapes  # [d, d], [d] or [d, 1]: one matrix
    for g, e in zip(jax.tree.leaves(got), jax.tree.leaves(expected)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))


def test_lapack_names_a_bad_argument():
    with pytest.raises(ValueError, match=r"fn='eigh' is invalid: it must be a LAPACK routine"):
        batching.lapack("eigh", jnp.eye(2))
    with pytest.raises(ValueError, match=r"enabled='yes' is invalid: it must be True or False"):
        with batching.lapack_per_matrix("yes"):
            pass


def test_linalg_keeps_the_lapack_names():
    """The LAPACK rule's names moved from ``linalg`` to ``batching``; the old public names still work."""
    from jaxbandit.core import linalg

    assert linalg.lapack is batching.lapack and linalg.lapack_per_matrix is batching.lapack_per_matrix


def test_the_loops_types_are_lax_while_loops():
    """A weakly typed initial value that the body makes strong comes out strong, as from lax.while_loop,
    and one the body keeps weak stays weak (the types a caller's arithmetic promotes by)."""
    cond = lambda c: c[0] < 5.0
    body = lambda c: (c[0] + jnp.float32(1.0), c[1] + 1)
    expected = jax.eval_shape(lambda x: jax.lax.while_loop(cond, body, (x, 0)), 1.0)
    assert [s.weak_type for s in expected] == [False, True]

    def loop(x):
        with batching.stragglers_one_by_one():
            return batching.while_loop(cond, body, (x, 0))

    assert jax.eval_shape(loop, 1.0) == expected
    assert jax.eval_shape(jax.vmap(loop), jnp.arange(3.0))[0].dtype == jnp.float32
    np.testing.assert_array_equal(jax.vmap(loop)(jnp.arange(3.0))[1], [5, 4, 3])


def _cond_any_of(true_calls: list, group: int = 16):
    """f(p, x, s) = cond_any(p, 2x + s, x), whose true branch appends to ``true_calls`` when it runs."""

    def true_fun(x, s):
        jax.debug.callback(lambda: true_calls.append(1))
        return 2.0 * x + s

    return lambda p, x, s: batching.cond_any(p, true_fun, lambda x, s: x, x, s, group=group)


def test_cond_any_runs_the_true_branch_only_when_a_lane_takes_it():
    """Under two vmaps (streams × lanes), the true branch runs once for the whole batch when some lane's
    predicate holds and not at all when none does (lax.cond would run it for every lane, always), and
    every lane's value is its own branch's, as for the lane alone."""
    calls: list = []
    f = _cond_any_of(calls)
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(2, 3, 4)), jnp.float32)
    batched = jax.jit(jax.vmap(jax.vmap(f, in_axes=(0, 0, None)), in_axes=(0, 0, None)))
    none = np.zeros((2, 3), bool)
    np.testing.assert_array_equal(np.asarray(batched(none, x, 1.0)), np.asarray(x))
    jax.effects_barrier()
    assert calls == []
    some = none.copy()
    some[1, 2] = True
    got = np.asarray(batched(some, x, 1.0))
    jax.effects_barrier()
    assert len(calls) == 1
    alone = jax.jit(f)
    for i in range(2):
        for j in range(3):
            expected = np.asarray(alone(some[i, j], x[i, j], 1.0))
            np.testing.assert_array_equal(got[i, j], expected)
    assert not np.array_equal(got[1, 2], np.asarray(x[1, 2]))


@pytest.mark.parametrize("taken", [1, 3, 4, 5, 9, 20])
def test_cond_any_gives_every_lane_its_own_branch_with_few_or_many_lanes_taking_the_true_one(taken):
    """A batch of 2 × 10 lanes, ``group`` 4: up to four lanes of a stream take the gathered path, more the
    whole batch's; either way every lane's value is bitwise its value alone."""
    f = _cond_any_of([], group=4)
    rng = np.random.default_rng(taken)
    x = jnp.asarray(rng.normal(size=(2, 10, 3)), jnp.float32)
    p = np.zeros(20, bool)
    p[rng.choice(20, taken, replace=False)] = True
    p = p.reshape(2, 10)
    got = np.asarray(jax.jit(jax.vmap(jax.vmap(f, in_axes=(0, 0, None)), in_axes=(0, 0, None)))(p, x, 0.5))
    alone = jax.jit(f)
    for i in range(2):
        for j in range(10):
            np.testing.assert_array_equal(got[i, j], np.asarray(alone(p[i, j], x[i, j], 0.5)))
    np.testing.assert_array_equal(got[p], 2.0 * np.asarray(x)[p] + np.float32(0.5))
    np.testing.assert_array_equal(got[~p], np.asarray(x)[~p])


def test_cond_any_names_bad_arguments():
    with pytest.raises(ValueError, match=r"group=0 is invalid"):
        batching.cond_any(True, lambda: 1.0, lambda: 0.0, group=0)
    with pytest.raises(ValueError, match=r"pred of shape \(2,\) and dtype bool is invalid"):
        batching.cond_any(jnp.array([True, False]), lambda: 1.0, lambda: 0.0)
    with pytest.raises(ValueError, match=r"false_fun=3 is invalid"):
        batching.cond_any(True, lambda: 1.0, 3)
    with pytest.raises(ValueError, match=r"true_fun and false_fun are invalid: they must return the same"):
        batching.cond_any(True, lambda x: x, lambda x: x[:2], jnp.ones(3))


def test_cond_any_with_a_predicate_shared_by_the_batch():
    """A predicate not batched (the same for every lane) is one lax.cond over the batch."""
    calls: list = []
    f = jax.jit(jax.vmap(_cond_any_of(calls), in_axes=(None, 0, None)))
    x = jnp.arange(6.0, dtype=jnp.float32).reshape(3, 2)
    np.testing.assert_array_equal(np.asarray(f(False, x, 1.0)), np.asarray(x))
    np.testing.assert_array_equal(np.asarray(f(True, x, 1.0)), np.asarray(2.0 * x + 1.0))
    jax.effects_barrier()
    assert len(calls) == 1


def test_cond_any_traces_its_branches_in_the_callers_contexts():
    """The branches are batched when the program is lowered, after the call has returned: inside
    ``lapack_per_matrix()`` a branch's LAPACK call must still take one matrix a call (a batched one
    would make jb.sweep run its groups one after another), and outside it be one batched call."""
    rng = np.random.default_rng(0)
    A = jnp.asarray(np.stack([random_spd(rng, 4, 10.0) for _ in range(5)]), jnp.float32)

    def f(p, A):
        eigenvalues = lambda A: batching.lapack(jnp.linalg.eigh, A)[0]
        return batching.cond_any(p, eigenvalues, lambda A: jnp.zeros(4, A.dtype), A, group=5)

    p = jnp.ones(5, bool)

    def lapack_batch_dims() -> set[str]:
        text = jax.jit(jax.vmap(f)).lower(p, A).as_text()
        return set(re.findall(r'custom_call @lapack_\w+.*?num_batch_dims = "(\d+)"', text))

    assert lapack_batch_dims() == {"1"}
    with batching.lapack_per_matrix():
        assert lapack_batch_dims() == {"0"}
        got = jax.jit(jax.vmap(f))(p, A)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(jax.jit(jax.vmap(f))(p, A)))
