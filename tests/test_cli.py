"""The command line as users expect it: ``--version``, the program named as it was run, defaults in
``--help``, one style for list options, progress bars only on a terminal, and ``bench --help`` stating
the sizes ``--quick`` runs."""

import importlib.metadata
import io
import re
import subprocess
import sys

import pytest

import jaxbandit as jb
from jaxbandit import cli
from jaxbandit.experiments import bench

SUBCOMMANDS = ("demo", "plot", "figure1", "tune-figure1", "bench", "scaling")


def _help(capsys, *argv, prog="jaxbandit") -> str:
    with pytest.raises(SystemExit) as info:
        cli.main([*argv, "--help"], prog=prog)
    assert info.value.code == 0
    return capsys.readouterr().out


def test_version_is_the_package_s(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0
    version = importlib.metadata.version("jaxbandit")  # what the installed distribution was built as
    assert capsys.readouterr().out == f"jaxbandit {version}\n" == f"jaxbandit {jb.__version__}\n"


def test_usage_names_the_program_as_it_was_run(capsys):
    assert _help(capsys).startswith("usage: jaxbandit [-h] [--version]")
    assert _help(capsys, "bench", prog=cli.MODULE_PROG).startswith("usage: python -m jaxbandit bench ")


@pytest.mark.slow
def test_python_dash_m_says_so():
    out = subprocess.run(
        [sys.executable, "-m", "jaxbandit", "--help"], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0 and out.stdout.startswith("usage: python -m jaxbandit "), out.stderr


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_help_shows_the_defaults_there_are(capsys, command):
    text = " ".join(_help(capsys, command).split())
    assert "(default: None)" not in text and "(default: False)" not in text and "(default: [])" not in text
    expected = {
        "demo": ["rounds T (default: 2000)", "output directory (default: out/demo)"],
        "plot": ["log-log axes"],
        "figure1": ["rounds T >= 4 (default: 5000)", "or both (default: both)", "runtime panel (default: 3)"],
        "tune-figure1": ["tuning seeds 1000..1000+N-1 (default: 10)"],
        "bench": ["output directory (default: out/bench)"],
        "scaling": ["output directory (default: out/scaling)"],
    }[command]
    for phrase in expected:
        assert phrase in text, phrase
    if command not in ("plot",):
        assert "show progress bars (default: when stderr is a terminal)" in text


def test_bench_help_states_the_sizes_quick_runs(capsys):
    text = " ".join(_help(capsys, "bench").split())
    quick, full = bench.make_settings(quick=True), bench.make_settings()
    match = re.search(r"T = (\d+), (\d+) seeds, (\d+) tuning seeds", text)
    assert match and tuple(map(int, match.groups())) == (
        quick.horizon,
        len(quick.seeds),
        len(quick.tune_seeds),
    )
    assert f"rounds T (default: {quick.horizon} with --quick, else {full.horizon})" in text


@pytest.mark.parametrize(
    "argv, dest, expected",
    [
        (["bench", "--algorithms", "oful", "cw_oful"], "algorithms", ("oful", "cw_oful")),
        (["bench", "--algorithms", "oful,cw_oful"], "algorithms", ("oful", "cw_oful")),
        (["bench", "--noises", "gaussian,", "pareto"], "noises", ("gaussian", "pareto")),
        (["figure1", "--algorithms", "oful"], "algorithms", ("oful",)),
        (["tune-figure1", "--out", "f.json", "--methods", "oful,cw_oful"], "algorithms", ("oful", "cw_oful")),
        (
            ["tune-figure1", "--out", "f.json", "--algorithms", "oful", "cw_oful"],
            "algorithms",
            ("oful", "cw_oful"),
        ),
        (["scaling", "--horizons", "30,60"], "horizons", (30, 60)),
        (["scaling", "--horizons", "30", "60"], "horizons", (30, 60)),
        (["scaling", "--eps", "0.5", "1"], "eps", (0.5, 1.0)),
        (["bench", "--eps", "0.4,1"], "eps", (0.4, 1.0)),
        (["bench", "--budgets", "10", "300"], "budgets", (10.0, 300.0)),
    ],
)
def test_every_list_option_takes_spaces_or_commas(argv, dest, expected):
    assert getattr(cli.build_parser().parse_args(argv), dest) == expected


def test_bench_runs_the_eps_and_budget_grids_given(monkeypatch, tmp_path, capsys):
    """``bench --eps --budgets`` reach the settings the benchmark runs (a subset of scenarios: Figure 1's
    ε = 0.4 and 1, the flip attack up to C = 300); bad grids are refused naming them."""
    seen = {}

    def run_bench(settings, out, **kw):
        seen["s"] = settings
        (out / "report.md").write_text("report\n")

    monkeypatch.setattr(bench, "run_bench", run_bench)
    args = ["bench", "--eps", "0.4", "1", "--budgets", "10,300", "--out", str(tmp_path), "--no-progress"]
    cli.main(args + ["--noises", "pareto", "--adversaries", "none", "flip", "--algorithms", "oful"])
    assert seen["s"].eps_grid == (0.4, 1.0) and seen["s"].C_grid == (10.0, 300.0)
    assert [n.eps for n in bench.noise_settings(seen["s"])] == [0.4, 1.0]
    assert cli.main(["bench", "--eps", "0", "--out", str(tmp_path / "b")]) == 2
    assert "eps_grid=(0.0,) is invalid" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["scaling", "--horizons", "100,x"],
            "error: argument --horizons: '100,x' is not a list of integers\n",
        ),
        (
            ["scaling", "--dims", ","],
            "error: argument --dims: give one or more integers, space- or comma-separated\n",
        ),
        (["bench", "--algorithms"], "error: argument --algorithms: expected at least one argument\n"),
    ],
)
def test_a_bad_list_is_a_one_line_error(capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2 and capsys.readouterr().err == message


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize(
    "stderr, flags, shown",
    [
        (io.StringIO, [], False),
        (_Terminal, [], True),
        (io.StringIO, ["--progress"], True),
        (_Terminal, ["--no-progress"], False),
    ],
)
def test_progress_bars_only_on_a_terminal_unless_told(monkeypatch, stderr, flags, shown):
    from jaxbandit.experiments import demo

    calls = []
    monkeypatch.setattr(demo, "run_demo", lambda *args: calls.append(args))
    monkeypatch.setattr(sys, "stderr", stderr())
    assert cli.main(["demo", *flags]) == 0
    assert calls[0][3] is shown


def test_the_recorded_command_names_the_program(monkeypatch):
    from jaxbandit.experiments import figure1

    seen = {}
    monkeypatch.setattr(figure1, "run", lambda *args, **kwargs: seen.update(kwargs))
    assert cli.main(["figure1", "--horizon", "8", "--algorithms", "oful"]) == 0
    assert seen["command"] == "jaxbandit figure1 --horizon 8 --algorithms oful"
    assert seen["algorithms"] == ("oful",) and seen["baselines"] is False
    assert cli.main(["figure1", "--seeds", "2"], prog=cli.MODULE_PROG) == 0
    assert seen["command"] == "python -m jaxbandit figure1 --seeds 2" and seen["algorithms"] is None


@pytest.mark.parametrize("command", ["figure1", "tune-figure1"])
def test_algorithms_and_baselines_are_exclusive(capsys, command):
    extra = ["--out", "f.json"] if command == "tune-figure1" else []
    assert cli.main([command, *extra, "--algorithms", "oful", "--baselines"]) == 2
    assert capsys.readouterr().err == (
        "error: --algorithms and --baselines are exclusive: give the algorithms, or every one\n"
    )


@pytest.mark.parametrize("command", ["figure1", "tune-figure1", "bench", "scaling"])
def test_every_subcommand_taking_names_takes_plugins(command):
    extra = ["--out", "f.json"] if command == "tune-figure1" else []
    args = cli.build_parser().parse_args([command, *extra, "--plugin", "a", "--plugin", "b.py"])
    assert args.plugin == ["a", "b.py"]


def test_a_plugin_not_found_is_a_one_line_error(capsys):
    assert cli.main(["bench", "--plugin", "no_such_plugin_module", "--quick"]) == 2
    assert capsys.readouterr().err == (
        "error: plugin='no_such_plugin_module' was not found: give an importable module name (the current "
        "directory is searched first) or the path of a .py file\n"
    )


def test_the_demo_with_one_seed_prints_no_standard_error_and_says_why_theory_is_linear(tmp_path, capsys):
    from jaxbandit.experiments import demo

    demo.run_demo(30, 1, tmp_path, progress=False)
    out = capsys.readouterr().out
    assert "1 seed (no standard error)" in out and "±" not in out
    assert "CR-Hvt-UCB (beta_scale=0.0001)" in out  # the API's name for the radius multiplier
    assert "its theory radius is beta = " in out and "almost linearly" in out


def test_the_demo_progress_bar_says_compiling_then_advances_by_chunk(tmp_path, capsys):
    """The demo's sweep ran as one chunk: its bar sat silent at 0 % while compiling, then jumped to 100 %."""
    from jaxbandit.experiments import demo

    demo.run_demo(40, 1, tmp_path, progress=True)
    states = capsys.readouterr().err.replace("\r", "\n").splitlines()
    compiling = [s for s in states if "compiling (the first chunk's rounds wait for it)" in s]
    assert compiling and " 0/40 " in compiling[0]  # said before any round has run
    done = sorted({int(m) for s in states for m in __import__("re").findall(r" (\d+)/40 ", s)})
    assert done == list(range(0, 41, 4))  # 10 chunks of 4 rounds
    assert "compiled and ran the first chunk in" in "".join(states)


@pytest.mark.parametrize("command", ["demo", "bench", "figure1", "scaling"])
def test_options_before_the_command_are_refused_not_ignored(command, capsys):
    """`--horizon 300 --seeds 2 --out x bench` ran the command's defaults into its default folder: the
    subcommand's defaults replaced what the top level had read. Now it is one line saying where to put
    them (options after the command, or no command at all for the demo, still work)."""
    assert cli.main(["--horizon", "300", "--seeds", "2", "--out", "x", command]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"error: --horizon is given before the command '{command}'") and err.count("\n") == 1
    )
    assert cli.main(["--out=x", command, "--help"]) == 2  # the = form too
    parsed = cli.build_parser().parse_args(["--horizon", "300", "--seeds", "2"])  # no command: the demo's
    assert (parsed.command, parsed.horizon, parsed.seeds) == (None, 300, 2)
