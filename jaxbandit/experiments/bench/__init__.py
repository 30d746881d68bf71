"""The robustness benchmark (``python -m jaxbandit bench``): every registered algorithm × adversary ×
noise family × C × ε × seeds, with theory constants and constants tuned by one protocol (``protocol``)
on disjoint seeds over all scenarios together; a report, computed from the compact per-seed results,
ranks them and draws the robustness frontier."""

from . import protocol
from .report import compact, markdown, rewrite, write_report
from .run import backend_devices, combine, run_algorithm, run_bench, save_results, to_dataset
from .settings import (
    Attack,
    BenchSettings,
    NoiseSetting,
    attacks,
    environment_factory,
    make_settings,
    noise_settings,
    scenarios,
)

__all__ = [
    "Attack",
    "BenchSettings",
    "NoiseSetting",
    "attacks",
    "backend_devices",
    "combine",
    "compact",
    "environment_factory",
    "make_settings",
    "markdown",
    "noise_settings",
    "protocol",
    "rewrite",
    "run_algorithm",
    "run_bench",
    "save_results",
    "scenarios",
    "to_dataset",
    "write_report",
]
