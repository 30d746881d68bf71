"""Command line: ``jaxbandit`` (the console script) or ``python -m jaxbandit``, the default demo and
subcommands.

- ``jaxbandit [demo] [--horizon T] [--seeds n] [--out DIR]``: the default experiment;
- ``jaxbandit plot FILE [--out PNG] [--loglog] [--select AXIS=VALUE ...]``: redraw a saved result
  (``.npz``, ``.nc`` or ``.zarr``, or an experiment's summary ``.json``), nothing re-run;
- ``jaxbandit figure1 [--horizon T] [--seeds N] [--out DIR] [--constants theory|tuned|both]
  [--algorithms A B ... | --baselines]``: the paper's Figure 1 (``jaxbandit.experiments.figure1.run``);
- ``jaxbandit tune-figure1 --out FILE [--horizon T] [--seeds N] [--algorithms A B ... | --baselines]``:
  tune the constants ``figure1 --constants tuned --tuned-file FILE`` reads
  (``jaxbandit.experiments.figure1.tune``);
- ``jaxbandit bench [--quick] [--out DIR] [--algorithms ...] [--adversaries ...] [--noises ...]
  [--stream NAME] [--device gpu] [--resume]``: the robustness benchmark (``jaxbandit.experiments.bench``);
- ``jaxbandit scaling [--quick] [--out DIR] [--algorithms A B ...] [--seeds N] [--tune-horizons T ...]
  [--theory-only]``: exponents of regret in T, C and d against the theory, with constants tuned per ε at
  each tuning horizon (``jaxbandit.experiments.scaling.run``).

Options follow their command (``jaxbandit bench --horizon 300``): one written before a command is refused,
since the command's own defaults would replace it. Every list option takes its values space- or
comma-separated (``--algorithms oful cw_oful`` or ``--algorithms oful,cw_oful``). The subcommands that take
names (``figure1``, ``tune-figure1``, ``bench``, ``scaling``) take ``--plugin MODULE`` (repeatable): a module
name (the current directory is searched first) or a ``.py`` file, imported before the arguments are read, so
that the algorithms, adversaries, noise families and streams it registers are valid names; the
``jaxbandit.plugins`` entry points of installed distributions are loaded at start (``jb.plugins``): one that
fails to load is skipped with a one-line ``warning: ...`` naming it, and every command that does not need it
runs (``JAXBANDIT_NO_PLUGINS=1`` loads none). ``bench`` checks a plugin's noise families, adversaries and
stream with ``jb.testing`` before it runs (:func:`vet_plugin_pieces`). Progress bars are shown when stderr is
a terminal, unless ``--progress``/``--no-progress`` says otherwise.

Every ``ValueError`` from bad input (a ``--plugin`` that fails to import too), and every argument error,
becomes a one-line ``error: ...`` message and exit status 2; Ctrl-C (SIGINT), a
one-line ``interrupted: ...`` saying how to go on, and exit status 130.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from . import __version__
from .core import plugins

#: The program name in usage lines and recorded commands when run as ``python -m jaxbandit``.
MODULE_PROG = "python -m jaxbandit"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is invalid: it must be an integer >= 1")
    return value


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line, ``error: ...``, with exit status 2 (argparse's
    own print the usage first), and whose help shows defaults. Subcommand parsers are of this class too."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        sys.stderr.write(f"error: {' '.join(str(message).split())}\n")
        sys.exit(2)


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, except where there is none to show (None: the help says what is
    used; False; an empty list)."""

    def _get_help_string(self, action):
        default = action.default
        if default is None or default is False or default == [] or default is argparse.SUPPRESS:
            return action.help
        return super()._get_help_string(action)


