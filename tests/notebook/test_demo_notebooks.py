"""The demo notebooks in ``notebooks/``: each is executed by nbclient in the tavernlab kernel
and its outputs must be the committed ones.

Each notebook is copied into a temporary directory and executed there (the kernel's working
directory; nothing is written beside the committed notebook), with ``HOME`` private to the
test (``~/.agentproto`` included), ``TMPDIR`` inside the test's directory (so the test sees that
the notebook removed its temporary folder) and the kit cache pinned to the user's. Only what must
vary is normalised before comparing: the notebooks' temporary folders (``tempfile.mkdtemp
(prefix="tavernlab-NN-")``, shown as ``<tavernlab-NN>``), widget model ids, the ids of the
widgets' static views (``tl-static-tl<hex>``, random like the model ids) and the phase
times of the worktree provisioning widget. Times and ids
come from each notebook's lab (a fixed clock and sequential ids), so they are compared as
they are; a cell's stdout and stderr are compared as two texts (their interleaving depends on
when the kernel flushed them). Cells that show an error on purpose carry nbclient's
``raises-exception`` tag; every other cell must run cleanly, and every tagged cell must error.
No process a notebook started may outlive it.

Regenerate the committed outputs with ``notebooks/regenerate.py`` (it runs this test with
:data:`REGENERATE` set, which writes each executed notebook back instead of comparing).
"""

from __future__ import annotations

import copy
import os
import re
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from notebook_support import REPO
from process_tree import command_line, live_descendants

from tavernlab.js.kit._cache import CACHE_ENV, cache_root

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
#: Set to ``1`` in the environment to write the executed notebooks back (regenerate).
REGENERATE = "TAVERNLAB_REGENERATE_NOTEBOOKS"
#: How long a notebook's processes get to end after its kernel has shut down.
EXIT_GRACE_S = 15.0

_WORK_DIR = re.compile(r"(?:/[\w.+-]+)*/(tavernlab-\d\d)-[a-z0-9_]{8}")
_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_COMPARED = ("text/plain", "text/html", _WIDGET_VIEW)
_INTENDED = "raises-exception"
#: The provisioning widget's snapshot times its phases on the system clock (its refresh
#: thread reads the clock at wall-time intervals, so the lab's fixed clock cannot be used):
#: exactly these durations are normalised, in that widget's outputs only.
_PROVISION = re.compile(r"Worktree [a-z0-9-]+: ")
_DURATION = re.compile(r"\b(?:\d+ ms|\d+\.\d\d s|\d+ min \d+ s)\b")
#: A widget's static view is marked with a random id (its display id), in its HTML only.
_STATIC_ID = re.compile(r"\btl-static-tl[0-9a-f]{32}\b")


def normalise_text(text: str) -> str:
    """``text`` with each notebook's temporary folder replaced by ``<tavernlab-NN>``."""
    return _WORK_DIR.sub(r"<\1>", text)


def _text(value: Any) -> str:
    return normalise_text("".join(value) if isinstance(value, list) else str(value))


def _output(output: dict[str, Any]) -> dict[str, Any]:
    kind = output["output_type"]
    if kind == "stream":
        return {"type": kind, "name": output["name"], "text": _text(output["text"])}
    if kind == "error":
        return {"type": kind, "ename": output["ename"], "evalue": _text(output["evalue"])}
    data = output.get("data", {})
    shown: dict[str, Any] = {mime: _text(data[mime]) for mime in _COMPARED[:2] if mime in data}
    if "text/html" in shown:
        shown["text/html"] = _STATIC_ID.sub("tl-static-<id>", shown["text/html"])
    if _PROVISION.match(shown.get("text/plain", "")):
        shown = {mime: _DURATION.sub("<duration>", text) for mime, text in shown.items()}
    if _WIDGET_VIEW in data:
        shown[_WIDGET_VIEW] = {**data[_WIDGET_VIEW], "model_id": "<model>"}
    return {"type": kind, **shown}


def _cell_outputs(cell: nbformat.NotebookNode) -> list[dict[str, Any]]:
    """One cell's outputs, normalised: its stdout, then its stderr (each merged into one
    output: how a job's chunks are split and how the two streams interleave depends on when
    the kernel flushed them), then the other outputs in order."""
    shown = [_output(o) for o in cell.outputs]
    streams = {}
    for output in shown:
        if output["type"] == "stream":
            streams[output["name"]] = streams.get(output["name"], "") + output["text"]
    return ([{"type": "stream", "name": name, "text": streams[name]} for name in sorted(streams)]
            + [o for o in shown if o["type"] != "stream"])


