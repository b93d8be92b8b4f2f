"""The run viewer that needs no kernel: one self-contained HTML page per run.

``tavernlab view RUN_ID|BUNDLE`` builds it (:func:`page_for`), writes it (``-o``) or serves it
on 127.0.0.1 (:class:`PageServer`). The page inlines the notebook's own tree and timeline views
with the run's data, then a section per round (its model call when the run recorded one, each
call's arguments, result and changed files) and a replay report when given one; see
:mod:`~tavernlab.view._page`. A bundle exported with its page (``tavernlab run export
--with-view``) carries it as ``view.html``, which the viewer then shows as it was made.

Examples::

    from tavernlab.view import page_for
    html = page_for("run.tavernrun")                # a bundle's recorded run
    html = page_for("run_…", lab="my-lab")          # a run of a lab
"""

from __future__ import annotations

import json
from pathlib import Path

from tavernlab.host import Lab
from tavernlab.replay import BUNDLE_SUFFIX, ReplayReport, read_bundle
from tavernlab.view._page import MODEL_RESPONSES, build_page, report_from_json
from tavernlab.view._serve import PageServer, serve_until_interrupted
from tavernlab.view._source import RunFiles, bundle_run, lab_run

__all__ = ["MODEL_RESPONSES", "PageServer", "RunFiles", "build_page", "page_for",
           "read_report", "serve_until_interrupted"]


def read_report(path: str | Path) -> ReplayReport:
    """A replay report saved as ``tavernlab replay --json`` prints it."""
    return report_from_json(json.loads(Path(path).read_text(encoding="utf-8")))


def page_for(source: str | Path, *, lab: Lab | None = None,
             report: ReplayReport | None = None) -> str:
    """The page of ``source``: a bundle (a path ending in ``.tavernrun``; its own
    ``view.html`` when it carries one and no ``report`` is given) or a run id of ``lab``."""
    text = str(source)
    if text.endswith(BUNDLE_SUFFIX) or Path(text).is_file():
        bundle = read_bundle(text)
        if bundle.page is not None and report is None:
            return bundle.page.decode("utf-8")
        files = bundle_run(bundle)
    else:
        if lab is None:
            raise ValueError("a run id needs the lab it belongs to")
        files = lab_run(lab, text)
    try:
        return build_page(files, report)
    finally:
        files.close()
