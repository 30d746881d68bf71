"""Agents: one module per algorithm family, written against ``jaxbandit.core.types.Algorithm``."""
