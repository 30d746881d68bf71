"""The algorithms' part of the one registry (``jaxbandit.core.registry``), which every algorithm module
registers itself with at its end: ``registry.register(registry.AlgorithmSpec(...))``."""

from ..core.registry import (
    ALGORITHMS,
    BETA_SCALES,
    COSTS,
    KNOWLEDGE,
    RIDGE_FACTORS,
    AlgorithmSpec,
    Hyperparameters,
    Problem,
    algorithm,
    algorithms,
    names,
    register,
)

__all__ = [
    "ALGORITHMS",
    "BETA_SCALES",
    "COSTS",
    "KNOWLEDGE",
    "RIDGE_FACTORS",
    "AlgorithmSpec",
    "Hyperparameters",
    "Problem",
    "algorithm",
    "algorithms",
    "names",
    "register",
]