def _values(kind=str, what="names"):
    """An argparse action for a list option: values space- or comma-separated, each converted by
    ``kind``; the option's value is a tuple."""

    class Values(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            texts = [v.strip() for value in values for v in value.split(",") if v.strip()]
            if not texts:
                parser.error(f"argument {option_string}: give one or more {what}, space- or comma-separated")
            try:
                setattr(namespace, self.dest, tuple(kind(v) for v in texts))
            except ValueError:
                parser.error(f"argument {option_string}: {' '.join(values)!r} is not a list of {what}")

    return Values


class _Selection(argparse.Action):
    """``--select AXIS=VALUE ...`` (repeatable): the values gathered; one without ``=`` after them is the
    FILE that followed (``plot --select attack=none per_seed.npz``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        pairs = [v for v in values if "=" in v]
        others = [v for v in values if "=" not in v]
        if len(others) > 1 or (others and values[-1] != others[0]):
            parser.error(f"argument {option_string}: give AXIS=VALUE pairs, not {others[0]!r}")
        if others:
            if getattr(namespace, "plot_file", None) is not None:
                parser.error(f"argument {option_string}: give AXIS=VALUE pairs, not {others[0]!r}")
            namespace.plot_file = Path(others[0])
        setattr(namespace, self.dest, [*getattr(namespace, self.dest, []), *pairs])


def _add_list(p, *flags, kind=str, what="names", metavar="NAME", help=""):
    p.add_argument(*flags, nargs="+", action=_values(kind, what), default=None, metavar=metavar, help=help)
    p.epilog = (
        "List options take their values space- or comma-separated (--algorithms oful,cw_oful); an algorithm "
        "may be named as the tables print it (CR-Hvt-UCB), in any case."
    )


def _add_plugin(p) -> None:
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE (a module name, the current directory searched first, or a .py file) before "
        "reading the arguments, so that what it registers is valid here; repeatable",
    )


def _add_progress(p) -> None:
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show progress bars (default: when stderr is a terminal)",
    )


def _horizon_figure1(text: str) -> int:
    value = _positive_int(text)
    if value < 4:
        raise argparse.ArgumentTypeError(f"{value} is invalid: the horizon must be an integer >= 4")
    return value


def build_parser(prog: str = "jaxbandit") -> argparse.ArgumentParser:
    """The parser of every subcommand; the registries' names are those registered when it is built."""
    parser = _Parser(prog=prog, description="jaxbandit: robust linear contextual bandits in JAX.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command")
    demo = sub.add_parser("demo", help="the default experiment (run when no command is given)")
    _add_demo_args(demo)
    _add_demo_args(parser)
    plot = sub.add_parser(
        "plot",
        help="redraw a saved sweep result (.npz, .nc or .zarr) without re-running it",
        description="Redraw a saved SweepResult: mean ± s.e. cumulative regret against t, one line per "
        "algorithm and one panel per combination of the other grid axes (with more than two of them, "
        "the shortest is drawn as line styles); a result of final regret only (scaling, tuning) is drawn "
        "against its numeric axis with the most values. Figure 1's summary (figure1.json) draws Figure 1 "
        "again from the per-seed result written beside it.",
    )
    plot.add_argument(
        "file",
        type=Path,
        nargs="?",  # also read from --select's values: plot --select attack=none FILE
        metavar="FILE",
        help="a result written by SweepResult.save (.npz, .nc or .zarr) or jb.sweep(out=...), or an "
        "experiment's summary .json (figure1.json)",
    )
    plot.add_argument(
        "--out",
        dest="plot_out",
        type=Path,
        default=None,
        metavar="PNG",
        help="where to write the figure (default: FILE with .png, or -loglog.png, beside it)",
    )
    plot.add_argument("--loglog", action="store_true", help="log-log axes")
    plot.add_argument(
        "--select",
        nargs="+",
        action=_Selection,
        default=[],
        metavar="AXIS=VALUE",
        help="draw only these values of an axis (repeatable): a coordinate as printed "
        "(noise=pareto(eps=0.5), attack='flip C=10', C=100, algorithm=CR-Hvt-UCB), or a family's name for "
        "all its values "
        "(noise=pareto); a result with more panels than fit one figure (a benchmark's noise x attack) "
        "needs one, e.g. --select attack=none",
    )

    _add_figure1_parser(sub)
    _add_tune_parser(sub)
    _add_bench_parser(sub)
    _add_scaling_parser(sub)
    return parser


def _add_bench_parser(sub) -> None:
    from jaxbandit import registry
    from jaxbandit.experiments.bench.settings import FULL, QUICK

    adversaries = ", ".join(n for n, spec in registry.adversaries().items() if spec.in_benchmark)
    noises = ", ".join(registry.noises())
    bench = sub.add_parser(
        "bench",
        help="the robustness benchmark: every algorithm x adversary x noise x C x eps x seeds",
        description=f"Every registered algorithm against every benchmark adversary ({adversaries}) at "
        f"a grid of C, and every registered noise family ({noises}) at a grid of eps, on one registered "
        "stream, with theory constants and with constants tuned on disjoint seeds over all scenarios "
        "together. Writes results (.npz, and .nc with xarray), report.md and figures to --out.",
    )
    bench.add_argument(
        "--quick",
        action="store_true",
        help=f"the small configuration (minutes on a CPU): T = {QUICK['horizon']}, {QUICK['seeds']} seeds, "
        f"{QUICK['tune_seeds']} tuning seeds, eps in {list(QUICK['eps_grid'])}, C in {list(QUICK['C_grid'])}",
    )
    bench.add_argument("--out", type=Path, default=Path("out/bench"), help="output directory")
    _add_list(bench, "--algorithms", help="registered algorithms (default: every one)")
    _add_list(bench, "--adversaries", help="registered adversaries (default: every one)")
    _add_list(bench, "--noises", help="registered noise families (default: every one)")
    _add_list(
        bench,
        "--eps",
        kind=float,
        what="numbers",
        metavar="EPS",
        help="the moment orders of the heavy-tailed families (default: "
        f"{list(QUICK['eps_grid'])} with --quick, else {list(FULL['eps_grid'])})",
    )
    _add_list(
        bench,
        "--budgets",
        kind=float,
        what="numbers",
        metavar="C",
        help="the corruption levels C > 0 of every adversary (default: "
        f"{list(QUICK['C_grid'])} with --quick, else {list(FULL['C_grid'])}; C = 0 is the none scenario)",
    )
    bench.add_argument(
        "--stream",
        default="linear",
        metavar="NAME",
        help=f"the registered stream every scenario draws θ*, the contexts and η_t from (one of: "
        f"{', '.join(registry.streams())})",
    )
    bench.add_argument(
        "--horizon",
        type=_positive_int,
        default=None,
        help=f"rounds T (default: {QUICK['horizon']} with --quick, else {FULL['horizon']})",
    )
    bench.add_argument(
        "--seeds",
        type=_positive_int,
        default=None,
        help=f"reported seeds 0..N-1 (default: {QUICK['seeds']} with --quick, else {FULL['seeds']})",
    )
    bench.add_argument(
        "--tune-seeds",
        type=_positive_int,
        default=None,
        help=f"tuning seeds 1000.. (default: {QUICK['tune_seeds']} with --quick, else {FULL['tune_seeds']})",
    )
    bench.add_argument(
        "--device", default=None, help="a JAX backend to run on: cpu, gpu, tpu (default: JAX's)"
    )
    bench.add_argument(
        "--resume",
        action="store_true",
        help="continue the benchmark in --out (naming more --algorithms adds them to it)",
    )
    _add_progress(bench)
    _add_plugin(bench)


def _method_labels(names) -> str:
    from jaxbandit.agents import registry

    return ", ".join(registry.algorithm(n).label for n in names)


def _add_figure1_parser(sub) -> None:
    from jaxbandit.experiments.figure1 import MAIN_METHODS, baseline_methods

    fig = sub.add_parser(
        "figure1",
        help="reproduce Figure 1 of the paper (Section 6)",
        description=f"Figure 1 of Tani & Futami: {_method_labels(MAIN_METHODS)} (and with "
        f"--baselines {_method_labels(baseline_methods())}): regret under "
        "Student-t(3) and Pareto noise with C in {0, 100}, and runtime.",
    )
    fig.add_argument("--horizon", type=_horizon_figure1, default=5000, help="rounds T >= 4")
    fig.add_argument("--seeds", type=_positive_int, default=10, help="reported runs per curve, seeds 0..N-1")
    fig.add_argument("--out", type=Path, default=Path("out/figure1"), help="output directory")
    fig.add_argument(
        "--constants",
        choices=("theory", "tuned", "both"),
        default="both",
        help="theory constants, constants tuned on seeds 1000+ (the packaged "
        "jaxbandit/experiments/data/figure1_tuned.json), or both",
    )
    _add_list(
        fig,
        "--algorithms",
        help=f"registered algorithms to run (default: {', '.join(MAIN_METHODS)}, and every other one with "
        "--baselines)",
    )
    fig.add_argument(
        "--baselines",
        action="store_true",
        help=f"also run {_method_labels(baseline_methods())} (every registered algorithm)",
    )
    fig.add_argument(
        "--tuned-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="read tuned constants from FILE instead of the packaged file",
    )
    fig.add_argument(
        "--repeats", type=_positive_int, default=3, help="timed runs per curve of the runtime panel"
    )
    _add_progress(fig)
    _add_plugin(fig)


def _add_tune_parser(sub) -> None:
    from jaxbandit.experiments.figure1 import MAIN_METHODS

    tune = sub.add_parser(
        "tune-figure1",
        help="tune the constants figure1 --constants tuned reads",
        description="Grid-search each method's free constants on seeds 1000.. "
        "(disjoint from the reported seeds), averaged over C in {0, 100}, "
        "per noise setting, and write them with their provenance to FILE.",
    )
    tune.add_argument(
        "--out",
        dest="tuned_out",
        type=Path,
        required=True,
        metavar="FILE",
        help="the JSON file to write (other methods' entries in an existing file are kept); "
        "pass it to figure1 --tuned-file",
    )
    tune.add_argument("--horizon", type=_horizon_figure1, default=5000, help="rounds T")
    tune.add_argument("--seeds", type=_positive_int, default=10, help="tuning seeds 1000..1000+N-1")
    _add_list(
        tune,
        "--algorithms",
        "--methods",
        help=f"registered algorithms to tune (default: {', '.join(MAIN_METHODS)}, and every other one with "
        "--baselines)",
    )
    tune.add_argument("--baselines", action="store_true", help="also tune every other registered algorithm")
    _add_progress(tune)
    _add_plugin(tune)


def _add_scaling_parser(sub) -> None:
    sc = sub.add_parser(
        "scaling",
        help="scaling laws: exponents of regret in T, C and d against the theory",
        description="Final regret of every registered algorithm (theory constants, and constants tuned "
        "for the study per eps at each --tune-horizons T) against T for several eps (fit: exponent vs "
        "1/(1+eps)), against the corruption budget C "
        "(vs linear) and against d (vs linear), with bootstrap confidence intervals over seeds. "
        "The default grids are meant for a GPU; --quick is a few minutes on a CPU.",
    )
    sc.add_argument("--quick", action="store_true", help="small grids and short horizons (a CPU run)")
    sc.add_argument("--out", type=Path, default=Path("out/scaling"), help="output directory")
    _add_list(sc, "--algorithms", help="registered algorithms (default: every one)")
    sc.add_argument(
        "--seeds",
        type=_positive_int,
        default=None,
        help="reported seeds 0..N-1, N >= 2 (default: 6 with --quick, else 100)",
    )
    _add_list(sc, "--horizons", kind=int, what="integers", metavar="T", help="the T grid")
    _add_list(sc, "--eps", kind=float, what="numbers", metavar="EPS", help="the eps grid")
    _add_list(sc, "--budgets", kind=float, what="numbers", metavar="C", help="the C grid (must hold 0)")
    _add_list(sc, "--dims", kind=int, what="integers", metavar="D", help="the d grid")
    sc.add_argument(
        "--linear-cost-max-horizon",
        type=_positive_int,
        default=None,
        metavar="T",
        help="O(t) algorithms run only horizons <= T (default: 1000 with --quick, else 4000)",
    )
    _add_list(
        sc,
        "--tune-horizons",
        kind=int,
        what="integers",
        metavar="T",
        help="tune each algorithm's constants per eps at these horizons, each set a constants variant "
        "tuned@T (default: 400,1600 with --quick, else 2000,16000)",
    )
    sc.add_argument("--theory-only", action="store_true", help="run the theory constants only (no tuning)")
    sc.add_argument(
        "--tuned-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="the tuning.json of an earlier scaling run to start from (its entries are reused; default: "
        "--out's own, when it holds one)",
    )
    sc.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        help="sweeps compiled and run at once (default: the CPU count, at most 4 on a CPU, 8 on a GPU)",
    )
    _add_progress(sc)
    _add_plugin(sc)


def _add_demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--horizon", type=_positive_int, default=2000, help="rounds T")
    p.add_argument("--seeds", type=_positive_int, default=5, help="independent runs")
    p.add_argument("--out", type=Path, default=Path("out/demo"), help="output directory")
    _add_progress(p)


#: The names an experiment gives its per-seed result beside its summary ``.json`` (``figure1.json``
#: beside ``results.npz``, ``bench.json`` beside ``per_seed.npz``; the docs' copies ``figure1_results.npz``).
_BESIDE = ("{stem}_results.npz", "results.npz", "per_seed.npz")


def summarized_result(file: Path) -> Path | None:
    """The per-seed result an experiment's summary ``file`` (``figure1.json``, ``bench.json``: settings
    and final numbers, no curves) was written with: the ``.npz`` beside it that its ``files`` lists or
    that an experiment names so, whose meta has the same ``created``/``started`` time. None when
    ``file`` is not such a summary (an ``.npz``'s ``.json`` of earlier versions holds ``dims``);
    ``ValueError`` naming FILE when it is one but its result is not beside it."""
    import json

    from jaxbandit.report.results import SweepResult

    file = Path(file)
    if file.suffix.lower() != ".json" or not file.is_file():
        return None
    try:
        summary = json.loads(file.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(summary, dict) or "dims" in summary:
        return None
    stamps = {k: summary[k] for k in ("created", "started") if k in summary}
    listed = summary.get("files", {}).get("npz") if isinstance(summary.get("files"), dict) else None
    names = ([Path(listed).name] if listed else []) + [n.format(stem=file.stem) for n in _BESIDE]
    for name in dict.fromkeys(names):
        candidate = file.with_name(name)
        if not candidate.is_file():
            continue
        try:
            meta = SweepResult.load(candidate).meta
        except Exception:  # another kind of file under that name: not this summary's result
            continue
        if stamps and all(str(meta.get(k)) == str(v) for k, v in stamps.items()):
            return candidate
    what = "Figure 1's summary" if "figure" in summary else "an experiment's summary"
    raise ValueError(
        f"FILE={str(file)!r} is {what} (settings and final numbers, no curves), not a result: give the "
        f"per-seed result written with it ({' or '.join(dict.fromkeys(names))}, a .npz)"
    )


def load_result(file: Path):
    """Read a saved :class:`~jaxbandit.SweepResult` (``.npz``, ``.nc`` or ``.zarr``); any failure is a
    ``ValueError`` naming FILE."""
    import zipfile

    from jaxbandit.persist.atomic import error_reason
    from jaxbandit.persist.formats import result_format
    from jaxbandit.report.analysis import check_result
    from jaxbandit.report.results import MissingSidecar, SweepResult

    file = Path(file)
    fmt = result_format(file)
    path = file.with_suffix(".npz") if fmt == ".npz" else file
    exists = path.is_dir() if fmt == ".zarr" else path.is_file()
    if not exists:
        also = f" (looked for {path})" if path != file else ""
        raise ValueError(
            f"FILE={str(file)!r} does not exist{also}: give a result written by "
            "SweepResult.save (a .npz, a .nc file or a .zarr store)"
        )
    if fmt == ".npz" and not zipfile.is_zipfile(path):
        raise ValueError(f"FILE={str(file)!r} is not a jaxbandit result: {path} is not a .npz archive")
    try:
        result = SweepResult.load(path)
    except MissingSidecar as err:  # says itself what to give, after the path (named here as FILE)
        said = str(err).removeprefix(repr(str(path)))
        raise ValueError(f"FILE={str(file)!r}{said}") from None
    except ImportError as err:  # xarray, zarr or h5netcdf missing: the message names the extra
        raise ValueError(f"FILE={str(file)!r} cannot be read: {err}") from None
    except Exception as err:  # numpy, zipfile, json, h5py and zarr each raise their own kinds
        raise ValueError(f"FILE={str(file)!r} is not a jaxbandit result ({error_reason(err)})") from None
    try:
        return check_result(result, name="FILE")
    except ValueError as err:
        raise ValueError(f"FILE={str(file)!r} is not a jaxbandit sweep result: {err}") from None


def select(result, texts):
    """``result`` at the values ``AXIS=VALUE`` of ``texts`` name (``plot --select``), each axis keeping
    the values selected (one, or several: a family's name matches all its values, ``noise=pareto``). A
    string coordinate matches as printed, ignoring case, spaces and ``_``, with ``eps`` for ``ε``, or by
    the name before its ``(``/space; a number matches a numeric coordinate; an algorithm matches its
    registered name or the label the tables print. ``ValueError`` naming the text otherwise."""
    import numpy as np

    from jaxbandit.agents import registry
    from jaxbandit.report.results import SweepResult

    def norm(text) -> str:
        return "".join(str(text).lower().replace("ε", "eps").split()).replace("_", "")

    chosen: dict[str, list[int]] = {}
    for text in texts:
        axis, sep, value = str(text).partition("=")
        axis, value = axis.strip(), value.strip()
        grid = [d for d in result.dims if d not in ("seed", "round")]
        if not sep or not value or axis not in grid:
            raise ValueError(
                f"--select {text!r} is invalid: give AXIS=VALUE with AXIS one of the result's axes "
                f"{tuple(grid)}"
            )
        values = np.asarray(result.coords[axis])
        if values.dtype.kind in "USO":
            shown = [str(c) for c in values]
            wanted = norm(value)
            if axis == "algorithm":
                labels = {norm(registry.algorithm(n).label): n for n in registry.names()}
                wanted = norm(labels.get(wanted, value))
            hits = [i for i, c in enumerate(shown) if norm(c) == wanted]
            hits = hits or [i for i, c in enumerate(shown) if norm(c.replace("(", " ").split()[0]) == wanted]
        else:
            try:
                number = float(value)
            except ValueError:
                number = float("nan")
            shown = [f"{float(c):g}" for c in values]
            hits = [int(i) for i in np.flatnonzero(np.isclose(values.astype(float), number, rtol=1e-9))]
        if not hits:
            raise ValueError(f"--select {text!r} matches none of the values of {axis}: {', '.join(shown)}")
        chosen.setdefault(axis, [])
        chosen[axis] += [i for i in hits if i not in chosen[axis]]
    data = dict(result.data)
    coords = dict(result.coords)
    for axis, hits in chosen.items():  # an axis keeps its selected values, so that titles can name them
        ax = result.dims.index(axis)
        data = {k: np.take(np.asarray(v), hits, axis=ax) for k, v in data.items()}
        coords[axis] = np.asarray(coords[axis])[hits]
    return SweepResult(result.dims, coords, data, dict(result.meta))


def run_plot(
    file: Path, out: Path | None = None, loglog: bool = False, selection: list[str] | tuple = ()
) -> Path:
    """Redraw a saved result (never re-runs anything), at the values ``selection`` names
    (:func:`select`); returns the PNG written. FILE may be an experiment's summary ``.json``: the
    per-seed result written with it is drawn (:func:`summarized_result`), for ``figure1.json`` as Figure 1
    itself (its three panels, runtimes included) unless ``selection`` or ``loglog`` asks for curves."""
    import numpy as np

    from jaxbandit.report.plots import facets, plot_panels, pyplot, save_figure

    file = Path(file)
    beside = summarized_result(file)
    if beside is not None:
        print(f"{file} is a summary without curves: drawing {beside}, the per-seed result written with it")
    result = load_result(beside or file)
    file = beside or file  # the figure is named after the result drawn (figure1.png is Figure 1's own)
    if selection:
        result = select(result, selection)
    if out is None:
        out = file.with_name(file.stem + ("-loglog" if loglog else "") + ".png")
    elif out.is_dir():
        out = out / (file.stem + ("-loglog" if loglog else "") + ".png")
    elif out.suffix.lower() != ".png":
        raise ValueError(f"--out={str(out)!r} is invalid: it must end in .png or be a directory")
    horizon = result.meta.get("horizon", int(result.coords["round"][-1]))
    seeds = len(result.coords["seed"])
    if beside is not None and not selection and not loglog:
        from jaxbandit.experiments.figure1 import drawing

        if drawing.is_figure1_result(result):  # Figure 1's summary: Figure 1 itself, with its runtimes
            drawing.redraw(result, out)
            print(f"wrote {out}")
            return out
    title = f"{file.name}: T={horizon}, mean ± s.e. over {seeds} seed(s)"
    try:
        fig = plot_panels(result, loglog=loglog, title=title)
    except ValueError as err:
        if "max_panels" not in str(err):
            raise
        sizes = dict(zip(result.dims, result.cumulative_regret.shape))
        panels = facets(result)[1]
        longest = max(panels, key=lambda d: sizes[d])
        first = np.asarray(result.coords[longest])[0]
        example = f"{float(first):g}" if first.dtype.kind in "iuf" else repr(str(first))
        raise ValueError(
            f"FILE={str(file)!r} has {' × '.join(f'{sizes[d]} {d}' for d in panels)} panels, too many to "
            f"read in one figure: draw some with --select, e.g. --select {longest}={example}"
        ) from None
    save_figure(fig, out)
    pyplot().close(fig)
    print(f"wrote {out}")
    return out


def vet_plugin_pieces(settings) -> None:
    """Check the plugins' adversaries, noise families and stream of a benchmark before it runs
    (``jb.testing``; the library's own are checked by its tests): each noise family at every ε of the
    noise axis (``check_noise``), each adversary at the largest C with the paper's stream, its Σ|c_t| held
    to that C (the report's label) when it declares no ``budget()``, and the stream with no corruption
    (``check_environment``). ``ValueError`` naming the first piece that fails and its module."""
    import jax.numpy as jnp

    import jaxbandit as jb
    from jaxbandit.experiments import bench
    from jaxbandit.experiments.bench.settings import DIM, NUM_ARMS

    def plugin(spec) -> bool:
        return not spec.module.startswith("jaxbandit.")

    def refuse(option: str, name: str, module: str, err: AssertionError):
        raise ValueError(
            f"{option} {name} (registered by the plugin module {module!r}) fails jb.testing, so the "
            f"benchmark's label for it would not hold: {err}"
        ) from err

    gaussian = jb.noise.gaussian(1.0)
    for noise in bench.noise_settings(settings):
        noise_spec = jb.registry.noise(noise.family)
        if plugin(noise_spec):
            family = noise_spec.build(noise.eps)
            try:
                jb.testing.check_noise(family, eps=[noise.eps], name=noise.name)
            except AssertionError as err:
                refuse("--noises", noise.family, noise_spec.module, err)
    linear = jb.registry.stream("linear").build(DIM, NUM_ARMS, gaussian)
    C = max(settings.C_grid)
    for name in settings.adversaries:
        adversary_spec = jb.registry.adversary(name)
        if plugin(adversary_spec):
            level = C if adversary_spec.takes_level else 0.0
            adversary = adversary_spec.build(level, DIM)
            if adversary.budget is None:
                label = float(level)
                adversary = adversary._replace(budget=lambda: jnp.asarray(label, jnp.result_type(float)))
            try:
                jb.testing.check_environment(jb.Environment(linear, adversary), name=f"{name} C={C:g}")
            except AssertionError as err:
                refuse("--adversaries", name, adversary_spec.module, err)
    stream_spec = jb.registry.stream(settings.stream)
    if plugin(stream_spec):
        stream = stream_spec.build(DIM, NUM_ARMS, gaussian)
        try:
            jb.testing.check_environment(jb.Environment(stream, jb.corruption.none()), name=settings.stream)
        except AssertionError as err:
            refuse("--stream", settings.stream, stream_spec.module, err)


def run_bench_command(args) -> None:
    from jaxbandit.experiments import bench

    settings = bench.make_settings(
        quick=args.quick,
        algorithms=args.algorithms,
        adversaries=args.adversaries,
        noises=args.noises,
        horizon=args.horizon,
        seeds=args.seeds,
        tune_seeds=args.tune_seeds,
        eps_grid=args.eps,
        C_grid=args.budgets,
        stream=args.stream,
    )
    vet_plugin_pieces(settings)
    devices = bench.backend_devices(args.device)
    bench.run_bench(settings, args.out, resume=args.resume, progress=args.progress, devices=devices)
    print(f"wrote {args.out / 'report.md'}, {args.out / 'results.npz'} and the figures")
    print((args.out / "report.md").read_text().split("## Robustness frontier")[0])


def _plugins_named(argv) -> list[str]:
    """The ``--plugin`` values of ``argv``, read before the full parser is built (its choices and help
    list what the plugins register)."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--plugin", action="append", default=[])
    return pre.parse_known_args(argv)[0].plugin


def _options_before_command(argv, parser) -> tuple[list[str], str | None]:
    """The options written before the subcommand in ``argv`` and the subcommand (None without one): the
    top-level ``parser`` reads the default demo's options, and a subcommand's own defaults would silently
    replace them. Which options take a value is read from ``parser`` (and ``--plugin``, which
    :func:`_plugins_named` reads anywhere)."""
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    takes_value = {"--plugin"} | {o for a in parser._actions if a.nargs != 0 for o in a.option_strings}
    before: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token in commands:
            return before, token
        if token.startswith("--"):
            name = token.split("=", 1)[0]
            before.append(name)
            i += name in takes_value and "=" not in token
        i += 1
    return before, None


def main(argv=None, prog: str = "jaxbandit") -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); ``prog`` names the program in usage
    lines and recorded commands (``python -m jaxbandit`` passes :data:`MODULE_PROG`). Returns the exit
    status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        with warnings.catch_warnings():  # said once, in the CLI's own words, below
            warnings.simplefilter("ignore", plugins.PluginWarning)
            plugins.load_installed()
        for failure in plugins.failures().values():
            print(f"warning: {failure}", file=sys.stderr)
        for plugin in _plugins_named(argv):
            plugins.load(plugin)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    parser = build_parser(prog)
    before, given = _options_before_command(argv, parser)
    unread = [o for o in before if o not in ("--plugin",)]
    if given is not None and unread:
        print(
            f"error: {unread[0]} is given before the command {given!r}, which would not read it: put it "
            f"after the command ({prog} {given} {unread[0]} ...)",
            file=sys.stderr,
        )
        return 2
    args = parser.parse_args(argv)
    if args.command == "plot":  # FILE before or after --select's pairs, once
        files = [f for f in (args.file, getattr(args, "plot_file", None)) if f is not None]
        if len(files) != 1:
            print(
                "error: plot takes one FILE: "
                + ("give the result to draw" if not files else f"{' and '.join(map(str, files))} are two"),
                file=sys.stderr,
            )
            return 2
        args.file = files[0]
    command = " ".join([prog] + argv)
    if getattr(args, "progress", False) is None:
        args.progress = sys.stderr.isatty()
    try:
        if getattr(args, "baselines", False) and args.algorithms is not None:
            raise ValueError("--algorithms and --baselines are exclusive: give the algorithms, or every one")
        if args.command in (None, "demo"):
            from jaxbandit.experiments.demo import run_demo

            run_demo(args.horizon, args.seeds, args.out, args.progress)
        elif args.command == "plot":
            run_plot(args.file, args.plot_out, args.loglog, args.select)
        elif args.command == "figure1":
            from jaxbandit.experiments import figure1

            figure1.run(
                args.horizon,
                args.seeds,
                args.out,
                constants=args.constants,
                algorithms=args.algorithms,
                baselines=args.baselines,
                tuned_file=args.tuned_file,
                repeats=args.repeats,
                progress=args.progress,
                command=command,
            )
        elif args.command == "tune-figure1":
            from jaxbandit.experiments import figure1

            methods = args.algorithms
            if methods is None:
                methods = figure1.MAIN_METHODS + (figure1.baseline_methods() if args.baselines else ())
            figure1.tune(
                args.horizon,
                args.seeds,
                methods_to_tune=methods,
                out=args.tuned_out,
                progress=args.progress,
                command=command,
            )
        elif args.command == "bench":
            run_bench_command(args)
        elif args.command == "scaling":
            from jaxbandit.experiments import scaling

            if args.theory_only and args.tune_horizons is not None:
                raise ValueError(
                    f"tune_horizons={args.tune_horizons!r} is invalid with --theory-only: give one of them"
                )

            scaling.run(
                args.quick,
                args.out,
                algorithms=args.algorithms,
                seeds=args.seeds,
                horizons=args.horizons,
                eps=args.eps,
                budgets=args.budgets,
                dims=args.dims,
                linear_cost_max_horizon=args.linear_cost_max_horizon,
                tune_horizons=() if args.theory_only else args.tune_horizons,
                tuned_file=args.tuned_file,
                workers=args.workers,
                progress=args.progress,
                command=command,
            )
        return 0
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback
        print(f"interrupted: {_after_interrupt(args)}", file=sys.stderr)
        return 130


def _after_interrupt(args) -> str:
    """What a user may do after stopping ``args``' command: only the benchmark checkpoints its sweeps."""
    if args.command == "bench":
        return (
            "every finished chunk is checkpointed; run the same command with --resume to continue from the "
            "last one"
        )
    return "what was written before is intact (every write is atomic); run the command again to redo the rest"


if __name__ == "__main__":
    sys.exit(main())
