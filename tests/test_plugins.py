"""Extending jaxbandit without touching it: the registries of algorithms, adversaries and noise families,
plugins (``--plugin MODULE``, the ``jaxbandit.plugins`` entry points), and a user's one-file plugin run
through jb.testing, jb.sweep, the benchmark and Figure 1."""

import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import cli_env
from scipy import stats

import jaxbandit as jb
from jaxbandit.agents.registry import ALGORITHMS
from jaxbandit.core import plugins
from jaxbandit.envs.registry import ADVERSARIES, NOISES, STREAMS
from jaxbandit.experiments import bench
from jaxbandit.experiments.bench.run import manifest

ROOT = Path(__file__).resolve().parents[1]

#: A user's module, written where the package cannot see it: an algorithm, an adversary, a noise
#: family and a stream, each registered when the module is imported.
PLUGIN = '''
"""A user's plugin: an algorithm, an adversary, a noise family and a stream, registered when imported."""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

import jaxbandit as jb


class ClipState(NamedTuple):
    V_inv: jax.Array  # [d, d]
    b: jax.Array  # [d]


def clip_ucb(dim, *, beta, clip):
    """Ridge UCB on rewards truncated to [-clip, clip]."""

    def init():
        return ClipState(jnp.eye(dim), jnp.zeros(dim))

    def select(state, contexts):
        theta = jb.linalg.matvec(state.V_inv, state.b)
        return jb.linalg.select_ucb(contexts, theta, state.V_inv, jnp.asarray(beta, theta.dtype))

    def update(state, x, reward, nu):
        r = jnp.clip(reward, -clip, clip)
        return ClipState(jb.linalg.sherman_morrison(state.V_inv, x, jnp.ones((), x.dtype)), state.b + r * x)

    return jb.Algorithm(init, select, update)


def optimal_arm(budget):
    """Flips the reward of the optimal arm only, within an exact budget: sum |c_t| <= C."""
    C = jnp.asarray(budget, jnp.result_type(float))

    def corrupt(spent, view):
        best = view.action == jnp.argmax(view.means)
        c = jnp.where(best, -2.0 * view.means[view.action], 0.0)
        c = jnp.sign(c) * jnp.minimum(jnp.abs(c), jnp.maximum(C - spent, 0.0))
        return c, spent + jnp.abs(c)

    return jb.Adversary("optimal_arm", lambda: jnp.zeros((), C.dtype), corrupt, budget=lambda: C)


def laplace(scale=1.0):
    """Laplace(0, scale): E|eta|^p = scale^p Gamma(p + 1)."""

    def sample(key, t):
        dtype = jnp.result_type(float)
        return scale * jax.random.laplace(key, dtype=dtype), jnp.ones((), dtype)

    def moment_bound(eps):
        p = 1.0 + jnp.asarray(eps, jnp.result_type(float))
        return scale * jnp.exp(gammaln(p + 1.0) / p)

    return jb.noise.NoiseFamily("laplace", sample, moment_bound, float("inf"))


def unit_pool(size, dim):
    """`size` fixed unit vectors of R^dim `[size, dim]`."""
    pool = np.random.default_rng(11).normal(size=(size, dim))
    return pool / np.linalg.norm(pool, axis=1, keepdims=True)


def pool_stream(dim, num_arms, *, noise, size=30):
    """Each round's contexts drawn without replacement from `unit_pool(size, dim)`."""
    pool = jnp.asarray(unit_pool(size, dim), jnp.result_type(float))

    def draw(key, theta_star, t):
        k_arms, k_noise = jax.random.split(key)
        X = pool[jax.random.choice(k_arms, size, (num_arms,), replace=False)]
        eta, _ = noise.sample(k_noise, t)
        nu = jnp.full((), jnp.nan, X.dtype)
        return jb.Round(contexts=X, means=jb.linalg.dot(X, theta_star), eta=eta, nu=nu)

    init = lambda key: jb.envs.uniform_sphere(key, (dim,), 1.0)
    return jb.Stream(init, draw, dim, num_arms, reveals_nu=False)


jb.registry.register(
    jb.registry.AlgorithmSpec(
        name="clip_ucb",
        label="clip-UCB",
        factory=clip_ucb,
        build=lambda problem, h: clip_ucb(problem.dim, beta=h["beta"], clip=h["clip"]),
        theory=lambda problem: {"beta": 1.0, "clip": 3.0},
        grid={"beta": (0.1, 1.0), "clip": (1.0, 3.0)},
        cost="O(1)",
        knowledge=(),
        source="a user's plugin",
    )
)
jb.registry.register(
    jb.registry.AdversarySpec(
        "optimal_arm", lambda C, dim: optimal_arm(C), "flips the optimal arm's reward, sum |c_t| <= C"
    )
)
jb.registry.register(
    jb.registry.NoiseSpec("laplace", lambda e: laplace(1.0), lambda e: "Laplace(0, 1)", heavy_tailed=False)
)
jb.registry.register(
    jb.registry.StreamSpec(
        "pool", lambda dim, k, noise: pool_stream(dim, k, noise=noise), "contexts from a pool of 30"
    )
)
'''


