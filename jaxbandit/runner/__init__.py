"""Runner: one run (simulate), many runs (sweep: its plan, traced programs and driver; tune), and what
makes them large (chunks, checkpoints, devices, the compilation cache)."""

import sys

from ..core.lowering import threefry, xla_options

# The lowering modules' former paths, for code written against them: the same modules under both names.
sys.modules[f"{__name__}.threefry"] = threefry
sys.modules[f"{__name__}.xla_options"] = xla_options
