"""jaxbandit.testing: every algorithm and environment of the library passes its conformance checker, and
the checker catches a deliberately broken algorithm or environment for each property it checks."""

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandit as jb
from jaxbandit import testing
from jaxbandit.core import linalg
from jaxbandit.core.dtypes import as_float, float_dtype
from jaxbandit.core.types import Adversary

T, D, K = 40, 3, 5  # the checker's default horizon; small problems compile fast


# --------------------------------------------------------------------------------------------------------
# The library's algorithms and environments pass


def registered(name: str, eps: float):
    """A registered algorithm built for a small problem with its theory constants, which are the
    checker's example hyperparameters (traced in the checks that trace them, as a sweep does)."""
    spec = jb.registry.algorithm(name)
    problem = jb.registry.Problem(T, D, eps=eps, nu=1.3, corruption=2.0)
    params = {k: float(np.asarray(v)) for k, v in spec.theory(problem).items()}
    return (lambda p: spec.build(problem, p)), params


#: Configurations the registry's defaults do not reach: ν_t revealed, GAdaOFUL's public preset with its
#: knowledge traced, and ε < 1 with the knowledge traced (t^e then differs from 1 in every round).
EXTRA_ALGORITHMS = {
    "hvt_ucb_revealed_eps0.4": (
        lambda p: jb.hvt_ucb(T, D, eps=0.4, nu="revealed", beta_scale=p["beta_scale"]),
        {"beta_scale": 0.1},
    ),
    "cr_hvt_ucb_knowledge_traced": (
        lambda p: jb.cr_hvt_ucb(
            T, D, eps=p["eps"], nu=p["nu"], corruption=p["C"], beta_scale=p["beta_scale"]
        ),
        {"eps": 0.4, "nu": 1.5, "C": 2.0, "beta_scale": 0.1},
    ),
    "gadaoful_public": (  # its default rule, ellipsoid_ball, is the next case's
        lambda p: jb.gadaoful(T, D, nu=p["nu"], corruption=p["C"], arm_rule="ellipsoid"),
        {"nu": 1.0, "C": 2.0},
    ),
    "gadaoful_ellipsoid_ball": (
        lambda p: jb.gadaoful(
            T,
            D,
            nu=1.0,
            corruption=2.0,
            constants="public_identity",
            beta=p["beta"],
            arm_rule="ellipsoid_ball",
        ),
        {"beta": 0.6},
    ),
}


#: Every algorithm at ε = 1, and those that read ε also at ε = 0.4 (the checker's streams do not depend
#: on ε, so for the others it would be the same check twice).
REGISTERED_CASES = [(name, 1.0) for name in jb.registry.names()] + [
    pytest.param(name, 0.4, marks=pytest.mark.slow)
    for name in jb.registry.names()
    if "eps" in jb.registry.algorithm(name).knowledge
]


@pytest.mark.parametrize(("name", "eps"), REGISTERED_CASES)
def test_every_registered_algorithm_passes(name, eps):
    factory, params = registered(name, eps)
    assert testing.check_algorithm(factory, params, dim=D, num_arms=K, name=f"{name}(eps={eps})") is None


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXTRA_ALGORITHMS))
def test_library_algorithms_pass_in_other_configurations(name):
    factory, params = EXTRA_ALGORITHMS[name]
    assert testing.check_algorithm(factory, params, dim=D, num_arms=K, name=name) is None


def _replay():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(30, K, D))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    theta = rng.normal(size=D)
    return jb.envs.replay(
        theta_star=theta / np.linalg.norm(theta),
        contexts=X,
        noise=rng.standard_t(3.0, size=30),
        nu=1.3,
        corruption=jb.corruption.flip(1.0),
    )


