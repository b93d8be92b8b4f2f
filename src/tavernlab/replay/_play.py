"""Which replay a bundle gets: a run played by hand is played again action by action
(:class:`~tavernlab.replay.Replay`); a run the agent loop drove is replayed by
running the loop again against the recorded model (:mod:`tavernlab.replay._model_runs`)."""

from __future__ import annotations

from pathlib import Path

from tavernlab.models import ModelProvider
from tavernlab.replay._bundle import Bundle, read_bundle
from tavernlab.replay._errors import ReplaySetupError
from tavernlab.replay._model_runs import replay_model_run
from tavernlab.replay._replaying import Replay, SkillSources
from tavernlab.replay._report import ReplayReport


def replay_bundle(bundle: Bundle | str | Path, lab: str | Path | None = None,
                  skills: SkillSources | None = None, live: ModelProvider | None = None
                  ) -> ReplayReport:
    """Prepare, play every action, verify, close: see :func:`tavernlab.replay.replay`. A
    run driven by the agent loop is replayed by running the loop again
    (:mod:`tavernlab.replay._model_runs`)."""
    loaded = bundle if isinstance(bundle, Bundle) else read_bundle(bundle)
    if loaded.manifest.agent is not None:
        return replay_model_run(loaded, lab, skills, live)
    if live is not None:
        raise ReplaySetupError("a live model can only continue a run the agent loop drove; "
                               "this bundle's run was played by hand")
    with Replay.prepare(loaded, lab, skills) as replay:
        replay.play()
        return replay.verify()
