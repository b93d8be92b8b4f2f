"""Record and replay: export a run, replay it elsewhere, verify it byte for byte, replay it
against another version of a skill, replay a corpus at once.

* ``run.export(path)`` / :func:`export_run` writes one ``.tavernrun`` bundle
  (:mod:`~tavernlab.replay._manifest` describes the format, :mod:`~tavernlab.replay._export`
  what is refused).
* :func:`replay` (``tavernlab.replay.replay(bundle, lab=None, skills=None, live=None)``)
  plays the bundle's actions (or, for a run the agent loop drove, runs the loop again with
  the recorded model responses) in a fresh lab with the recorded clock and ids and returns
  a :class:`ReplayReport`
  (:mod:`~tavernlab.replay._compare` says what is compared). ``skills={"name": path}`` plays
  the same actions against another version of a bound skill; the report names both hashes.
* :func:`replay_many` replays many bundles on any :class:`concurrent.futures.Executor`.
* :class:`Replay` splits a replay into prepare / play (one action at a time) /
  verify, which is what a notebook generated from a run uses.

Importing it registers :func:`export_run` as the ``run.export`` presenter of the host
(:mod:`tavernlab.host._presentation`).
"""

from __future__ import annotations

from pathlib import Path

from tavernlab.host import register_presenter
from tavernlab.models import ModelProvider
from tavernlab.replay._bundle import (
    BUNDLE_SUFFIX,
    MAX_BUNDLE_BYTES,
    MAX_MEMBER_BYTES,
    MAX_MEMBERS,
    Bundle,
    read_bundle,
)
from tavernlab.replay._errors import OutputExists
from tavernlab.replay._export import export_run
from tavernlab.replay._manifest import FORMAT_VERSION
from tavernlab.replay._many import ReplaySummary, replay_many
from tavernlab.replay._play import replay_bundle
from tavernlab.replay._replaying import Replay, SkillSources
from tavernlab.replay._report import (
    Divergence,
    LiveContinuation,
    RecordedModelCall,
    ReplayReport,
    SkillVersions,
    report_html,
)
from tavernlab.replay._walkthrough import write_notebook

__all__ = [
    "BUNDLE_SUFFIX",
    "FORMAT_VERSION",
    "MAX_BUNDLE_BYTES",
    "MAX_MEMBERS",
    "MAX_MEMBER_BYTES",
    "Bundle",
    "Divergence",
    "LiveContinuation",
    "OutputExists",
    "RecordedModelCall",
    "Replay",
    "ReplayReport",
    "ReplaySummary",
    "SkillSources",
    "SkillVersions",
    "export_run",
    "read_bundle",
    "replay",
    "replay_bundle",
    "replay_many",
    "report_html",
    "write_notebook",
]


def replay(bundle: Bundle | str | Path, lab: str | Path | None = None,
           skills: SkillSources | None = None, live: ModelProvider | None = None
           ) -> ReplayReport:
    """Replay a bundle and compare every outcome with the recording.

    ``bundle`` is a path or a :class:`Bundle`; ``lab`` a new or empty directory to replay in
    (kept afterwards, and named in the report); by default a temporary lab is used and
    removed. ``skills`` maps a bound skill's name to another version of it (a directory or
    ZIP) to replay the same actions against. A run the agent loop drove is replayed by
    running the loop again with its recorded model responses
    (:mod:`~tavernlab.replay._model_runs`); against a changed skill its model requests are
    compared too, and ``live`` (a model provider) continues from the first one that differs
    as a new run (the lab is then kept). Returns the :class:`ReplayReport`.
    """
    return replay_bundle(bundle, lab, skills, live)


register_presenter("run.export", export_run)
