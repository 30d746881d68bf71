"""Agents: one module per algorithm family, each written against ``jaxbandit.core.types.Algorithm`` and
registered in ``jaxbandit.agents.registry`` (imported here in display order), plus the robust pieces
(``robust``, ``robust_regression``) they share."""

from . import cr_hvt_ucb, oful, cw_oful, heavy_oful, gadaoful, lin_ts  # noqa: F401  (registers each)
from . import registry

__all__ = ["registry"]