ENVIRONMENTS = {  # every noise family and every adversary (each pairing compiles a vmap batch: a few)
    "gaussian+none": lambda: jb.envs.linear(
        D, K, noise=jb.noise.gaussian(0.5), corruption=jb.corruption.none()
    ),
    "student_t+flip": lambda: jb.envs.linear(
        D, K, noise=jb.noise.student_t(3.0), eps=1.0, corruption=jb.corruption.flip(2.0)
    ),
    "pareto+flip_rounds": lambda: jb.envs.linear(
        D, K, noise=jb.noise.pareto(2.5), eps=1.0, corruption=jb.corruption.flip_rounds(5)
    ),
    "symmetric_pareto+flip": lambda: jb.envs.linear(
        D, K, noise=jb.noise.symmetric_pareto(2.5), corruption=jb.corruption.flip(2.0)
    ),
    "heteroscedastic+flip": lambda: jb.envs.linear(
        D,
        K,
        eps=1.0,
        corruption=jb.corruption.flip(2.0),
        noise=jb.noise.heteroscedastic(jb.noise.student_t(3.0)),
    ),
    "empirical+flip": lambda: jb.envs.linear(
        D, K, noise=jb.noise.empirical(jb.datasets.sp500_returns("AMZN")), corruption=jb.corruption.flip(2.0)
    ),
    "gaussian+random_sign": lambda: jb.envs.linear(
        D, K, noise=jb.noise.gaussian(0.5), corruption=jb.corruption.random_sign(3.0, rate=0.5, seed=1)
    ),
    "student_t+targeted": lambda: jb.envs.linear(
        D, K, noise=jb.noise.student_t(3.0), corruption=jb.corruption.targeted(3.0)
    ),
    "gaussian+targeted(θ†)": lambda: jb.envs.linear(
        D, K, noise=jb.noise.gaussian(0.5), corruption=jb.corruption.targeted(np.inf, target=[0.0, 1.0, 0.0])
    ),
    "select+select": lambda: jb.envs.linear(
        D,
        K,
        noise=jb.noise.select([jb.noise.gaussian(0.5), jb.noise.student_t(3.0)], 1),
        corruption=jb.corruption.select([jb.corruption.none(), jb.corruption.flip(2.0)], 1),
    ),
    "replay+flip": _replay,
}


@pytest.mark.parametrize("name", list(ENVIRONMENTS))
def test_library_environments_pass(name):
    assert testing.check_environment(ENVIRONMENTS[name](), name=name) is None


@pytest.mark.parametrize("name", [name for name in jb.registry.streams() if name != "linear"])
def test_every_registered_stream_passes(name):
    """Each stream the benchmark offers, at its d = 10 (fewer arms: the check's cost grows with K); but
    ``linear``, which is ``jb.envs.linear``'s (tested in test_plugins), checked above."""
    stream = jb.registry.stream(name).build(10, K, jb.noise.student_t(3.0))
    env = jb.Environment(stream, jb.corruption.flip(2.0))
    assert testing.check_environment(env, name=f"stream {name}") is None


def test_every_noise_family_and_adversary_is_checked():
    import inspect

    sources = "\n".join(inspect.getsource(f) for f in ENVIRONMENTS.values() if f is not _replay)
    numbers = ("NoiseFamily", "raw_pareto_moment_bound", "heavy_tail_index")  # not families
    families = {n for n in jb.noise.__all__ if n not in numbers}
    adversaries = {n for n in jb.corruption.__all__ if n not in ("Adversary", "AdversaryView")}
    missing = {n for n in families | adversaries if f".{n}(" not in sources}
    assert not missing, missing


# --------------------------------------------------------------------------------------------------------
# A small conforming algorithm, and broken variants of it


class ToyState(NamedTuple):
    V_inv: jax.Array
    b: jax.Array
    t: jax.Array


@jax.custom_batching.custom_vmap
def batch_sensitive(x):
    """The identity alone, one ulp up under ``vmap``: what XLA's CPU dots and reductions do to a run when
    their summation order follows the batch shape, made deterministic."""
    return x


@batch_sensitive.def_vmap
def _batch_sensitive_rule(axis_size, in_batched, x):
    return jnp.nextafter(x, jnp.inf), in_batched[0]


CALLS = {"update": 0, "select": 0}


def _noise_for_callback():
    return np.float32(1e-3 * np.random.default_rng().standard_normal())