@pytest.fixture
def isolated(monkeypatch):
    """Registrations and loaded plugins last for the test only (the registries are process-wide)."""
    for registry in (ALGORITHMS, ADVERSARIES, NOISES, STREAMS):
        monkeypatch.setattr(registry, "_specs", dict(registry._specs))
    monkeypatch.setattr(plugins, "_files", {})
    monkeypatch.setattr(plugins, "_installed_loaded", False)
    monkeypatch.setattr(plugins, "_failures", {})
    monkeypatch.delenv(plugins.DISABLE, raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name in ("mymod", "broken", "setup_mod", "good_mod", "half", "evil"):
            del sys.modules[name]


@pytest.fixture
def plugin_dir(tmp_path):
    (tmp_path / "mymod.py").write_text(PLUGIN)
    return tmp_path


# --------------------------------------------------------------------------------------------------------
# The registries


def test_the_benchmark_axes_are_the_registered_scenarios_in_order():
    assert tuple(jb.registry.adversaries()) == ("none", "flip", "flip_rounds", "random_sign", "targeted")
    assert tuple(jb.registry.noises()) == ("gaussian", "student_t", "pareto", "empirical")
    assert [s.takes_level for s in jb.registry.adversaries().values()] == [False, True, True, True, True]
    assert [s.heavy_tailed for s in jb.registry.noises().values()] == [False, True, True, False]
    settings = bench.make_settings(quick=True)
    assert settings.adversaries == ("none", "flip", "flip_rounds", "targeted")  # random_sign: not by default
    assert settings.noises == tuple(jb.registry.noises())


@pytest.mark.parametrize("name", ["student_t", "pareto"])
@pytest.mark.parametrize("eps", [0.1, 0.25, 0.4, 0.5, 0.9, 0.95])
def test_registered_heavy_tails_below_eps_1_have_an_infinite_variance(name, eps):
    """At ε < 1 a registered heavy-tailed family's (1+ε)-moment is finite and its variance is not (a
    finite variance would make it an ε = 1 scenario): max_order, the tail index, lies in (1 + ε, 2]. The
    closed forms: t_ν has moments of order p < ν, Pareto(a) of order p < a; the (1+ε)-moment computed by
    quadrature from the density agrees with moment_bound."""
    family = jb.registry.noise(name).build(eps)
    tail = float(family.max_order)
    assert 1.0 + eps < tail <= 2.0
    p = 1.0 + eps
    if name == "student_t":
        density = stats.t(tail)
    else:
        mean = tail / (tail - 1.0)
        density = stats.pareto(tail, loc=-mean)  # centred: X − E[X]
    moment = density.expect(lambda x: np.abs(x) ** p, limit=400)
    assert float(family.moment_bound(eps)) == pytest.approx(moment ** (1 / p), rel=2e-3)


def test_registered_heavy_tails_at_eps_1_are_the_papers():
    """ε = 1: Student-t(3), the paper's t₃ (ν = √3), and Pareto(2.1); both with a finite variance."""
    t3 = jb.registry.noise("student_t").build(1.0)
    assert float(t3.max_order) == 3.0 and float(t3.moment_bound(1.0)) == pytest.approx(3**0.5, rel=1e-5)
    assert float(jb.registry.noise("pareto").build(1.0).max_order) == 2.1
    # the paper's ε = 0.4 noise, Pareto(1.5)
    assert float(jb.registry.noise("pareto").build(0.4).max_order) == pytest.approx(1.5)


def test_the_targeted_scenario_steers_to_a_fixed_unit_vector():
    a = jb.registry.adversary("targeted").build(5.0, 10)
    view = jb.corruption.AdversaryView(
        contexts=jnp.eye(10)[:4],
        theta_star=jnp.zeros(10),
        means=jnp.zeros(4),
        action=jnp.int32(1),
        eta=jnp.float32(0.0),
        t=jnp.int32(0),
    )
    target = np.random.default_rng(0).standard_normal(10)
    target /= np.linalg.norm(target)
    wanted = target[:4]  # ⟨e_k, θ†⟩; the means are 0, so the ranking changes unless θ† prefers arm 0
    c, _ = a.corrupt(a.init(), view)
    expected = wanted[1] if np.argmax(wanted) != 0 else 0.0
    assert float(c) == pytest.approx(np.clip(expected, -5.0, 5.0), rel=1e-6)


@pytest.mark.parametrize(
    "spec, match",
    [
        (
            "flip",
            r"spec='flip' is invalid: it must be one of jb.registry.AdversarySpec, jb.registry.Algorith",
        ),
        (
            jb.registry.AdversarySpec("no way", lambda C, d: None, ""),
            r"name='no way' is invalid: it must be a",
        ),
        (jb.registry.AdversarySpec("x", 3.0, ""), r"build=3.0 is invalid: it must be a function \(C, dim\)"),
        (jb.registry.AdversarySpec("x", lambda C, d: None, "", takes_level=1), r"takes_level=1 is invalid"),
        (jb.registry.NoiseSpec("x", lambda e: None, "Laplace"), r"describe='Laplace' is invalid"),
        (
            jb.registry.NoiseSpec("x", lambda e: None, str, heavy_tailed="yes"),
            r"heavy_tailed='yes' is invalid",
        ),
        (
            jb.registry.StreamSpec("x", None, ""),
            r"build=None is invalid: it must be a function \(dim, num_arms",
        ),
        (jb.registry.StreamSpec("x", lambda d, k, n: None, 3), r"description=3 is invalid: it must be a str"),
    ],
)
def test_register_refuses_a_spec_its_readers_could_not_use(isolated, spec, match):
    with pytest.raises(ValueError, match=match):
        jb.registry.register(spec)


def test_an_unknown_name_lists_the_registered_ones_and_the_plugin_route():
    with pytest.raises(ValueError, match=r"adversary='evil' is invalid: registered adversaries are \('none'"):
        jb.registry.adversary("evil")
    with pytest.raises(ValueError, match=r"noise='x' is invalid: .*--plugin MODULE"):
        jb.registry.noise("x")
    with pytest.raises(ValueError, match=r"stream='x' is invalid: registered streams are \('linear'"):
        bench.make_settings(quick=True, stream="x")


COLLISIONS = {
    "oful": "jb.registry.register(jb.registry.algorithm('oful')._replace(label='Mine', module='')",
    "flip": "jb.registry.register(jb.registry.AdversarySpec('flip', lambda C, d: None, 'mine')",
    "gaussian": "jb.registry.register(jb.registry.NoiseSpec('gaussian', lambda e: None, lambda e: 'mine')",
    "linear": "jb.registry.register(jb.registry.StreamSpec('linear', lambda d, k, n: None, 'mine')",
}


@pytest.mark.parametrize("name", list(COLLISIONS))
def test_a_plugin_cannot_silently_replace_a_built_in(isolated, tmp_path, name):
    """Registering a name another module registered is refused, naming that module; ``replace=True``
    replaces it, and the spec records the plugin's module (what reports and results read)."""
    kind, owner = {
        "oful": ("algorithm", "jaxbandit.agents.oful"),
        "flip": ("adversary", "jaxbandit.envs.corruption"),
        "gaussian": ("noise", "jaxbandit.envs.noise"),
        "linear": ("stream", "jaxbandit.envs.streams"),
    }[name]
    read = getattr(jb.registry, kind)
    builtin = read(name)
    (tmp_path / "evil.py").write_text(f"import jaxbandit as jb\n{COLLISIONS[name]})\n")
    with pytest.raises(
        ValueError,
        match=rf"^plugin='.*evil.py' failed to import: ValueError: {kind}='{name}' is already registered, by "
        rf"the module '{owner}' \(this one is from 'evil'\): register yours under another name, or pass "
        r"replace=True",
    ):
        plugins.load(str(tmp_path / "evil.py"))
    assert read(name) == builtin
    (tmp_path / "evil2.py").write_text(f"import jaxbandit as jb\n{COLLISIONS[name]}, replace=True)\n")
    plugins.load(str(tmp_path / "evil2.py"))
    assert read(name).module == "evil2" and read(name) != builtin
    del sys.modules["evil2"]


def test_every_spec_records_the_module_that_registered_it(isolated, plugin_dir):
    for read in (jb.registry.algorithms, jb.registry.adversaries, jb.registry.noises, jb.registry.streams):
        for spec in read().values():  # the library's own: each from the module that defines it
            assert spec.module.startswith("jaxbandit.") and spec.module in sys.modules
            assert spec.module not in ("jaxbandit.core.registry", "jaxbandit.registry")
    assert jb.registry.algorithm("cr_hvt_ucb").module == "jaxbandit.agents.cr_hvt_ucb"
    plugins.load(str(plugin_dir / "mymod.py"))
    for read, name in (
        (jb.registry.algorithm, "clip_ucb"),
        (jb.registry.adversary, "optimal_arm"),
        (jb.registry.noise, "laplace"),
        (jb.registry.stream, "pool"),
    ):
        assert read(name).module == "mymod"
    # a module registering its own name again (a reload, a re-run cell) replaces its own spec
    mine = jb.registry.algorithm("clip_ucb")._replace(name="mine", module="")
    assert jb.registry.register(mine).module == __name__
    again = jb.registry.register(mine._replace(label="Mine 2"))
    assert again.module == __name__ and jb.registry.algorithm("mine").label == "Mine 2"
    with pytest.raises(ValueError, match=r"replace='yes' is invalid: it must be True or False"):
        jb.registry.register(again, replace="yes")


def test_bench_json_records_the_module_of_every_piece(isolated, plugin_dir):
    plugins.load(str(plugin_dir / "mymod.py"))
    settings = bench.make_settings(
        quick=True, algorithms=("clip_ucb", "oful"), adversaries=("flip", "optimal_arm"), noises=("laplace",)
    )
    assert manifest(settings)["provenance"] == {
        "algorithms": {"clip_ucb": "mymod", "oful": "jaxbandit.agents.oful"},
        "adversaries": {"flip": "jaxbandit.envs.corruption", "optimal_arm": "mymod"},
        "noises": {"laplace": "mymod"},
        "stream": {"linear": "jaxbandit.envs.streams"},
    }


def test_registered_scenarios_join_the_benchmark_axes(isolated, plugin_dir):
    plugins.load(str(plugin_dir / "mymod.py"))
    settings = bench.make_settings(quick=True, eps_grid=(0.5, 1.0), C_grid=(3.0, 7.0))
    assert settings.algorithms[-1] == "clip_ucb"
    assert settings.adversaries[-1] == "optimal_arm" and settings.noises[-1] == "laplace"
    attacks = bench.attacks(settings)
    assert [a.name for a in attacks][-2:] == ["optimal_arm C=3", "optimal_arm C=7"]
    noises = bench.noise_settings(settings)
    assert noises[-1].name == "laplace(ε=1)"  # every moment finite: ε = 1 only
    assert noises[-1].nu == pytest.approx(2.0**0.5)  # Laplace(0, 1): E η² = Γ(3) = 2
    assert settings.stream == "linear"  # the paper's unless told


def test_a_registered_stream_is_the_one_every_scenario_of_the_benchmark_draws(isolated, plugin_dir):
    """``stream="pool"``: the benchmark's environment draws each round's contexts from the plugin's pool
    (every context a row of it, none twice in a round), with the scenario's noise family and adversary."""
    module = plugins.load(str(plugin_dir / "mymod.py"))
    settings = bench.make_settings(quick=True, stream="pool", noises=("laplace",), adversaries=("flip",))
    scen = bench.scenarios(settings)
    env = bench.environment_factory(scen)({"noise": 0.0, "attack": 0.0})
    pool = module.unit_pool(30, 10).astype(np.float32)
    theta = env.stream.init(jax.random.key(0))
    for t in range(3):
        rnd = env.stream.draw(jax.random.key(t), theta, jnp.int32(t))
        X = np.asarray(rnd.contexts)
        rows = [int(np.argmin(np.linalg.norm(pool - x, axis=1))) for x in X]
        np.testing.assert_array_equal(X, pool[rows])
        assert len(set(rows)) == 20


def test_a_stream_of_another_shape_than_the_benchmark_s_is_refused_naming_it(isolated):
    build = lambda dim, num_arms, noise: jb.envs.linear_stream(dim, num_arms - 1, noise=noise)
    jb.registry.register(jb.registry.StreamSpec("short", build, "one arm short"))
    with pytest.raises(
        ValueError,
        match=r"stream='short' is invalid: its build\(10, 20, noise\) returned a jb.Stream .* num_arms=19;",
    ):
        bench.make_settings(quick=True, stream="short")


def test_the_registered_linear_stream_is_jb_envs_linear():
    """The benchmark's default stream runs bitwise as ``jb.envs.linear`` (the results it reported before
    streams were registered)."""
    noise, adversary = jb.noise.student_t(3.0), jb.corruption.flip(5.0)
    stream = jb.registry.stream("linear").build(4, 6, noise)
    env = jb.Environment(stream, adversary)
    alg = jb.oful(30, 4)
    a = jb.simulate(alg, env, jax.random.key(3), horizon=30)
    b = jb.simulate(
        alg, jb.envs.linear(4, 6, noise=noise, corruption=adversary), jax.random.key(3), horizon=30
    )
    for field in ("regret", "action", "corruption"):
        np.testing.assert_array_equal(np.asarray(getattr(a, field)), np.asarray(getattr(b, field)))


# --------------------------------------------------------------------------------------------------------
# Loading plugins


def test_a_module_is_found_in_the_current_directory(isolated, plugin_dir, monkeypatch):
    monkeypatch.chdir(plugin_dir)
    sys.path[:] = [p for p in sys.path if p not in ("", str(plugin_dir))]
    module = plugins.load("mymod")
    assert module.__name__ == "mymod" and "clip_ucb" in jb.registry.names()
    assert str(plugin_dir) not in sys.path  # searched, not added
    assert plugins.load("mymod") is module


def test_a_file_path_is_loaded_once(isolated, plugin_dir):
    first = plugins.load(str(plugin_dir / "mymod.py"))
    assert plugins.load(str(plugin_dir / "." / "mymod.py")) is first
    assert jb.registry.algorithm("clip_ucb").label == "clip-UCB"


@pytest.mark.parametrize(
    "source, given, match",
    [
        (None, "no_such_module_here", r"^plugin='no_such_module_here' was not found: give an importable"),
        (
            "import no_such_dependency\n",
            "broken",
            r"^plugin='broken' failed to import: ModuleNotFoundError: No",
        ),
        (
            "raise RuntimeError('boom\\nmore')\n",
            "broken.py",
            r"^plugin='.*broken.py' failed to import: Runtime",
        ),
        (None, "missing.py", r"^plugin='.*missing.py' is invalid: it is not a .py file"),
        (None, "", r"^plugin='' is invalid: give a module name"),
    ],
)
def test_a_failing_plugin_is_one_line_naming_it_and_the_exception(
    isolated, tmp_path, monkeypatch, source, given, match
):
    monkeypatch.chdir(tmp_path)
    if source is not None:
        (tmp_path / "broken.py").write_text(source)
    with pytest.raises(ValueError, match=match) as info:
        plugins.load(str(tmp_path / given) if given.endswith(".py") else given)
    assert "\n" not in str(info.value)
    assert "broken" not in sys.modules


def _dist_info(where: Path, entry_points: str) -> None:
    info = where / "user_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: user-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[jaxbandit.plugins]\n{entry_points}\n")


