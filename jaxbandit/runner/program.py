"""The traced programs of a sweep: the initial states of every run (:func:`init_streams`) and a chunk of
rounds of every run (:func:`run_chunk`), laid out as streams × lanes.

A stream is one seed at one value of the grid's stream axes (θ*, contexts, η_t, ν_t); its lanes are the
values of the other axes, each carrying one state per algorithm run in lockstep. A chunk is a
``lax.scan`` over rounds of a ``vmap`` over streams of a ``vmap`` over lanes: each round's stream is
drawn once and fed to every lane. How the program is traced (blocks drawn ahead, the carry's layout, the
contexts' layout, the trace options core and envs read) is its :class:`ProgramOptions`, resolved by the
plan (``runner.plan``); every choice gives the same values.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ..core.dtypes import float_dtype
from ..core.lowering import options
from ..core.lowering.xla_options import library_jit
from ..core.types import EnvState, Round
from . import accumulate
from .simulate import AGENT_KEY, agent_keys, respond_and_learn

Array = jax.Array

#: Changes whenever the carry a checkpoint holds changes shape, so that an old checkpoint is not resumed.
LAYOUT = "streams-x-lanes/2"


class Layout(NamedTuple):
    """The grid's axes split into those that change the stream and the others (static)."""

    stream_names: tuple[str, ...]
    agent_names: tuple[str, ...]


class ProgramOptions(NamedTuple):
    """How a chunk's program is traced (static; resolved by ``runner.plan``), the same values every way.

    - ``ahead``: rounds drawn at once in blocks (a divisor of the chunk; 0: each round draws in its own
      step);
    - ``runs_minor``: the rounds carry the lanes' states `[..., S, G]` (runs on the minor axes);
    - ``by_component``: each stream's contexts materialised components first (`[d, K]`);
    - ``trace``: the trace options the algorithms and the stream are traced with
      (``lowering.options.TraceOptions``).
    """

    ahead: int = 0
    runs_minor: bool = False
    by_component: bool = False
    trace: options.TraceOptions = options.TraceOptions()


class Statics(NamedTuple):
    """The static arguments of :func:`run_chunk`, in order (``run_chunk(*statics, ...)``): the algorithms'
    factories (a tuple), the environment's, the layout, the horizon, whether every round is kept, and
    the :class:`ProgramOptions`."""

    make_algs: tuple
    make_env: Any
    layout: Layout
    horizon: int
    per_round: bool
    program: ProgramOptions


class Lane(NamedTuple):
    """What one run carries besides its stream: the algorithm, the adversary, the running sums."""

    alg_state: Any
    adversary: Any
    cum_regret: accumulate.RunningSum
    spent: accumulate.RunningSum


class StreamCarry(NamedTuple):
    """One stream (a seed at one value of the stream axes) and its lanes `[G]`, one :class:`Lane` per
    algorithm that the stream serves (several when they run in lockstep)."""

    round_key: Array
    agent_key: Array
    theta_star: Array
    lanes: tuple[Lane, ...]


def streams_traced(trace: options.TraceOptions) -> options.TraceOptions:
    """The trace options of what a program computes per stream (θ*, the draws, the initial states):
    ``trace`` without the lanes' batching rules (solver loops' stragglers, LAPACK calls one matrix per
    call), which serve the algorithms' batched updates; a stream's loops (a sampler's rejection loop) run
    as plain batched loops."""
    return trace._replace(stragglers_one_by_one=False, lapack_per_matrix=False)


def point(layout: Layout, stream_values: Array, agent_values: Array) -> dict:
    """The grid point ``{name: value}`` of a stream's values `[stream axes]` and a lane's `[lane axes]`."""
    values = {n: stream_values[i] for i, n in enumerate(layout.stream_names)}
    values.update({n: agent_values[i] for i, n in enumerate(layout.agent_names)})
    return values