def toy(p, flaw=None, randomized=False):
    """Ridge UCB built from jb.linalg (conforming); ``flaw`` breaks one property, or is one of the unusual
    but correct variants of ``CORRECT_VARIANTS``."""
    beta = as_float(p["beta"])
    if flaw == "traced_differs" and isinstance(p["beta"], jax.core.Tracer):
        beta = 2.0 * beta

    def init():
        dtype = float_dtype()
        b = np.zeros(D, dtype) if flaw == "numpy_leaf" else jnp.zeros(D, dtype)
        return ToyState(jnp.eye(D, dtype=dtype), b, jnp.zeros((), jnp.int32))

    def scores(state, contexts, key=None):
        theta = linalg.matvec(state.V_inv, state.b)
        if key is not None:
            # perturbing differently only when traced: what jb.simulate and jb.sweep run is not what a
            # user stepping through select eagerly sees
            size = 0.3 if flaw == "traced_perturbation" and isinstance(theta, jax.core.Tracer) else 0.1
            theta = theta + size * (jax.random.uniform(key, theta.shape, theta.dtype) - 0.5)
        mean = linalg.dot(contexts, theta)
        bonus = beta * linalg.ellipsoid_norm(state.V_inv, contexts)
        return mean + bonus, jnp.max(jnp.abs(mean) + jnp.abs(bonus))

    def select(state, contexts, *key):
        s, scale = scores(state, contexts, *key)
        if flaw == "np_random_select":  # a constant of the trace under jax.jit, fresh when eager
            s = s + 1e-3 * np.random.default_rng().standard_normal(K).astype(s.dtype)
        if flaw in ("counter_bias_arm0", "round_robin"):
            CALLS["select"] += 1
        if flaw == "counter_bias_arm0":
            s = s.at[0].add(1e-4 * CALLS["select"])
        if flaw == "round_robin":
            return jnp.asarray(CALLS["select"] % K, jnp.int32)
        if flaw == "masked_argmax":  # correct: jnp.argmax takes the first maximum, -inf never wins
            masked = jnp.where(contexts[:, 0] < 0.9, s, -jnp.inf)
            return jnp.where(
                jnp.all(jnp.isneginf(masked)), linalg.argmax_lowest(s, scale), jnp.argmax(masked)
            ).astype(jnp.int32)
        if flaw == "float_action":
            return linalg.argmax_lowest(s, scale).astype(float_dtype())
        if flaw == "int64_action":
            return jnp.argmax(s)
        if flaw == "out_of_range":
            return linalg.argmax_lowest(s, scale) + 1
        if flaw == "highest_tie":
            return (K - 1 - jnp.argmax(s[::-1])).astype(jnp.int32)
        return linalg.argmax_lowest(s, scale)

    def update(state, x, reward, nu, *key):
        dtype = state.b.dtype
        r = reward.astype(dtype) if flaw == "no_clamp" else linalg.clamp_reward(reward, dtype)
        if flaw == "reads_nu":
            r = r / jnp.maximum(nu, 1.0)
        b = state.b + r * x
        if flaw == "batch_sensitive":
            b = batch_sensitive(b)
        if flaw == "global_counter":  # Python state: a jitted run sees the count of its one trace
            CALLS["update"] += 1
            b = b + 1e-3 * CALLS["update"]
        if flaw == "random_callback":  # one program, but each run of it calls NumPy's global generator
            b = b + jax.pure_callback(_noise_for_callback, jax.ShapeDtypeStruct((), np.float32)).astype(dtype)
        t = state.t + (1.0 if flaw == "dtype_change" else 1)
        return ToyState(linalg.sherman_morrison(state.V_inv, x, jnp.ones((), dtype)), b, t)

    claims_nu = flaw == "ignores_nu"
    return jb.Algorithm(init, select, update, uses_revealed_nu=claims_nu, randomized=randomized)


def toy_python_if(p):
    """A factory branching in Python on a hyperparameter: it cannot take a traced ``beta``."""
    if p["beta"] > 0:
        return toy(p)
    return toy({"beta": 0.0})


def check_toy(factory, x64=False, **kwargs):
    with jax.enable_x64(x64):
        testing.check_algorithm(factory, {"beta": 1.0}, dim=D, num_arms=K, name="toy", **kwargs)


def test_toy_passes():
    check_toy(toy)


def test_randomized_toy_passes_with_per_round_keys():
    check_toy(lambda p: toy(p, randomized=True))


def test_toy_passes_in_float64():
    check_toy(toy, x64=True)


def test_one_arm():
    """K = 1: the tie copy is inapplicable, the rest still runs."""
    testing.check_algorithm(toy, {"beta": 1.0}, dim=D, num_arms=1)


