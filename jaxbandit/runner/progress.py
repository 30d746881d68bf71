"""Progress bars that stay one line each, in a terminal and in a notebook.

``tqdm.auto`` in a Jupyter kernel without ipywidgets warns (``TqdmWarning: IProgress not found``) and
falls back to the terminal bar, whose nested bars move the cursor with ANSI escapes that notebooks do
not interpret: every refresh of an inner bar then prints a new line. Here a kernel without ipywidgets
gets the text bar at position 0 (it rewrites its line with a carriage return, which notebooks honour),
refreshed at most once a second; a kernel with ipywidgets gets tqdm's widget bar; a terminal gets
tqdm's terminal bar. In a notebook, a bar opened while another is open (a sweep's bar inside the
benchmark's) draws on the same line and clears itself when it closes.
"""

from __future__ import annotations

import importlib.util
import os
import sys

from tqdm.std import tqdm as text_tqdm

NOTEBOOK_MININTERVAL = 1.0  # seconds between refreshes of a text bar in a notebook (each is a message)


def display_kind() -> str:
    """Where bars are drawn: ``"widget"`` (a Jupyter kernel with ipywidgets), ``"notebook-text"`` (a
    Jupyter kernel without it) or ``"terminal"`` (anything else, Jupyter's qtconsole and Spyder too)."""
    if "ipykernel.zmqshell" not in sys.modules:
        return "terminal"
    if any(name == "QT_API" or name.startswith("SPYDER") for name in os.environ):
        return "terminal"
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    if shell is None or shell.__class__.__name__ != "ZMQInteractiveShell":
        return "terminal"
    try:
        has_widgets = importlib.util.find_spec("ipywidgets") is not None
    except (ImportError, ValueError):
        has_widgets = False
    return "widget" if has_widgets else "notebook-text"


def bar(*, total: int, desc: str, unit: str, initial: int = 0):
    """A tqdm bar of ``total`` steps, drawn as :func:`display_kind` says; close it when done."""
    kind = display_kind()
    nested = bool(text_tqdm._instances)  # the widget bar is a subclass: its open bars are here too
    if kind == "terminal":
        return text_tqdm(total=total, initial=initial, desc=desc, unit=unit)
    leave = not nested
    if kind == "widget":
        from tqdm.notebook import tqdm as widget_tqdm

        return widget_tqdm(total=total, initial=initial, desc=desc, unit=unit, leave=leave)
    return text_tqdm(
        total=total,
        initial=initial,
        desc=desc,
        unit=unit,
        leave=leave,
        position=0,  # no cursor movement: nested bars share the line
        mininterval=NOTEBOOK_MININTERVAL,
    )
