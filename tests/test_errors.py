"""The one error tree: errors.py draws every error class, each with a real code."""

from __future__ import annotations

import importlib
import pkgutil

import tavernlab
import tavernlab.errors as errors
from tavernlab.errors import TavernlabError


def _all_errors() -> set[type[TavernlabError]]:
    for module in pkgutil.walk_packages(tavernlab.__path__, "tavernlab."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    found: set[type[TavernlabError]] = set()
    stack: list[type[TavernlabError]] = [TavernlabError]
    while stack:
        for sub in stack.pop().__subclasses__():
            found.add(sub)
            stack.append(sub)
    return found


def test_the_tree_in_the_docstring_names_every_error_class() -> None:
    doc = errors.__doc__ or ""
    assert sorted(c.__name__ for c in _all_errors() if c.__name__ not in doc) == []


def test_one_class_per_name_and_no_internal_codes() -> None:
    classes = _all_errors()
    names = [c.__name__ for c in classes]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []
    assert sorted(c.__name__ for c in classes if getattr(c, "code", "") == "internal") == []


def test_one_line_escapes_every_line_break_and_control_character() -> None:
    assert errors.one_line("plain text, é and ✓") == "plain text, é and ✓"
    assert errors.one_line("a\nb\r\nc\x85d\u2028e\tf\0g\udcff") == (
        "a\\nb\\r\\nc\\x85d\\u2028e\\tf\\x00g\\udcff")


def test_an_error_renders_as_one_line_in_ipython() -> None:
    error = errors.InvalidData("bad value `x\nTraceback (most recent call last):`")
    assert error._render_traceback_() == [
        "workspace.invalid_data: bad value `x\\nTraceback (most recent call last):`"]
