"""JAX's persistent compilation cache, for scripts and notebooks that compile the same sweep again.

A sweep of CR-Hvt-UCB compiles for a few seconds (longer with several algorithms); with the cache a
second run of the same script — same shapes, dtypes, devices and jax version — loads the executables
from disk instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

from ..core import validation as V

DEFAULT_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "jaxbandit" / "xla"


def enable_compilation_cache(path=None, *, min_compile_seconds: float = 0.5) -> Path:
    """Store compiled executables under ``path`` (default ``$JAXBANDIT_CACHE_DIR`` or
    ``~/.cache/jaxbandit/xla``) and reuse them in later processes. Only compilations longer than
    ``min_compile_seconds`` are stored. Returns the directory. Call it before the first compilation."""
    V.check_nonnegative("min_compile_seconds", min_compile_seconds)
    if path is None:
        path = os.environ.get("JAXBANDIT_CACHE_DIR", DEFAULT_DIR)
    path = Path(path).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_seconds))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path
