"""The documentation site: it builds with ``mkdocs build --strict`` (no warning: every page in the nav,
every link and anchor resolved, every documented parameter in its signature), and its examples stay
in step with the README's executed one."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def python_blocks(text: str) -> list[str]:
    blocks, start = [], 0
    while (begin := text.find("```python\n", start)) != -1:
        begin += len("```python\n")
        end = text.index("```", begin)
        blocks.append(text[begin:end])
        start = end + 3
    return blocks


@pytest.mark.slow
def test_site_builds_strict(tmp_path):
    """The test extra installs the docs tools, so a missing mkdocs fails here rather than skipping."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "api" / "running" / "index.html").is_file()
    assert (tmp_path / "site" / "figure1.png").is_file()


def test_every_python_example_compiles():
    pages = sorted(DOCS.rglob("*.md"))
    assert pages
    for page in pages:
        for i, code in enumerate(python_blocks(page.read_text())):
            compile(code, f"{page.relative_to(ROOT)}: python block {i + 1}", "exec")


def test_own_algorithm_page_shows_the_readme_example():
    """tests/test_readme.py executes the README's example; the site shows that same code."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index("```python\n", readme.index("## Write your own algorithm"))
    example = python_blocks(readme[start:])[0]
    assert example in python_blocks((DOCS / "own-algorithm.md").read_text())
