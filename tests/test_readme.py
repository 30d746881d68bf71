"""The README: short, its set-up block and .ci/run in step, and its example runs as printed."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def first_shell_block():
    text = (ROOT / "README.md").read_text()
    start = text.index("```sh\n") + len("```sh\n")
    return [line for line in text[start : text.index("```", start)].splitlines() if line.strip()]


def test_readme_has_the_two_setup_commands():
    lines = first_shell_block()
    assert len(lines) == 2
    assert lines[0].endswith("-m jaxbandit")
    assert "pytest" in lines[1]


def test_ci_runs_the_readme_test_command():
    ci = [
        line
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.startswith("#") and not line.startswith(("set ", "cd "))
    ]
    assert ci == [first_shell_block()[1]]


def python_block_after(heading: str) -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("```python\n", text.index(heading)) + len("```python\n")
    return text[start : text.index("```", start)]


def test_readme_is_short():
    """The README is for users; everything else is in the docs site."""
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


@pytest.mark.slow
def test_the_example_runs_as_printed(capsys):
    """The README's example: a sweep of two algorithms over a grid of C, its summary and labelled rows."""
    code = python_block_after("## Example")
    exec(compile(code, "README.md: Example", "exec"), {"__name__": "readme_example"})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("<jb.SweepResult> (algorithm: 2, C: 2, seed: 5, round: "), lines[0]
    rows = [line for line in lines if re.match(r"(CR-Hvt-UCB|OFUL) ", line)]
    assert [row.split()[0] for row in rows] == ["CR-Hvt-UCB", "OFUL"], lines
    for row in rows:
        assert re.fullmatch(r"\S+ +C=0: +\d+\.\d  C=100: +\d+\.\d", row), row
