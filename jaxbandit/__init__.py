"""jaxbandit: linear contextual bandits under adversarial corruption and heavy-tailed noise, in JAX."""
from . import corruption, envs, linalg, noise
from .base import Algorithm, Environment, Feedback, Trajectory
from .cr_hvt_ucb import CRHvtUCBState, cr_hvt_ucb, hvt_ucb
from .results import SweepResult
from .simulate import simulate
from .sweep import sweep

__version__ = "0.1.0"

__all__ = [
    "Algorithm", "Environment", "Feedback", "Trajectory", "CRHvtUCBState",
    "corruption", "envs", "linalg", "noise",
    "cr_hvt_ucb", "hvt_ucb", "simulate", "sweep", "SweepResult",
]
