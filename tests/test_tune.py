"""jb.tune: the grid point it picks is the true argmin, on toy problems whose answer is known."""

import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandit as jb

T, K, d = 12, 3, 2
THETA = np.array([1.0, 0.0])
# Arm values <x_k, θ*> in two scenarios s = 0 and s = 1; the contexts are x_k = (value_k, 0).
VALUES = np.array([[1.0, 0.8, 0.0], [0.0, 0.8, 1.0]])


def contexts(values):
    X = np.zeros((T, K, d))
    X[:, :, 0] = values
    return X


def fixed_arm(p):
    """A toy algorithm that always plays arm round(p["arm"])."""
    arm = jnp.round(jnp.asarray(p["arm"])).astype(jnp.int32)
    return jb.Algorithm(init=lambda: jnp.zeros(()), select=lambda s, X: arm, update=lambda s, x, r, nu: s)


def scenario_env(p):
    """Scenario s ∈ {0, 1} blends the two context sets; noise is irrelevant to pseudo-regret."""
    s = p["s"]
    X = contexts(VALUES[0]) * (1.0 - s) + contexts(VALUES[1]) * s
    return jb.envs.replay(theta_star=THETA, contexts=X, noise=np.zeros(T))


@pytest.fixture(scope="module")
def over_scenarios():
    return jb.tune(
        fixed_arm,
        scenario_env,
        {"arm": [0, 1, 2], "s": [0.0, 1.0]},
        horizon=T,
        seeds=range(1000, 1003),
        over=("s",),
    )


def test_averaging_over_scenarios_picks_the_compromise(over_scenarios):
    # Per-round regret of arm k in scenario s is max(VALUES[s]) - VALUES[s, k]; arm 1 is never the
    # best in a single scenario but is the best single choice for both.
    per_round = VALUES.max(axis=1, keepdims=True) - VALUES  # [s, arm]
    expected = T * per_round.mean(axis=0)  # [arm]
    assert over_scenarios.best == {"arm": 1.0}
    assert over_scenarios.axes == ("arm",)
    np.testing.assert_allclose(over_scenarios.mean, expected, rtol=1e-6)
    np.testing.assert_allclose(over_scenarios.stderr, 0.0, atol=1e-6)  # deterministic toy
    assert over_scenarios.best_index == (1,)


def test_without_over_each_scenario_has_its_own_best():
    # the best arm is then the first or last grid value: tune warns that the grid may be too narrow
    for s, best_arm, side in ((0.0, 0.0, "smallest"), (1.0, 2.0, "largest")):
        with pytest.warns(UserWarning, match=f"best arm={best_arm:g} is the {side} value"):
            tuned = jb.tune(
                fixed_arm, scenario_env, {"arm": [0, 1, 2], "s": [s]}, horizon=T, seeds=2, over=("s",)
            )
        assert tuned.best == {"arm": best_arm}


def test_no_edge_warning_for_an_interior_best(recwarn):
    tuned = jb.tune(
        fixed_arm,
        scenario_env,
        {"arm": [0, 1, 2], "s": [0.0, 1.0]},
        horizon=T,
        seeds=range(1000, 1003),
        over=("s",),
    )
    assert tuned.best == {"arm": 1.0}
    assert not [w for w in recwarn if "tune:" in str(w.message)]


def test_table_rows_match_the_sweep_result(over_scenarios):
    res = over_scenarios.result
    assert res.dims == ("arm", "s", "seed", "round")
    assert res.coords["round"].tolist() == [T]  # only the final round is kept
    assert res.coords["seed"].tolist() == [1000, 1001, 1002]
    # An independent computation from the raw array: average over s and seeds, then argmin.
    by_arm = res.cumulative_regret[..., -1].mean(axis=(1, 2))
    rows = over_scenarios.table
    assert [r["arm"] for r in rows] == [0.0, 1.0, 2.0]
    np.testing.assert_allclose([r["mean"] for r in rows], by_arm, rtol=1e-6)
    assert over_scenarios.best["arm"] == res.coords["arm"][np.argmin(by_arm)]
    text = over_scenarios.format_table()
    assert text.splitlines()[1].startswith("*")  # best first, marked


