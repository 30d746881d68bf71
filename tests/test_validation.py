"""Bad concrete input raises a ValueError naming the parameter, its value and the valid range; traced
input (inside a user's jit/vmap) is accepted unchecked."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandit as jb
from jaxbandit.core import validation as V

T, D, K = 50, 3, 4
#: The paper's LaTeX labels ("ass:noise", "eq:sigma_def", "thm:regret_instance", ...).
PAPER_LABEL = re.compile(r"\b(ass|eq|lem|thm|alg|def|prop|col|cor):[a-z_]+")
NAN, INF = float("nan"), float("inf")


def cr(**kw):
    args = dict(eps=1.0, nu=1.0, corruption=10.0)
    args.update(kw)
    h, d = args.pop("horizon", T), args.pop("dim", D)
    return jb.cr_hvt_ucb(h, d, **args)


def hvt(**kw):
    args = dict(eps=1.0, nu=1.0)
    args.update(kw)
    return jb.hvt_ucb(args.pop("horizon", T), args.pop("dim", D), **args)


def oful(**kw):
    return jb.oful(kw.pop("horizon", T), kw.pop("dim", D), **kw)


def cw(**kw):
    return jb.cw_oful(kw.pop("horizon", T), kw.pop("dim", D), **kw)


def heavy(**kw):
    args = dict(eps=1.0, nu=1.0)
    args.update(kw)
    return jb.heavy_oful(args.pop("horizon", T), args.pop("dim", D), **args)


def linear(**kw):
    args = dict(noise=jb.noise.gaussian(1.0))
    args.update(kw)
    return jb.envs.linear(args.pop("dim", D), args.pop("num_arms", K), **args)


def stream(T_=T, K_=K, d=D):
    rng = np.random.default_rng(0)
    return dict(
        theta_star=np.ones(d) / np.sqrt(d), contexts=rng.normal(size=(T_, K_, d)), noise=rng.normal(size=T_)
    )


def replay(**kw):
    args = stream()
    args.update(kw)
    return jb.envs.replay(**args)


def with_inf(shape, index, value=np.inf):
    x = np.ones(shape)
    x[index] = value
    return x


def sweep(grid, make_alg=None, **kw):
    make_alg = make_alg or (lambda p: cr(corruption=p["C"]))
    make_env = lambda p: linear(corruption=jb.corruption.flip(p["C"]))
    args = dict(horizon=T, seeds=1)
    args.update(kw)
    return jb.sweep(make_alg, make_env, grid, **args)


GOOD_ENV = None  # built lazily below


def sim(alg=None, env=None, key=0, horizon=T):
    return jb.simulate(
        alg if alg is not None else oful(), env if env is not None else linear(), key, horizon=horizon
    )


# (id, thunk, substrings the message must contain: the parameter=value, and the valid range)
CASES = [
    # --- CR-Hvt-UCB: every argument ---
    ("cr eps 0", lambda: cr(eps=0.0), ["eps=0.0", "(0, 1]"]),
    ("cr eps >1", lambda: cr(eps=1.5), ["eps=1.5", "(0, 1]"]),
    ("cr eps nan", lambda: cr(eps=NAN), ["eps=nan", "(0, 1]"]),
    ("cr eps bool", lambda: cr(eps=True), ["eps=True", "(0, 1]"]),
    ("cr eps str", lambda: cr(eps="1"), ["eps='1'", "(0, 1]"]),
    ("cr eps none", lambda: cr(eps=None), ["eps=None", "(0, 1]"]),
    ("cr eps array", lambda: cr(eps=np.array([0.5, 2.0])), ["eps=2.0", "(0, 1]"]),
    ("cr nu 0", lambda: cr(nu=0.0), ["nu=0.0", "(0, inf)"]),
    ("cr nu neg", lambda: cr(nu=-1.0), ["nu=-1.0", "(0, inf)"]),
    ("cr nu nan", lambda: cr(nu=NAN), ["nu=nan", "(0, inf)"]),
    ("cr nu inf", lambda: cr(nu=INF), ["nu=inf", "(0, inf)"]),
    ("cr nu str", lambda: cr(nu="known"), ["nu='known'", "'revealed'"]),
    ("cr nu bool", lambda: cr(nu=True), ["nu=True", "(0, inf)"]),
    ("cr nu none", lambda: cr(nu=None), ["nu=None", "(0, inf)"]),
    ("cr nu noise", lambda: cr(nu=jb.noise.gaussian()), ["nu=NoiseFamily", "(0, inf)"]),
    ("cr C neg", lambda: cr(corruption=-1.0), ["corruption=-1.0", "[0, inf)"]),
    ("cr C nan", lambda: cr(corruption=NAN), ["corruption=nan", "[0, inf)"]),
    ("cr C inf", lambda: cr(corruption=INF), ["corruption=inf", "[0, inf)"]),
    ("cr C none", lambda: cr(corruption=None), ["corruption=None", "[0, inf)"]),
    ("cr C bool", lambda: cr(corruption=False), ["corruption=False", "[0, inf)"]),
    ("cr C f32 overflow", lambda: cr(corruption=1e39), ["corruption=1e+39", "overflows float32"]),
    ("cr C adversary", lambda: cr(corruption=jb.corruption.flip(1.0)), ["corruption=Adversary", "[0, inf)"]),
    ("cr S 0", lambda: cr(S=0.0), ["S=0.0", "(0, inf)"]),
    ("cr S neg", lambda: cr(S=-2.0), ["S=-2.0", "(0, inf)"]),
    ("cr L 0", lambda: cr(L=0.0), ["L=0.0", "(0, inf)"]),
    ("cr L nan", lambda: cr(L=NAN), ["L=nan", "(0, inf)"]),
    ("cr lam 0", lambda: cr(lam=0.0), ["lam=0.0", "(0, inf)"]),
    ("cr alpha neg", lambda: cr(alpha=-8.0), ["alpha=-8.0", "(0, inf)"]),
    ("cr delta 1", lambda: cr(delta=1.0), ["delta=1.0", "(0, 1)"]),
    ("cr delta 0", lambda: cr(delta=0.0), ["delta=0.0", "(0, 1)"]),
    ("cr sigma_min 0", lambda: cr(sigma_min=0.0), ["sigma_min=0.0", "(0, inf)"]),
    ("cr beta_scale 0", lambda: cr(beta_scale=0.0), ["beta_scale=0.0", "(0, inf)"]),
    ("cr beta neg", lambda: cr(beta=-1.0), ["beta=-1.0", "(0, inf)"]),
    ("cr kappa 0", lambda: cr(kappa=0.0), ["kappa=0.0", "(0, inf)"]),
    ("cr tau0 nan", lambda: cr(tau0=NAN), ["tau0=nan", "(0, inf)"]),
    ("cr horizon 0", lambda: cr(horizon=0), ["horizon=0", ">= 1"]),
    ("cr horizon frac", lambda: cr(horizon=2.5), ["horizon=2.5", ">= 1"]),
    ("cr horizon bool", lambda: cr(horizon=True), ["horizon=True", ">= 1"]),
    ("cr horizon str", lambda: cr(horizon="100"), ["horizon='100'", ">= 1"]),
    ("cr dim 0", lambda: cr(dim=0), ["dim=0", ">= 1"]),
    ("cr dim neg", lambda: cr(dim=-3), ["dim=-3", ">= 1"]),
    ("cr newton_iters 0", lambda: cr(newton_iters=0), ["newton_iters=0", ">= 1"]),
    # --- Hvt-UCB ---
    ("hvt eps", lambda: hvt(eps=2.0), ["eps=2.0", "(0, 1]"]),
    ("hvt nu", lambda: hvt(nu=-1.0), ["nu=-1.0", "(0, inf)"]),
    ("hvt corruption", lambda: hvt(corruption=1.0), ["corruption", "corruption=0"]),
    ("hvt dim", lambda: hvt(dim=0), ["dim=0", ">= 1"]),
    # --- OFUL ---
    ("oful lam", lambda: oful(lam=0.0), ["lam=0.0", "(0, inf)"]),
    ("oful lam none", lambda: oful(lam=None), ["lam=None", "(0, inf)"]),
    ("oful beta", lambda: oful(beta=-1.0), ["beta=-1.0", "[0, inf)"]),
    ("oful beta_scale", lambda: oful(beta_scale=NAN), ["beta_scale=nan", "(0, inf)"]),
    ("oful S", lambda: oful(S=0.0), ["S=0.0", "(0, inf)"]),
    ("oful L", lambda: oful(L=-1.0), ["L=-1.0", "(0, inf)"]),
    ("oful R", lambda: oful(R=0.0), ["R=0.0", "(0, inf)"]),
    ("oful delta", lambda: oful(delta=1.5), ["delta=1.5", "(0, 1)"]),
    ("oful horizon", lambda: oful(horizon=0), ["horizon=0", ">= 1"]),
    ("oful dim", lambda: oful(dim=0), ["dim=0", ">= 1"]),
    # --- CW-OFUL ---
    ("cw alpha 0", lambda: cw(alpha=0.0), ["alpha=0.0", "(0, inf]"]),
    ("cw alpha nan", lambda: cw(alpha=NAN), ["alpha=nan", "(0, inf]"]),
    ("cw C neg", lambda: cw(corruption=-5.0), ["corruption=-5.0", "[0, inf)"]),
    ("cw C str", lambda: cw(corruption="100"), ["corruption='100'", "[0, inf)"]),
    ("cw known", lambda: cw(known_corruption="yes"), ["known_corruption='yes'", "True or False"]),
    ("cw lam", lambda: cw(lam=-1.0), ["lam=-1.0", "(0, inf)"]),
    # --- Heavy-OFUL ---
    ("heavy eps", lambda: heavy(eps=0.0), ["eps=0.0", "(0, 1]"]),
    ("heavy nu", lambda: heavy(nu=0.0), ["nu=0.0", "(0, inf)"]),
    ("heavy nu str", lambda: heavy(nu="reveal"), ["nu='reveal'", "'revealed'"]),
    ("heavy S", lambda: heavy(S=0.0), ["S=0.0", "(0, inf)"]),
    ("heavy tol", lambda: heavy(tol=0.0), ["tol=0.0", "(0, inf)"]),
    ("heavy iters", lambda: heavy(max_newton_iters=0), ["max_newton_iters=0", ">= 1"]),
    ("heavy delta", lambda: heavy(delta=2.0), ["delta=2.0", "(0, 1)"]),
    # --- noise families ---
    ("gaussian scale 0", lambda: jb.noise.gaussian(0.0), ["scale=0.0", "(0, inf)"]),
    ("gaussian scale nan", lambda: jb.noise.gaussian(NAN), ["scale=nan", "(0, inf)"]),
    ("gaussian scale str", lambda: jb.noise.gaussian("1"), ["scale='1'", "(0, inf)"]),
    ("t df 1", lambda: jb.noise.student_t(1.0), ["df=1.0", "(1, inf)", "finite mean"]),
    ("t df 0", lambda: jb.noise.student_t(0.0), ["df=0.0", "(1, inf)"]),
    ("t df neg", lambda: jb.noise.student_t(-3.0), ["df=-3.0", "(1, inf)"]),
    ("t df nan", lambda: jb.noise.student_t(NAN), ["df=nan", "(1, inf)"]),
    ("t df bool", lambda: jb.noise.student_t(True), ["df=True", "(1, inf)"]),
    ("t scale", lambda: jb.noise.student_t(3.0, scale=-1.0), ["scale=-1.0", "(0, inf)"]),
    ("pareto shape 1", lambda: jb.noise.pareto(1.0), ["shape=1.0", "(1, inf)", "finite mean"]),
    ("pareto shape 0", lambda: jb.noise.pareto(0.0), ["shape=0.0", "(1, inf)"]),
    ("pareto x_min", lambda: jb.noise.pareto(2.0, x_min=0.0), ["x_min=0.0", "(0, inf)"]),
    ("sym pareto shape", lambda: jb.noise.symmetric_pareto(0.5), ["shape=0.5", "(1, inf)"]),
    ("sym pareto scale", lambda: jb.noise.symmetric_pareto(2.0, scale=0.0), ["scale=0.0", "(0, inf)"]),
    ("empirical shape", lambda: jb.noise.empirical(np.ones((2, 2))), ["samples has shape (2, 2)", "1-D"]),
    ("empirical constant", lambda: jb.noise.empirical([2.0, 2.0]), ["samples is invalid", "all 2 values"]),
    ("empirical scale", lambda: jb.noise.empirical([1.0, 2.0], scale=-1.0), ["scale=-1.0", "(0, inf)"]),
    (
        "hetero base",
        lambda: jb.noise.heteroscedastic(jb.corruption.none()),
        ["base=Adversary", "noise family"],
    ),
    ("hetero low", lambda: jb.noise.heteroscedastic(jb.noise.gaussian(), low=0.0), ["low=0.0", "(0, inf)"]),
    (
        "hetero high<low",
        lambda: jb.noise.heteroscedastic(jb.noise.gaussian(), low=2.0, high=1.0),
        ["high=1.0", "low=2.0"],
    ),
    (
        "hetero schedule",
        lambda: jb.noise.heteroscedastic(jb.noise.gaussian(), schedule=3.0),
        ["schedule=3.0", "function"],
    ),
    (
        "check_moment pareto",
        lambda: jb.noise.pareto(1.5).check_moment(1.0),
        ["eps=1.0", "pareto(shape=1.5)", "(0, 0.5)"],
    ),
    (
        "check_moment t",
        lambda: jb.noise.student_t(1.5).check_moment(0.6),
        ["eps=0.6", "student_t(df=1.5)", "(0, 0.5)"],
    ),
    ("check_moment eps", lambda: jb.noise.gaussian().check_moment(0.0), ["eps=0.0", "(0, 1]"]),
    (
        "moment_bound infinite",
        lambda: jb.noise.symmetric_pareto(1.2).moment_bound(0.5),
        ["eps=0.5", "symmetric_pareto(shape=1.2)", "(0, 0.2)"],
    ),
    ("raw pareto bound", lambda: jb.noise.raw_pareto_moment_bound(1.2, 1.0, 0.4), ["eps=0.4", "(0, 0.2)"]),
    ("heavy tail index", lambda: jb.noise.heavy_tail_index(1.0), ["eps=1.0", "(0, 1)"]),
    # --- adversaries ---
    ("flip neg", lambda: jb.corruption.flip(-1.0), ["budget=-1.0", "[0, inf]"]),
    ("flip nan", lambda: jb.corruption.flip(NAN), ["budget=nan", "[0, inf]"]),
    ("flip none", lambda: jb.corruption.flip(None), ["budget=None", "[0, inf]"]),
    ("flip str", lambda: jb.corruption.flip("100"), ["budget='100'", "[0, inf]"]),
    ("flip noise", lambda: jb.corruption.flip(jb.noise.gaussian()), ["budget=NoiseFamily", "[0, inf]"]),
    ("flip_rounds neg", lambda: jb.corruption.flip_rounds(-1), ["rounds=-1", "[0, inf]"]),
    ("flip_rounds frac", lambda: jb.corruption.flip_rounds(2.5), ["rounds=2.5", "whole number"]),
    ("random_sign budget", lambda: jb.corruption.random_sign(-2.0), ["budget=-2.0", "[0, inf]"]),
    (
        "corruption select index",
        lambda: jb.corruption.select([jb.corruption.none(), jb.corruption.flip(1.0)], 2),
        ["index=2", "[0, 1]", "adversaries"],
    ),
    ("corruption select empty", lambda: jb.corruption.select([], 0), ["adversaries=[]"]),
    (
        "noise select index",
        lambda: jb.noise.select([jb.noise.gaussian(), jb.noise.student_t(3.0)], 0.5),
        ["index=0.5", "[0, 1]", "families"],
    ),
    ("random_sign rate", lambda: jb.corruption.random_sign(1.0, rate=1.5), ["rate=1.5", "[0, 1]"]),
    ("random_sign scale", lambda: jb.corruption.random_sign(1.0, scale=NAN), ["scale=nan", "[0, inf)"]),
    ("random_sign seed", lambda: jb.corruption.random_sign(1.0, seed=-1), ["seed=-1", ">= 0"]),
    ("targeted budget", lambda: jb.corruption.targeted(NAN), ["budget=nan", "[0, inf]"]),
    ("targeted target", lambda: jb.corruption.targeted(1.0, target=[1.0, NAN]), ["target[1]=nan", "finite"]),
    (
        "targeted shape",
        lambda: jb.corruption.targeted(1.0, target=np.eye(2)),
        ["target has shape (2, 2)", "[d]"],
    ),
    # --- linear environment ---
    ("linear dim", lambda: linear(dim=0), ["dim=0", ">= 1"]),
    ("linear num_arms", lambda: linear(num_arms=0), ["num_arms=0", ">= 1"]),
    ("linear num_arms float", lambda: linear(num_arms=2.5), ["num_arms=2.5", ">= 1"]),
    ("linear S", lambda: linear(S=0.0), ["S=0.0", "(0, inf)"]),
    ("linear L", lambda: linear(L=-1.0), ["L=-1.0", "(0, inf)"]),
    (
        "linear noise is an adversary",
        lambda: linear(noise=jb.corruption.flip(1.0)),
        ["noise=Adversary", "noise family"],
    ),
    ("linear noise is a number", lambda: linear(noise=1.0), ["noise=1.0", "noise family"]),
    (
        "linear corruption is noise",
        lambda: linear(corruption=jb.noise.gaussian()),
        ["corruption=NoiseFamily", "adversary"],
    ),
    ("linear corruption is a number", lambda: linear(corruption=100.0), ["corruption=100.0", "adversary"]),
    (
        "linear infinite moment",
        lambda: linear(noise=jb.noise.pareto(1.5), eps=1.0),
        ["eps=1.0", "pareto(shape=1.5)", "(0, 0.5)"],
    ),
    ("linear eps range", lambda: linear(eps=1.5), ["eps=1.5", "(0, 1]"]),
    # --- replay environment ---
    ("replay noise length", lambda: replay(noise=np.zeros(T + 1)), ["noise has shape", f"({T},)", "horizon"]),
    ("replay theta dim", lambda: replay(theta_star=np.ones(D + 1)), ["theta_star has shape", f"({D},)"]),
    ("replay contexts 2-D", lambda: replay(contexts=np.ones((T, D))), ["contexts has shape", "[T, K, d]"]),
    (
        "replay contexts empty",
        lambda: replay(contexts=np.ones((0, K, D)), noise=np.zeros(0)),
        ["contexts has shape", ">= 1"],
    ),
    (
        "replay contexts inf",
        lambda: replay(contexts=with_inf((T, K, D), (3, 1, 2))),
        ["contexts[3, 1, 2]=inf", "finite"],
    ),
    (
        "replay contexts nan",
        lambda: replay(contexts=with_inf((T, K, D), (0, 0, 0), np.nan)),
        ["contexts[0, 0, 0]=nan", "finite"],
    ),
    (
        "replay theta nan",
        lambda: replay(theta_star=with_inf((D,), 1, np.nan)),
        ["theta_star[1]=nan", "finite"],
    ),
    ("replay contexts bool", lambda: replay(contexts=np.ones((T, K, D), bool)), ["contexts", "bool"]),
    (
        "replay contexts f32 overflow",
        lambda: replay(contexts=with_inf((T, K, D), (0, 0, 0), 1e39)),
        ["contexts", "overflow float32"],
    ),
    ("replay noise nan", lambda: replay(noise=with_inf((T,), 7, np.nan)), ["noise[7]=nan", "NaN"]),
    ("replay noise str", lambda: replay(noise=["a"] * T), ["noise=", "real numbers"]),
    ("replay nu shape", lambda: replay(nu=np.ones(T - 1)), ["nu has shape", f"({T},)"]),
    ("replay nu negative", lambda: replay(nu=-1.0), ["nu=-1.0", "(0, inf)"]),
    (
        "replay corruption type",
        lambda: replay(corruption=jb.noise.gaussian()),
        ["corruption=NoiseFamily", "adversary"],
    ),
    # --- simulate ---
    ("simulate horizon 0", lambda: sim(horizon=0), ["horizon=0", ">= 1"]),
    ("simulate horizon str", lambda: sim(horizon="10"), ["horizon='10'", ">= 1"]),
    (
        "simulate horizon > replay",
        lambda: sim(env=replay(), horizon=T + 1),
        [f"horizon={T + 1}", f"[1, {T}]"],
    ),
    ("simulate alg is env", lambda: sim(alg=linear()), ["alg=Environment", "jb.Algorithm"]),
    ("simulate env is noise", lambda: sim(env=jb.noise.gaussian()), ["env=NoiseFamily", "jb.Environment"]),
    ("simulate key str", lambda: sim(key="seed"), ["key='seed'", "int seed"]),
    ("simulate key bool", lambda: sim(key=True), ["key=True", "int seed"]),
    ("simulate key float", lambda: sim(key=1.5), ["key=1.5", "int seed"]),
    ("simulate revealed nu", lambda: sim(alg=cr(nu="revealed")), ["nu='revealed'", "eps="]),
    ("simulate dims differ", lambda: sim(alg=oful(dim=5)), ["algorithm dim=5", f"environment dim={D}"]),
    (
        "simulate horizon > algorithm's",
        lambda: sim(alg=oful(horizon=T - 10)),
        [f"horizon={T}", f"built for horizon={T - 10}", f"[1, {T - 10}]"],
    ),
    # --- sweep: the whole grid before tracing ---
    ("sweep bad point", lambda: sweep({"C": [0.0, 5.0, -1.0]}), ["C=-1", "corruption=-1.0", "[0, inf)"]),
    ("sweep nan", lambda: sweep({"C": [0.0, NAN]}), ["grid['C']", "NaN"]),
    (
        "sweep seed twice",
        lambda: sweep({"C": [1.0]}, seeds=[3, 3]),
        ["seeds=[3, 3]", "seed 3 is given 2 times"],
    ),
    (
        "sweep dims differ",
        lambda: sweep({"C": [1.0]}, make_alg=lambda p: cr(dim=5, corruption=p["C"])),
        ["C=1", "algorithm dim=5", f"environment dim={D}"],
    ),
    (
        "sweep horizon > algorithm's",
        lambda: sweep({"C": [1.0]}, horizon=T + 5),
        [f"horizon={T + 5}", f"for horizon={T}"],
    ),
    ("sweep str", lambda: sweep({"C": ["a"]}), ["grid['C']", "numbers"]),
    ("sweep 2-D", lambda: sweep({"C": [[1.0, 2.0]]}), ["grid['C']", "1-D"]),
    ("sweep empty", lambda: sweep({"C": []}), ["grid['C']", "non-empty"]),
    ("sweep reserved name", lambda: sweep({"seed": [1.0]}), ["'seed'", "identifier"]),
    ("sweep not a dict", lambda: sweep([1.0, 2.0]), ["grid=[1.0, 2.0]", "dict"]),
    ("sweep missing parameter", lambda: sweep({"D": [1.0]}), ["'C'", "does not define"]),
    (
        "sweep f32 rounding",
        lambda: sweep(
            {"C": [1.0], "delta": [0.5, 1 - 1e-9]}, make_alg=lambda p: cr(corruption=p["C"], delta=p["delta"])
        ),
        ["delta=1", "(0, 1)"],
    ),
    ("sweep f32 overflow", lambda: sweep({"C": [1.0, 1e39]}), ["grid['C']", "1e+39", "overflows float32"]),
    (
        "sweep environment param",
        lambda: jb.sweep(lambda p: oful(), lambda p: linear(S=p["S"]), {"S": [1.0, 0.0]}, horizon=T),
        ["S=0", "S=0.0", "(0, inf)"],
    ),
    (
        "sweep noise param",
        lambda: jb.sweep(
            lambda p: oful(),
            lambda p: linear(noise=jb.noise.student_t(p["df"])),
            {"df": [3.0, 0.9]},
            horizon=T,
        ),
        ["df=0.9", "(1, inf)"],
    ),
    (
        "sweep moment param",
        lambda: jb.sweep(
            lambda p: oful(),
            lambda p: linear(noise=jb.noise.pareto(1.5), eps=p["eps"]),
            {"eps": [0.2, 0.7]},
            horizon=T,
        ),
        ["eps=0.7", "(0, 0.5)"],
    ),
    ("sweep horizon", lambda: sweep({"C": [1.0]}, horizon=0), ["horizon=0", ">= 1"]),
    ("sweep seeds 0", lambda: sweep({"C": [1.0]}, seeds=0), ["seeds=0", ">= 1"]),
    ("sweep seeds negative", lambda: sweep({"C": [1.0]}, seeds=[-1]), ["seeds=[-1]", "non-negative"]),
    ("sweep seeds bool", lambda: sweep({"C": [1.0]}, seeds=True), ["seeds=True", ">= 1"]),
    ("sweep record", lambda: sweep({"C": [1.0]}, record="some"), ["record='some'", "'all'"]),
    ("sweep record rounds", lambda: sweep({"C": [1.0]}, record=[0, 5]), ["record rounds", f"[1, {T}]"]),
    ("sweep chunk_size", lambda: sweep({"C": [1.0]}, chunk_size=0), ["chunk_size=0", ">= 1"]),
    ("sweep key", lambda: sweep({"C": [1.0]}, key="k"), ["key='k'", "int seed"]),
    (
        "sweep algorithm type",
        lambda: jb.sweep(jb.noise.gaussian(), linear(), horizon=T),
        ["algorithm=NoiseFamily", "Algorithm"],
    ),
    (
        "sweep factory returns env",
        lambda: jb.sweep(lambda p: linear(), linear(), horizon=T),
        ["alg=Environment", "jb.Algorithm"],
    ),
]


@pytest.mark.parametrize("thunk, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_raises_a_value_error_naming_it(thunk, expected):
    with pytest.raises(ValueError) as info:
        thunk()
    message = str(info.value)
    for text in expected:
        assert text in message, (text, message)
    assert not PAPER_LABEL.search(message), message  # say it in words: docstrings cite the labels


def test_every_public_factory_is_covered():
    """The table above exercises each public environment, noise, adversary and runner factory (a new one
    needs rows too); every registered algorithm is covered by the registry-driven test below."""
    import inspect

    sources = "\n".join(inspect.getsource(c[1]) for c in CASES)
    helpers = {"linear(": "linear", "replay(": "replay", "sim(": "simulate", "sweep(": "sweep"}
    covered = {name for helper, name in helpers.items() if helper in sources}
    adversaries = {n for n in jb.corruption.__all__ if n not in ("Adversary", "AdversaryView", "none")}
    noises = {n for n in jb.noise.__all__ if n != "NoiseFamily"} | {"check_moment", "moment_bound"}
    covered |= {name for name in adversaries | noises if f".{name}(" in sources}
    want = {"linear", "replay", "simulate", "sweep"} | adversaries | noises
    assert want <= covered, want - covered


@pytest.mark.parametrize("name", jb.registry.names())
def test_every_registered_algorithm_names_its_bad_input(name):
    """Each free constant, each piece of knowledge and each size: a bad value raises a ValueError that
    names it, before anything is traced."""
    spec = jb.registry.algorithm(name)
    problem = jb.registry.Problem(T, D, eps=1.0, nu=1.0, corruption=1.0)
    theory = spec.theory(problem)
    for key in spec.grid:
        for bad in (NAN, -1.0):
            with pytest.raises(ValueError, match=f"{key}={bad!r} is invalid"):
                spec.build(problem, {**theory, key: bad})
    for key in spec.knowledge:
        with pytest.raises(ValueError, match=f"{key}=-1.0 is invalid") as info:
            spec.build(problem._replace(**{key: -1.0}), theory)
        assert not PAPER_LABEL.search(str(info.value)), info.value
    for key in ("horizon", "dim"):
        with pytest.raises(ValueError, match=f"{key}=0 is invalid"):
            spec.build(problem._replace(**{key: 0}), theory)


def test_good_edge_values_are_accepted():
    cr(eps=1.0, corruption=0.0)
    cr(eps=1e-3, nu="revealed", corruption=np.float32(5.0), horizon=np.int64(10), dim=2.0)
    jb.cw_oful(T, D, alpha=np.inf, corruption=0.0, known_corruption=np.bool_(True))
    jb.corruption.flip(np.inf)
    jb.corruption.flip_rounds(np.inf)
    jb.corruption.flip_rounds(3.0)
    jb.noise.student_t(1.01)
    jb.noise.pareto(1.5).check_moment(0.49)
    replay(noise=with_inf((T,), 3))  # ±inf noise is allowed: the algorithms clamp rewards
    sim(key=jax.random.PRNGKey(0))
    sim(key=np.int32(3))


# --- traced values are accepted, not checked ---


def _all_factories(eps, nu, C, scale, df, shape, budget, beta_scale, lam, S):
    algs = [
        jb.cr_hvt_ucb(
            T,
            D,
            eps=eps,
            nu=nu,
            corruption=C,
            beta_scale=beta_scale,
            lam=lam,
            S=S,
            L=S,
            alpha=lam,
            delta=0.5 * eps / T,
            sigma_min=scale,
            kappa=lam + 1.0,
            tau0=lam,
        ),
        jb.hvt_ucb(T, D, eps=eps, nu=nu, beta_scale=beta_scale),
        jb.oful(T, D, lam=lam, beta=beta_scale, S=S, L=S, R=scale, delta=eps / 2),
        jb.cw_oful(T, D, lam=lam, alpha=scale, corruption=C, beta_scale=beta_scale),
        jb.heavy_oful(T, D, eps=eps, nu=nu, beta_scale=beta_scale, lam=lam, S=S, tol=scale * 1e-5),
    ]
    noises = [
        jb.noise.gaussian(scale),
        jb.noise.student_t(df, scale),
        jb.noise.pareto(shape, scale),
        jb.noise.symmetric_pareto(shape, scale),
        jb.noise.heteroscedastic(jb.noise.gaussian(scale), scale, 2.0 * scale),
    ]
    advs = [jb.corruption.flip(budget), jb.corruption.flip_rounds(budget)]
    return algs, noises, advs


ARGS = dict(eps=0.5, nu=2.0, C=3.0, scale=0.7, df=3.0, shape=2.5, budget=4.0, beta_scale=0.1, lam=1.5, S=1.0)


def _run_everything(**p):
    algs, noises, advs = _all_factories(**p)
    total = jnp.zeros(())
    for i, alg in enumerate(algs):
        env = jb.envs.linear(
            D,
            K,
            noise=noises[i % len(noises)],
            corruption=advs[i % len(advs)],
            S=p["S"],
            L=p["S"],
            eps=p["eps"],
        )
        total = total + jb.simulate(alg, env, jax.random.key(i), horizon=T).regret.sum()
    return total


def test_traced_values_are_accepted_under_jit_and_vmap():
    out = jax.jit(_run_everything)(**{k: jnp.float32(v) for k, v in ARGS.items()})
    assert np.isfinite(float(out))
    # a vmapped grid over the numeric arguments of CR-Hvt-UCB, its environment, noise and adversary

    def one(eps, C, df, beta_scale):
        alg = jb.cr_hvt_ucb(T, D, eps=eps, nu=2.0, corruption=C, beta_scale=beta_scale)
        env = jb.envs.linear(D, K, noise=jb.noise.student_t(df), corruption=jb.corruption.flip(C), eps=eps)
        return jb.simulate(alg, env, jax.random.key(0), horizon=T).regret.sum()

    grid = [jnp.asarray(v, jnp.float32) for v in ([0.5, 0.9], [3.0, 30.0], [2.5, 4.0], [0.1, 0.01])]
    outs = jax.jit(jax.vmap(one))(*grid)
    assert outs.shape == (2,) and np.all(np.isfinite(np.asarray(outs)))


def test_traced_invalid_values_are_not_rejected():
    """Inside jit the numbers are unknown: the factories must build, not raise (the caller's job)."""

    def build(eps, C, df, budget):
        jb.cr_hvt_ucb(T, D, eps=eps, nu=1.0, corruption=C)
        jb.noise.student_t(df).check_moment(eps)
        jb.corruption.flip(budget)
        jb.corruption.flip_rounds(budget)
        return eps

    jax.jit(build)(jnp.float32(5.0), jnp.float32(-1.0), jnp.float32(0.5), jnp.float32(-3.0))


def test_traced_replay_arrays_are_accepted():
    s = stream()

    @jax.jit
    def run(th, X, eta):
        env = jb.envs.replay(theta_star=th, contexts=X, noise=eta, corruption=jb.corruption.flip(2.0))
        return jb.simulate(oful(), env, 0, horizon=T).regret

    out = run(*(jnp.asarray(s[k], jnp.float32) for k in ("theta_star", "contexts", "noise")))
    assert np.all(np.isfinite(np.asarray(out)))


def test_static_arguments_must_be_concrete():
    with pytest.raises(ValueError, match="horizon is a traced value"):
        jax.jit(lambda h: jb.oful(h, D))(jnp.int32(5))


def test_a_grid_value_twice_is_named_in_a_warning_and_its_runs_are_repeated():
    """A value twice (also two values that are one in float32, the runs' dtype) is legitimate only where
    a batch is padded to one compiled width: a RepeatedValueWarning names it, and its runs are bitwise
    copies; a seed twice has no such use and is refused (above)."""
    make_alg = lambda p: jb.oful(T, D, beta_scale=p["b"])
    make_env = lambda p: linear()
    for grid, value in (({"b": [0.1, 0.5, 0.1]}, "0.1"), ({"b": [1.0, 1.0 + 1e-9]}, "1.0")):
        with pytest.warns(jb.runner.grid.RepeatedValueWarning, match=rf"grid\['b'\] holds the value {value}"):
            res = jb.sweep(make_alg, make_env, grid, horizon=T, seeds=2, record=T)
        np.testing.assert_array_equal(res.final_regret[0], res.final_regret[-1])


def test_names_are_found_by_their_display_labels_and_a_typo_gets_the_closest_name():
    """What the tables print is accepted as an --algorithms value (any case, hyphens or underscores),
    for every registry; a typo is refused naming the closest registered name."""
    names = jb.registry.names()
    labels = {jb.registry.algorithm(n).label: n for n in names}
    got = V.check_names(
        "algorithms", ["CR-Hvt-UCB", "OFUL", "LinTS", "GLB-OMD", "multilayer_oful"], names, labels
    )
    assert got == ("cr_hvt_ucb", "oful", "lin_ts", "omd_glb", "multilayer_oful")
    assert V.check_names("noises", ["Student-T"], tuple(jb.registry.noises())) == ("student_t",)
    with pytest.raises(ValueError, match=r"'ofull' is not one of them \(did you mean 'oful'\?\)"):
        V.check_names("algorithms", ["ofull"], names, labels)
    with pytest.raises(ValueError, match=r"did you mean 'flip_rounds'"):
        V.check_names("adversaries", ["flip-round"], tuple(jb.registry.adversaries()))
    with pytest.raises(ValueError, match="a name is given twice"):
        V.check_names("algorithms", ["OFUL", "oful"], names, labels)
