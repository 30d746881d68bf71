"""Write quickstart.ipynb and figure1.ipynb (no outputs stored). Edit the cells here, then run
``python notebooks/make_notebooks.py``; tests/test_notebooks.py checks that the files match."""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

# ---- shared cells -------------------------------------------------------------------------------

INSTALL = r'''# Install jaxbandit. From a checkout (this notebook inside the repository) it installs the checkout in
# editable mode; elsewhere (e.g. Colab) it installs from REPO_URL, which you set here.
REPO_URL = "https://github.com/OWNER/jaxbandit"  # <- set to the jaxbandit repository when not in a checkout

import importlib.util, pathlib, re, subprocess, sys


def find_checkout(start=None):
    """The nearest directory at or above `start` whose pyproject.toml is the jaxbandit project's."""
    start = pathlib.Path.cwd() if start is None else pathlib.Path(start)
    for folder in (start, *start.parents):
        toml = folder / "pyproject.toml"
        if toml.is_file() and re.search(r'(?m)^name\s*=\s*"jaxbandit"\s*$', toml.read_text()):
            return folder.resolve()
    return None


checkout = find_checkout()
spec = importlib.util.find_spec("jaxbandit")
installed_at = pathlib.Path(spec.origin).resolve().parents[1] if spec and spec.origin else None
if checkout is not None:
    if installed_at != checkout:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "-e", str(checkout)])
    if str(checkout) not in sys.path:
        sys.path.insert(0, str(checkout))  # an editable install made now is seen only after a restart
    print(f"jaxbandit from the checkout {checkout}")
elif spec is None:
    if "OWNER" in REPO_URL:
        raise RuntimeError("jaxbandit is not installed and this notebook is not in a checkout: "
                           "set REPO_URL in this cell to the jaxbandit git repository")
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", f"git+{REPO_URL}"])
    print(f"jaxbandit installed from {REPO_URL}")
else:
    print(f"jaxbandit already installed at {installed_at}")'''

SETUP_HEAD = r'''import os, pathlib, shutil, time

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import jaxbandit as jb

# JAX runs on a GPU when the runtime has one (in Colab: Runtime > Change runtime type > GPU).
print(f"jaxbandit {jb.__version__}, JAX {jax.__version__}: running on {jax.default_backend()} {jax.devices()}")
if jax.default_backend() == "cpu" and shutil.which("nvidia-smi"):
    print("A GPU is present but JAX sees only the CPU: pip install -U 'jax[cuda12]' and restart.")


def env_int(name, default):
    """An integer >= 1 from the environment (the tests shrink the run with these), else `default`."""
    text = os.environ.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{name}={text!r} is invalid: it must be an integer >= 1")
    return value

'''


def build(cells):
    """The notebook; cell ids are fixed so that regenerating it changes nothing."""
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i:02d}"
    nb = new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "colab": {"provenance": []},
        "accelerator": "GPU",
    })
    nbformat.validate(nb)
    return nb


def render(cells) -> str:
    """The notebook's file text."""
    text = nbformat.writes(build(cells))
    return text if text.endswith("\n") else text + "\n"


NOTEBOOKS = {}  # file name -> cells, filled below


def write(name: str, cells) -> Path:
    path = HERE / name
    text = render(cells)
    path.write_text(text)
    return path


def md(text):
    return new_markdown_cell(text.strip("\n"))


def code(text):
    return new_code_cell(text.strip("\n"))


# ---- quickstart ---------------------------------------------------------------------------------