def test_an_absurd_confidence_scale_loses_for_cr_hvt_ucb():
    """CR-Hvt-UCB at T = 150: β × 10⁴ explores forever (regret near linear) and must lose to β × 10⁻⁴;
    the choice must equal the argmin of the SweepResult's own mean final regret."""
    horizon, dim, arms = 150, 5, 10

    def make_alg(p):
        return jb.cr_hvt_ucb(horizon, dim, eps=1.0, nu=3**0.5, corruption=p["C"], beta_scale=p["beta_scale"])

    def make_env(p):
        return jb.envs.linear(dim, arms, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(p["C"]))

    grid = {"beta_scale": [1e4, 1e-4], "C": [0.0, 20.0]}
    tuned = jb.tune(make_alg, make_env, grid, horizon=horizon, seeds=range(1000, 1004), over=("C",))
    final = tuned.result.final_regret  # [beta_scale, C, seed]
    independent = final.mean(axis=(1, 2))
    assert tuned.best == {"beta_scale": float(grid["beta_scale"][int(np.argmin(independent))])}
    assert tuned.best == {"beta_scale": 1e-4}
    # s.e. over seeds of the per-seed average over C
    per_seed = final.mean(axis=1)
    np.testing.assert_allclose(tuned.stderr, per_seed.std(axis=-1, ddof=1) / 2.0, rtol=1e-6)


def test_check_report_seeds(over_scenarios):
    over_scenarios.check_report_seeds(range(10))  # disjoint: fine
    over_scenarios.check_report_seeds([5, 999, 1003])
    with pytest.raises(ValueError, match="1001"):
        over_scenarios.check_report_seeds([3, 1001])
    with pytest.raises(ValueError, match="seeds"):
        over_scenarios.check_report_seeds(None)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(seeds=None), "seeds=None is invalid"),
        (dict(seeds=0), "seeds=0 is invalid"),
        (dict(seeds=[]), "seeds=\\[\\] is invalid"),
        (dict(seeds=[1, 1]), "must not repeat"),
        (dict(seeds=[-1, 2]), "seeds=\\[-1, 2\\] is invalid"),
        (dict(seeds=2, objective="auc"), "objective='auc' is invalid"),
        (dict(seeds=2, over=("C",)), "'C', which is not a grid axis"),
        (dict(seeds=2, over=("arm", "s")), "leave at least one axis"),
        (dict(seeds=2, horizon=0), "horizon=0 is invalid"),
        (dict(seeds=2, record="all"), "record='all' is invalid here"),
        (dict(seeds=2, chunk_size=0), "chunk_size=0 is invalid"),
    ],
)
def test_invalid_arguments_are_named(kwargs, match):
    args = dict(horizon=T, seeds=2)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        jb.tune(fixed_arm, scenario_env, {"arm": [0, 1], "s": [0.0]}, **args)


def test_seeds_are_required_and_algorithm_must_be_single():
    with pytest.raises(TypeError):
        jb.tune(fixed_arm, scenario_env, {"arm": [0, 1], "s": [0.0]}, horizon=T)  # no seeds
    with pytest.raises(ValueError, match="one algorithm"):
        jb.tune({"a": fixed_arm, "b": fixed_arm}, scenario_env, {"arm": [0], "s": [0.0]}, horizon=T, seeds=2)
    with pytest.raises(ValueError, match="grid=\\{\\} is invalid"):
        jb.tune(fixed_arm, scenario_env, {}, horizon=T, seeds=2)


def test_choose_refuses_what_is_not_one_algorithms_sweep_and_leaves_it_unchanged():
    res = jb.SweepResult(
        ("beta", "C", "seed", "round"),
        {"beta": np.array([0.1, 1.0]), "C": np.array([0.0, 5.0]), "seed": np.arange(3), "round": [9]},
        {"cumulative_regret": np.arange(12.0).reshape(2, 2, 3, 1)},
        {"note": "mine"},
    )
    tuned = jb.runner.tune.choose(res, over="C")
    assert tuned.best == {"beta": 0.1}
    assert res.meta == {"note": "mine"}  # the caller's result is not modified
    assert tuned.result.meta["over"] == ["C"] and tuned.result.meta["note"] == "mine"
    with pytest.raises(ValueError, match=r"result=dict is invalid: it must be a jb\.SweepResult"):
        jb.runner.tune.choose({"dims": ()})
    with pytest.raises(ValueError, match=r"over=\('C', 'C'\) is invalid: it names an axis twice"):
        jb.runner.tune.choose(res, over=("C", "C"))
