"""Write quickstart.ipynb, figure1.ipynb and benchmark.ipynb (no outputs stored). Edit the cells here, then run
``python notebooks/make_notebooks.py``; tests/test_notebooks.py checks that the files match."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

# ---- shared cells -------------------------------------------------------------------------------

INSTALL = r'''# Install jaxbandit, from the first of: the checkout this notebook is in (editable), a jaxbandit-*.whl
# in the working directory (in Colab, upload it with the Files pane: it lands in /content), the package
# index (pip install jaxbandit). An installed jaxbandit is used as it is when there is neither a checkout
# nor a wheel.
import importlib, importlib.util, pathlib, re, subprocess, sys


def find_checkout(start=None):
    """The nearest directory at or above `start` whose pyproject.toml is the jaxbandit project's."""
    start = pathlib.Path.cwd() if start is None else pathlib.Path(start)
    for folder in (start, *start.parents):
        toml = folder / "pyproject.toml"
        if toml.is_file() and re.search(r'(?m)^name\s*=\s*"jaxbandit"\s*$', toml.read_text()):
            return folder.resolve()
    return None


def find_wheel(folder=None):
    """The newest jaxbandit wheel in `folder` (the working directory), or None."""
    folder = pathlib.Path.cwd() if folder is None else pathlib.Path(folder)
    wheels = sorted(folder.glob("jaxbandit-*.whl"), key=lambda w: w.stat().st_mtime)
    return wheels[-1].resolve() if wheels else None


def pip_install(*args):
    return subprocess.run([sys.executable, "-m", "pip", "install", "-q", *args]).returncode == 0


checkout, wheel = find_checkout(), find_wheel()
spec = importlib.util.find_spec("jaxbandit")
installed_at = pathlib.Path(spec.origin).resolve().parents[1] if spec and spec.origin else None
if checkout is not None:
    if installed_at != checkout:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "-e", str(checkout)])
    if str(checkout) not in sys.path:
        sys.path.insert(0, str(checkout))  # an editable install made now is seen only after a restart
    print(f"jaxbandit from the checkout {checkout}")
elif wheel is not None:
    if not pip_install(str(wheel)):
        raise RuntimeError(f"pip could not install {wheel} (its error is above)")
    importlib.invalidate_caches()
    print(f"jaxbandit installed from {wheel}")
    if "jaxbandit" in sys.modules:
        print("jaxbandit was imported before: restart the kernel to use the version just installed")
elif spec is not None:
    print(f"jaxbandit already installed at {installed_at}")
elif pip_install("jaxbandit"):
    importlib.invalidate_caches()
    print("jaxbandit installed from the package index")