QUICKSTART = [
    md(r'''
# jaxbandit quickstart

Linear contextual bandits under adversarial corruption and heavy-tailed noise, in JAX. This notebook
runs **CR-Hvt-UCB** (Algorithm 1 of Tani & Futami) on the paper's environment — d = 10, K = 20 random
unit contexts, Student-t(3) noise, the flip adversary with budget C — first once, then as one compiled
sweep over C and seeds, and plots the result.

The first cell installs jaxbandit (from this checkout, or from `REPO_URL` in Colab).
'''),
    code(INSTALL),
    code(SETUP_HEAD + r'''
HORIZON = env_int("JAXBANDIT_NOTEBOOK_HORIZON", 2000)   # T
SEEDS = env_int("JAXBANDIT_NOTEBOOK_SEEDS", 10)          # independent runs per setting
OUT = pathlib.Path(os.environ.get("JAXBANDIT_NOTEBOOK_OUT", "out/notebooks"))
print(f"T = {HORIZON}, {SEEDS} seeds, results in {OUT}")'''),
    md(r'''
## 1. One run

An algorithm and an environment are NamedTuples of pure functions; `jb.simulate` runs T rounds under
`lax.scan` and is `jit`- and `vmap`-able. CR-Hvt-UCB here uses the theory constants and is told the
corruption budget C = 100.
'''),
    code(r'''
T, d, K = HORIZON, 10, 20
alg = jb.cr_hvt_ucb(T, d, eps=1.0, nu=3 ** 0.5, corruption=100.0)
env = jb.envs.linear(d, K, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(budget=100.0))

run = jax.jit(lambda key: jb.simulate(alg, env, key, horizon=T))
out = run(jax.random.key(0))
print(f"cumulative regret after {T} rounds: {float(out.regret.sum()):.1f}")
print(f"corruption spent: {float(jnp.abs(out.corruption).sum()):.1f} (budget 100)")'''),
    md(r'''
## 2. A sweep over the corruption budget C

`jb.sweep` runs every (grid point × seed) in one compiled, vmapped call. The factories receive the grid
values as traced scalars, so a new grid of the same size does not recompile. Two confidence scales:
the theory radius (`beta_scale = 1`, enormous: the algorithm keeps exploring) and `beta_scale = 1e-4`,
the demo's scale, which was chosen on seeds 1000–1007 — not the seeds shown here (see
`figure1.ipynb` for `jb.tune`).
'''),
    code(r'''
def make_alg(p):
    return jb.cr_hvt_ucb(T, d, eps=1.0, nu=3 ** 0.5, corruption=p["C"], beta_scale=p["beta_scale"])


def make_env(p):
    return jb.envs.linear(d, K, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(p["C"]))


grid = {"C": [0.0, 10.0, 30.0, 100.0, 300.0], "beta_scale": [1.0, 1e-4]}
start = time.perf_counter()
res = jb.sweep(make_alg, make_env, grid, horizon=T, seeds=SEEDS, record=("log", 60))
print(f"{res.final_regret.size} runs in {time.perf_counter() - start:.1f} s (compilation included)")
print(res.dims, res.cumulative_regret.shape)'''),
    md(r'''
## 3. Plots

Left: cumulative regret against t on log–log axes (mean ± one standard error over seeds), tuned scale.
Right: final regret against C — the robustness frontier — for both scales.
'''),
    code(r'''
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
jb.plots.plot_regret_curves(res.sel(beta_scale=1e-4), ax=left, loglog=True,
                            title="CR-Hvt-UCB, beta_scale = 1e-4")
jb.plots.plot_final_vs(res, "C", ax=right, logx=True, title="final regret against C")
fig.tight_layout()
plt.show()'''),
    md(r'''
The slope of log(mean cumulative regret) against log t over the second half of the rounds: about 1 for
linear regret, clearly below 1 for sublinear growth.
'''),
    code(r'''
slopes = jb.loglog_slope(res)                  # [C, beta_scale]
_, mean, se = jb.analysis.final_regret_table(res)
print(f"{'C':>6} {'beta_scale':>11} {'final regret':>16} {'log-log slope':>14}")
for i, C in enumerate(res.coords["C"]):
    for j, b in enumerate(res.coords["beta_scale"]):
        print(f"{C:6g} {b:11g} {mean[i, j]:9.1f} ± {se[i, j]:4.1f} {slopes[i, j]:14.2f}")'''),
    md(r'''
## 4. Save, load, redraw

Results are an `.npz` (arrays) plus a `.json` (axes, settings). Plotting never re-runs anything: from a
shell, `python -m jaxbandit plot FILE [--loglog]` redraws any saved result.
'''),
    code(r'''
path = res.save(OUT / "quickstart.npz")
again = jb.SweepResult.load(path)
assert again.dims == res.dims and np.array_equal(again.cumulative_regret, res.cumulative_regret)
print(f"saved {path}; redraw with:  python -m jaxbandit plot {path} --loglog")'''),
]

# ---- figure 1 -----------------------------------------------------------------------------------