BROKEN_ALGORITHMS = {  # flaw: (the property that catches it, x64, a part of the message or None)
    "not_an_algorithm": ("algorithm_type", False, "factory(params) returned a tuple"),
    "numpy_leaf": ("state_dtypes_shapes", False, "init() leaf .b is a ndarray, not a JAX array"),
    "dtype_change": ("state_dtypes_shapes", False, "in round 1: update changed the state's structure"),
    "float_action": ("action_dtype", False, "select returned dtype float32"),
    "int64_action": ("action_dtype", True, "select returned dtype int64"),
    "out_of_range": ("action_dtype", False, "select returned arm 5, outside [0, 5)"),
    "highest_tie": ("tie_lowest_index", False, "in round 1: with all 5 contexts equal, select chose arm 4"),
    # impure: each caught by the property named for it, whatever the process ran before
    "np_random_select": (
        "pure",
        False,
        "select traced twice with the same arguments gave different programs",
    ),
    "counter_bias_arm0": (
        "pure",
        False,
        "select traced twice with the same arguments gave different programs",
    ),
    "round_robin": ("pure", False, "select traced twice with the same arguments gave different programs"),
    "global_counter": ("pure", False, "update traced twice with the same arguments gave different programs"),
    "random_callback": (
        "pure",
        False,
        "in round 1: update called twice eagerly with the same arguments gave",
    ),
    "traced_perturbation": ("jit_equals_eager", False, "eagerly but arm"),
    "no_clamp": (
        "finite_under_extreme_rewards",
        False,
        "in round 1: on the extreme stream, after a round with noise eta=inf",
    ),
    "python_if": ("traceable_hyperparameters", False, "params ['beta'] cannot be traced"),
    "traced_differs": ("traceable_hyperparameters", False, "with traced params select chose arm"),
    "batch_sensitive": ("vmap_bitwise", False, "in lane 2 of a vmap batch of 5"),
    "reads_nu": ("uses_revealed_nu", False, "uses_revealed_nu=False, but update reads nu"),
    "ignores_nu": ("uses_revealed_nu", False, "uses_revealed_nu=True, but no state"),
}


@pytest.mark.parametrize("flaw", list(BROKEN_ALGORITHMS))
def test_broken_algorithm_is_caught(flaw):
    prop, x64, detail = BROKEN_ALGORITHMS[flaw]
    factories = {
        "not_an_algorithm": lambda p: tuple(toy(p)),
        "python_if": toy_python_if,
        "traced_perturbation": lambda p: toy(p, flaw=flaw, randomized=True),
    }
    factory = factories.get(flaw, lambda p: toy(p, flaw=flaw))
    with pytest.raises(AssertionError) as info:
        check_toy(factory, x64=x64)
    message = str(info.value)
    assert message.startswith(f"check_algorithm(toy): property '{prop}' failed"), message
    assert detail in message, message


class Counts(NamedTuple):
    toy: ToyState
    rounds: jax.Array  # uint32
    phase: jax.Array  # int16
    positive: jax.Array  # bool


def with_small_leaves(alg):
    """``alg`` with uint32, int16 and bool leaves added to its state (read by nobody; correct)."""

    def init():
        return Counts(alg.init(), jnp.zeros((), jnp.uint32), jnp.zeros((), jnp.int16), jnp.zeros((), bool))

    def update(state, x, reward, nu):
        phase = ((state.phase + 1) % 7).astype(jnp.int16)
        return Counts(alg.update(state.toy, x, reward, nu), state.rounds + jnp.uint32(1), phase, reward > 0)

    return jb.Algorithm(init, lambda state, contexts: alg.select(state.toy, contexts), update)


def with_dict_state(alg):
    """``alg`` with its state as a dict (correct: any pytree is a state)."""
    return jb.Algorithm(
        lambda: alg.init()._asdict(),
        lambda state, contexts, *key: alg.select(ToyState(**state), contexts, *key),
        lambda state, x, reward, nu, *key: alg.update(ToyState(**state), x, reward, nu, *key)._asdict(),
        randomized=alg.randomized,
    )


CORRECT_VARIANTS = {  # unusual but conforming: none may be rejected (those whose dtypes x64 changes, in both)
    "small_int_and_bool_leaves": lambda p: with_small_leaves(toy(p)),
    "argmax_with_neg_inf_mask": lambda p: toy(p, flaw="masked_argmax"),
    "dict_state": lambda p: with_dict_state(toy(p)),
    "randomized_dict_state": lambda p: with_dict_state(toy(p, randomized=True)),
}


@pytest.mark.parametrize(
    ("name", "x64"),
    [(name, False) for name in CORRECT_VARIANTS]
    + [("small_int_and_bool_leaves", True), ("argmax_with_neg_inf_mask", True)],
)
def test_correct_variant_is_not_rejected(name, x64):
    check_toy(CORRECT_VARIANTS[name], x64=x64)


def test_default_name_is_the_factory_qualname():
    with pytest.raises(AssertionError, match=r"^check_algorithm\(toy_python_if\): "):
        testing.check_algorithm(toy_python_if, {"beta": 1.0}, dim=D, num_arms=K)


