"""One tree renderer, one size formatter and one table of colours for every view: the text
and HTML views, the notebook's widgets (their script, stylesheet and static snapshots) and the
static viewer."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import jsbox
import pytest

from tavernlab.host import Run
from tavernlab.views import COLOURS, STATUS_COLOURS, tree_html, tree_text
from tavernlab.views._markup import ACCESS_COLOURS, format_size
from tavernlab.workspace.scope import TreeNode

SRC = Path(__file__).resolve().parents[2] / "src" / "tavernlab"
STATIC = SRC / "notebook" / "widgets" / "static"

#: Sizes around every boundary and every rounding tie of the formatter.
SIZES = [0, 1, 999, 1023, 1024, 1075, 1126, 1127, 1280, 1331, 1536, 1587, 10 * 1024 - 52,
         1024 ** 2 - 52, 1024 ** 2 - 51, 1024 ** 2 - 1, 1024 ** 2, 1024 ** 2 * 5 // 4,
         1024 ** 2 * 3 // 2, 7 * 1024 ** 2 + 12345, 1024 ** 3 - 1, 5 * 1024 ** 3,
         1024 ** 3 * 9 // 4, 1024 ** 4, 3 * 1024 ** 4 + 1, 1536 * 1024 ** 4]


@pytest.mark.parametrize(("size", "text"), [
    (None, ""), (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1280, "1.2 KiB"),
    (1331, "1.3 KiB"), (1536, "1.5 KiB"), (1024 ** 2 - 1, "1024.0 KiB"),
    (1024 ** 2 * 5 // 4, "1.2 MiB"), (5 * 1024 ** 3, "5.0 GiB"), (1024 ** 4, "1.0 TiB"),
    (1536 * 1024 ** 4, "1536.0 TiB")])
def test_format_size(size: int | None, text: str) -> None:
    assert format_size(size) == text


def test_format_size_shows_what_pythons_rounding_shows() -> None:
    for size in SIZES[4:]:
        power = next(p for p in (1, 2, 3, 4) if size < 1024 ** (p + 1) or p == 4)
        unit = ("KiB", "MiB", "GiB", "TiB")[power - 1]
        assert format_size(size) == f"{size / 1024 ** power:.1f} {unit}", size


def _js_function(name: str) -> str:
    script = (STATIC / "widgets.js").read_text(encoding="utf-8")
    match = re.search(rf"^function {name}\(.*?^\}}$", script, re.S | re.M)
    assert match is not None, name
    return match.group()


def test_the_widgets_script_formats_sizes_as_python_does() -> None:
    source = _js_function("formatSize")
    shown = json.loads(jsbox.Runtime().eval(
        f"{source}; JSON.stringify({json.dumps([None, *SIZES])}.map(formatSize))"))
    assert shown == [format_size(size) for size in [None, *SIZES]]


def test_the_widgets_stylesheet_falls_back_to_the_table() -> None:
    css = (STATIC / "widgets.css").read_text(encoding="utf-8")
    for status, colour in STATUS_COLOURS.items():
        assert re.search(rf"--tl-{status}: var\(--jp-[a-z0-9-]+, {colour}\);", css), status
    for level in ("read_only", "hidden"):
        assert re.search(rf"\.tl-badge-{level} \{{ color: {ACCESS_COLOURS[level]};", css), level
    assert ".tl-badge-writable { color: var(--tl-ok);" in css


def test_the_static_viewer_colours_statuses_from_the_table() -> None:
    from tavernlab.view._page import _PAGE_CSS

    for status, colour in STATUS_COLOURS.items():
        assert f".tl-view-{status}{{color:{colour}}}" in _PAGE_CSS


def test_the_tables_agree() -> None:
    assert STATUS_COLOURS == {"ok": "#2e7d32", "error": "#c62828", "cancelled": "#9e6a00",
                              "running": "#1565c0"}
    assert ACCESS_COLOURS == {"writable": "#2e7d32", "read_only": "#546e7a",
                              "hidden": "#8d6e63"}
    assert set(STATUS_COLOURS.values()) | set(ACCESS_COLOURS.values()) <= set(COLOURS.values())


def test_no_other_size_formatter_or_colour_literal() -> None:
    """Nobody but the markup module divides by 1024 to show a size or writes a status
    colour of the table as a literal."""
    own = SRC / "views" / "_markup.py"
    table = set(COLOURS.values())
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if path == own:
            continue
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for colour in table:
                    if colour in node.value:
                        offenders.append(f"{path.relative_to(SRC)}:{node.lineno} {colour}")
        if re.search(r"KiB\"|KiB'|\"MiB\"|'MiB'", text):
            offenders.append(f"{path.relative_to(SRC)}: a size unit")
    assert offenders == []


def _rows(node: TreeNode, depth: int = 0) -> list[dict[str, object]]:
    """The rows a file-tree widget holds for the nodes below ``node``."""
    out: list[dict[str, object]] = []
    for child in node.children or []:
        out.append({"path": child.path, "name": child.name, "kind": child.kind,
                    "size": child.size, "access": child.access.level,
                    "creates": child.access.creates_children, "reason": child.reason,
                    "depth": depth})
        out.extend(_rows(child, depth + 1))
    return out


def test_the_widget_snapshot_is_drawn_by_the_one_tree_renderer(run: Run) -> None:
    from tavernlab.notebook.widgets import _snapshots as snapshots

    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "hello\n"})
    run.shell("mkdir -p scratch/a/b && printf 'x' > scratch/a/b/c.txt")
    tree = run.tree()
    rows = _rows(tree)
    text = snapshots.tree_text("Workspace", rows)
    assert text == tree_text(tree, title="Workspace")
    assert text.splitlines()[:3] == ["Workspace", "├── output/  writable root",
                                     "│   └── main.md  6 B  writable"]
    assert snapshots.tree_html("Workspace", rows).endswith(
        tree_html(tree, title="Workspace") + "</div>")
    source = (SRC / "notebook" / "widgets" / "_snapshots.py").read_text(encoding="utf-8")
    assert "├" not in source and "<details" not in source


def test_a_limited_tree_says_what_it_left_out(run: Run) -> None:
    run.shell("mkdir -p scratch/d && printf 1 > scratch/d/one.txt && printf 2 > scratch/two.txt")
    tree = run.tree("scratch")
    text = tree_text(tree, title="T", limit=2, left_out=lambda shown: f"{shown} shown")
    assert text == "T\n├── d/  writable\n│   └── one.txt  1 B  writable\n2 shown"
    assert tree_text(tree, title="T", limit=3, left_out=lambda shown: "never") == (
        "T\n├── d/  writable\n│   └── one.txt  1 B  writable\n└── two.txt  1 B  writable")
    html = tree_html(tree, limit=1, left_out=lambda shown: f"{shown} shown")
    assert "d/" in html and "one.txt" not in html and html.endswith(">1 shown</div>")
