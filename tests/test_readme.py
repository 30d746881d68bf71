"""The README: its set-up block and .ci/run stay in step, and its examples run as printed."""

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


@pytest.mark.slow
def test_write_your_own_algorithm_runs_as_printed(capsys):
    """The README's example: a user's algorithm from public API, checked by jb.testing, run in jb.sweep."""
    code = python_block_after("## Write your own algorithm")
    exec(compile(code, "README.md: Write your own algorithm", "exec"), {"__name__": "readme_example"})
    printed = capsys.readouterr().out
    assert "[[" in printed  # the final regrets [algorithm, clip]