# --------------------------------------------------------------------------------------------------------
# Broken environments


def linear_env(**kwargs):
    return jb.envs.linear(D, K, noise=jb.noise.student_t(3.0), **kwargs)


def with_draw(draw, **changes):
    """A linear stream whose ``draw`` is ``draw(base_draw, key, theta, t)``."""
    base = linear_env(eps=1.0)
    stream = base.stream._replace(draw=lambda key, theta, t: draw(base.stream.draw, key, theta, t), **changes)
    return base._replace(stream=stream)


COUNTER = [0]


def counting_draw(base, key, theta, t):
    COUNTER[0] += 1
    rnd = base(key, theta, t)
    return rnd._replace(eta=rnd.eta + COUNTER[0])


def batch_sensitive_draw(base, key, theta, t):
    rnd = base(key, theta, t)
    return rnd._replace(eta=batch_sensitive(rnd.eta))


class MisreportingEnvironment(jb.Environment):
    """An environment whose reward is not means[a] + eta + c_t."""

    def respond(self, state, rnd, action, t):
        state, fb = super().respond(state, rnd, action, t)
        return state, fb._replace(reward=fb.reward + 0.5)


def overspending(budget):
    """Declares ``budget`` but corrupts by 0.5 every round."""
    return Adversary(
        "overspending",
        lambda: jnp.zeros((), float_dtype()),
        lambda spent, view: (jnp.asarray(0.5, float_dtype()), spent + 0.5),
        budget=lambda: as_float(budget),
    )


ADVERSARY_CALLS = [0]


def impure_adversary(kind):
    """A flip-like adversary that reads NumPy's global generator or a Python counter, or corrupts only
    when traced: the same seed would give different Σ|c_t| under jb.simulate and jb.sweep."""

    def corrupt(spent, view):
        dtype = float_dtype()
        if kind == "np_random":
            size = np.random.default_rng().uniform(0.0, 0.2)
        elif kind == "counter":
            ADVERSARY_CALLS[0] += 1
            size = 0.01 * ADVERSARY_CALLS[0]
        else:  # "traced_only"
            size = 0.1 if isinstance(spent, jax.core.Tracer) else 0.0
        c = -jnp.asarray(size, dtype) * jnp.sign(view.means[view.action])
        return c, spent + jnp.abs(c)

    return Adversary(kind, lambda: jnp.zeros((), float_dtype()), corrupt)


BROKEN_ENVIRONMENTS = {
    "theta_shape": (
        lambda: linear_env()._replace(
            stream=linear_env().stream._replace(init=lambda key: jnp.zeros(D + 1, float_dtype()))
        ),
        "stream_shapes_dtypes",
        False,
    ),
    "python_float_eta": (
        lambda: with_draw(lambda base, *a: base(*a)._replace(eta=0.0)),
        "stream_shapes_dtypes",
        False,
    ),
    "global_counter": (lambda: with_draw(counting_draw), "stream_deterministic", True),
    "wrong_means": (
        lambda: with_draw(lambda base, *a: base(*a)._replace(means=1.01 * base(*a).means)),
        "stream_means",
        True,
    ),
    "nan_nu_but_reveals": (
        lambda: linear_env()._replace(stream=linear_env().stream._replace(reveals_nu=True)),
        "reveals_nu",
        True,
    ),
    "python_state": (
        lambda: linear_env(corruption=jb.corruption.none()._replace(init=lambda: 0.0)),
        "adversary_dtypes",
        False,
    ),
    "misreported_reward": (lambda: MisreportingEnvironment(*linear_env()), "adversary_run", True),
    "over_budget": (lambda: linear_env(corruption=overspending(1.0)), "budget", True),  # see below
    "batch_sensitive": (lambda: with_draw(batch_sensitive_draw), "vmap_bitwise", True),
    "np_random_adversary": (
        lambda: linear_env(corruption=impure_adversary("np_random")),
        "adversary_pure",
        False,
    ),
    "counter_adversary": (
        lambda: linear_env(corruption=impure_adversary("counter")),
        "adversary_pure",
        False,
    ),
    "traced_only_adversary": (
        lambda: linear_env(corruption=impure_adversary("traced_only")),
        "jit_equals_eager",
        True,
    ),
}


