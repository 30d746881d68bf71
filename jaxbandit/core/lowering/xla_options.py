"""How the library compiles its programs (``jb.sweep``'s chunks, ``jb.simulate``): options, sharing.

GPU: a round of a bandit algorithm is about a hundred small kernels, and the projection's Newton loop
has a data-dependent trip count that XLA otherwise drives from the host. With command buffers for
fusions, library calls, loops and conditionals, XLA records them as CUDA graphs instead.

CPU: XLA:CPU's default (MLIR) fusion emitters compile every fusion of a program as its own LLVM module,
and a round of an unrolled algorithm has hundreds of fusions; its classic emitters compile CR-Hvt-UCB's
round 2–2.5× faster, to the same bits and the same speed (``benchmarks/compile_time.py``).

The options are set per compiled program (``jax.jit(..., compiler_options=...)``), so a user's own
programs are not touched (:func:`compiler_options`, ``jb.compiler_options``, gives them to a user's own
``jit``), and each only on its own backend (the GPU's option on a GPU, the CPU's on a CPU). An option
that the installed XLA refuses as unknown ("No such compile option", as jax 0.11.2 on an H100 answered
the CPU's) is left out from then on, and the program compiles without it. Opt out with
``JAXBANDIT_COMMAND_BUFFERS=0`` and ``JAXBANDIT_CPU_CLASSIC_EMITTERS=0``; a user's own flag for either in
``XLA_FLAGS`` wins over the library's.

A program compiled on a second thread while the calling thread traces the next (``jb.sweep``'s initial
states, beside its first chunk: ``library_jit(..., beside=True)``) has its LLVM code generated on one
thread of a CPU, so that the tracing keeps a core of its own.

Programs are shared by what they compute: ``jit`` keys a program on its static arguments, which for the
library are algorithms and factories, so a new object with the same settings (a notebook cell run again)
would compile the same program again; :func:`library_jit` finds it by its lowered text instead.

While the library traces and lowers a program (:func:`lowering`), Python's cyclic garbage collector is
paused (tracing allocates tens of thousands of short-lived objects, and the collections they set off,
each scanning every object the process holds, were 0.14–0.19 s of a small sweep's 2.2 s first call),
and the Threefry hash under its random draws is lowered unrolled (``runner.threefry``; on a CPU).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import gc
import hashlib
import os
import re
import threading
from collections.abc import Callable, Sequence

import jax

from . import threefry

COMMAND_BUFFER = "FUSION,CUBLAS,CUSTOM_CALL,WHILE,CONDITIONAL"

#: option name -> (the library's value, the environment variable that opts out when "0", the backend
#: whose compiler has it).
LIBRARY_OPTIONS = {
    "xla_gpu_enable_command_buffer": (COMMAND_BUFFER, "JAXBANDIT_COMMAND_BUFFERS", "gpu"),
    "xla_cpu_use_fusion_emitters": (False, "JAXBANDIT_CPU_CLASSIC_EMITTERS", "cpu"),
}

#: The same for a program compiled beside the tracing of another (``library_jit(..., beside=True)``).
BESIDE_OPTIONS = {"xla_cpu_parallel_codegen_split_count": (1, None, "cpu")}

#: Options the installed XLA refused as unknown ("No such compile option"), left out from then on.
UNKNOWN_OPTIONS: set[str] = set()

_UNKNOWN_OPTION = re.compile(r"No such compile option: '(\w+)'")


def _enabled(option: str, table: dict) -> bool:
    _, variable, _ = table[option]
    opted_out = variable is not None and os.environ.get(variable, "1") == "0"
    return not opted_out and option not in os.environ.get("XLA_FLAGS", "")


def command_buffers_enabled() -> bool:
    """Whether the library compiles with its own command-buffer option (read at every call)."""
    return _enabled("xla_gpu_enable_command_buffer", LIBRARY_OPTIONS)


#: The backends :func:`compiler_options` answers for (JAX's platform names).
BACKENDS = ("cpu", "gpu", "tpu")


def compiler_options(backend: str | None = None) -> dict:
    """The XLA compiler options the library compiles its own programs with on ``backend``, for a
    ``jax.jit`` of your own: ``jax.jit(fn, compiler_options=jb.compiler_options())``, or
    ``jax.jit(fn).lower(*args).compile(compiler_options=jb.compiler_options())``.

    On a CPU they are ``{"xla_cpu_use_fusion_emitters": False}``: XLA's classic fusion emitters, which
    compile a bandit algorithm's round (hundreds of small fusions, each its own LLVM module with the
    default emitters) in about half the time, to the same bits and the same speed. On a GPU,
    ``{"xla_gpu_enable_command_buffer": "FUSION,CUBLAS,CUSTOM_CALL,WHILE,CONDITIONAL"}``: the round's
    kernels and loops recorded as CUDA graphs, which cuts launch latency. Pass them to a program that
    runs the library's algorithms or environments (a ``lax.scan`` over rounds of your own); they change
    no number it computes. Options apply only to the top-level ``jit``: XLA refuses them on a function
    called inside another ``jit``.

    Args:
      backend: ``"cpu"``, ``"gpu"`` or ``"tpu"`` (default: JAX's default backend, where a ``jax.jit``
        without a device runs).

    Returns:
      A new dict of option name to value (empty on a TPU). An option is left out when opted out
      (``JAXBANDIT_CPU_CLASSIC_EMITTERS=0``, ``JAXBANDIT_COMMAND_BUFFERS=0``), when ``XLA_FLAGS`` sets it
      (your flag wins), or when the installed XLA refused it as unknown in an earlier compilation of the
      library's. Read at every call. An XLA that does not know an option refuses the compilation with
      a ``RuntimeError`` ("No such compile option"): compile without it, or set the opt-out variable.
    """
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} is invalid: it must be one of {', '.join(BACKENDS)} or None")
    return library_options(backend)


def library_options(backend: str | None = None, beside: bool = False) -> dict:
    """The options the library's next compilation on ``backend`` (default: JAX's default backend) uses:
    each of that backend's that is not opted out and that XLA has not refused (read at every call);
    ``beside``: of a program compiled beside the tracing of another (``BESIDE_OPTIONS`` too)."""
    backend = jax.default_backend() if backend is None else backend
    tables = (LIBRARY_OPTIONS, BESIDE_OPTIONS) if beside else (LIBRARY_OPTIONS,)
    return {
        name: value
        for table in tables
        for name, (value, _, platform) in table.items()
        if platform == backend and name not in UNKNOWN_OPTIONS and _enabled(name, table)
    }


_PAUSES = 0
_PAUSES_LOCK = threading.Lock()
_WAS_ENABLED = True


@contextlib.contextmanager
def collection_paused():
    """Python's cyclic garbage collector disabled inside (nested and from several threads: it is enabled
    again when the last pause ends, if it was enabled when the first began). Nothing is lost: the cyclic
    garbage made inside is collected by the first collection after."""
    global _PAUSES, _WAS_ENABLED
    with _PAUSES_LOCK:
        if _PAUSES == 0:
            _WAS_ENABLED = gc.isenabled()
            gc.disable()
        _PAUSES += 1
    try:
        yield
    finally:
        with _PAUSES_LOCK:
            _PAUSES -= 1
            if _PAUSES == 0 and _WAS_ENABLED:
                gc.enable()


@contextlib.contextmanager
def lowering():
    """How the library traces and lowers its programs: :func:`collection_paused`, and Threefry lowered by
    ``threefry.library_lowering``."""
    with collection_paused(), threefry.library_lowering():
        yield


def library_jit(static_argnums: Sequence[int], beside: bool = False) -> Callable[[Callable], LibraryFunction]:
    """``jax.jit`` with the library's compiler options, chosen when called (decorator), whose programs are
    shared by what they compute (:func:`_shared_statics`). Inside a user's own ``jit`` (where XLA accepts
    options only at the top level) it is a plain ``jax.jit``. ``beside``: the program is compiled beside
    the tracing of another (``BESIDE_OPTIONS``)."""
    return lambda fun: LibraryFunction(fun, tuple(static_argnums), beside)


class LibraryFunction:
    """A function jitted by :func:`library_jit`; besides calls, a call can be made in steps on two threads
    (:meth:`compile_later`, :meth:`lower_ahead`)."""

    def __init__(self, fun: Callable, statics: tuple, beside: bool):
        functools.update_wrapper(self, fun)
        self.statics, self.beside = statics, beside
        self.plain = jax.jit(fun, static_argnums=statics)
        self._tuned = functools.cache(
            lambda options: jax.jit(fun, static_argnums=statics, compiler_options=dict(options))
        )

    def _chosen(self) -> tuple[jax.stages.Wrapped, tuple]:
        options = tuple(sorted(library_options(beside=self.beside).items()))
        return (self._tuned(options) if options else self.plain), options

    def __call__(self, *args):
        if any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(args)):
            return self.plain(*args)
        jitted, options = self._chosen()
        try:
            with lowering():
                return jitted(*_shared_statics(jitted, self.statics, options, args))
        except ValueError as e:  # inside a user's jit with concrete arguments: options are theirs
            if not options or "compiler_options" not in str(e):
                raise
            return self.plain(*args)
        except RuntimeError as e:  # an option this XLA does not have: leave it out from now on
            _leave_out_unknown(e)
            return self(*args)

    def _lowered(self, args: tuple) -> jax.stages.Lowered:
        """The call ``self(*args)`` traced and lowered here, with the library's options and its statics
        shared by what they compute."""
        jitted, options = self._chosen()
        with lowering():
            return jitted.lower(*_shared_statics(jitted, self.statics, options, args))

    def compile_later(self, *args) -> Callable[[], None]:
        """Traces and lowers the call ``self(*args)`` here, and returns what compiles its program, to run
        on another thread (XLA only, which leaves the GIL; tracing depends on this thread's JAX settings);
        the call then runs that program. An option the installed XLA refuses is left out, and the call
        compiles without it."""
        lowered = self._lowered(args)

        def compile_program() -> None:
            try:
                lowered.compile()
            except RuntimeError as e:
                _leave_out_unknown(e)

        return compile_program

    def compiled(self, *args) -> jax.stages.Compiled:
        """The program of the call ``self(*args)``, traced, lowered and compiled here (JAX's settings are
        this thread's; JAX keeps it for the calls too): call it with the non-static arguments, on any
        thread. An option the installed XLA refuses is left out, and it compiles without it."""
        try:
            return self._lowered(args).compile()
        except RuntimeError as e:
            _leave_out_unknown(e)
            return self.compiled(*args)

    def lower_ahead(self, *args) -> None:
        """Traces and lowers the call ``self(*args)`` whose non-static arguments may be abstract
        (``jax.ShapeDtypeStruct``, with the weak types and no shardings: an array made by a program of
        uncommitted arrays is uncommitted), so that the real call only compiles (JAX keeps both; a call
        made before finds them)."""
        jitted, _ = self._chosen()
        with lowering():
            jitted.lower(*args)


def _leave_out_unknown(error: RuntimeError) -> None:
    """Re-raises ``error`` unless it is XLA's refusal of one of the library's options as unknown, which is
    then left out from now on."""
    unknown = _UNKNOWN_OPTION.search(str(error))
    if unknown is None or unknown.group(1) not in LIBRARY_OPTIONS.keys() | BESIDE_OPTIONS.keys():
        raise error
    UNKNOWN_OPTIONS.add(unknown.group(1))


#: How many calls' and programs' static arguments :func:`_shared_statics` keeps, least recently used dropped.
SHARED_PROGRAMS_KEPT = 256

#: (function, options, static arguments, the other arguments' tree and types) -> the statics to call with.
_STATICS_BY_CALL: collections.OrderedDict = collections.OrderedDict()
#: (function, options, the program's text, trees and devices) -> the first static arguments that made it.
_STATICS_BY_PROGRAM: collections.OrderedDict = collections.OrderedDict()
_TABLES_LOCK = threading.Lock()


def _shared_statics(jitted: jax.stages.Wrapped, statics: tuple, options: tuple, args: tuple) -> tuple:
    """``args`` with its static arguments replaced by those of an earlier call that compiled the same
    program, so that ``jitted`` finds that program in its cache instead of compiling it again.

    ``jit`` keys its programs on its static arguments themselves: an algorithm or a factory is static, so
    a new object with the same settings (``jb.simulate(jb.oful(...), ...)`` in a loop over seeds, a
    notebook cell run again) compiled the same program again, 1–3 s each time on a CPU. A call with new
    static arguments is now lowered first (tracing and lowering only; ``jitted`` reuses both when it
    compiles), and its program identified by its StableHLO text, which holds every constant (closed-over
    values included), with its input and output trees, the compiler options and the arguments' devices.
    Equal texts are the same computation, so the earlier statics give the same values, and equal trees
    the same Python results. A function without static arguments has nothing to share: ``jit`` finds its
    program by the arguments' types alone."""
    if not statics:
        return args
    leaves, tree = jax.tree.flatten([a for i, a in enumerate(args) if i not in statics])
    given = tuple(args[i] for i in statics)
    shardings = tuple(getattr(x, "sharding", None) for x in leaves)
    key = (jitted, options, given, tree, tuple(map(jax.typeof, leaves)), shardings)
    try:
        with _TABLES_LOCK:
            shared = remembered(_STATICS_BY_CALL, key)
    except TypeError:  # an unhashable static argument: jit's own error says which
        return args
    if shared is None:
        lowered = jitted.lower(*args)
        text = hashlib.sha256(lowered.as_text().encode()).hexdigest()
        devices = tuple(sorted({d.id for s in shardings if s is not None for d in s.device_set}))
        program = (jitted, options, text, lowered.in_tree, lowered.out_tree, devices)
        with _TABLES_LOCK:
            shared = remembered(_STATICS_BY_PROGRAM, program, given)
            remembered(_STATICS_BY_CALL, key, shared)
    it = iter(shared)
    return tuple(next(it) if i in statics else a for i, a in enumerate(args))


def remembered(table: collections.OrderedDict, key, default=None):
    """``table[key]``, set to ``default`` if absent (unless None), marked as just used; the least recently
    used entries beyond SHARED_PROGRAMS_KEPT dropped."""
    if key not in table:
        if default is None:
            return None
        table[key] = default
    table.move_to_end(key)
    while len(table) > SHARED_PROGRAMS_KEPT:
        table.popitem(last=False)
    return table[key]
