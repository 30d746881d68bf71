"""How the library's programs execute: :class:`ExecutionOptions`, every field ``None`` for the backend's
default, and the part of them a program is traced with (:class:`TraceOptions`).

No option changes a number a sweep computes: each is a way to run the same computation (tested bitwise
for every one). ``jb.sweep(..., options=jb.ExecutionOptions(cpu_workers=1))`` resolves them once into
its plan (``runner.plan``); the fields that shape a traced program (straggler rules, LAPACK calls,
peeled loops, the sphere's bits) are handed to the code that reads them — ``core.linalg``,
``envs.noise``, ``envs.streams``, ``lowering.batching`` — through the trace context (:func:`tracing`,
:func:`current`), never through module globals, and they are static arguments of the programs traced
with them, so a program traced with one set is never reused for another.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import NamedTuple

import jax

from .. import validation as V


class ExecutionOptions(NamedTuple):
    """How ``jb.sweep`` runs its programs; ``None``: the backend's default. None changes a result.

    - ``chunk_outputs``: the most numbers of each output field one chunk holds (its rounds × runs); the
      default chunks split the horizon evenly within it (default 2^24).
    - ``cpu_workers``: programs running a sweep's chunks at once on a CPU of one device, each on its own
      thread over an equal group of the streams (default: the cores this process may use, within a cgroup
      CPU quota; always 1 on an accelerator or over several devices).
    - ``draw_ahead``: the most rounds a stream draws ahead of running them, in blocks that divide the chunk
      (0: each round draws in its own step; default: a GPU as many as ``ahead_bytes`` allows, a CPU
      blocks of up to 16 rounds within a core's cache for a large grid, else 0).
    - ``ahead_bytes``: the most bytes a block of rounds drawn ahead may take, every stream's together
      (default 2^30).
    - ``runs_minor``: the rounds carry the lanes' states with the runs on the minor axes (default: a GPU).
    - ``contexts_by_component``: each stream's contexts materialised components first (default: a CPU
      whose streams serve several lanes).
    - ``stragglers_one_by_one``: solver loops (``lowering.batching.while_loop``) run their last lanes
      still going apart from the batch (default: one CPU device).
    - ``straggler_min_lanes``: batches of fewer lanes keep the plain batched loop (default 64).
    - ``lapack_per_matrix``: LAPACK calls (``lowering.batching.lapack``) run one matrix per call (default:
      wherever several batched calls could run at once on a CPU's thread pool, where they can hang).
    - ``peeled_newton_steps``: Newton steps of the projection onto the ball made before its loop (default 0).
    - ``peeled_rejection_steps``: iterations of the Student-t sampler's rejection loop made before the
      loop (default 0).
    - ``flat_sphere_bits``: the sphere's uniforms drawn as one flat vector (default: a CPU).
    """

    chunk_outputs: int | None = None
    cpu_workers: int | None = None
    draw_ahead: int | None = None
    ahead_bytes: int | None = None
    runs_minor: bool | None = None
    contexts_by_component: bool | None = None
    stragglers_one_by_one: bool | None = None
    straggler_min_lanes: int | None = None
    lapack_per_matrix: bool | None = None
    peeled_newton_steps: int | None = None
    peeled_rejection_steps: int | None = None
    flat_sphere_bits: bool | None = None

    def validated(self) -> ExecutionOptions:
        """The options, each set field checked: a ``ValueError`` names ``options.<field>``, its value and
        the valid range."""
        for name, value in self._asdict().items():
            if value is not None:
                _check(name, value)
        return self


#: The boolean fields of :class:`ExecutionOptions`; the others are integers of at least ``_LOWEST`` (or 1).
_FLAGS = frozenset(
    {
        "runs_minor",
        "contexts_by_component",
        "stragglers_one_by_one",
        "lapack_per_matrix",
        "flat_sphere_bits",
    }
)
_LOWEST = {"draw_ahead": 0, "peeled_newton_steps": 0, "peeled_rejection_steps": 0, "straggler_min_lanes": 0}


def _check(name: str, value):
    """``value`` of the option ``name``, checked (a ``ValueError`` names ``options.<name>``)."""
    label = f"options.{name}"
    if name in _FLAGS:
        return V.check_flag(label, value)
    return V.check_int(label, value, low=_LOWEST.get(name, 1))


def as_options(options) -> ExecutionOptions:
    """``options`` (``None``, or an :class:`ExecutionOptions`) validated; anything else a ``ValueError``."""
    if options is None:
        return ExecutionOptions()
    if not isinstance(options, ExecutionOptions):
        raise ValueError(
            f"options={options!r} is invalid: it must be a jb.ExecutionOptions (e.g. "
            "jb.ExecutionOptions(cpu_workers=1)) or None"
        )
    return options.validated()


class TraceOptions(NamedTuple):
    """The options a program is traced with, resolved (no ``None``): see :class:`ExecutionOptions`."""

    stragglers_one_by_one: bool = False
    straggler_min_lanes: int = 64
    lapack_per_matrix: bool = False
    peeled_newton_steps: int = 0
    peeled_rejection_steps: int = 0
    flat_sphere_bits: bool = True

    @classmethod
    def resolve(
        cls, options: ExecutionOptions, *, one_by_one: bool = False, per_matrix: bool = False
    ) -> TraceOptions:
        """``options``' trace fields, each ``None`` replaced by its default; ``one_by_one``, ``per_matrix``:
        the defaults of ``stragglers_one_by_one`` and ``lapack_per_matrix`` (the plan's rules)."""
        pick = lambda value, default: default if value is None else value
        defaults = cls.default()
        return cls(
            stragglers_one_by_one=pick(options.stragglers_one_by_one, one_by_one),
            straggler_min_lanes=pick(options.straggler_min_lanes, defaults.straggler_min_lanes),
            lapack_per_matrix=pick(options.lapack_per_matrix, per_matrix),
            peeled_newton_steps=pick(options.peeled_newton_steps, defaults.peeled_newton_steps),
            peeled_rejection_steps=pick(options.peeled_rejection_steps, defaults.peeled_rejection_steps),
            flat_sphere_bits=pick(options.flat_sphere_bits, defaults.flat_sphere_bits),
        )

    @classmethod
    def default(cls) -> TraceOptions:
        """Outside any :func:`tracing` context (``jb.simulate``, a user's own ``jit``): the backend's
        defaults, read now."""
        return cls(flat_sphere_bits=jax.default_backend() == "cpu")


_TRACING: contextvars.ContextVar[TraceOptions | None] = contextvars.ContextVar(
    "jaxbandit_trace_options", default=None
)


def current() -> TraceOptions:
    """The options of the program being traced now: those of the innermost :func:`tracing`, else
    :meth:`TraceOptions.default`. Code that reads one of them in a function it jits itself passes it on
    as a static argument (JAX's cache of traces does not see the context)."""
    options = _TRACING.get()
    return TraceOptions.default() if options is None else options


@contextlib.contextmanager
def tracing(options: TraceOptions | None = None, **changes) -> Iterator[TraceOptions]:
    """Within it, programs are traced with ``options`` (default: :func:`current`), with ``changes``
    (field=value) applied; yields them. A function jitted before is not traced again: it applies to new
    traces."""
    if options is not None and not isinstance(options, TraceOptions):
        raise ValueError(f"options={options!r} is invalid: it must be a TraceOptions or None")
    chosen = (current() if options is None else options)._replace(
        **{name: _check(name, value) for name, value in changes.items()}
    )
    token = _TRACING.set(chosen)
    try:
        yield chosen
    finally:
        _TRACING.reset(token)
