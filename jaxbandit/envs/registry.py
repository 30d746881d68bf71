"""The adversaries', noise families' and streams' part of the one registry (``jaxbandit.core.registry``),
which ``jb.corruption``, ``jb.noise`` and ``jb.envs`` register theirs with at their end."""

from ..core.registry import (
    ADVERSARIES,
    NOISES,
    STREAMS,
    AdversarySpec,
    NoiseSpec,
    StreamSpec,
    adversaries,
    adversary,
    noise,
    noises,
    register,
    stream,
    streams,
)

__all__ = [
    "ADVERSARIES",
    "NOISES",
    "STREAMS",
    "AdversarySpec",
    "NoiseSpec",
    "StreamSpec",
    "adversaries",
    "adversary",
    "noise",
    "noises",
    "register",
    "stream",
    "streams",
]