@library_jit(static_argnums=(0, 1, 2, 3), beside=True)
def init_streams(
    make_algs,
    make_env,
    layout: Layout,
    trace: options.TraceOptions,
    stream_params,
    agent_params,
    base_key,
    stream_seeds,
):
    """θ*, the keys and every lane's initial state, per stream `[S]` and lane `[S, G]`; stream s runs
    with ``fold_in(base_key, stream_seeds[s])`` (folded here: an eager fold_in is one more compilation).
    Traced with the trace options ``trace`` as :func:`streams_traced` gives them."""

    def per_stream(sp, seed):
        key = jax.random.fold_in(base_key, seed)
        # The stream does not depend on the lanes' axes, so any lane's values build it.
        stream = make_env(point(layout, sp, agent_params[0])).stream
        key_env, key_rounds = jax.random.split(key)

        def per_lane(ap):
            values = point(layout, sp, ap)
            zero = accumulate.zero(float_dtype())
            adversary = make_env(values).adversary
            return tuple(Lane(make(values).init(), adversary.init(), zero, zero) for make in make_algs)

        return StreamCarry(
            key_rounds,
            jax.random.fold_in(key, AGENT_KEY),
            stream.init(key_env),
            jax.vmap(per_lane)(agent_params),
        )

    with options.tracing(streams_traced(trace)):
        return jax.vmap(per_stream)(stream_params, stream_seeds)


@library_jit(static_argnums=(0, 1, 2, 3, 4, 5))
def run_chunk(
    make_algs,
    make_env,
    layout: Layout,
    horizon: int,
    per_round: bool,
    program: ProgramOptions,
    stream_params,
    agent_params,
    carry,
    rounds,
):
    """Rounds ``rounds`` `[n]` of every run of the algorithms ``make_algs`` (all fed each round's one
    draw); outputs `[S, n, G, algorithms]`. The last chunk is padded past the horizon so that every chunk
    has one shape (one compilation); padded rounds add nothing to the recorded sums, and the state they
    leave behind is never used.

    ``program.ahead`` > 0 (a divisor of n): the rounds run in blocks of ``ahead``, each block's draws made
    at once (a ``vmap`` over its rounds) before its rounds run, so that the stream's loops (a sampler's
    rejection loop) run once a block instead of once a round, and the lanes read the draws from memory.
    ``ahead`` = 0: each round draws in its own step, the draw :func:`computed_once` per stream before the
    lanes read it (left to itself, XLA fuses the contexts' arithmetic into every lane's UCB sums, each lane
    computing it again: a 16-point grid ran 1.5× slower so). ``program.runs_minor``: the rounds carry the
    lanes' states `[..., S, G]`. ``program.by_component``: each stream's contexts are materialised
    components first. ``program.trace``: the trace options of the algorithms (LAPACK calls one matrix per
    call, solver loops' stragglers one by one, peeled loops) and, as :func:`streams_traced` gives them, of
    the stream (peeled loops, the sphere's bits). The same values every way."""
    ahead, runs_minor, by_component = program.ahead, program.runs_minor, program.by_component

    def draw(sp, round_key, theta_star, t) -> Round:
        stream = make_env(point(layout, sp, agent_params[0])).stream
        return stream.draw(jax.random.fold_in(round_key, t), theta_star, t)

    def play(sp, c: StreamCarry, t, rnd: Round):
        """Round ``t`` of one stream's lanes, fed its draw ``rnd``."""
        keys = agent_keys(c.agent_key, t)

        def per_lane(ap, lanes: tuple[Lane, ...]):
            values = point(layout, sp, ap)
            env = make_env(values)
            active = t < horizon
            new_lanes, outs = [], []
            for make_alg, lane in zip(make_algs, lanes):
                env_state = EnvState(c.theta_star, lane.adversary)
                alg_state, env_state, traj = respond_and_learn(
                    make_alg(values), env, lane.alg_state, env_state, rnd, t, keys
                )
                cum = accumulate.add(lane.cum_regret, jnp.where(active, traj.regret, 0.0))
                spent = accumulate.add(lane.spent, jnp.where(active, jnp.abs(traj.corruption), 0.0))
                out = {"cumulative_regret": cum.shown, "corruption_spent": spent.shown}
                if per_round:
                    out.update(regret=traj.regret, action=traj.action, corruption=traj.corruption)
                new_lanes.append(Lane(alg_state, env_state.adversary, cum, spent))
                outs.append(out)
            return tuple(new_lanes), {f: jnp.stack([o[f] for o in outs]) for f in outs[0]}

        with options.tracing(program.trace):  # the algorithms are traced here
            lanes, out = jax.vmap(per_lane)(agent_params, c.lanes)
        return c._replace(lanes=lanes), out

    def play_all(c: StreamCarry, t, rnds: Round):
        c = lanes_as(c, runs_minor, False)
        c, out = jax.vmap(play, in_axes=(0, 0, None, 0))(stream_params, c, t, rnds)
        return lanes_as(c, False, runs_minor), out

    with options.tracing(streams_traced(program.trace)):
        c = lanes_as(carry, False, runs_minor)
        swap = functools.partial(contexts_swapped, swapped=by_component)
        if not ahead:

            def step(c: StreamCarry, t):
                # materialised components first, if so, and handed on as a transposed view
                per_stream = lambda sp, k, th: swap(computed_once(swap(draw(sp, k, th, t)), t))
                rnds = jax.vmap(per_stream)(stream_params, c.round_key, c.theta_star)
                return play_all(c, t, rnds)

            c, out = jax.lax.scan(step, c, rounds)
        else:

            def block(c: StreamCarry, ts):
                per_stream = lambda sp, k, th: jax.vmap(lambda t: draw(sp, k, th, t))(ts)
                # [ahead, S, ...]: the scan below takes them round by round
                rnds = jax.vmap(per_stream, out_axes=1)(stream_params, c.round_key, c.theta_star)
                # the block's contexts materialised [ahead, S, d, K] if so (they are the inner scan's input)
                return jax.lax.scan(lambda c, tr: play_all(c, tr[0], swap(tr[1])), c, (ts, swap(rnds)))

            c, out = jax.lax.scan(block, c, rounds.reshape(-1, ahead))
            out = jax.tree.map(lambda v: v.reshape(-1, *v.shape[2:]), out)
    # [n, S, G, algorithms] -> [S, n, G, algorithms]
    return lanes_as(c, runs_minor, False), jax.tree.map(lambda v: jnp.moveaxis(v, 0, 1), out)


