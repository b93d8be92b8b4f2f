"""The six kit libraries, pinned: exact version, tarball, integrity and how each is built.

See docs/js-and-skills.md. The ``integrity`` of each pin is the npm registry's published
``dist.integrity`` of that exact version (``npm view <pkg>@<version> dist.integrity``); a
tarball whose SHA-512 differs is refused before anything is extracted. ``tarball`` is the
registry's ``dist.tarball``; a mirror registry serves the same path under its own base URL.

How each library becomes one ES module (tavernlab choices, from the tarballs' contents):

* ``marked``: its published single-file ESM ``lib/marked.esm.js``, unchanged (it imports
  nothing).
* ``es-toolkit``: its published ESM entry ``dist/index.mjs`` with the 200-odd relative modules
  it imports, bundled into one module by :mod:`tavernlab.js.kit._bundle`. Its single-file
  ``dist/browser.global.js`` is not used: it is the lodash-compatible ``compat`` superset, a
  different API from the ESM entry.
* ``dayjs``, ``papaparse``, ``slugify``: published only as UMD/CommonJS (no ``module`` or
  ``exports`` entry), so ``module.exports`` is the default export and its enumerable own
  properties are the named exports (``CommonJsBuild.names``). The names are listed here, not
  guessed: they are what evaluating the pinned file in jsbox gives (tavernlab's test suite
  evaluates the built module and checks the list). slugify also sets ``module.exports.default``
  (a second instance); that property is not re-exported because the default export slot
  already holds ``module.exports`` itself.
* ``fast-xml-parser``: its ESM entry ``src/fxp.js`` imports six other npm packages by bare
  name, so the kit uses the package's own self-contained CommonJS build ``lib/fxp.cjs`` of the
  same version, exporting exactly the names of the ESM entry (``XMLParser``, ``XMLValidator``,
  ``XMLBuilder``, no default). The build checks those names against the ESM entry's static
  exports.

Bump a version only together with its integrity, tarball and recipe; the cache key
(:func:`kit_key`) changes with them, so an old cache is never read for new pins.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

#: The registry the pins were taken from (``dist.tarball`` URLs start with it).
DEFAULT_REGISTRY = "https://registry.npmjs.org/"
#: Version of the build recipe; part of the cache key so a changed builder rebuilds.
BUILD_FORMAT = 1
#: Prefix of every kit module name.
KIT_PREFIX = "@tauritavern/kit/"


@dataclass(frozen=True, slots=True)
class EsmBuild:
    """Bundle the ES module ``entry`` (a path inside the package) and its relative imports."""

    entry: str


@dataclass(frozen=True, slots=True)
class CommonJsBuild:
    """Evaluate the UMD/CommonJS file ``file`` with ``module``/``exports`` in a function scope.

    ``names`` are the named exports (properties of ``module.exports``); ``default`` says
    whether ``module.exports`` is the default export; ``esm_entry`` (optional) is the
    package's ESM entry whose static export names must equal ``names`` (+ ``default``).
    """

    file: str
    names: tuple[str, ...]
    default: bool = True
    esm_entry: str | None = None


@dataclass(frozen=True, slots=True)
class KitPin:
    """One kit library: its module name and the exact package it is built from."""

    module: str
    package: str
    version: str
    tarball: str
    integrity: str
    build: EsmBuild | CommonJsBuild
    #: Largest tarball accepted from the registry (the real one is well below).
    max_tarball_bytes: int = 4 * 1024 * 1024

    @property
    def name(self) -> str:
        """The short name after ``@tauritavern/kit/`` (``dayjs``); also the cache file stem."""
        return self.module.removeprefix(KIT_PREFIX)

    def tarball_url(self, registry: str) -> str:
        """The tarball's URL on ``registry`` (the pinned URL on the default registry)."""
        path = self.tarball.removeprefix(DEFAULT_REGISTRY)
        return registry.rstrip("/") + "/" + path


