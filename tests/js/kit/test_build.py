"""Building a kit module from package files: the CommonJS wrapper and the ESM recipe."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tavernlab.js._errors import KitBuildFailed
from tavernlab.js.kit import KitPin
from tavernlab.js.kit._build import build_module
from tavernlab.js.kit._pins import PINS_BY_MODULE, CommonJsBuild, EsmBuild

from ..conftest import JsRunner, write

SLUGIFY = PINS_BY_MODULE["@tauritavern/kit/slugify"]
UMD = ("(function (root, factory) {\n"
       "  if (typeof module === 'object' && typeof exports === 'object') {\n"
       "    module.exports = factory();\n"
       "  } else { root.lib = factory(); }\n"
       "}(this, function () {\n"
       "  function lib(s) { return s.toUpperCase(); }\n"
       "  lib.twice = (s) => s + s;\n"
       "  lib['not-an-identifier'] = 3;\n"
       "  return lib;\n"
       "}));\n")


def cjs_pin(names: tuple[str, ...] = ("twice", "not-an-identifier"), *, default: bool = True,
            esm_entry: str | None = None) -> KitPin:
    """The slugify pin with a CommonJS recipe over ``lib.js``."""
    recipe = CommonJsBuild("lib.js", names=names, default=default, esm_entry=esm_entry)
    return dataclasses.replace(SLUGIFY, build=recipe)


def test_module_exports_is_the_default_and_the_pinned_properties_are_named(
        workspace: Path, js: JsRunner) -> None:
    built = build_module(cjs_pin(), {"lib.js": UMD.encode()})
    assert (built.names, built.entry, built.files) == (
        ("default", "not-an-identifier", "twice"), "lib.js", 1)
    write(workspace, "scratch/lib.js", built.source)
    result = js("-e", "import lib, * as ns from '/scratch/lib.js';\n"
                "console.log(JSON.stringify([lib('a'), ns.twice('b'), ns['not-an-identifier'], "
                "Object.keys(ns), ns.default === lib, typeof module]));")
    assert (result.exit_code, result.stderr) == (0, "")
    assert json.loads(result.stdout) == [
        "A", "bb", 3, ["default", "not-an-identifier", "twice"], True, "undefined"]


def test_the_wrapper_keeps_the_files_line_numbers(workspace: Path, js: JsRunner) -> None:
    source = "module.exports = {};\n\nthrow new Error('line three');\n"
    built = build_module(cjs_pin(names=()), {"lib.js": source.encode()})
    write(workspace, "scratch/lib.js", built.source)
    result = js("-e", "import '/scratch/lib.js';")
    assert result.exit_code == 1
    assert "Error: line three" in result.stderr and "/scratch/lib.js:3" in result.stderr


def test_without_default_only_the_named_exports_remain(workspace: Path, js: JsRunner) -> None:
    built = build_module(cjs_pin(names=("twice",), default=False),
                         {"lib.js": UMD.encode()})
    write(workspace, "scratch/lib.js", built.source)
    result = js("-e", "import * as ns from '/scratch/lib.js';\n"
                "console.log(JSON.stringify(Object.keys(ns)));")
    assert (result.exit_code, result.stdout) == (0, '["twice"]\n')


def test_the_esm_entry_must_export_the_pinned_names() -> None:
    files = {"lib.js": UMD.encode(), "esm.js": b"export const twice = 1, thrice = 2;\n"}
    pin = cjs_pin(names=("twice",), default=False, esm_entry="esm.js")
    with pytest.raises(KitBuildFailed) as caught:
        build_module(pin, files)
    assert caught.value.message == ("The slugify 1.6.9 ESM entry `esm.js` exports thrice, "
                                    "twice, not the pinned twice.")


def test_a_missing_file_is_named() -> None:
    with pytest.raises(KitBuildFailed) as caught:
        build_module(cjs_pin(), {})
    assert caught.value.message == "The slugify 1.6.9 tarball has no `lib.js`."


def test_an_esm_recipe_starts_with_the_provenance_comment_on_line_one() -> None:
    pin = dataclasses.replace(SLUGIFY, build=EsmBuild("m.mjs"))
    built = build_module(pin, {"m.mjs": b"export const x = 1;\n"})
    assert built.source == (f"/* @tauritavern/kit/slugify: slugify 1.6.9 (m.mjs), "
                            f"{SLUGIFY.integrity}; built by tavernlab */ export const x = 1;\n")
