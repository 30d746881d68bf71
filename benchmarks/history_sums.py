"""The whole-history algorithms (GAdaOFUL, Heavy-OFUL, TOFU), now and with the previous code, in one process.

Their refits sum per-row terms over every past round, so a round costs O(t·d²): the history sums are
most of a long run. Two levels, each the previous code (``--previous``, loaded beside the current one)
and the current code, interleaved, best of ``--repeats``, and compared bitwise:

- kernels: one objective/gradient/Hessian pass of the robust regression (``value_grad_hess``, Huber and
  pseudo-Huber) and TOFU's truncated whitened sum, vmapped over ``--lanes`` runs with histories of up
  to 2048 rows (filled at random), d = 10;
- sweeps: each algorithm (theory constants) in the paper's environment, C ∈ {0, 100} × 5 seeds,
  T = ``--horizon``, compiled, timed on a second call.

    python benchmarks/history_sums.py [--previous 7122cc9] [--lanes 20] [--horizon 2000] [--repeats 5]
"""

from __future__ import annotations

import argparse

import common
import jax
import jax.numpy as jnp
import numpy as np

D, ROWS = common.D, 2048


def kernels(libs: dict, lanes: int, repeats: int) -> list[dict]:
    rng = np.random.default_rng(0)
    dtype = jnp.float32
    hist_arrays = dict(
        X=rng.normal(size=(lanes, ROWS, D)),
        r=3.0 * rng.standard_t(2.0, size=(lanes, ROWS)),
        sigma=rng.uniform(0.5, 2.0, size=(lanes, ROWS)),
        tau=rng.uniform(0.5, 3.0, size=(lanes, ROWS)),
    )
    filled = jnp.asarray(rng.integers(1, ROWS, lanes), jnp.int32)
    theta = jnp.asarray(0.3 * rng.normal(size=(lanes, D)), dtype)
    A = rng.normal(size=(lanes, D, D))
    V_inv = jnp.asarray(np.linalg.inv(A @ A.transpose(0, 2, 1) + np.eye(D)), dtype)
    threshold = jnp.asarray(rng.uniform(0.5, 3.0, lanes), dtype)
    cases: dict = {}
    for which, lib in libs.items():
        rr = lib.agents.robust_regression
        arrays = dict(hist_arrays)
        if "XT" in rr.History._fields:  # contexts stored by component since the layout change
            arrays["XT"] = np.swapaxes(arrays.pop("X"), 1, 2)
        hist = rr.History(**{k: jnp.asarray(v, dtype) for k, v in arrays.items()}, filled=filled)
        one = jnp.asarray(1.0, dtype)
        for loss in ("huber", "pseudo_huber"):
            f = jax.jit(
                jax.vmap(lambda th, h, rr=rr, loss=loss: rr.value_grad_hess(th, h, one, getattr(rr, loss)))
            )
            cases.setdefault(f"value_grad_hess ({loss})", {})[which] = (f, (theta, hist))
        f = jax.jit(jax.vmap(lib.agents.tofu.whitened_truncated_sum))
        cases.setdefault("tofu whitened_truncated_sum", {})[which] = (f, (V_inv, hist, threshold))
    rows = []
    for name, by_code in cases.items():
        outs = {w: jax.block_until_ready(f(*args)) for w, (f, args) in by_code.items()}
        fns = {
            w: (lambda f=f, args=args: jax.block_until_ready(f(*args))) for w, (f, args) in by_code.items()
        }
        best = common.interleaved_best(fns, repeats)
        equal = all(
            np.array_equal(a, b)
            for a, b in zip(jax.tree.leaves(outs["previous"]), jax.tree.leaves(outs["now"]))
        )
        rows.append(_row(name, f"{lanes} lanes", best, equal))
    return rows


def sweeps(libs: dict, horizon: int, repeats: int) -> list[dict]:
    rows = []
    for name in ("gadaoful", "heavy_oful", "tofu"):
        fns, outs = {}, {}
        for which, lib in libs.items():
            spec = lib.registry.algorithm(name)

            def make_alg(p, lib=lib, spec=spec):
                prob = lib.agents.registry.Problem(horizon, D, eps=1.0, nu=3**0.5, corruption=p["C"])
                return spec.build(prob, spec.theory(prob))

            def make_env(p, lib=lib):
                return lib.envs.linear(
                    D, common.K, noise=lib.noise.student_t(3.0), corruption=lib.corruption.flip(p["C"])
                )

            def run(lib=lib, make_alg=make_alg, make_env=make_env):
                res = lib.sweep(
                    make_alg, make_env, {"C": [0.0, 100.0]}, horizon=horizon, seeds=5, record=horizon
                )
                return np.asarray(res.cumulative_regret)

            outs[which] = run()  # compiles
            fns[which] = run
        best = common.interleaved_best(fns, repeats)
        rows.append(
            _row(f"sweep {name}", f"2 C x 5 seeds x T={horizon}", best, np.array_equal(*outs.values()))
        )
    return rows


def _row(name, size, best, equal) -> dict:
    return dict(
        case=name,
        size=size,
        previous_ms=best["previous"] * 1e3,
        now_ms=best["now"] * 1e3,
        speedup=best["previous"] / best["now"],
        bitwise=equal,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--previous", default="7122cc9", help="git revision of the previous code")
    parser.add_argument("--lanes", type=int, default=20)
    parser.add_argument("--horizon", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    libs = {"previous": common.load_previous(args.previous), "now": common.jb}
    rows = kernels(libs, args.lanes, args.repeats) + sweeps(libs, args.horizon, max(2, args.repeats // 2))
    print(f"\nprevious = {args.previous}; best of interleaved calls\n")
    common.print_table(
        rows,
        [
            ("case", ""),
            ("size", ""),
            ("previous_ms", ".2f"),
            ("now_ms", ".2f"),
            ("speedup", ".2f"),
            ("bitwise", ""),
        ],
    )
    path = common.write_json("history_sums", {"rows": rows, "previous": args.previous, **vars(args)})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
