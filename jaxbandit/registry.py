"""``jb.registry``: the one registry of extension points, which the CLI, Figure 1, the notebooks, the
benchmark and the tests read; nothing else keeps a list of them.

- algorithms: :class:`AlgorithmSpec` (how to build one for a :class:`Problem`, its theory constants and
  tuning grid), read by :func:`algorithms`, :func:`names` and :func:`algorithm`;
- adversaries: :class:`AdversarySpec` (how to build one at a corruption level C), read by
  :func:`adversaries` and :func:`adversary`: the benchmark's attack axis;
- noise families: :class:`NoiseSpec` (how to build one at a moment order ε), read by :func:`noises` and
  :func:`noise`: the benchmark's noise axis;
- streams: :class:`StreamSpec` (how to build one for the benchmark's problem from a noise family), read
  by :func:`streams` and :func:`stream`: the benchmark's ``--stream``.

:func:`register` files any of the four specs; a name is registered once (another module's name only
with ``replace=True``), and every spec records the module that registered it (``spec.module``), which
results record beside the name. The library's modules register their own when imported;
a user's module registers its own when imported too, and joins the command line with ``--plugin MODULE``
or the ``jaxbandit.plugins`` entry-point group (``jb.plugins``), loaded the first time a registry is
read.
"""

from .core.registry import (
    BETA_SCALES,
    COSTS,
    KNOWLEDGE,
    RIDGE_FACTORS,
    AdversarySpec,
    AlgorithmSpec,
    Hyperparameters,
    NoiseSpec,
    Problem,
    StreamSpec,
    adversaries,
    adversary,
    algorithm,
    algorithms,
    names,
    noise,
    noises,
    register,
    stream,
    streams,
)

__all__ = [
    "BETA_SCALES",
    "COSTS",
    "KNOWLEDGE",
    "RIDGE_FACTORS",
    "AdversarySpec",
    "AlgorithmSpec",
    "Hyperparameters",
    "NoiseSpec",
    "Problem",
    "StreamSpec",
    "adversaries",
    "adversary",
    "algorithm",
    "algorithms",
    "names",
    "noise",
    "noises",
    "register",
    "stream",
    "streams",
]
