"""A writer that stops midway, for the lock and leftover tests: ``python writer.py hold TARGET`` takes
TARGET's lock; ``python writer.py write TARGET`` starts an atomic write of TARGET and writes half of it.
Either prints ``ready`` once it is there and then waits for a line on stdin (or to be killed): the test
acts at a chosen moment with no race against wall time."""

import sys

from jaxbandit.report import results


def wait():
    print("ready", flush=True)
    sys.stdin.readline()


def main():
    mode, target = sys.argv[1:]
    if mode == "hold":
        with results.writing(target, what="out="):
            wait()
    else:
        results.atomic_write_bytes(target, lambda f: (f.write(b"half"), f.flush(), wait()))


if __name__ == "__main__":
    main()