def outputs(notebook: nbformat.NotebookNode) -> list[list[dict[str, Any]]]:
    """Every code cell's outputs, normalised (one list per code cell)."""
    return [_cell_outputs(cell) for cell in notebook.cells if cell.cell_type == "code"]


def _errored(notebook: nbformat.NotebookNode) -> tuple[list[str], list[str]]:
    """The ids of the cells that errored and of those tagged to error."""
    code = [c for c in notebook.cells if c.cell_type == "code"]
    return ([c.id for c in code if any(o.output_type == "error" for o in c.outputs)],
            [c.id for c in code if _INTENDED in c.metadata.get("tags", [])])


def execute(source: Path, workdir: Path) -> nbformat.NotebookNode:
    """Execute a copy of ``source`` in ``workdir`` with the settings the committed outputs
    were made with (the tavernlab kernel, no timing, errors only where tagged, each cell's
    stream outputs merged per stream as a reader wants them)."""
    notebook = nbformat.read(str(source), as_version=4)
    copied = workdir / source.name
    nbformat.write(notebook, str(copied))
    NotebookClient(notebook, timeout=120, allow_errors=False, record_timing=False,
                   kernel_name="tavernlab", coalesce_streams=True,
                   resources={"metadata": {"path": str(workdir)}}).execute()
    return notebook


def _wait_for_exit(before: set[int]) -> list[int]:
    """Processes that appeared while the notebook ran and are still alive after the grace."""
    deadline = time.monotonic() + EXIT_GRACE_S
    while (left := [p for p in live_descendants(os.getpid()) if p not in before]) \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.mark.parametrize("source", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_the_notebook_runs_and_its_outputs_are_the_committed_ones(
        source: Path, jupyter_path: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    regenerate = os.environ.get(REGENERATE) == "1"
    monkeypatch.setenv(CACHE_ENV, str(cache_root()))
    for name in ("home", "run", "tmp"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if not regenerate:  # committed outputs show the system's temporary folder
        monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    committed = nbformat.read(str(source), as_version=4)
    before = set(live_descendants(os.getpid()))
    executed = execute(source, tmp_path / "run")
    nbformat.validate(executed)
    errored, intended = _errored(executed)
    assert errored == intended
    left = _wait_for_exit(before)
    assert not left, [command_line(pid) for pid in left]
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [source.name]
    assert not list((tmp_path / "tmp").glob("tavernlab-*"))  # the notebook cleaned up
    if regenerate:
        nbformat.write(executed, str(source))
        return
    nbformat.validate(committed)
    assert outputs(executed) == outputs(committed)


def test_normalising_replaces_only_what_varies() -> None:
    text = ("Lab /tmp/tavernlab-04-s96eof27/lab and /var/tmp/x/tavernlab-01-ab_cd123/shop, "
            "not /tmp/tavernlab-04-short or run_0001")
    assert normalise_text(text) == ("Lab <tavernlab-04>/lab and <tavernlab-01>/shop, "
                                    "not /tmp/tavernlab-04-short or run_0001")
    widget = {"output_type": "display_data", "metadata": {}, "data": {
        "text/plain": "tree", _WIDGET_VIEW: {"version_major": 2, "model_id": "436ae3"}}}
    assert _output(copy.deepcopy(widget)) == {
        "type": "display_data", "text/plain": "tree",
        _WIDGET_VIEW: {"version_major": 2, "model_id": "<model>"}}
    progress = {"output_type": "display_data", "metadata": {}, "data": {
        "text/plain": "Worktree add-search: ready in 1.25 s\n  ok   deps   12 ms"}}
    assert _output(progress)["text/plain"] == ("Worktree add-search: ready in <duration>\n"
                                               "  ok   deps   <duration>")
    static = {"output_type": "display_data", "metadata": {}, "data": {
        "text/plain": "tl-static-tl" + "0" * 32, "text/html":
        f'<div class="tl-static tl-static-tl{"3f" * 16}">tl-static-tlshort</div>'}}
    assert _output(static) == {
        "type": "display_data", "text/plain": "tl-static-tl" + "0" * 32,
        "text/html": '<div class="tl-static tl-static-<id>">tl-static-tlshort</div>'}
    timeline = {"output_type": "display_data", "metadata": {}, "data": {
        "text/plain": "Round 1  (3 bars, 29 ms)"}}
    assert _output(timeline)["text/plain"] == "Round 1  (3 bars, 29 ms)"
