"""A griffe extension for the API pages: the library's docstrings cross-reference in reStructuredText
(``:func:`sweep```, ``Example::``), which Markdown would print verbatim; here a role becomes a code span
and a paragraph's closing ``::`` a colon (its indented block is already a Markdown code block).

Only the rendered text changes; the docstrings in the source stay as they are.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|func|meth|data|attr|mod|obj|exc):`~?([^`]+)`")
LITERAL_INTRO = re.compile(r"(\S)::$", re.MULTILINE)


def markdown(text: str) -> str:
    """``text`` with reST roles as code spans and ``::`` paragraph endings as colons."""
    return LITERAL_INTRO.sub(r"\1:", ROLE.sub(r"``\1``", text))


class RstRoles(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
