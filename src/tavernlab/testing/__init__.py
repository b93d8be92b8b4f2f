"""A pytest plugin for skill authors: ``tavern_lab`` and ``skill_run`` (and ``assert_replays``).

Installed with tavernlab and registered through the ``pytest11`` entry point, it is off unless
a test asks for one of its fixtures (nothing is imported or started before that):

* ``tavern_lab`` - a temporary :class:`~tavernlab.Lab` with a fixed clock and sequential ids,
  so a test's runs write the same bytes every time; closed after the test.
* ``skill_run`` - ``skill_run("path/to/skill", skills=(...), legacy=False, **start_run)``
  installs the skill (and any other skill directories in ``skills``) into ``tavern_lab``,
  replacing an older copy, and returns a run with them bound. ``legacy=True`` turns on the
  ``skill.run_script`` compatibility mode.

* ``assert_replays(bundle, skills={"my-skill": "path/to/new/version"})`` - replay a recorded
  run (a ``.tavernrun`` bundle from ``run.export``) and fail with the replay report's first
  divergence unless it matches the recording byte for byte: the regression test to run before
  publishing a new version of a skill.

A ``js`` result has ``result.json()``: its stdout parsed as JSON. ``tavernlab skill test DIR``
runs a skill's ``tests/`` with this plugin. Example (what ``tavernlab skill new`` writes)::

    def test_main_prints_the_greeting_as_json(skill_run):
        run = skill_run(SKILL)
        result = run.js(["/skills/my-skill/scripts/main.js", "world"])
        assert result.json() == {"greeting": "Hello, world!"}
"""

from __future__ import annotations

from tavernlab.testing._plugin import skill_run, tavern_lab
from tavernlab.testing._replays import assert_replays

__all__ = ["assert_replays", "skill_run", "tavern_lab"]