def keyed_adversary(budget):
    """Random signs from a key carried in its state, a round counter as uint32 (correct: pure)."""

    def init():
        return (jnp.zeros((), float_dtype()), jax.random.key(7), jnp.zeros((), jnp.uint32))

    def corrupt(state, view):
        spent, key, rounds = state
        key, sub = jax.random.split(key)
        c = jnp.where(jax.random.bernoulli(sub), 0.1, -0.1).astype(float_dtype())
        c = jnp.sign(c) * jnp.minimum(jnp.abs(c), jnp.maximum(budget - spent, 0.0))
        return c, (spent + jnp.abs(c), key, rounds + jnp.uint32(1))

    return Adversary("keyed", init, corrupt, budget=lambda: as_float(budget))


@pytest.mark.parametrize("x64", [False, True])
def test_an_adversary_carrying_a_key_in_its_state_passes(x64):
    with jax.enable_x64(x64):
        testing.check_environment(linear_env(corruption=keyed_adversary(1.0)), name="keyed")


@pytest.mark.parametrize("name", list(BROKEN_ENVIRONMENTS))
def test_broken_environment_is_caught(name):
    make, prop, has_round = BROKEN_ENVIRONMENTS[name]
    with pytest.raises(AssertionError) as info:
        testing.check_environment(make(), name=name)
    message = str(info.value)
    assert message.startswith(f"check_environment({name}): property '{prop}' failed"), message
    assert (" in round " in message) == has_round, message
    if name == "over_budget":  # 0.5 per round against a budget of 1: Σ|c_t| = 1.5 > 1 in round 3
        assert "failed in round 3: sum |c_t| reached 1.5, above the declared budget() = 1.0" in message


# --------------------------------------------------------------------------------------------------------
# Bad arguments: ValueError naming the parameter, before any work


def never_called(p):
    raise AssertionError("the factory must not be called for bad arguments")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"dim": 0}, r"dim=0 is invalid: it must be an integer >= 1"),
        ({"num_arms": 2.5}, r"num_arms=2.5 is invalid: it must be an integer >= 1"),
        ({"horizon": 11}, r"horizon=11 is invalid: it must be an integer >= 12"),
        ({"params": [1.0]}, r"params=\[1.0\] is invalid: it must be a dict"),
        ({"params": {"beta": True}}, r"params\['beta'\]=True is invalid: it must be a real number"),
        ({"params": {"beta": math.nan}}, r"params\['beta'\]=nan is invalid"),
        ({"params": {1: 1.0}}, r"params key 1 is invalid: it must be a str"),
        ({"name": 3}, r"name=3 is invalid: it must be a str or None"),
        ({"factory": 3}, r"factory=3 is invalid: it must be a function"),
    ],
)
def test_check_algorithm_argument_errors(kwargs, match):
    args = {"factory": never_called, "params": {"beta": 1.0}, "dim": D, "num_arms": K, **kwargs}
    with pytest.raises(ValueError, match=match):
        testing.check_algorithm(args.pop("factory"), args.pop("params"), **args)


def test_invalid_params_for_the_factory_are_a_value_error():
    with pytest.raises(ValueError, match=r"beta_scale=-1.0 is invalid"):
        testing.check_algorithm(
            registered("oful", 1.0)[0], {"beta_scale": -1.0, "lam": 1.0}, dim=D, num_arms=K
        )


@pytest.mark.parametrize(
    "env, kwargs, match",
    [
        ("not an env", {}, r"env='not an env' is invalid: it must be a jb.Environment"),
        (None, {"horizon": 1}, r"horizon=1 is invalid: it must be an integer >= 2"),
        (
            "replay",
            {"horizon": 31},
            (
                r"horizon=31 is invalid: the environment holds only 30 rounds \(valid "
                r"range \[2, 30\]\)"
            ),
        ),
        (None, {"name": 1.0}, r"name=1.0 is invalid"),
    ],
)
def test_check_environment_argument_errors(env, kwargs, match):
    env = {None: linear_env(), "replay": _replay()}.get(env, env)
    with pytest.raises(ValueError, match=match):
        testing.check_environment(env, **kwargs)


def test_a_stream_without_rounds_enough_is_refused():
    env = _replay()
    stream = env.stream._replace(horizon=1)
    with pytest.raises(ValueError, match="at least 2"):
        testing.check_environment(env._replace(stream=stream))


def test_round_type_is_checked():
    """A draw returning a plain tuple is not a Round."""
    env = with_draw(lambda base, *a: tuple(base(*a)))
    with pytest.raises(AssertionError, match=r"'stream_shapes_dtypes' failed: draw returned a tuple"):
        testing.check_environment(env)
