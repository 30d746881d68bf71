"""Peak memory of a sweep: recording every round versus checkpoints (O(runs × recorded rounds)).

Each configuration runs in a fresh subprocess that reports its peak resident set size (ru_maxrss), so
numbers are not polluted by earlier ones. Writes ``results/memory.json``.

    python benchmarks/memory.py [--runs 2000] [--rounds 5000] [--records '"all"' '["log", 50]' 500]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import common

CHILD = """
import json, resource, sys, time
import jaxbandit as jb
runs, T, record = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
record = tuple(record) if isinstance(record, list) else record
def make_alg(p):
    return jb.cr_hvt_ucb(T, 10, eps=1.0, nu=3 ** 0.5, corruption=p["C"], beta_scale=1e-4)
def make_env(p):
    return jb.envs.linear(10, 20, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(p["C"]))
t = time.perf_counter()
res = jb.sweep(make_alg, make_env, {"C": [0.0, 100.0]}, horizon=T, seeds=runs // 2, record=record)
print(json.dumps({"peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "seconds": time.perf_counter() - t,
                  "result_mb": sum(v.nbytes for v in res.data.values()) / 2 ** 20}))
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5000)
    parser.add_argument(
        "--records",
        type=json.loads,
        nargs="+",
        default=["all", ["log", 50], 500],
        help="record= settings as JSON (default: '\"all\"' '[\"log\", 50]' 500)",
    )
    args = parser.parse_args(argv)
    rows = []
    for record in args.records:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(args.runs), str(args.rounds), json.dumps(record)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        row = dict(record=str(record), runs=args.runs, rounds=args.rounds, **json.loads(out.splitlines()[-1]))
        rows.append(row)
        print(row, flush=True)
    common.print_table(
        rows,
        [
            ("record", ""),
            ("runs", ""),
            ("rounds", ""),
            ("peak_mb", ".0f"),
            ("result_mb", ".1f"),
            ("seconds", ".1f"),
        ],
    )
    print(f"\nwrote {common.write_json('memory', {'rows': rows})}")


if __name__ == "__main__":
    main()