PINS: tuple[KitPin, ...] = (
    KitPin(
        module="@tauritavern/kit/dayjs", package="dayjs", version="1.11.21",
        tarball="https://registry.npmjs.org/dayjs/-/dayjs-1.11.21.tgz",
        integrity="sha512-98IT+HOahAisibz/yjKbzuOBwYcjJ7BCLPzARyHiyEBmRz4fatF+KPJszEHXsGYjUG234aH"
                  "/cOjW1wwTbKUZlA==",
        build=CommonJsBuild("dayjs.min.js",
                            names=("extend", "locale", "isDayjs", "unix", "en", "Ls", "p")),
    ),
    KitPin(
        module="@tauritavern/kit/es-toolkit", package="es-toolkit", version="1.50.0",
        tarball="https://registry.npmjs.org/es-toolkit/-/es-toolkit-1.50.0.tgz",
        integrity="sha512-OyZKhUVvEep9ITEiwHn8GKnMRQIVqoSIX7WnRbkWgJkllCujilqP2rD0u979tkl8wqyc8IC"
                  "wlc1UBVv/Sl1G6w==",
        build=EsmBuild("dist/index.mjs"),
        max_tarball_bytes=8 * 1024 * 1024,
    ),
    KitPin(
        module="@tauritavern/kit/fast-xml-parser", package="fast-xml-parser", version="5.10.1",
        tarball="https://registry.npmjs.org/fast-xml-parser/-/fast-xml-parser-5.10.1.tgz",
        integrity="sha512-IEMIf7298kXuZSRFoGfMYrl7is8LpavODgbNz1cwIudv7KwVFnuU+UsMporfq6PD6aXSla"
                  "wZlARiA3UywCTfMw==",
        build=CommonJsBuild("lib/fxp.cjs", names=("XMLParser", "XMLValidator", "XMLBuilder"),
                            default=False, esm_entry="src/fxp.js"),
    ),
    KitPin(
        module="@tauritavern/kit/marked", package="marked", version="18.0.9",
        tarball="https://registry.npmjs.org/marked/-/marked-18.0.9.tgz",
        integrity="sha512-/Sa4qiiHZxf0/FQdBBowr9q4r10krCwMvpK48FUBdXdUXScDxiQGR9zCPrFgRVR5LU3iyS"
                  "OiIjy09ZQvADir1w==",
        build=EsmBuild("lib/marked.esm.js"),
    ),
    KitPin(
        module="@tauritavern/kit/papaparse", package="papaparse", version="5.6.0",
        tarball="https://registry.npmjs.org/papaparse/-/papaparse-5.6.0.tgz",
        integrity="sha512-N2vuNQAYGK1/4vs6HJX86+VYU6OkiSTgdJz3JQfTk1y51cFCO/U8gnaeTF4iNE4r57Tt0s"
                  "V47dUua1/19pxO6Q==",
        build=CommonJsBuild("papaparse.js", names=(
            "parse", "unparse", "RECORD_SEP", "UNIT_SEP", "BYTE_ORDER_MARK", "BAD_DELIMITERS",
            "WORKERS_SUPPORTED", "NODE_STREAM_INPUT", "LocalChunkSize", "RemoteChunkSize",
            "DefaultDelimiter", "Parser", "ParserHandle", "NetworkStreamer", "FileStreamer",
            "StringStreamer", "ReadableStreamStreamer", "DuplexStreamStreamer")),
    ),
    KitPin(
        module="@tauritavern/kit/slugify", package="slugify", version="1.6.9",
        tarball="https://registry.npmjs.org/slugify/-/slugify-1.6.9.tgz",
        integrity="sha512-vZ7rfeehZui7wQs438JXBckYLkIIdfHOXsaVEUMyS5fHo1483l1bMdo0EDSWYclY0yZKFO"
                  "ipDy4KHuKs6ssvdg==",
        build=CommonJsBuild("slugify.js", names=("extend",)),
    ),
)

#: Module name -> pin, for exact-name lookups (``@tauritavern/Kit/marked`` is not a kit name).
PINS_BY_MODULE: dict[str, KitPin] = {pin.module: pin for pin in PINS}
#: The six module names, in the order ``js --help`` lists them.
KIT_MODULES: tuple[str, ...] = tuple(pin.module for pin in PINS)


def kit_key(pins: tuple[KitPin, ...] = PINS) -> str:
    """The cache key of a set of pins: ``<BUILD_FORMAT>-<16 hex of their SHA-256>``.

    Every field of every pin goes in, so two tavernlab versions with different pins (or a
    different builder) never share a directory.
    """
    payload = json.dumps([BUILD_FORMAT, [repr(pin) for pin in pins]]).encode("utf-8")
    return f"{BUILD_FORMAT}-{hashlib.sha256(payload).hexdigest()[:16]}"

