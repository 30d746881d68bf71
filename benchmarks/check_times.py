"""Wall seconds of ``jb.testing.check_algorithm`` and ``check_environment``, each in a fresh process.

A user's first check pays JAX's start-up and every compilation, so each case runs in its own Python
process (no persistent compilation cache): ``first`` is the first call, ``again`` the same check
repeated in that process (its programs and eagerly dispatched operations compiled). Algorithms: every
registered one built for T = 128 (the checker's default probe; d = 3, K = 5, theory constants at ε = 1);
environments: ``jb.envs.linear(3, 5)`` with Student-t₃ noise and each library adversary at C = 2.
``--previous REV``: the same cases with the package as of git revision REV too, the two versions'
processes alternating, so that both are timed under the same load. The machine's load average is
recorded with each case: on a shared machine the times move with it.

    python benchmarks/check_times.py [--previous c23a4cd] [--only oful flip ...]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import common

import jaxbandit as jb

CASE = """
import json, os, sys, time
t0 = time.perf_counter()
import jax, numpy as np
import jaxbandit as jb
kind, name = sys.argv[1], sys.argv[2]
if kind == "algorithm":
    spec = jb.registry.algorithm(name)
    problem = jb.registry.Problem(128, 3, eps=1.0, nu=1.3, corruption=2.0)
    params = {k: float(np.asarray(v)) for k, v in spec.theory(problem).items()}
    check = lambda: jb.testing.check_algorithm(lambda p: spec.build(problem, p), params, dim=3, num_arms=5)
else:
    adversary = jb.corruption.none() if name == "none" else getattr(jb.corruption, name)(2.0)
    env = jb.envs.linear(3, 5, noise=jb.noise.student_t(3.0), corruption=adversary)
    check = lambda: jb.testing.check_environment(env)
imported = time.perf_counter() - t0
times = []
for _ in range(2):
    t0 = time.perf_counter()
    check()
    times.append(time.perf_counter() - t0)
print(json.dumps({"import": imported, "first": times[0], "again": times[1], "load": os.getloadavg()[0]}))
"""

ADVERSARIES = ("none", "flip", "flip_rounds", "random_sign", "targeted")


def _previous(rev: str) -> Path:
    """A folder holding the package as of ``rev``."""
    root = Path(tempfile.mkdtemp(prefix="jaxbandit-previous-"))
    archive = subprocess.run(
        ["git", "-C", str(common.ROOT), "archive", "--format=tar", rev, "jaxbandit"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(root, filter="data")
    return root


def _time(kind: str, name: str, root: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root))
    out = subprocess.run(
        [sys.executable, "-c", CASE, kind, name], capture_output=True, text=True, check=True, env=env
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--previous", default=None, metavar="REV")
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME")
    args = parser.parse_args()
    cases = [("algorithm", n) for n in jb.registry.names()] + [("environment", n) for n in ADVERSARIES]
    versions = {"current": common.ROOT}
    if args.previous is not None:
        versions["previous"] = _previous(args.previous)
    rows = []
    for kind, name in cases:
        if args.only is not None and name not in args.only:
            continue
        for version, root in versions.items():
            row = {"check": kind, "name": name, "version": version, **_time(kind, name, root)}
            rows.append(row)
            print(
                f"{kind:<12} {name:<16} {version:<9} first {row['first']:6.1f} s  again {row['again']:6.1f} s"
                f"  load {row['load']:4.1f}",
                flush=True,
            )
    path = common.write_json(
        "check_times", {"what": __doc__.split("\n\n")[0], "previous": args.previous, "rows": rows}
    )
    common.print_table(
        rows,
        [("check", ""), ("name", ""), ("version", ""), ("first", ".1f"), ("again", ".1f"), ("load", ".1f")],
    )
    if args.previous is not None:  # the cost of the current checker relative to the previous one, per case
        by = {(r["check"], r["name"], r["version"]): r for r in rows}
        for kind, name in cases:
            now, before = by.get((kind, name, "current")), by.get((kind, name, "previous"))
            if now and before:
                print(
                    f"{kind:<12} {name:<16} first x{now['first'] / before['first']:.2f}  "
                    f"again x{now['again'] / before['again']:.2f}"
                )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
