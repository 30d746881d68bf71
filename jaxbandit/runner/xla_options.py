"""XLA options the library compiles its own programs with (``jb.sweep``'s rounds, ``jb.simulate``).

On a GPU a round of a bandit algorithm is about a hundred small kernels, and the projection's Newton
loop has a data-dependent trip count that XLA otherwise drives from the host. With command buffers for
fusions, library calls, loops and conditionals, XLA records them as CUDA graphs instead. The options
are set per compiled program (``jax.jit(..., compiler_options=...)``), so a user's own programs are not
touched; other backends ignore them. Opt out with ``JAXBANDIT_COMMAND_BUFFERS=0``; a user's own
``--xla_gpu_enable_command_buffer`` in ``XLA_FLAGS`` wins over the library's.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence

import jax

COMMAND_BUFFER = "FUSION,CUBLAS,CUSTOM_CALL,WHILE,CONDITIONAL"


def command_buffers_enabled() -> bool:
    """Whether the library compiles with its own command-buffer option (read at every call)."""
    if os.environ.get("JAXBANDIT_COMMAND_BUFFERS", "1") == "0":
        return False
    return "xla_gpu_enable_command_buffer" not in os.environ.get("XLA_FLAGS", "")


def library_jit(static_argnums: Sequence[int]) -> Callable[[Callable], Callable]:
    """``jax.jit`` with the library's compiler options, chosen when called (decorator). Inside a user's
    own ``jit`` (where XLA accepts options only at the top level) it is a plain ``jax.jit``."""

    def decorate(fun: Callable) -> Callable:
        plain = jax.jit(fun, static_argnums=tuple(static_argnums))
        tuned = jax.jit(
            fun,
            static_argnums=tuple(static_argnums),
            compiler_options={"xla_gpu_enable_command_buffer": COMMAND_BUFFER},
        )

        @functools.wraps(fun)
        def call(*args):
            traced = any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(args))
            if traced or not command_buffers_enabled():
                return plain(*args)
            try:
                return tuned(*args)
            except ValueError as e:  # inside a user's jit with concrete arguments: options are theirs
                if "compiler_options" not in str(e):
                    raise
                return plain(*args)

        return call

    return decorate