def test_installed_entry_points_load_when_a_registry_is_first_read(isolated, plugin_dir):
    _dist_info(plugin_dir, "mine = mymod")
    sys.path.insert(0, str(plugin_dir))
    assert [ep.name for ep in plugins.installed()] == ["mine"]
    assert "mymod" not in sys.modules
    assert "optimal_arm" in jb.registry.adversaries()  # the first read loads it
    assert "mymod" in sys.modules


def test_an_entry_point_may_name_a_function_called_once(isolated, tmp_path):
    (tmp_path / "setup_mod.py").write_text("CALLS = []\ndef setup():\n    CALLS.append(1)\n")
    _dist_info(tmp_path, "setup = setup_mod:setup")
    sys.path.insert(0, str(tmp_path))
    jb.registry.names()
    jb.registry.noises()
    assert sys.modules["setup_mod"].CALLS == [1]


def test_a_failing_entry_point_is_skipped_with_a_warning_naming_it_and_the_others_load(isolated, tmp_path):
    """One broken installed plugin: a one-line warning names it, the registrations it made before failing
    are undone, the other installed plugins load, and the first and later reads agree."""
    (tmp_path / "half.py").write_text(
        "import jaxbandit as jb\n"
        "jb.registry.register(jb.registry.AdversarySpec('half_made', lambda C, d: None, 'x'))\n"
        "1 / 0\n"
    )
    (tmp_path / "good_mod.py").write_text(
        "import jaxbandit as jb\n"
        "jb.registry.register(jb.registry.AdversarySpec('good_one', lambda C, d: None, 'x'))\n"
    )
    _dist_info(tmp_path, "bad = half\ngood = good_mod")
    sys.path.insert(0, str(tmp_path))
    with pytest.warns(plugins.PluginWarning) as caught:
        first = jb.registry.adversaries()
    (message,) = [str(w.message) for w in caught]
    assert message.startswith(
        "plugin 'bad' (entry point 'half' of group 'jaxbandit.plugins') failed to load and was skipped, "
        "its registrations undone: ZeroDivisionError"
    )
    assert "\n" not in message and "JAXBANDIT_NO_PLUGINS=1" in message
    assert "good_one" in first and "half_made" not in first
    assert jb.registry.adversaries() == first  # a second read: the same registry
    assert list(plugins.failures()) == ["bad"]
    with pytest.raises(ValueError, match=r"adversary='half_made' is invalid: .*failed to load: 'bad'"):
        jb.registry.adversary("half_made")


