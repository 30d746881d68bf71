"""jaxbandit: linear contextual bandits under adversarial corruption and heavy-tailed noise, in JAX."""
from . import analysis, corruption, envs, figure1, linalg, noise, plots
from .analysis import loglog_slope
from .base import Algorithm, Environment, Feedback, Trajectory
from .compilation_cache import enable_compilation_cache
from .cr_hvt_ucb import CRHvtUCBState, cr_hvt_ucb, hvt_ucb
from .cw_oful import CWOFULState, cw_oful
from .gadaoful import GAdaOFULState, gadaoful
from .heavy_oful import HeavyOFULState, heavy_oful
from .oful import OFULState, oful
from .results import SweepResult
from .simulate import simulate
from .sweep import sweep
from .tune import TuneResult, tune

__version__ = "0.1.0"

__all__ = [
    "Algorithm", "Environment", "Feedback", "Trajectory", "CRHvtUCBState",
    "corruption", "envs", "figure1", "linalg", "noise", "enable_compilation_cache",
    "cr_hvt_ucb", "hvt_ucb", "simulate", "sweep", "SweepResult",
    "analysis", "plots", "loglog_slope", "tune", "TuneResult",
    "oful", "OFULState", "cw_oful", "CWOFULState", "heavy_oful", "HeavyOFULState", "gadaoful",
    "GAdaOFULState",
]
