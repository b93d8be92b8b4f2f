"""``assert_replays``: a recorded run as a regression test (see :mod:`tavernlab.testing`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tavernlab.replay import Bundle, ReplayReport, SkillSources


def assert_replays(bundle: Bundle | str | Path, skills: SkillSources | None = None, *,
                   lab: str | Path | None = None) -> ReplayReport:
    """Replay ``bundle`` (optionally against other versions of its skills, ``{"name": path}``)
    and fail the test unless every outcome matches the recording byte for byte.

    The failure message is the report's text: the first divergence (action, call, what
    differed), the changed skills' hashes on both sides and the first divergence's unified
    diff. Returns the identical :class:`~tavernlab.replay.ReplayReport` otherwise. The replay
    layer is imported on the first call, so the plugin stays cheap for tests that never use it.
    """
    __tracebackhide__ = True
    from tavernlab.replay import replay_bundle

    report = replay_bundle(bundle, lab, skills)
    if not report.identical:
        raise AssertionError(f"the run does not replay identically\n{report}")
    return report
