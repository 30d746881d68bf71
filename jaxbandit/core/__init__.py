"""The contracts (types), linear algebra, dtypes, validation, and how programs are lowered (lowering)."""

import sys

from .lowering import batching

# The batching rules' former path, for code written against it (``jaxbandit.core.batching.lapack``): the
# same module under both names.
sys.modules[f"{__name__}.batching"] = batching
