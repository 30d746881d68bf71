"""Where the test suite's time goes: per test file, its tests' wall seconds and the XLA compilations
inside them (seconds and count, from JAX's monitoring events), with the whole run's wall and CPU seconds.

A pytest plugin, loaded in the controller and every xdist worker. Compilations in the subprocesses a
test starts (the command line, notebooks, several devices) count in its wall seconds only. Run the
README's test command with it, from a checkout, to time the suite as CI runs it::

    PYTHONPATH=benchmarks PYTEST_ADDOPTS="-p suite_time" .ci/run

or only the tests: ``python benchmarks/suite_time.py [pytest arguments ...]`` (default ``-q --run-slow``).
Writes ``suite_time.json`` (``benchmarks/results/`` or ``$JAXBANDIT_BENCH_OUT``).
"""

from __future__ import annotations

import collections
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

#: JAX's events of one compilation: tracing to a jaxpr, lowering to StableHLO, XLA's compile.
EVENTS = {
    "trace_s": "/jax/core/compile/jaxpr_trace_duration",
    "lower_s": "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "compile_s": "/jax/core/compile/backend_compile_duration",
}
#: Each field's count of events: traces, lowers, compiles.
COUNTS = {field: field[:-2] + "s" for field in EVENTS}
_RECORDS = "JAXBANDIT_SUITE_TIME_RECORDS"  # the folder the workers write their tests' records to
_START = pytest.StashKey[tuple]()  # the controller's (start time, records folder)


class _Recorder:
    """The current test's event seconds and counts, appended as one JSON line per test."""

    def __init__(self, folder: Path):
        self.file = folder / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.getpid()}.jsonl"
        self.current: collections.Counter | None = None
        import jax

        jax.monitoring.register_event_duration_secs_listener(self.event)

    def event(self, event: str, duration: float, **_) -> None:
        if self.current is not None:
            for field, name in EVENTS.items():
                if event == name:
                    self.current[field] += duration
                    self.current[COUNTS[field]] += 1

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.current, start = collections.Counter(), time.perf_counter()
        yield
        record = {"test": item.nodeid, "wall_s": time.perf_counter() - start, **self.current}
        self.current = None
        with self.file.open("a") as f:
            f.write(json.dumps(record) + "\n")


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # the controller: a fresh folder (workers inherit it), a clock
        folder = Path(tempfile.mkdtemp(prefix="jaxbandit-suite-time-"))
        os.environ[_RECORDS] = str(folder)
        config.stash[_START] = (time.perf_counter(), folder)
    config.pluginmanager.register(_Recorder(Path(os.environ[_RECORDS])), "suite_time_recorder")


def pytest_unconfigure(config):
    if hasattr(config, "workerinput") or _START not in config.stash:
        return
    start, folder = config.stash[_START]
    wall = time.perf_counter() - start
    tests = [json.loads(line) for f in sorted(folder.glob("*.jsonl")) for line in f.read_text().splitlines()]
    shutil.rmtree(folder, ignore_errors=True)
    _write(tests, wall)


def _totals(rows: list[dict]) -> dict:
    out = collections.Counter({field: 0.0 for field in EVENTS} | {count: 0 for count in COUNTS.values()})
    for r in rows:
        out.update({k: v for k, v in r.items() if k != "test"})
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in sorted(out.items())}


def _write(tests: list[dict], wall: float) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    import common

    by_file = collections.defaultdict(list)
    for t in tests:
        by_file[t["test"].split("::")[0]].append(t)
    files = sorted(
        ({"file": f, "tests": len(rows), **_totals(rows)} for f, rows in by_file.items()),
        key=lambda r: -r["wall_s"],
    )
    usage = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(u.ru_utime + u.ru_stime for u in usage)
    total = {"tests": len(tests), **_totals(tests)}
    payload = {
        "what": __doc__.split("\n\n")[0],
        "command": " ".join(["pytest", *sys.argv[1:]]),
        "run_wall_s": round(wall, 1),
        "run_cpu_s": round(cpu, 1),
        "total": total,
        "files": files,
        "slowest_tests": sorted(tests, key=lambda t: -t["wall_s"])[:30],
    }
    path = common.write_json("suite_time", payload)
    print(
        f"\nsuite_time: {len(tests)} tests, run {wall:.0f} s wall, {cpu:.0f} s CPU on {os.cpu_count()} "
        f"cores; tests {total['wall_s']:.0f} s, of them XLA compiling {total['compile_s']:.0f} s "
        f"({total['compiles']} programs) in the test processes"
    )
    common.print_table(files[:15], [("file", ""), ("tests", "d"), ("wall_s", ".0f"), ("compile_s", ".0f")])
    print(f"wrote {path}")


def main() -> None:
    here = Path(__file__).resolve().parent
    path = os.pathsep.join(filter(None, [str(here), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path)
    args = sys.argv[1:] or ["-q", "--run-slow"]
    command = [sys.executable, "-m", "pytest", "-p", "suite_time", *args]
    sys.exit(subprocess.run(command, cwd=here.parent, env=env).returncode)


if __name__ == "__main__":
    main()
