"""Agents: one module per algorithm family, each written against ``jaxbandit.core.types.Algorithm`` and
registered in ``jaxbandit.agents.registry`` when imported here (the registry lists them in that order),
plus the robust pieces (``robust``, ``robust_regression``) they share."""

from . import (  # noqa: F401  (registers each)
    cr_hvt_ucb,
    crt,
    cw_oful,
    gadaoful,
    heavy_oful,
    lin_ts,
    multilayer_oful,
    oful,
    omd_glb,
    registry,
    tofu,
)

__all__ = ["registry"]