FIGURE1 = [
    md(r'''
# Figure 1 of Tani & Futami — CR-Hvt-UCB

Section 6 of *Robust and Computationally Efficient Linear Contextual Bandits under Adversarial
Corruption and Heavy-Tailed Noise*: d = 10, θ* uniform on the unit sphere, K = 20 random unit contexts
per round (L = S = 1), the θ-flipping adversary with budget C ∈ {0, 100}, T = 5000, 10 runs.

- **(a)** regret, ε = 1: Student-t(3) noise, ν = √3;
- **(b)** runtime, ε = 1;
- **(c)** regret, ε < 1: Pareto(shape 1.5, x_min 1) noise, ε = 0.4, the paper's ν = 15^{1/1.4} (its
  uncentred (1+ε)-moment; jaxbandit centres the noise, which has mean 3).

CR-Hvt-UCB is shown with its theory constants and with the confidence scale `beta_scale` **tuned on
seeds 1000+**, disjoint from the reported seeds 0..n−1.

> **GAdaOFUL (Yu et al.), the paper's baseline, is not in jaxbandit yet.** This notebook runs
> CR-Hvt-UCB only; the cell marked *RESERVED: GAdaOFUL* is where the baseline plugs in.
'''),
    code(INSTALL),
    code(SETUP_HEAD + r'''
HORIZON = env_int("JAXBANDIT_NOTEBOOK_HORIZON", 5000)    # T = 5000 in the paper
SEEDS = env_int("JAXBANDIT_NOTEBOOK_SEEDS", 10)           # 10 runs in the paper
OUT = pathlib.Path(os.environ.get("JAXBANDIT_NOTEBOOK_OUT", "out/notebooks"))
REPORT_SEEDS = range(SEEDS)                               # the runs shown
TUNE_SEEDS = range(1000, 1000 + SEEDS)                    # the runs beta_scale is chosen on
D, K, C_VALUES = 10, 20, [0.0, 100.0]
print(f"T = {HORIZON}, report seeds {REPORT_SEEDS}, tuning seeds {TUNE_SEEDS}, results in {OUT}")'''),
    md(r'''
## Settings

One entry per regret panel. The factories are made once per setting (compiled code is cached per
factory object); they receive the grid values (`C`, `beta_scale`) as traced scalars.
'''),
    code(r'''
SETTINGS = {
    "(a) eps = 1, Student-t(3)": dict(eps=1.0, nu=3 ** 0.5, noise=jb.noise.student_t(3.0)),
    "(c) eps = 0.4, Pareto(1.5, 1)": dict(eps=0.4, nu=float(jb.noise.raw_pareto_moment_bound(1.5, 1.0, 0.4)),
                                          noise=jb.noise.pareto(1.5, 1.0)),
}


def factories(eps, nu, noise):
    def make_alg(p):
        return jb.cr_hvt_ucb(HORIZON, D, eps=eps, nu=nu, corruption=p["C"], beta_scale=p["beta_scale"])

    def make_env(p):
        return jb.envs.linear(D, K, noise=noise, corruption=jb.corruption.flip(p["C"]))

    return make_alg, make_env


FACTORIES = {name: factories(**s) for name, s in SETTINGS.items()}
for name, s in SETTINGS.items():
    print(f"{name}: nu = {s['nu']:.4f}")'''),
    md(r'''
## RESERVED: GAdaOFUL

**This cell is where the paper's baseline goes once `jb.gadaoful` lands.** Fill `BASELINES[setting]`
with `{name: factory p -> Algorithm}` (the factory receives `p["C"]`); the cells below then run the
baselines on the same seeds and key as CR-Hvt-UCB (common random numbers: the same θ*, contexts and
noise), draw them in panels (a) and (c), and time them in panel (b). GAdaOFUL's cost per round grows
with t by design, so expect its sweep to take far longer.
'''),
    code(r'''
# RESERVED: GAdaOFUL. Until jb.gadaoful exists, BASELINES stays empty and nothing below uses it, e.g.
#   BASELINES["(a) eps = 1, Student-t(3)"]["GAdaOFUL"] = lambda p: jb.gadaoful(HORIZON, D, ...)
BASELINES = {name: {} for name in SETTINGS}
if not any(BASELINES.values()):
    print("GAdaOFUL is not in jaxbandit yet: running CR-Hvt-UCB only.")'''),
    md(r'''
## Tuning `beta_scale` on the tuning seeds

`jb.tune` sweeps the grid on `TUNE_SEEDS` and picks the `beta_scale` with the smallest mean final
regret averaged over C ∈ {0, 100} (`over=("C",)`): one setting for both corruption levels.
'''),
    code(r'''
BETA_GRID = [1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]
TUNED = {}
for name, (make_alg, make_env) in FACTORIES.items():
    tuned = jb.tune(make_alg, make_env, {"beta_scale": BETA_GRID, "C": C_VALUES}, horizon=HORIZON,
                    seeds=TUNE_SEEDS, over=("C",))
    tuned.check_report_seeds(REPORT_SEEDS)     # raises if a reported seed was used for tuning
    TUNED[name] = tuned.best["beta_scale"]
    print(name)
    print(tuned.format_table())'''),
    md(r'''
## Runs on the reported seeds

CR-Hvt-UCB with theory constants (`beta_scale = 1`) and with the tuned scale, C ∈ {0, 100}, in one
compiled sweep per setting; then any baselines from the reserved cell, on the same seeds.
'''),
    code(r'''
RESULTS, BASELINE_RESULTS = {}, {}
for name, (make_alg, make_env) in FACTORIES.items():
    scales = sorted({1.0, TUNED[name]}, reverse=True)
    start = time.perf_counter()
    res = jb.sweep(make_alg, make_env, {"C": C_VALUES, "beta_scale": scales}, horizon=HORIZON,
                   seeds=REPORT_SEEDS, record=("log", 80))
    res.meta.update(setting=name, tuned_beta_scale=TUNED[name], tuning_seeds=list(TUNE_SEEDS))
    RESULTS[name] = res
    res.save(OUT / f"figure1_{name[1]}.npz")
    print(f"{name}: {res.final_regret.size} runs in {time.perf_counter() - start:.1f} s")
    if BASELINES[name]:
        BASELINE_RESULTS[name] = jb.sweep(BASELINES[name], make_env, {"C": C_VALUES}, horizon=HORIZON,
                                          seeds=REPORT_SEEDS, record=("log", 80))'''),
    md(r'''
## Runtime (panel b)

Wall-clock seconds of one run of T rounds (ε = 1 setting, compiled once per T, median of three
repeats). CR-Hvt-UCB's cost per round does not grow with t, so its log–log slope should be about 1.
'''),
    code(r'''
RUNTIME_HORIZONS = sorted({max(16, HORIZON // 8), max(16, HORIZON // 4), max(16, HORIZON // 2), HORIZON})
eps, nu, noise = (SETTINGS["(a) eps = 1, Student-t(3)"][k] for k in ("eps", "nu", "noise"))


def timed_runs(make_alg_for_T, repeats=3):
    """{C: seconds [len(RUNTIME_HORIZONS), repeats]} for factories T -> (C -> Algorithm)."""
    seconds = {C: [] for C in C_VALUES}
    for T in RUNTIME_HORIZONS:
        make_alg = make_alg_for_T(T)
        run = jax.jit(lambda key, C: jb.simulate(
            make_alg(C), jb.envs.linear(D, K, noise=noise, corruption=jb.corruption.flip(C)),
            key, horizon=T).regret)
        run(jax.random.key(0), 0.0).block_until_ready()          # compile outside the timing
        for C in C_VALUES:
            times = []
            for r in range(repeats):
                start = time.perf_counter()
                run(jax.random.key(r), C).block_until_ready()
                times.append(time.perf_counter() - start)
            seconds[C].append(times)
    return {C: np.array(s) for C, s in seconds.items()}


RUNTIMES = {}
cr = timed_runs(lambda T: lambda C: jb.cr_hvt_ucb(T, D, eps=eps, nu=nu, corruption=C))
for C, s in cr.items():
    RUNTIMES[f"CR-Hvt-UCB, C={C:g}"] = (np.array(RUNTIME_HORIZONS), s)
# Baselines (see the reserved cell) are timed the same way once they exist.
for label, s in RUNTIMES.items():
    print(f"{label}: " + ", ".join(f"T={T}: {np.median(x) * 1e3:.1f} ms" for T, x in zip(RUNTIME_HORIZONS, s[1])))'''),
    md(r'''
## Figure 1
'''),
    code(r'''
names = list(SETTINGS)
fig, axes = plt.subplots(1, 3, figsize=(17, 4.6))
for ax, name in zip(axes[[0, 2]], names):
    jb.plots.plot_regret_curves(RESULTS[name], ax=ax, label="CR-Hvt-UCB", title=f"{name}: regret")
    if name in BASELINE_RESULTS:
        jb.plots.plot_regret_curves(BASELINE_RESULTS[name], ax=ax)
jb.plots.plot_runtime(RUNTIMES, ax=axes[1], title="(b) eps = 1: runtime of one run")
fig.tight_layout()
OUT.mkdir(parents=True, exist_ok=True)
jb.plots.save_figure(fig, OUT / "figure1.png")
plt.show()'''),
    md(r'''
## Summary: final regret and growth

Mean ± s.e. of the final regret over the reported seeds, and the log–log slope of the mean cumulative
regret over the second half of the rounds (≈ 1: linear; < 1: sublinear). The paper's claim for panel
(c) is that CR-Hvt-UCB stays sublinear under Pareto noise, with and without corruption.
'''),
    code(r'''
for name, res in RESULTS.items():
    _, mean, se = jb.analysis.final_regret_table(res)     # [C, beta_scale]
    slopes = jb.loglog_slope(res)
    print(name)
    for i, C in enumerate(res.coords["C"]):
        for j, b in enumerate(res.coords["beta_scale"]):
            kind = "theory" if b == 1.0 else "tuned"
            print(f"  C={C:5g}  beta_scale={b:<8g} ({kind:6})  final regret {mean[i, j]:8.1f} ± {se[i, j]:5.1f}"
                  f"   log-log slope {slopes[i, j]:.2f}")'''),
]


NOTEBOOKS.update({"quickstart.ipynb": QUICKSTART, "figure1.ipynb": FIGURE1})


def main(argv=None) -> int:
    for name, cells in NOTEBOOKS.items():
        print(f"wrote {write(name, cells)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
