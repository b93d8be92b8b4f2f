"""The record-and-replay error family (codes are tavernlab's: upstream has no replay).

* ``replay.run_not_exportable`` - the run cannot become a bundle that replays byte for byte
  (a Session run, a system clock or random ids, an action still in flight, a skill changed
  since the run bound it, a file that is not a regular file). Nothing was written.
* ``replay.bundle_too_large`` - the bundle would exceed (or a bundle read exceeds) the size
  limits of :mod:`tavernlab.replay._bundle`.
* ``replay.bundle_invalid`` - a bundle that is not a readable ``.tavernrun``: a bad ZIP, a
  refused entry (escaping path, symlink, oversized member, compression ratio), a member whose
  bytes do not match their digest (the member is named), a manifest path that would leave the
  lab.
* ``replay.bundle_version_unsupported`` - a bundle written by a newer format version.
* ``replay.setup_failed`` - the replay lab could not be prepared: a lab directory that is not
  empty, a replacement skill that is not the skill the run bound, a run the agent loop drove
  asked to be played action by action, a live model for a run played by hand; a replay
  closed before it was verified.
* ``replay.output_exists`` - a file to write (a notebook made from a run) exists already and
  replacing it was not asked for.

A replayed model-driven run whose model request differs from the recorded one ends with
``replay.model_request_diverged`` in its failure payload (a model call error, not an
exception of the replay: :mod:`tavernlab.replay._model_runs`).
"""

from __future__ import annotations

from tavernlab.errors import ReplayError

__all__ = ["BundleInvalid", "BundleTooLarge", "BundleVersionUnsupported", "OutputExists",
           "ReplayError", "ReplaySetupError", "RunNotExportable"]


class RunNotExportable(ReplayError):
    """The run cannot be exported as a bundle that replays exactly; nothing was written."""

    code = "replay.run_not_exportable"


class BundleTooLarge(ReplayError):
    """A bundle over the documented size limits."""

    code = "replay.bundle_too_large"


class BundleInvalid(ReplayError):
    """A bundle that cannot be read or fails verification (the message names the member)."""

    code = "replay.bundle_invalid"


class BundleVersionUnsupported(ReplayError):
    """A bundle from a newer format version than this tavernlab reads."""

    code = "replay.bundle_version_unsupported"


class ReplaySetupError(ReplayError):
    """The replay lab could not be prepared."""

    code = "replay.setup_failed"


class OutputExists(ReplayError):
    """A file to write exists and ``--force`` was not given; nothing was written."""

    code = "replay.output_exists"
