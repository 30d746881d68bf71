"""The README's set-up block and .ci/run stay in step."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def first_shell_block():
    text = (ROOT / "README.md").read_text()
    start = text.index("```sh\n") + len("```sh\n")
    return [line for line in text[start:text.index("```", start)].splitlines() if line.strip()]


def test_readme_has_the_two_setup_commands():
    lines = first_shell_block()
    assert len(lines) == 2
    assert lines[0].endswith("-m jaxbandit")
    assert "pytest" in lines[1]


def test_ci_runs_the_readme_test_command():
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith("#") and not line.startswith(("set ", "cd "))]
    assert ci == [first_shell_block()[1]]