def test_a_plugin_failing_at_import_leaves_no_registration_behind(isolated, tmp_path):
    """``--plugin``: the error names it, and what it registered (a new name, a replacement) is undone."""
    (tmp_path / "half.py").write_text(
        "import jaxbandit as jb\n"
        "jb.registry.register(jb.registry.NoiseSpec('half_noise', lambda e: None, str))\n"
        "spec = jb.registry.algorithm('oful')\n"
        "jb.registry.register(spec._replace(label='Hijacked', module=''), replace=True)\n"
        "raise RuntimeError('boom')\n"
    )
    before = {kind: dict(r._specs) for kind, r in zip("ANSs", (ALGORITHMS, NOISES, STREAMS, ADVERSARIES))}
    for given in ("half", str(tmp_path / "half.py")):
        with pytest.raises(ValueError, match=r"plugin='.*half(\.py)?' failed to import: RuntimeError: boom"):
            with pytest.MonkeyPatch.context() as mp:
                mp.chdir(tmp_path)
                plugins.load(given)
        after = {kind: dict(r._specs) for kind, r in zip("ANSs", (ALGORITHMS, NOISES, STREAMS, ADVERSARIES))}
        assert after == before
        assert jb.registry.algorithm("oful").label == "OFUL"


def test_jaxbandit_no_plugins_keeps_installed_plugins_from_loading(isolated, plugin_dir, monkeypatch):
    _dist_info(plugin_dir, "mine = mymod")
    sys.path.insert(0, str(plugin_dir))
    monkeypatch.setenv("JAXBANDIT_NO_PLUGINS", "yes")
    with pytest.raises(ValueError, match=r"JAXBANDIT_NO_PLUGINS='yes' is invalid: set it to 1 .* or 0"):
        jb.registry.names()
    monkeypatch.setenv("JAXBANDIT_NO_PLUGINS", "1")
    assert "clip_ucb" not in jb.registry.names() and "mymod" not in sys.modules
    plugins.load(str(plugin_dir / "mymod.py"))  # a plugin named explicitly still loads
    assert "clip_ucb" in jb.registry.names()


