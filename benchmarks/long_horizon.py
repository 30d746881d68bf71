"""Float32 drift of V⁻¹ (and θ̂) over long horizons, against float64 on the same stream.

For each algorithm: run the bandit in float32 for T rounds (a ``lax.scan`` over select/respond/update,
several seeds under ``vmap``), recording the chosen contexts x_t, rewards r_t and revealed ν_t; then feed
that same stream to ``alg.update`` in float64 (x64). At checkpoints it reports, per seed (worst seed
shown):

- ``sym``    max|A − Aᵀ| / max|A| of the float32 A = V⁻¹ (Sherman–Morrison keeps it exactly symmetric
             when the rounding of v vᵀ is);
- ``lmin``   λ_min(A)/λ_max(A) of the float32 A (negative: positive definiteness lost);
- ``AV-I``   ‖A₃₂ V₆₄ − I‖₂ with V₆₄ recomputed in float64 (OFUL: λI + Σ x xᵀ from the stream;
             weighted algorithms: the inverse of the float64 replay's V⁻¹, whose weights are float64's);
- ``dA``     ‖A₃₂ − A₆₄‖₂ / ‖A₆₄‖₂, and ``dθ`` ‖θ₃₂ − θ₆₄‖/‖θ₆₄‖ (CR-Hvt-UCB: θ̂; OFUL: V⁻¹b);
- ``cond``   cond(V₆₄);
- ``finite`` whether every float32 state leaf is finite.

Then the float32 and float64 *bandits* (each choosing its own arms) are compared in distribution: mean
and standard error of the final regret over seeds, paired on the same keys.

    python benchmarks/long_horizon.py                      # T = 10⁶, 3 seeds, CR-Hvt-UCB and OFUL
    python benchmarks/long_horizon.py --horizon 200000 --seeds 2 --algs cr

Setting: the paper's (d = 10, K = 20, Student-t(3) noise, flip C = 100); CR-Hvt-UCB with ε = 1, ν = √3,
C = 100, beta_scale = 1e-4; OFUL with λ = 1, β = 1. ``--stress`` adds a CR-Hvt-UCB whose weights
1/(ασ_t²) are large (ν = σ_min = 1e-3, beta_scale = 1e-6, Gaussian noise of scale 1e-3), the regime
where Sherman–Morrison in float32 is most fragile.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxbandit as jb

D, K = 10, 20


def make(name, horizon):
    """(alg factory, env factory), built inside the current dtype context."""
    if name == "cr":
        alg = lambda: jb.cr_hvt_ucb(horizon, D, eps=1.0, nu=3**0.5, corruption=100.0, beta_scale=1e-4)
        noise = lambda: jb.noise.student_t(3.0)
    elif name == "oful":
        alg = lambda: jb.oful(horizon, D, lam=1.0, beta=1.0)
        noise = lambda: jb.noise.student_t(3.0)
    elif name == "stress":
        alg = lambda: jb.cr_hvt_ucb(
            horizon, D, eps=1.0, nu=1e-3, sigma_min=1e-3, corruption=0.0, beta_scale=1e-6
        )
        noise = lambda: jb.noise.gaussian(1e-3)
    else:
        raise ValueError(name)
    env = lambda: jb.envs.linear(D, K, noise=noise(), corruption=jb.corruption.flip(budget=100.0))
    return alg, env


def bandit_segment(alg, env):
    """A jitted, seed-vmapped scan of rounds [t0, t0 + n) that also returns x_t, r_t, ν_t."""

    def one(carry, rounds):
        def body(c, t):
            state, env_state, key = c
            rnd = env.stream.draw(jax.random.fold_in(key, t), env_state.theta_star, t)
            a = alg.select(state, rnd.contexts)
            env_state, fb = env.respond(env_state, rnd, a, t)
            state = alg.update(state, rnd.contexts[a], fb.reward, fb.nu)
            return (state, env_state, key), (rnd.contexts[a], fb.reward, fb.nu, fb.regret)

        return jax.lax.scan(body, carry, rounds)

    return jax.jit(jax.vmap(one, in_axes=(0, None)))


def init_carry(alg, env, keys):
    def one(k):
        k_env, k_rounds = jax.random.split(k)
        return alg.init(), env.init(k_env), k_rounds

    return jax.vmap(one)(keys)


def forced_segment(alg):
    def one(state, x, r, nu):
        def body(s, inp):
            return alg.update(s, *inp), None

        return jax.lax.scan(body, state, (x, r, nu))[0]

    return jax.jit(jax.vmap(one))


def inverse_and_theta(name, state):
    A = np.asarray(state[0], np.float64)
    theta = A @ np.asarray(state.b, np.float64) if name == "oful" else np.asarray(state.theta, np.float64)
    return A, theta


def metrics(name, s32, s64, V_oful, lam):
    rows = []
    for i in range(np.asarray(s32.t).shape[0]):
        one32 = jax.tree_util.tree_map(lambda a: a[i], s32)
        one64 = jax.tree_util.tree_map(lambda a: a[i], s64)
        A32, th32 = inverse_and_theta(name, one32)
        A64, th64 = inverse_and_theta(name, one64)
        V = V_oful[i] + lam * np.eye(D) if name == "oful" else np.linalg.inv((A64 + A64.T) / 2)
        ev = np.linalg.eigvalsh((A32 + A32.T) / 2)
        rows.append(
            dict(
                sym=np.abs(A32 - A32.T).max() / np.abs(A32).max(),
                lmin=ev[0] / ev[-1],
                AV=np.linalg.norm(A32 @ V - np.eye(D), 2),
                dA=np.linalg.norm(A32 - A64, 2) / np.linalg.norm(A64, 2),
                dth=np.linalg.norm(th32 - th64) / max(np.linalg.norm(th64), 1e-30),
                cond=np.linalg.cond(V),
                finite=all(
                    bool(np.all(np.isfinite(np.asarray(leaf)))) for leaf in jax.tree_util.tree_leaves(one32)
                ),
            )
        )
    worst = {
        k: (max(r[k] for r in rows) if k != "lmin" else min(r[k] for r in rows))
        for k in rows[0]
        if k != "finite"
    }
    worst["finite"] = all(r["finite"] for r in rows)
    return worst


def checkpoints(horizon):
    pts = [p for p in (10_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000, 5_000_000) if p < horizon]
    return pts + [horizon]


def drift(name, horizon, seeds, segment):
    keys = jax.random.split(jax.random.key(2024), seeds)
    alg_f, env_f = make(name, horizon)
    alg32, env32 = alg_f(), env_f()
    run32 = bandit_segment(alg32, env32)
    carry = init_carry(alg32, env32, keys)
    with jax.enable_x64(True):
        alg64 = alg_f()
        run64 = forced_segment(alg64)
        s64 = jax.vmap(lambda _: alg64.init())(jnp.arange(seeds))
    lam = 1.0
    V_oful = np.zeros((seeds, D, D))
    print(f"\n== {name}: float32 bandit, float64 replay of its stream; {seeds} seeds, worst seed shown")
    print(
        f"{'round':>9} {'sym':>9} {'lmin':>10} {'AV-I':>9} {'dA':>9} {'dθ':>9} {'cond':>9} finite  "
        f"f32 s  f64 s"
    )
    t = 0
    regret = np.zeros(seeds)
    for stop in checkpoints(horizon):
        t32 = t64 = 0.0
        while t < stop:
            n = min(segment, stop - t)
            rounds = jnp.arange(t, t + n, dtype=jnp.int32)
            t0 = time.perf_counter()
            carry, (xs, rs, nus, regs) = run32(carry, rounds)
            jax.block_until_ready(carry)
            t32 += time.perf_counter() - t0
            regret += np.asarray(regs, np.float64).sum(axis=1)
            xs64 = np.asarray(xs, np.float64)
            if name == "oful":
                V_oful += np.einsum("bti,btj->bij", xs64, xs64)
            t0 = time.perf_counter()
            with jax.enable_x64(True):
                s64 = run64(
                    s64,
                    jnp.asarray(xs64),
                    jnp.asarray(np.asarray(rs, np.float64)),
                    jnp.asarray(np.asarray(nus, np.float64)),
                )
                jax.block_until_ready(s64)
            t64 += time.perf_counter() - t0
            t += n
        m = metrics(name, carry[0], s64, V_oful, lam)
        print(
            f"{stop:>9} {m['sym']:9.1e} {m['lmin']:10.2e} {m['AV']:9.1e} {m['dA']:9.1e} {m['dth']:9.1e} "
            f"{m['cond']:9.1e} {m['finite']!s:>6} {t32:6.1f} {t64:6.1f}"
        )
    return regret


def bandit_regret(name, horizon, seeds, segment, x64):
    keys = jax.random.split(jax.random.key(7), seeds)
    with jax.enable_x64(x64):
        alg_f, env_f = make(name, horizon)
        alg, env = alg_f(), env_f()
        run = bandit_segment(alg, env)
        carry = init_carry(alg, env, keys)
        total = np.zeros(seeds)
        t = 0
        while t < horizon:
            n = min(segment, horizon - t)
            carry, out = run(carry, jnp.arange(t, t + n, dtype=jnp.int32))
            total += np.asarray(out[3], np.float64).sum(axis=1)
            t += n
    return total


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--horizon", type=int, default=1_000_000)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--algs", default="cr,oful")
    p.add_argument("--stress", action="store_true")
    p.add_argument(
        "--segment",
        type=int,
        default=10_000,
        help="rounds per compiled scan (one compilation when every checkpoint is a multiple of it)",
    )
    p.add_argument(
        "--regret-seeds", type=int, default=8, help="seeds for the f32-vs-f64 regret comparison (0: skip it)"
    )
    p.add_argument("--regret-horizon", type=int, default=200_000)
    args = p.parse_args()
    names = [a for a in args.algs.split(",") if a] + (["stress"] if args.stress else [])
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; horizon {args.horizon}, seeds {args.seeds}")
    for name in names:
        drift(name, args.horizon, args.seeds, args.segment)
    if args.regret_seeds:
        print(
            f"\n== final regret after {args.regret_horizon} rounds, float32 vs float64 bandits "
            f"({args.regret_seeds} paired seeds)"
        )
        for name in names:
            r32 = bandit_regret(name, args.regret_horizon, args.regret_seeds, args.segment, False)
            r64 = bandit_regret(name, args.regret_horizon, args.regret_seeds, args.segment, True)
            diff = r32 - r64
            se = diff.std(ddof=1) / np.sqrt(diff.size)
            print(
                f"{name:>7}: f32 {r32.mean():10.1f} ± {r32.std(ddof=1) / np.sqrt(r32.size):7.1f}   "
                f"f64 {r64.mean():10.1f} ± {r64.std(ddof=1) / np.sqrt(r64.size):7.1f}   "
                f"paired diff {diff.mean():8.1f} ± {se:6.1f} ({100 * diff.mean() / r64.mean():+.2f}%)"
            )


if __name__ == "__main__":
    main()
