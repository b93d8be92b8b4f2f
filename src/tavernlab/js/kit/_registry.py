"""Download a pinned tarball from the npm registry (standard library ``urllib`` only).

The registry's base URL comes from, in order: ``$TAVERNLAB_NPM_REGISTRY``,
``$npm_config_registry`` / ``$NPM_CONFIG_REGISTRY`` (what ``npm`` itself reads from the
environment), else ``https://registry.npmjs.org/``. A mirror serves the tarball at the same
path as the public registry (``<base>/<pkg>/-/<pkg>-<version>.tgz``). The usual
``https_proxy``/``no_proxy`` variables apply, as they do for every ``urllib`` request.

Bounds (tavernlab choices): each socket operation times out after
:data:`DOWNLOAD_TIMEOUT` seconds, the whole download after :data:`DOWNLOAD_DEADLINE` seconds
(a registry that trickles bytes cannot keep a ``js`` job, or the jobs waiting for the same
library, waiting for ever), and a body larger than the pin's ``max_tarball_bytes`` is
refused (the ``Content-Length`` is checked first, then the bytes actually read).
"""

from __future__ import annotations

import http.client
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping

from tavernlab.js._errors import KitDownloadFailed
from tavernlab.js.kit._pins import DEFAULT_REGISTRY, KitPin

#: Environment variable naming the registry base URL (wins over npm's own variables).
REGISTRY_ENV = "TAVERNLAB_NPM_REGISTRY"
#: npm's own environment spellings of its ``registry`` setting.
NPM_REGISTRY_ENVS = ("npm_config_registry", "NPM_CONFIG_REGISTRY")
#: Seconds each connect/read may take.
DOWNLOAD_TIMEOUT = 30.0
#: Seconds the whole download may take.
DOWNLOAD_DEADLINE = 120.0
_CHUNK = 64 * 1024

#: ``progress(received, total)`` after each chunk; ``total`` is ``None`` without a length.
DownloadProgress = Callable[[int, int | None], None]


def registry_url(environ: Mapping[str, str] | None = None) -> str:
    """The registry base URL chosen by the environment (see the module docstring)."""
    env = os.environ if environ is None else environ
    for name in (REGISTRY_ENV, *NPM_REGISTRY_ENVS):
        value = env.get(name, "").strip()
        if value:
            return value
    return DEFAULT_REGISTRY


def download_tarball(pin: KitPin, registry: str,
                     progress: DownloadProgress | None = None) -> bytes:
    """The tarball bytes of ``pin`` from ``registry``; raises :class:`KitDownloadFailed`."""
    url = pin.tarball_url(registry)
    deadline = time.monotonic() + DOWNLOAD_DEADLINE
    request = urllib.request.Request(url, headers={"User-Agent": "tavernlab-kit"})
    try:
        with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT) as response:
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            if total is not None and total > pin.max_tarball_bytes:
                raise _too_large(pin, url)
            chunks: list[bytes] = []
            received = 0
            while chunk := response.read1(_CHUNK):  # one receive: the deadline is checked
                if time.monotonic() > deadline:
                    raise KitDownloadFailed(
                        f"Downloading {pin.package} {pin.version} from {url} failed: it took "
                        f"longer than {DOWNLOAD_DEADLINE:g} seconds.", package=pin.package)
                received += len(chunk)
                if received > pin.max_tarball_bytes:
                    raise _too_large(pin, url)
                chunks.append(chunk)
                if progress is not None:
                    progress(received, total)
    except urllib.error.HTTPError as exc:
        raise KitDownloadFailed(f"Downloading {pin.package} {pin.version} from {url} failed: "
                                f"HTTP {exc.code} {exc.reason}.", package=pin.package) from None
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        raise KitDownloadFailed(f"Downloading {pin.package} {pin.version} from {url} failed: "
                                f"{reason}.", package=pin.package) from None
    return b"".join(chunks)


def _too_large(pin: KitPin, url: str) -> KitDownloadFailed:
    return KitDownloadFailed(f"Downloading {pin.package} {pin.version} from {url} failed: the "
                             f"response exceeds {pin.max_tarball_bytes} bytes.",
                             package=pin.package)
