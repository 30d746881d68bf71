"""Your own data as a stream: a table of feature vectors and observed rewards (NumPy arrays) turned into
a bandit environment that ``jb.sweep`` runs, checked by ``jb.testing.check_environment``.

The table holds N rows: features ``[N, d]`` and a reward for each row ``[N]``. Each round the stream
draws K rows at random (with replacement) as the arms' contexts, each row scaled to unit norm. The
rewards are modelled as the paper's linear model r = ⟨x, θ*⟩ + η fitted to the table: θ* is the
least-squares fit of the rewards on the unit rows, and η is drawn from the fit's residuals
(``jb.noise.empirical``: a bootstrap of the centred residuals), so both the contexts and the noise are
the data's own. The learners are told S = ‖θ*‖ and the residuals' own moment ν.

    python examples/own_stream.py                          # a generated table, T = 2000, 8 seeds
    python examples/own_stream.py --data mydata.npz        # arrays "features" [N, d], "rewards" [N]
    python examples/own_stream.py --horizon 100 --seeds 2  # small

Without ``--data`` it generates a table (N = 5000, d = 8, correlated features, Student-t residuals) and
says so. A log of whole rounds (the K contexts each round offered, a reward noise per round) is
replayed as it is by ``jb.envs.replay`` instead.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jaxbandit as jb


def generated_table(n: int = 5000, dim: int = 8, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A stand-in for your data: correlated features `[n, dim]` and rewards `[n]` linear in them plus
    Student-t(3) noise."""
    rng = np.random.default_rng(seed)
    mixing = rng.normal(size=(dim, dim)) / np.sqrt(dim)
    features = rng.normal(size=(n, dim)) @ mixing + 0.5 * rng.normal(size=(n, 1))  # a common factor
    w = rng.normal(size=dim)
    rewards = features @ w / np.linalg.norm(features, axis=1) / np.linalg.norm(w) + 0.3 * rng.standard_t(3, n)
    return features, rewards


def table_stream(features, rewards, num_arms: int):
    """A ``jb.Stream`` over the table and the (θ*, noise) of the linear model fitted to it.

    Returns ``(stream, S, noise)``: the stream, ‖θ*‖ and the residuals' noise family.
    """
    features = np.asarray(features, np.float64)
    rewards = np.asarray(rewards, np.float64)
    if features.ndim != 2 or rewards.shape != features.shape[:1]:
        raise ValueError(
            f"features of shape {features.shape} and rewards of shape {rewards.shape} are invalid: give "
            "features [N, d] and one reward per row [N]"
        )
    if not (np.isfinite(features).all() and np.isfinite(rewards).all()):
        raise ValueError("features and rewards must be finite: drop or fill the rows with NaN or inf")
    if not isinstance(num_arms, int) or num_arms < 1:
        raise ValueError(f"num_arms={num_arms!r} is invalid: it must be an integer >= 1")
    norms = np.linalg.norm(features, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ValueError(f"features row {int(np.argmin(norms))} is zero: it has no direction to scale")
    unit = features / norms  # every context of norm L = 1
    theta, *_ = np.linalg.lstsq(unit, rewards, rcond=None)  # the best linear model of the table
    noise = jb.noise.empirical(rewards - unit @ theta, name="residuals")
    n, dim = unit.shape
    dtype = jnp.result_type(float)
    rows, theta_star = jnp.asarray(unit, dtype), jnp.asarray(theta, dtype)

    def init(key):  # θ* is the fit, the same in every run
        return theta_star

    def draw(key, theta_star, t):  # key: round t's, already folded by the runner
        k_rows, k_noise = jax.random.split(key)
        X = rows[jax.random.randint(k_rows, (num_arms,), 0, n)]  # [K, d]
        eta, _ = noise.sample(k_noise, t)
        return jb.Round(
            contexts=X, means=jb.linalg.dot(X, theta_star), eta=eta, nu=jnp.full((), jnp.nan, dtype)
        )

    return jb.Stream(init, draw, dim, num_arms, reveals_nu=False), float(np.linalg.norm(theta)), noise


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help='an .npz of "features" [N, d] and "rewards" [N]')
    parser.add_argument("--arms", type=int, default=20, help="rows offered each round, K (default 20)")
    parser.add_argument("--horizon", type=int, default=2000, help="rounds per run (default 2000)")
    parser.add_argument("--seeds", type=int, default=8, help="runs of each algorithm (default 8)")
    args = parser.parse_args(argv)
    for name in ("arms", "horizon", "seeds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}={getattr(args, name)} is invalid: it must be an integer >= 1")

    if args.data is None:
        features, rewards = generated_table()
        print(f"no --data: a generated table of {features.shape[0]} rows, d = {features.shape[1]}")
    else:
        with np.load(args.data) as z:
            features, rewards = z["features"], z["rewards"]
    stream, S, noise = table_stream(features, rewards, args.arms)
    env = jb.Environment(stream, jb.corruption.none())
    jb.testing.check_environment(env, S=S)  # raises AssertionError naming the first property that fails
    nu = float(noise.moment_bound(1.0))
    print(f"the stream passes jb.testing.check_environment; |theta*| = {S:.3f}, residuals' nu = {nu:.3f}")

    T = args.horizon
    problem = jb.registry.Problem(horizon=T, dim=stream.dim, eps=1.0, nu=nu, S=S)
    res = jb.sweep(
        {
            "CR-Hvt-UCB": jb.registry.algorithm("cr_hvt_ucb").make(problem, beta_scale=1e-4),
            "OFUL": jb.registry.algorithm("oful").make(problem, beta_scale=1e-2),
        },
        env,
        horizon=T,
        seeds=args.seeds,
        record=("log", 10),
    )
    final = res.final_regret  # [algorithm, seed]
    print(f"final regret over {args.seeds} seeds, T = {T}")
    for name, row in zip(res.coords["algorithm"], final):
        print(f"  {name:<10} mean {row.mean():7.1f}  min {row.min():7.1f}  max {row.max():7.1f}")


if __name__ == "__main__":
    main()
