"""jaxbandit: linear contextual bandits under adversarial corruption and heavy-tailed noise, in JAX."""

from . import envs, registry
from .agents.cr_hvt_ucb import CRHvtUCBState, cr_hvt_ucb, hvt_ucb
from .agents.crt import CRTState, crt
from .agents.cw_oful import CWOFULState, cw_oful
from .agents.gadaoful import GAdaOFULState, gadaoful
from .agents.heavy_oful import HeavyOFULState, heavy_oful
from .agents.lin_ts import LinTSState, lin_ts
from .agents.multilayer_oful import MultiLayerOFULState, multilayer_oful
from .agents.oful import OFULState, oful
from .agents.omd_glb import OMDGLBState, omd_glb
from .agents.tofu import TOFUState, tofu
from .core import linalg, plugins
from .core.lowering.options import ExecutionOptions
from .core.lowering.xla_options import compiler_options
from .core.types import Adversary, Algorithm, Environment, Feedback, Round, Stream, Trajectory
from .envs import corruption, datasets, noise
from .report import analysis
from .report.analysis import loglog_slope
from .report.results import SweepResult
from .runner.compilation_cache import enable_compilation_cache
from .runner.simulate import simulate
from .runner.sweep import sweep
from .runner.tune import TuneResult, tune

__version__ = "0.1.0"  # the version: pyproject.toml reads it from here (setuptools dynamic)

# Loaded on first use, so that ``import jaxbandit`` loads neither matplotlib nor the experiments.
_LAZY = {
    "plots": "jaxbandit.report.plots",
    "figure1": "jaxbandit.experiments.figure1",
    "scaling": "jaxbandit.experiments.scaling",
    "testing": "jaxbandit.testing",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module = importlib.import_module(_LAZY[name])
        globals()[name] = module
        return module
    raise AttributeError(f"module 'jaxbandit' has no attribute {name!r}")


__all__ = [
    "Adversary",
    "Algorithm",
    "CRHvtUCBState",
    "CRTState",
    "CWOFULState",
    "Environment",
    "ExecutionOptions",
    "Feedback",
    "GAdaOFULState",
    "HeavyOFULState",
    "LinTSState",
    "MultiLayerOFULState",
    "OFULState",
    "OMDGLBState",
    "Round",
    "Stream",
    "SweepResult",
    "TOFUState",
    "Trajectory",
    "TuneResult",
    "analysis",
    "compiler_options",
    "corruption",
    "cr_hvt_ucb",
    "crt",
    "cw_oful",
    "datasets",
    "enable_compilation_cache",
    "envs",
    "figure1",
    "gadaoful",
    "heavy_oful",
    "hvt_ucb",
    "lin_ts",
    "linalg",
    "loglog_slope",
    "multilayer_oful",
    "noise",
    "oful",
    "omd_glb",
    "plots",
    "plugins",
    "registry",
    "scaling",
    "simulate",
    "sweep",
    "testing",
    "tofu",
    "tune",
]
