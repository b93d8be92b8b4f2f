"""The script kit's errors: leaves of :class:`tavernlab.errors.SandboxError`.

Defined here until :mod:`tavernlab.js.errors` exists (being created on another branch); the
lead folds them into that module. Every message is tavernlab's own wording (upstream ships
the kit inside its binary and has no such failures); callers branch on the class or ``code``.
"""

from __future__ import annotations

from tavernlab.errors import SandboxError


class KitError(SandboxError):
    """Base of the kit failures (a kit module could not be provided)."""

    code = "js.kit_error"


class KitDownloadFailed(KitError):
    """The registry could not be reached, answered with an error or sent too many bytes."""

    code = "js.kit_download_failed"


class KitIntegrityMismatch(KitError):
    """A tarball whose ``sha512`` differs from the pinned integrity; nothing was extracted."""

    code = "js.kit_integrity_mismatch"


class KitBuildFailed(KitError):
    """A verified tarball that cannot become a kit module (a missing or unsafe member, an
    import form the kit bundler refuses, exports that differ from the pins)."""

    code = "js.kit_build_failed"


class KitUnavailable(KitError):
    """A kit module that is neither cached nor obtainable now; the message names the module,
    ``tavernlab kit fetch`` and the cache directory."""

    code = "js.kit_unavailable"


class UnknownKitModule(KitError):
    """A name that is not one of the six kit modules (``tavernlab kit fetch NAME``)."""

    code = "js.kit_unknown_module"
