"""XLA options the library compiles its own programs with (``jb.sweep``'s rounds, ``jb.simulate``).

GPU: a round of a bandit algorithm is about a hundred small kernels, and the projection's Newton loop
has a data-dependent trip count that XLA otherwise drives from the host. With command buffers for
fusions, library calls, loops and conditionals, XLA records them as CUDA graphs instead.

CPU: XLA:CPU's default (MLIR) fusion emitters compile every fusion of a program as its own LLVM module,
and a round of an unrolled algorithm has hundreds of fusions; its classic emitters compile CR-Hvt-UCB's
round 2–2.5× faster, to the same bits and the same speed (``benchmarks/compile_time.py``).

The options are set per compiled program (``jax.jit(..., compiler_options=...)``), so a user's own
programs are not touched, and each only on its own backend (the GPU's option on a GPU, the CPU's on a
CPU). An option that the installed XLA refuses as unknown ("No such compile option", as jax 0.11.2 on
an H100 answered the CPU's) is left out from then on, and the program compiles without it. Opt out with
``JAXBANDIT_COMMAND_BUFFERS=0`` and ``JAXBANDIT_CPU_CLASSIC_EMITTERS=0``; a user's own flag for either in
``XLA_FLAGS`` wins over the library's.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Sequence

import jax

COMMAND_BUFFER = "FUSION,CUBLAS,CUSTOM_CALL,WHILE,CONDITIONAL"

#: option name -> (the library's value, the environment variable that opts out when "0", the backend
#: whose compiler has it).
LIBRARY_OPTIONS = {
    "xla_gpu_enable_command_buffer": (COMMAND_BUFFER, "JAXBANDIT_COMMAND_BUFFERS", "gpu"),
    "xla_cpu_use_fusion_emitters": (False, "JAXBANDIT_CPU_CLASSIC_EMITTERS", "cpu"),
}

#: Options the installed XLA refused as unknown ("No such compile option"), left out from then on.
UNKNOWN_OPTIONS: set[str] = set()

_UNKNOWN_OPTION = re.compile(r"No such compile option: '(\w+)'")


def _enabled(option: str) -> bool:
    _, variable, _ = LIBRARY_OPTIONS[option]
    return os.environ.get(variable, "1") != "0" and option not in os.environ.get("XLA_FLAGS", "")


def command_buffers_enabled() -> bool:
    """Whether the library compiles with its own command-buffer option (read at every call)."""
    return _enabled("xla_gpu_enable_command_buffer")


def compiler_options(backend: str | None = None) -> dict:
    """The options the library's next compilation on ``backend`` (default: JAX's default backend) uses:
    each of that backend's that is not opted out and that XLA has not refused (read at every call)."""
    backend = jax.default_backend() if backend is None else backend
    return {
        name: value
        for name, (value, _, platform) in LIBRARY_OPTIONS.items()
        if platform == backend and name not in UNKNOWN_OPTIONS and _enabled(name)
    }


def library_jit(static_argnums: Sequence[int]) -> Callable[[Callable], Callable]:
    """``jax.jit`` with the library's compiler options, chosen when called (decorator). Inside a user's
    own ``jit`` (where XLA accepts options only at the top level) it is a plain ``jax.jit``."""

    def decorate(fun: Callable) -> Callable:
        statics = tuple(static_argnums)
        plain = jax.jit(fun, static_argnums=statics)

        @functools.cache
        def tuned(options: tuple) -> Callable:
            return jax.jit(fun, static_argnums=statics, compiler_options=dict(options))

        @functools.wraps(fun)
        def call(*args):
            traced = any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(args))
            options = tuple(sorted(compiler_options().items()))
            if traced or not options:
                return plain(*args)
            try:
                return tuned(options)(*args)
            except ValueError as e:  # inside a user's jit with concrete arguments: options are theirs
                if "compiler_options" not in str(e):
                    raise
                return plain(*args)
            except RuntimeError as e:  # an option this XLA does not have: leave it out from now on
                unknown = _UNKNOWN_OPTION.search(str(e))
                if unknown is None or unknown.group(1) not in LIBRARY_OPTIONS:
                    raise
                UNKNOWN_OPTIONS.add(unknown.group(1))
                return call(*args)

        return call

    return decorate