@pytest.mark.parametrize("plot", [True, False])
def test_a_broken_installed_plugin_breaks_no_command_that_does_not_need_it(plugin_dir, plot):
    (plugin_dir / "broken.py").write_text("raise RuntimeError('boom')\n")
    _dist_info(plugin_dir, "bad = broken\nmine = mymod")
    args = ["plot", "--help"] if plot else ["bench", "--help"]
    out = subprocess.run(
        [sys.executable, "-m", "jaxbandit", *args],
        capture_output=True,
        text=True,
        env=cli_env(plugin_dir),
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    warning = out.stderr.strip().splitlines()
    assert len(warning) == 1 and warning[0].startswith(
        "warning: plugin 'bad' (entry point 'broken' of group 'jaxbandit.plugins') failed to load"
    )
    if not plot:  # the other installed plugin's names are the CLI's choices
        assert "optimal_arm" in out.stdout and "laplace" in out.stdout


def test_import_jaxbandit_loads_no_plugin(plugin_dir):
    _dist_info(plugin_dir, "mine = mymod")
    code = "import sys, jaxbandit; print('mymod' in sys.modules, jaxbandit.plugins._installed_loaded)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=cli_env(plugin_dir),
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


# --------------------------------------------------------------------------------------------------------
# The definition of done: a user's one-file plugin, end to end, the package untouched


def test_a_plugin_passes_jb_testing_and_runs_in_jb_sweep_as_in_jb_simulate(isolated, plugin_dir):
    plugins.load(str(plugin_dir / "mymod.py"))
    T, d, K = 40, 3, 5
    spec = jb.registry.algorithm("clip_ucb")
    problem = jb.registry.Problem(T, d)
    jb.testing.check_algorithm(lambda p: spec.build(problem, p), spec.theory(problem), dim=d, num_arms=K)
    adversary, noise = jb.registry.adversary("optimal_arm"), jb.registry.noise("laplace")
    env = jb.envs.linear(d, K, noise=noise.build(1.0), corruption=adversary.build(2.0, d))
    jb.testing.check_environment(env)

    algorithms = {
        "clip_ucb": lambda p: spec.build(problem, {"beta": p["beta"], "clip": 3.0}),
        "oful": lambda p: jb.oful(T, d, lam=1.0, beta=p["beta"]),
    }
    make_env = lambda p: jb.envs.linear(d, K, noise=noise.build(1.0), corruption=adversary.build(p["C"], d))
    grid = {"C": [0.0, 4.0], "beta": [0.1, 1.0]}
    res = jb.sweep(algorithms, make_env, grid, horizon=T, seeds=[0, 3], record="all")
    assert list(res.coords["algorithm"]) == ["clip_ucb", "oful"]

    @jax.jit
    def alone(p, seed):
        make = algorithms["clip_ucb"]
        return jb.simulate(make(p), make_env(p), jax.random.fold_in(jax.random.key(0), seed), horizon=T)

    for i, C in enumerate(grid["C"]):
        for j, beta in enumerate(grid["beta"]):
            for s, seed in enumerate((0, 3)):
                run = alone({"C": jnp.float32(C), "beta": jnp.float32(beta)}, seed)
                for field in ("regret", "action", "corruption"):
                    np.testing.assert_array_equal(
                        res.data[field][0, i, j, s], np.asarray(getattr(run, field))
                    )
    spent = np.abs(res.data["corruption"][0, 1]).sum(axis=-1)
    assert np.all(spent <= 4.0 * (1 + 1e-6)) and np.all(spent > 0)  # the adversary corrupts, within C


def _run_cli(args, cwd, env):
    proc = subprocess.run(
        [sys.executable, "-m", "jaxbandit", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


BENCH_TINY = ["--quick", "--horizon", "20", "--seeds", "2", "--tune-seeds", "1", "--no-progress"]


@pytest.mark.slow
def test_a_plugin_runs_in_the_benchmark_and_figure1_from_the_command_line(plugin_dir):
    env = cli_env()
    names = ["--algorithms", "clip_ucb,oful", "--adversaries", "none", "optimal_arm", "--noises", "laplace"]
    names += ["--stream", "pool"]
    _run_cli(["bench", "--plugin", "mymod", *BENCH_TINY, *names, "--out", "b"], plugin_dir, env)
    info = json.loads((plugin_dir / "b" / "bench.json").read_text())
    assert info["settings"]["algorithms"] == ["clip_ucb", "oful"]
    assert info["provenance"]["algorithms"] == {"clip_ucb": "mymod", "oful": "jaxbandit.agents.oful"}
    assert info["provenance"]["adversaries"] == {"none": "jaxbandit.envs.corruption", "optimal_arm": "mymod"}
    assert info["provenance"]["noises"] == {"laplace": "mymod"} and info["provenance"]["stream"] == {
        "pool": "mymod"
    }
    assert [a["name"] for a in info["attacks"]] == ["none", "optimal_arm C=40"]
    assert [n["family"] for n in info["noises"]] == ["laplace"]
    assert (
        info["settings"]["stream"] == "pool" and info["stream"]["description"] == "contexts from a pool of 30"
    )
    report = (plugin_dir / "b" / "report.md").read_text()
    assert "clip-UCB" in report and "the stream `pool` (contexts from a pool of 30)" in report

    fig = ["--algorithms", "clip_ucb", "--constants", "theory", "--horizon", "20", "--seeds", "2"]
    fig += ["--repeats", "1", "--no-progress", "--out", "f"]
    _run_cli(["figure1", "--plugin", str(plugin_dir / "mymod.py"), *fig], plugin_dir, env)
    data = json.loads((plugin_dir / "f" / "figure1.json").read_text())
    assert list(data["methods"]) == ["clip_ucb"] and data["methods"]["clip_ucb"]["label"] == "clip-UCB"
    assert data["methods"]["clip_ucb"]["module"] == "mymod"


@pytest.mark.slow
def test_an_installed_plugin_runs_in_the_benchmark_without_plugin_options(plugin_dir, tmp_path_factory):
    _dist_info(plugin_dir, "mine = mymod")
    elsewhere = tmp_path_factory.mktemp("elsewhere")  # not the plugin's directory: found as installed
    names = ["--algorithms", "clip_ucb", "--adversaries", "optimal_arm", "--noises", "laplace"]
    _run_cli(["bench", *BENCH_TINY, *names, "--out", "b"], elsewhere, cli_env(plugin_dir))
    info = json.loads((elsewhere / "b" / "bench.json").read_text())
    assert info["settings"]["algorithms"] == ["clip_ucb"]


@pytest.mark.slow
def test_the_extension_guide_s_examples_run(isolated):
    """docs/own-environment.md's Python blocks, in order in one namespace: the pool stream, the Laplace
    family and the optimal-arm adversary pass check_environment, and their registrations join the
    benchmark's axes and its stream."""
    from test_docs import python_blocks

    namespace: dict = {}
    for code in python_blocks((ROOT / "docs" / "own-environment.md").read_text()):
        exec(compile(code, "docs/own-environment.md", "exec"), namespace)
    settings = bench.make_settings(quick=True, stream="pool")
    assert "optimal_arm" in settings.adversaries and "laplace" in settings.noises
    env = bench.environment_factory(bench.scenarios(settings))({"noise": 0.0, "attack": 0.0})
    theta = env.stream.init(jax.random.key(0))  # the registered pool stream, at the benchmark's d and K
    assert env.stream.draw(jax.random.key(1), theta, jnp.int32(0)).contexts.shape == (20, 10)


# --------------------------------------------------------------------------------------------------------
# The benchmark vets a plugin's pieces before it runs


def _overspending(budget):
    """Corrupts by up to 2·C in all, declaring no budget: its Σ|c_t| contradicts the label Σ|c_t| <= C."""
    C = jnp.asarray(budget, jnp.result_type(float))

    def corrupt(spent, view):
        c = jnp.minimum(1.0, jnp.maximum(2.0 * C - spent, 0.0))
        return c, spent + c

    return jb.Adversary("overspending", lambda: jnp.zeros((), C.dtype), corrupt)


def _biased(eps):
    g = jb.noise.gaussian(1.0)
    return g._replace(name="biased", sample=lambda k, t: (g.sample(k, t)[0] + 0.5, g.sample(k, t)[1]))


def test_the_benchmark_vets_a_plugin_s_pieces_before_it_runs(isolated, plugin_dir):
    from jaxbandit import cli

    plugins.load(str(plugin_dir / "mymod.py"))  # a plugin's correct pieces pass
    settings = bench.make_settings(
        quick=True, adversaries=("optimal_arm",), noises=("laplace",), stream="pool"
    )
    cli.vet_plugin_pieces(settings)
    jb.registry.register(jb.registry.AdversarySpec("over", lambda C, d: _overspending(C), "sum |c_t| <= C"))
    jb.registry.register(jb.registry.NoiseSpec("biased", _biased, lambda e: "N(0.5, 1)", heavy_tailed=False))
    over = bench.make_settings(quick=True, adversaries=("over",), noises=("gaussian",))
    with pytest.raises(
        ValueError,
        match=r"^--adversaries over \(registered by the plugin module 'test_plugins'\) fails jb.testing, so "
        r"the benchmark's label for it would not hold: check_environment\(over C=\d+\): property 'budget' "
        r"failed",
    ):
        cli.vet_plugin_pieces(over)
    biased = bench.make_settings(quick=True, adversaries=("none",), noises=("biased",))
    with pytest.raises(ValueError, match=r"^--noises biased .* property 'zero_mean' failed"):
        cli.vet_plugin_pieces(biased)
