"""Core: the contracts every piece shares (types), dtypes, eager validation and linear algebra."""
