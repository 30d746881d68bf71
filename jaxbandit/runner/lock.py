"""Moved to :mod:`jaxbandit.persist.lock` (the persistence floor, below the runner and the report); the
names stay importable from here."""

from ..persist.lock import holder, holding, holding_all, lock_file

__all__ = ["holder", "holding", "holding_all", "lock_file"]