else:
    raise RuntimeError(
        f"jaxbandit is not installed, this notebook is not in a checkout of it, no jaxbandit-*.whl is in "
        f"{pathlib.Path.cwd()}, and pip could not install it from the package index. Build a wheel in a "
        "checkout (python -m build --wheel, or pip wheel --no-deps . -w dist), put it in that folder (in "
        "Colab: the Files pane) and run this cell again; or open this notebook from a checkout."
    )'''

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
    nb = new_notebook(
        cells=cells,
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
            "colab": {"provenance": []},
            "accelerator": "GPU",
        },
    )
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
    md(r"""
# jaxbandit quickstart

Linear contextual bandits under adversarial corruption and heavy-tailed noise, in JAX. This notebook
runs **CR-Hvt-UCB** (Algorithm 1 of Tani & Futami) on the paper's environment — d = 10, K = 20 random
unit contexts, Student-t(3) noise, the flip adversary with budget C — first once, then as one compiled
sweep over C and seeds, and plots the result.

The first cell installs jaxbandit: from the checkout this notebook is in, else from a `jaxbandit-*.whl`
in the working directory (in Colab, upload it with the Files pane), else from the package index.
"""),
    code(INSTALL),
    code(
        SETUP_HEAD
        + r"""
HORIZON = env_int("JAXBANDIT_NOTEBOOK_HORIZON", 2000)   # T
SEEDS = env_int("JAXBANDIT_NOTEBOOK_SEEDS", 10)          # independent runs per setting
OUT = pathlib.Path(os.environ.get("JAXBANDIT_NOTEBOOK_OUT", "out/notebooks"))
print(f"T = {HORIZON}, {SEEDS} seeds, results in {OUT}")"""
    ),
    md(r"""
## 1. One run

An algorithm and an environment are NamedTuples of pure functions; `jb.simulate` runs T rounds under
`lax.scan` and is `jit`- and `vmap`-able. CR-Hvt-UCB here uses the theory constants and is told the
corruption budget C = 100.
"""),
    code(r"""
T, d, K = HORIZON, 10, 20
alg = jb.cr_hvt_ucb(T, d, eps=1.0, nu=3 ** 0.5, corruption=100.0)
env = jb.envs.linear(d, K, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(budget=100.0))

run = jax.jit(lambda key: jb.simulate(alg, env, key, horizon=T))
out = run(jax.random.key(0))
print(f"cumulative regret after {T} rounds: {float(out.regret.sum()):.1f}")
print(f"corruption spent: {float(jnp.abs(out.corruption).sum()):.1f} (budget 100)")"""),
    md(r"""
## 2. A sweep over the corruption budget C

`jb.sweep` runs every (grid point × seed) in one compiled, vmapped call. The factories receive the grid
values as traced scalars, so a new grid of the same size does not recompile. Two confidence scales:
the theory radius (`beta_scale = 1`, enormous: the algorithm keeps exploring) and `beta_scale = 1e-4`,
the demo's scale, which was chosen on seeds 1000–1007 — not the seeds shown here (`jb.tune` does such
a choice; `figure1.ipynb` shows the tuned constants of the paper's Figure 1 and where they come from).
"""),
    code(r"""
def make_alg(p):
    return jb.cr_hvt_ucb(T, d, eps=1.0, nu=3 ** 0.5, corruption=p["C"], beta_scale=p["beta_scale"])


def make_env(p):
    return jb.envs.linear(d, K, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(p["C"]))


grid = {"C": [0.0, 10.0, 30.0, 100.0, 300.0], "beta_scale": [1.0, 1e-4]}
start = time.perf_counter()
res = jb.sweep(make_alg, make_env, grid, horizon=T, seeds=SEEDS, record=("log", 60))
print(f"{res.final_regret.size} runs in {time.perf_counter() - start:.1f} s (compilation included)")
print(res.dims, res.cumulative_regret.shape)"""),
    md(r"""
## 3. Plots

Left: cumulative regret against t on log–log axes (mean ± one standard error over seeds), tuned scale.
Right: final regret against C — the robustness frontier — for both scales.
"""),
    code(r"""
# constrained layout keeps each legend (right of its axes) inside the figure and off the next panel
fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.2), layout="constrained")
jb.plots.plot_regret_curves(res.sel(beta_scale=1e-4), ax=left, loglog=True,
                            title="CR-Hvt-UCB, beta_scale = 1e-4")
jb.plots.plot_final_vs(res, "C", ax=right, logx=True, title="final regret against C")
plt.show()"""),
    md(r"""
The slope of log(mean cumulative regret) against log t over the second half of the rounds: about 1 for
linear regret, clearly below 1 for sublinear growth.
"""),
    code(r"""
slopes = jb.loglog_slope(res)                  # [C, beta_scale]
_, mean, se = jb.analysis.final_regret_table(res)
print(f"{'C':>6} {'beta_scale':>11} {'final regret':>16} {'log-log slope':>14}")
for i, C in enumerate(res.coords["C"]):
    for j, b in enumerate(res.coords["beta_scale"]):
        print(f"{C:6g} {b:11g} {mean[i, j]:9.1f} ± {se[i, j]:4.1f} {slopes[i, j]:14.2f}")"""),
    md(r"""
## 4. Save, load, redraw

A result is one `.npz` holding its arrays, axes and settings. Plotting never re-runs anything: from a
shell, `python -m jaxbandit plot FILE [--loglog] [--select AXIS=VALUE ...]` redraws any saved result.
"""),
    code(r"""
path = res.save(OUT / "quickstart.npz")
again = jb.SweepResult.load(path)
assert again.dims == res.dims and np.array_equal(again.cumulative_regret, res.cumulative_regret)
print(f"saved {path}; redraw with:  python -m jaxbandit plot {path} --loglog")"""),
]

# ---- figure 1 -----------------------------------------------------------------------------------

FIGURE1 = [
    md(r"""
# Figure 1 of Tani & Futami — CR-Hvt-UCB against GAdaOFUL

Section 6 of *Robust and Computationally Efficient Linear Contextual Bandits under Adversarial
Corruption and Heavy-Tailed Noise*: d = 10, θ* uniform on the unit sphere, K = 20 random unit contexts
per round (L = S = 1), the θ-flipping adversary with an exact budget C ∈ {0, 100}, T = 5000, 10 runs.

- **(a)** regret, ε = 1: Student-t(3) noise, ν = √3;
- **(b)** runtime, ε = 1: seconds one run takes to reach round t, after compilation;
- **(c)** regret, ε = 0.4: Pareto(shape 1.5, x_min 1) noise, centred (it has mean 3), with the paper's
  ν = 15^{1/1.4} (the uncentred (1+ε)-moment bound).

CR-Hvt-UCB (Algorithm 1) runs against GAdaOFUL (Yu et al.), which refits a pseudo-Huber regression over
the whole history every round. Every curve is shown twice: with each method's **theory constants**, and
with constants **tuned on seeds 1000–1009**, disjoint from the reported seeds 0..n−1 (committed in
`jaxbandit/experiments/data/figure1_tuned.json`). `jaxbandit.experiments.figure1.run` does all of it — the same function as
`python -m jaxbandit figure1` — and returns the curves, the runtimes and a summary.
"""),
    code(INSTALL),
    code(
        SETUP_HEAD
        + r"""
from jaxbandit import figure1

HORIZON = env_int("JAXBANDIT_NOTEBOOK_HORIZON", 5000)    # T = 5000 in the paper
SEEDS = env_int("JAXBANDIT_NOTEBOOK_SEEDS", 10)           # 10 runs in the paper
OUT = pathlib.Path(os.environ.get("JAXBANDIT_NOTEBOOK_OUT", "out/notebooks")) / "figure1"
BASELINES = os.environ.get("JAXBANDIT_NOTEBOOK_BASELINES", "0") == "1"   # every other registered algorithm
print("baselines:", ", ".join(jb.registry.algorithm(m).label for m in figure1.baseline_methods()))
print(f"T = {HORIZON}, reported seeds 0..{SEEDS - 1}, baselines: {BASELINES}, results in {OUT}")"""
    ),
    md(r"""
## The tuned constants and where they come from

`python -m jaxbandit tune-figure1 --out FILE` (or `figure1.tune(..., out=FILE)`) searches each method's free
constants by the benchmark's tuning protocol on the tuning seeds — the radius as a multiple of its theory
value over the same grid for every method, then its second constant, edges extended — averaging the
final regret over C ∈ {0, 100}, separately for each noise setting, and writes the choice with every
setting evaluated, the seeds, horizon, date and package versions. Tuning GAdaOFUL at T = 5000 takes a
while on a CPU, so this notebook reads the committed file; the commented line re-tunes (into a file of
your choice).
"""),
    code(r"""
tuned = figure1.load_tuned()
print(f"{tuned['_path']}\ncreated {tuned['created']} by: {tuned['command']}")
for method, entry in tuned["methods"].items():
    print(f"{entry['label']}: T = {entry['horizon']}, seeds {entry['seeds'][0]}..{entry['seeds'][-1]}")
    for noise, choice in entry["noise"].items():
        print(f"    {noise:10} {choice['best']}   mean final regret {choice['mean_final_regret']:.1f}"
              f"   ({choice['budget']} settings)")
# figure1.tune(HORIZON, 10, out=OUT / "my_tuned.json")   # re-tune; then run(..., tuned_file=OUT / "my_tuned.json")"""),
    md(r"""
## Run the figure

One compiled sweep per method (noise setting, C and constants are traced grid axes), then panel (b):
single runs timed chunk by chunk after compilation. It prints the summary: final regret (mean ± s.e.)
and the log–log slope of the mean cumulative regret over the second half of the rounds (≈ 1: linear;
< 1: sublinear).
"""),
    code(r"""
result = figure1.run(HORIZON, SEEDS, OUT, constants="both", baselines=BASELINES)"""),
    md(r"""
## Figure 1

Top row: theory constants; bottom row: tuned constants. Solid lines C = 0, dashed C = 100; bands are ± one
standard error over the seeds.
"""),
    code(r"""
from IPython.display import Image, display

display(Image(filename=str(result.paths["png"])))"""),
    md(r"""
## The paper's claims, in numbers

- (a) CR-Hvt-UCB's regret is comparable to GAdaOFUL's at ε = 1, with and without corruption;
- (c) under Pareto noise GAdaOFUL's regret grows nearly linearly while CR-Hvt-UCB's is sublinear;
- (b) CR-Hvt-UCB is several orders of magnitude faster.
"""),
    code(r"""
rows = {(r["kind"], r["constants"], r["noise"], r["method"], r["C"]): r for r in result.summary}
for constants in result.settings["constants"]:
    print(f"--- {constants} constants")
    for noise in figure1.NOISES:
        for C in figure1.C_VALUES:
            cr, ga = (rows[("regret", constants, noise, m, C)] for m in figure1.MAIN_METHODS)
            print(f"{noise:10} C={C:<4g} final regret CR-Hvt-UCB {cr['final_regret_mean']:7.1f} "
                  f"(slope {cr['loglog_slope_second_half']:.2f}), GAdaOFUL {ga['final_regret_mean']:7.1f} "
                  f"(slope {ga['loglog_slope_second_half']:.2f}), ratio {ga['final_regret_mean'] / cr['final_regret_mean']:.2f}")
    for C in figure1.C_VALUES:
        cr, ga = (rows[("runtime", constants, "student_t", m, C)] for m in figure1.MAIN_METHODS)
        print(f"runtime C={C:<4g} CR-Hvt-UCB {cr['seconds_median']:.3g} s, GAdaOFUL {ga['seconds_median']:.3g} s "
              f"per run of T={cr['rounds']}: GAdaOFUL/CR = {ga['seconds_median'] / cr['seconds_median']:.1f}x")"""),
    md(r"""
## The saved results

`results.npz` is a `jb.SweepResult`: cumulative regret over (constants, noise, algorithm, C, seed, round),
its `meta` holding the settings and the runtimes of panel (b) (`results.nc` is the same for xarray, when it
is installed); `figure1.json` holds the settings, the constants used, the tuned file's provenance, the
package versions, the device and the wall times. Plotting never re-runs anything: here, log–log regret from
the file.
"""),
    code(r"""
saved = jb.SweepResult.load(result.paths["npz"])
print(f"dims {saved.dims}; versions {saved.meta['versions']}")
# a colour per algorithm, a panel per noise setting and C
fig = jb.plots.plot_panels(saved.sel(constants="tuned"), loglog=True, title="tuned constants (log–log)")
plt.show()"""),
]

# ---- benchmark ----------------------------------------------------------------------------------

BENCHMARK = [
    md(r"""
# The robustness benchmark on a GPU

Every registered algorithm against every benchmark adversary (none, flip, flip_rounds, targeted) at a
grid of corruption levels C, under Gaussian, Student-t, Pareto and real heavy-tailed noise (S&P 500 daily
returns) at a grid of moment orders ε — with each algorithm's **theory constants** and with constants
**tuned on seeds 1000–1009 over all scenarios together** (one setting per algorithm, found by the same
search for every algorithm: see `jaxbandit.experiments.bench.protocol`). This is
`python -m jaxbandit bench --quick` as a notebook, run on a Colab GPU (Runtime > Change runtime type >
GPU) or a CPU; almost all of its time is compilation. Drop `quick=True` for the full benchmark (T = 5000,
20 seeds, 13 attacks × 8 noise settings).
"""),
    code(INSTALL),
    code(
        SETUP_HEAD
        + r"""
from jaxbandit.experiments import bench

HORIZON = env_int("JAXBANDIT_NOTEBOOK_HORIZON", 400)      # the quick benchmark's T
SEEDS = env_int("JAXBANDIT_NOTEBOOK_SEEDS", 5)            # reported seeds 0..SEEDS-1
OUT = pathlib.Path(os.environ.get("JAXBANDIT_NOTEBOOK_OUT", "out/notebooks")) / "benchmark"
ALGORITHMS = os.environ.get("JAXBANDIT_NOTEBOOK_ALGORITHMS")   # e.g. "cr_hvt_ucb,oful"; default: all
NOISES = os.environ.get("JAXBANDIT_NOTEBOOK_NOISES")            # e.g. "gaussian,pareto"; default: all

settings = bench.make_settings(
    quick=True,
    horizon=HORIZON,
    seeds=SEEDS,
    algorithms=None if ALGORITHMS is None else ALGORITHMS.split(","),
    noises=None if NOISES is None else NOISES.split(","),
)
print(f"T = {settings.horizon}, seeds {settings.seeds}, tuning seeds {settings.tune_seeds}")
print("algorithms:", ", ".join(jb.registry.algorithm(a).label for a in settings.algorithms))
print("noise settings:", [n.name for n in bench.noise_settings(settings)])
print("attacks:", [a.name for a in bench.attacks(settings)])"""
    ),
    md(r"""
## Run it

Per algorithm, the tuning search runs batches of settings on the tuning seeds (every batch one compiled
program: the constants, the noise settings and the attacks are traced grid axes), then one sweep of the
theory and the tuned constants on the reported seeds; each seed's θ*, contexts and noise are drawn once
per noise setting and shared by every attack and constant. Each algorithm's result is saved as soon as it
finishes; if the runtime disconnects, run the cell again with `resume=True` and only what is missing
runs.
"""),
    code(r"""
if OUT.exists() and not (OUT / "bench.json").exists():
    shutil.rmtree(OUT)  # an empty or foreign folder
start = time.perf_counter()
result = bench.run_bench(settings, OUT, resume=(OUT / "bench.json").exists())
print(f"{time.perf_counter() - start:.0f} s; dims {result.dims}, cumulative regret {result.cumulative_regret.shape}")"""),
    md(r"""
## The report

Ranking by mean rank over the scenarios (the headline) and by final regret averaged over every scenario
(mean ± s.e. over seeds: each seed's runs share θ*, contexts and noise across algorithms, so differences
are paired), which scenarios and algorithms gave identical runs, the tuned constants and their search,
the robustness frontier (final regret against C for each adversary), regret against ε and the log–log
slopes of regret in t beside the worst-case bound's 1/(1+ε). Every number is computed from
`per_seed.npz` and `bench.json`.
"""),
    code(r"""
from IPython.display import Image, Markdown, display

display(Markdown((OUT / "report.md").read_text()))
for name in ("frontier.png", "epsilon.png"):
    if (OUT / name).exists():
        display(Image(filename=str(OUT / name)))"""),
    md(r"""
## The results as labelled arrays

`results.npz` loads back as a `jb.SweepResult`; with xarray installed (`pip install "jaxbandit[xarray]"`,
preinstalled on Colab) the benchmark is an `xarray.Dataset` whose attack axis carries the adversary and C
and whose noise axis carries the family, ε and ν — select, group and plot by label.
"""),
    code(r"""
import json

saved = jb.SweepResult.load(OUT / "results.npz")
info = json.loads((OUT / "bench.json").read_text())
print("tuned constants:", info["tuned"])
try:
    ds = bench.to_dataset(saved, info)
except ImportError as err:
    print(err)
else:
    final = ds["cumulative_regret"].isel(round=-1).sel(constants="tuned")
    by_adversary = final.mean(["seed", "noise"]).groupby("adversary").mean()  # [algorithm, adversary]
    print(by_adversary.to_pandas().round(1))"""),
]


NOTEBOOKS.update({"quickstart.ipynb": QUICKSTART, "figure1.ipynb": FIGURE1, "benchmark.ipynb": BENCHMARK})


def main(argv=None) -> int:
    for name, cells in NOTEBOOKS.items():
        print(f"wrote {write(name, cells)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
