"""The kit's ES module bundler (:mod:`tavernlab.js.kit._bundle`), run in the real sandbox.

Each bundle is written to a workspace file and imported by a ``js -e`` script, so the
engine itself checks what the bundler produced.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tavernlab.js._errors import KitBuildFailed
from tavernlab.js.kit._bundle import bundle_esm, export_name

from ..conftest import JsRunner, write

TRACE = "globalThis.order = [...(globalThis.order ?? []), {name}];\n"

GRAPH = {
    "index.mjs": (
        TRACE.format(name='"index"')
        + "import { a } from './a.mjs';\n"
        "import def, * as bns from './b.mjs';\n"
        "export { a, def as bDefault };\n"
        "export { b1 as renamed } from './b.mjs';\n"
        "export * from './c.mjs';\n"
        "export * from './d.mjs';\n"
        "export * as eNs from './e.mjs';\n"
        "export const k = bns.b1 + 1;\n"
        "export function f() { return hoisted(); }\n"
        "function hoisted() { return a; }\n"
        "export default class Thing {}\n"),
    "a.mjs": TRACE.format(name='"a"') + "export const a = 'A';\n",
    "b.mjs": (TRACE.format(name='"b"') + "export const b1 = 1;\n"
              "export default function () { return 'B'; }\n"),
    "c.mjs": (TRACE.format(name='"c"') + "export const shared = 'c';\n"
              "export { same } from './lib/e.mjs';\nexport const onlyC = 'c';\n"),
    "d.mjs": (TRACE.format(name='"d"') + "export const shared = 'd';\n"
              "export { same } from './e.mjs';\n"),
    "e.mjs": "export { same } from './lib/e.mjs';\n",
    "lib/e.mjs": TRACE.format(name='"lib/e"') + "export const same = 'e';\n",
}


def files(mapping: dict[str, str]) -> dict[str, bytes]:
    """Package files as bytes."""
    return {path: text.encode() for path, text in mapping.items()}


def evaluate(workspace: Path, js: JsRunner, source: str, expression: str) -> object:
    """Import ``source`` as ``ns`` in the sandbox and return ``expression`` (JSON)."""
    write(workspace, "scratch/bundle.js", source)
    result = js("-e", "import * as ns from '/scratch/bundle.js';\n"
                f"console.log(JSON.stringify({expression}));")
    assert (result.exit_code, result.stderr) == (0, "")
    return json.loads(result.stdout)


def test_a_graph_keeps_exports_bindings_and_evaluation_order(workspace: Path,
                                                            js: JsRunner) -> None:
    bundle = bundle_esm(files(GRAPH), "index.mjs", "pkg")
    names = ["a", "bDefault", "default", "eNs", "f", "k", "onlyC", "renamed", "same"]
    assert (bundle.names, bundle.files) == (tuple(names), 7)
    value = evaluate(workspace, js, bundle.source, (
        "{keys: Object.keys(ns), order: globalThis.order, a: ns.a, b: ns.bDefault(), "
        "thing: [typeof ns.default, ns.default.name], e: ns.eNs.same, f: ns.f(), k: ns.k, "
        "onlyC: ns.onlyC, renamed: ns.renamed, same: ns.same}"))
    assert value == {
        "keys": names, "order": ["a", "b", "lib/e", "c", "d", "index"], "a": "A", "b": "B",
        "thing": ["function", "Thing"], "e": "e", "f": "A", "k": 2, "onlyC": "c",
        "renamed": 1, "same": "e"}


def test_one_module_without_imports_is_returned_unchanged() -> None:
    source = "const x = 1;\nexport { x as y };\nexport default x;\n"
    bundle = bundle_esm(files({"m.mjs": source}), "m.mjs", "pkg")
    assert (bundle.source, bundle.names, bundle.files) == (source, ("default", "y"), 1)


def test_an_exported_var_that_is_never_reassigned_is_accepted(workspace: Path,
                                                              js: JsRunner) -> None:
    graph = {"index.mjs": "import { K } from './k.mjs';\nexport { K };\n",
             "k.mjs": "var K = class {};\nexport { K };\n"}
    bundle = bundle_esm(files(graph), "index.mjs", "pkg")
    assert evaluate(workspace, js, bundle.source, "typeof ns.K") == "function"


DEP = "import { x } from './dep.mjs';\nexport { x };\n"


@pytest.mark.parametrize(("graph", "message"), [
    ({"index.mjs": "import { x } from './a.mjs';\nexport { x };\n",
      "a.mjs": "import './index.mjs';\nexport const x = 1;\n"},
     "The kit cannot bundle pkg's `index.mjs`: it is part of an import cycle."),
    ({"index.mjs": "import x from 'lodash';\nexport { x };\n"},
     "The kit cannot bundle pkg's `index.mjs`: it imports `lodash`, outside the package."),
    ({"index.mjs": "import x from '../up.mjs';\nexport { x };\n"},
     "The kit cannot bundle pkg's `index.mjs`: it imports `../up.mjs`, outside the package."),
    ({"index.mjs": DEP}, "The pkg package has no file `dep.mjs`."),
    ({"index.mjs": DEP, "dep.mjs": "export let x = 1;\nexport function bump() { x++; }\n"},
     "The kit cannot bundle pkg's `dep.mjs`: it reassigns the exported binding `x`."),
    ({"index.mjs": DEP, "dep.mjs": "export const x = import.meta.url;\n"},
     "The kit cannot bundle pkg's `dep.mjs`: it uses import.meta."),
    ({"index.mjs": DEP, "dep.mjs": "export const x = () => import('./other.mjs');\n"},
     "The kit cannot bundle pkg's `dep.mjs`: it uses a dynamic import()."),
    ({"index.mjs": DEP, "dep.mjs": "export const x = await Promise.resolve(1);\n"},
     "The kit cannot bundle pkg's `dep.mjs`: it uses a top-level await."),
    ({"index.mjs": DEP, "dep.mjs": "const __kit_m0 = 1;\nexport const x = __kit_m0;\n"},
     "The kit cannot bundle pkg's `dep.mjs`: it contains the bundler's prefix `__kit_`."),
    ({"index.mjs": "import { nope } from './dep.mjs';\nexport { nope };\n",
      "dep.mjs": "export const x = 1;\n"},
     "The kit cannot bundle pkg's `index.mjs`: `dep.mjs` does not export `nope`."),
    ({"index.mjs": "import x from './dep.json' with { type: 'json' };\nexport { x };\n"},
     "The kit cannot bundle pkg's `index.mjs`: an import has attributes or no literal "
     "source."),
    ({"index.mjs": "export const { x } = { x: 1 };\n"},
     "The kit cannot bundle pkg's `index.mjs`: it exports a destructuring declaration."),
    ({"index.mjs": "const a = 1;\nexport { a as 'x-y' };\n"},
     "The kit cannot bundle pkg's `index.mjs`: it uses a string-named import or export."),
    ({"index.mjs": "export const = ;\n"},
     "The kit cannot bundle pkg's `index.mjs`: it does not parse as JavaScript."),
])
def test_refusals(graph: dict[str, str], message: str) -> None:
    with pytest.raises(KitBuildFailed) as caught:
        bundle_esm(files(graph), "index.mjs", "pkg")
    assert (caught.value.code, caught.value.message) == ("js.kit_build_failed", message)


def test_export_names_are_identifiers_or_string_literals() -> None:
    assert [export_name(n) for n in ("uniq", "default", "$x_1", "a-b", "délai", "1a")] == [
        "uniq", "default", "$x_1", '"a-b"', '"d\\u00e9lai"', '"1a"']
