"""Experiments built on the library (the default demo, the paper's Figure 1); outside ``import jaxbandit``."""
