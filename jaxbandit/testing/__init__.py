"""Conformance checks for jaxbandit algorithms and environments, like scikit-learn's ``check_estimator``.

``check_algorithm(factory, params, dim=, num_arms=)`` runs an algorithm (built by a ``jb.sweep``-style
factory from example hyperparameters) on small synthetic problems and checks the contract of
``jaxbandit.core.types``: its state keeps one structure, shape and dtype; ``select`` returns an int32 arm
in [0, K); ``select`` and ``update`` are pure (traced twice afresh they give the same program, called
twice eagerly the same outputs); ties go to the lowest index (in every round of an ``"argmax"`` policy,
in the score-following rounds of a ``"mixed"`` one: ``Algorithm.policy``); eager calls choose what the
jitted run chooses, over runs with several keys (for a randomised algorithm, whose runs must differ
between keys); a run is bitwise the same alone and
inside a ``vmap`` batch; its state stays finite under ±inf and huge rewards; every hyperparameter may be
traced (a sweep's grid axis) without recompiling; and ``uses_revealed_nu`` tells the truth.
``check_environment(env)`` checks a stream (shapes, dtypes, means = contexts·θ*, the stream a function
of (key, θ*, t) alone that draws from its key unless it replays stored rounds, ‖θ*‖ ≤ S and contexts
within L) and its adversary (pure as the stream is: the same program traced twice, the same
output called twice, eager equal to jitted over a run; finite feedback, reward = mean + η + c, the
declared budget), and the pair bitwise equal under ``vmap`` and chunking. ``check_noise(family)`` checks a
noise family: draws of the default dtype that depend on the key, zero mean and the declared moment bound
(statistical tests on fixed seeds, each with a false-alarm rate of at most 1e-6).

Both return None when every property holds and raise ``AssertionError`` on the first that fails, with a
message naming the checker, the algorithm or environment, the property's short id and, where there is
one, the first failing round (numbered from 1: round t + 1 is the runner's 0-based index t)::

    check_algorithm(make_alg): property 'tie_lowest_index' failed in round 7: ...

They raise ``ValueError`` for bad arguments before doing any work. Everything is drawn from fixed seeds,
so a check is reproducible. Runs are 128 rounds long, or the algorithm's or environment's own horizon
where shorter (``horizon=`` for longer). A check compiles a handful of small programs (with the library's
compiler options, as ``jb.simulate`` and ``jb.sweep`` compile theirs) and runs some rounds eagerly: on a
2-core CPU the first check of a fresh process took 5–11 s for an O(1)-per-round algorithm, 6–9 s for an
environment, 32–39 s for GAdaOFUL and Heavy-OFUL, whose eager updates compile their solvers' loops on
every call (``benchmarks/check_times.py``, ``docs/benchmarks/check_times.json``: 0.5–1.5× the 40-round
probe's times measured alongside on a loaded machine; CRT 2.1× in one run and 1.1× in a second,
Heavy-OFUL, O(t) a round, 1.2× in both).
Example::

    import jaxbandit as jb
    from jaxbandit import testing

    def make_alg(p):   # as jb.sweep takes it: p maps names to (possibly traced) float scalars
        return jb.cr_hvt_ucb(40, 3, eps=1.0, nu=1.0, corruption=p["C"], beta_scale=p["beta_scale"])

    testing.check_algorithm(make_alg, {"C": 0.0, "beta_scale": 0.1}, dim=3, num_arms=5)
    testing.check_environment(jb.envs.linear(3, 5, noise=jb.noise.student_t(3.0),
                                             corruption=jb.corruption.flip(2.0)))

A factory must build its algorithm for a horizon of at least ``horizon`` rounds (algorithms that keep a
history size it by their own horizon).
"""

from ._algorithm import check_algorithm
from ._environment import check_environment
from ._noise import check_noise

__all__ = ["check_algorithm", "check_environment", "check_noise"]
