"""Agents: one module per algorithm family, each written against ``jaxbandit.core.types.Algorithm`` and
registered in ``jaxbandit.agents.registry`` (imported here in display order), plus the robust pieces
(``robust``, ``robust_regression``) they share."""

from . import cr_hvt_ucb, cw_oful, gadaoful, heavy_oful, lin_ts, oful, registry  # noqa: F401  (registers each)

__all__ = ["registry"]
