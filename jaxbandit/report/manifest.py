"""Moved to :mod:`jaxbandit.persist.manifest` (the persistence floor, below the runner and the report);
the names stay importable from here."""

from ..persist.manifest import (
    FIX,
    FORMAT,
    NAME,
    TRANSIENT,
    make,
    parse,
    read,
    read_files,
    verify,
    verify_files,
)

__all__ = [
    "FIX",
    "FORMAT",
    "NAME",
    "TRANSIENT",
    "make",
    "parse",
    "read",
    "read_files",
    "verify",
    "verify_files",
]