def lanes_as(c: StreamCarry, from_minor: bool, to_minor: bool) -> StreamCarry:
    """``c``, whose lanes' arrays are `[..., S, G]` if ``from_minor`` else `[S, G, ...]`, with them moved to
    `[..., S, G]` (runs on the minor axes) if ``to_minor`` else `[S, G, ...]`."""
    if from_minor == to_minor:
        return c
    src, dst = ((0, 1), (-2, -1)) if to_minor else ((-2, -1), (0, 1))
    return c._replace(lanes=jax.tree.map(lambda v: jnp.moveaxis(v, src, dst), c.lanes))


def computed_once(tree: Round, t) -> Round:
    """``tree``, materialised: the output of a loop of one trip that XLA cannot count (``t`` ≥ 0 is
    traced), so its consumers read it instead of fusing its arithmetic into themselves. (XLA's CPU
    compiler drops ``optimization_barrier`` before fusing; drawing a round ahead and carrying it works
    too, but compiles the draw twice: +2–3 s.)"""
    trips = (t >= 0).astype(jnp.int32)

    def trip(carry):
        i, values = carry  # a select XLA cannot resolve: the values pass unchanged, bit for bit
        return i + 1, jax.tree.map(lambda v: jnp.where(i < 0, jnp.zeros_like(v), v), values)

    return jax.lax.while_loop(lambda carry: carry[0] < trips, trip, (jnp.int32(0), tree))[1]


def contexts_swapped(rnd: Round, swapped: bool) -> Round:
    """``rnd`` with its contexts' last two axes swapped if ``swapped`` (`[..., K, d]` ↔ `[..., d, K]`;
    its own inverse), else ``rnd``: a draw is materialised swapped and handed on swapped back (see
    ``ProgramOptions.by_component``)."""
    return rnd._replace(contexts=jnp.swapaxes(rnd.contexts, -1, -2)) if swapped else rnd
