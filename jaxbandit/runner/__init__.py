"""Runner: one run (simulate), many runs (sweep, tune), and what makes them large (chunks, checkpoints,
devices, the compilation cache)."""
