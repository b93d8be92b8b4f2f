"""Module graphs: tree-sitter scanning, resolution and byte-exact rewriting."""

from __future__ import annotations

from pathlib import Path

import pytest

from tavernlab.js import RUNTIME_MODULE, InputBudget, join_relative, scan_module
from tavernlab.js._builtins import BuiltinModule, BuiltinModules
from tavernlab.js._errors import ModuleLoadError
from tavernlab.js._limits import IMPORT_ATTRIBUTES, MODULE_NOT_AVAILABLE
from tavernlab.js._loaders import SnapshotModuleLoader, WorkspaceModuleLoader
from tavernlab.js._modules import build_module_graph
from tavernlab.workspace.scope import ScopedWorkspaceFs

from .conftest import write


def values(source: str) -> list[tuple[str, bool, bool]]:
    """(specifier, dynamic, attributes) of every literal site."""
    return [(s.value, s.dynamic, s.attributes) for s in scan_module(source.encode()).sites]


def test_scan_finds_static_reexport_and_literal_dynamic_imports() -> None:
    source = (
        "import a from './a.js';\n"
        "import * as b from \"../b.mjs\";\n"
        "import './side.js';\n"
        "export { x } from './x.js';\n"
        "export * from './y.js';\n"
        "export * as ns from './z.js';\n"
        "const m = await import('./dyn.js');\n"
        "const t = await import(`./tpl.js`);\n"
        "const c = await import(`./tpl${name}.js`);\n"
        "export const k = 1;\n"
    )
    assert sorted(values(source)) == sorted([
        ("./a.js", False, False), ("../b.mjs", False, False), ("./side.js", False, False),
        ("./x.js", False, False), ("./y.js", False, False), ("./z.js", False, False),
        ("./dyn.js", True, False), ("./tpl.js", True, False),
    ])


def test_scan_skips_strings_comments_templates_and_regexes() -> None:
    source = (
        "// import z from './comment.js'\n"
        "/* import('./block.js') */\n"
        "const s = \"import q from './string.js'\";\n"
        "const t = `import('./template.js')`;\n"
        "const r = /import('x.js')/;\n"
        "obj.import('./method.js');\n"
    )
    assert values(source) == []


def test_scan_decodes_escapes_in_specifiers() -> None:
    assert values("import x from './\\u0061\\x62\\u{63}.js';") == [("./abc.js", False, False)]


def test_scan_marks_import_attributes_everywhere() -> None:
    assert values("import d from './d.js' with { type: 'json' };") == [("./d.js", False, True)]
    assert values("export * from './e.js' with {type: 'json'};")[0][2] is True
    assert values("import f from './f.js' assert { type: 'json' };") == [
        ("./f.js", False, True)]
    assert values("const g = import('./g.js', { with: { type: 'json' } });") == [
        ("./g.js", True, True)]
    assert values("import h from './h.js'\nwithX();") == [("./h.js", False, False)]


def test_scan_results_are_cached_by_content() -> None:
    source = b"import a from './cached.js';"
    assert scan_module(source) is scan_module(bytes(source))


def test_join_relative_resolves_against_the_importer_directory() -> None:
    assert join_relative("/scratch/lib", "../x.js") == "/scratch/x.js"
    assert join_relative("/scratch", "./a/./b.js") == "/scratch/a/b.js"
    assert join_relative("/scratch", "/skills/s/scripts/x.js") == "/skills/s/scripts/x.js"
    assert join_relative("/scratch", "../../outside.js") is None
    assert join_relative("scripts", "../outside.js") == "outside.js"
    assert join_relative("scripts", "../../outside.js") is None


def test_graph_rewrites_specifiers_at_exact_offsets(workspace: Path,
                                                    scope: ScopedWorkspaceFs) -> None:
    write(workspace, "scratch/lib/util.js", "export const u = 1;\n")
    write(workspace, "scratch/helper.mjs", "export { u } from './lib/util.js';\n")
    entry = ("import { u } from './helper.mjs'; // './helper.mjs'\n"
             "const s = './helper.mjs';\n"
             "const m = await import('./lib/util.js');\n")
    graph = build_module_graph("/scratch/task.js", entry.encode(),
                               WorkspaceModuleLoader(scope, InputBudget()))
    assert graph.modules["/scratch/task.js"] == (
        "import { u } from \"/scratch/helper.mjs\"; // './helper.mjs'\n"
        "const s = './helper.mjs';\n"
        "const m = await import(\"/scratch/lib/util.js\");\n")
    assert graph.modules["/scratch/helper.mjs"] == (
        "export { u } from \"/scratch/lib/util.js\";\n")
    assert sorted(graph.modules) == ["/scratch/helper.mjs", "/scratch/lib/util.js",
                                     "/scratch/task.js"]


def test_graph_keeps_line_numbers_when_a_literal_spans_lines(workspace: Path,
                                                             scope: ScopedWorkspaceFs) -> None:
    write(workspace, "scratch/ab.js", "export default 1;\n")
    entry = "import x from './a\\\nb.js';\nthrow new Error('line 3');\n"
    graph = build_module_graph("/scratch/t.js", entry.encode(),
                               WorkspaceModuleLoader(scope, InputBudget()))
    rewritten = graph.modules["/scratch/t.js"]
    assert rewritten.splitlines()[2] == "throw new Error('line 3');"
    assert "\"/scratch/ab.js\"" in rewritten


@pytest.mark.parametrize(("entry", "message"), [
    ("import 'fs';", MODULE_NOT_AVAILABLE),
    ("import '@tauritavern/runtime/v1';", MODULE_NOT_AVAILABLE),
    ("import './x.js' with { type: 'json' };", IMPORT_ATTRIBUTES),
    ("import '../../outside.js';", "Cannot import `../../outside.js` from `/scratch/task.js`: "
                                   "the path escapes the workspace root."),
    ("import '/input/hidden.js';",
     "Cannot find module `/input/hidden.js` imported from `/scratch/task.js`."),
    ("import './missing.js';",
     "Cannot find module `/scratch/missing.js` imported from `/scratch/task.js`."),
    ("import './data.json';", "`/scratch/data.json` must be an explicit .js or .mjs module "
                              "path."),
    ("import './a\\\\b.js';", "Invalid workspace path `./a\\b.js`; use / separators and "
                              "workspace paths."),
    ("import './\\ud800.js';", "Invalid workspace path `./\ud800.js`; use / separators and "
                               "workspace paths."),
])
def test_static_import_failures_name_the_import_site(scope: ScopedWorkspaceFs, entry: str,
                                                     message: str) -> None:
    with pytest.raises(ModuleLoadError) as caught:
        build_module_graph("/scratch/task.js", f"\n{entry}\n".encode(),
                           WorkspaceModuleLoader(scope, InputBudget()))
    assert caught.value.message == message
    assert caught.value.stack == "    at /scratch/task.js:2:8"


def test_non_utf8_module_fails_to_load(workspace: Path, scope: ScopedWorkspaceFs) -> None:
    write(workspace, "scratch/bad.js", b"export const x = '\xff';\n")
    with pytest.raises(ModuleLoadError) as caught:
        build_module_graph("/scratch/t.js", b"import './bad.js';",
                           WorkspaceModuleLoader(scope, InputBudget()))
    assert caught.value.message == "JavaScript source must be UTF-8."


def test_dynamic_import_failures_become_throwing_stubs(scope: ScopedWorkspaceFs) -> None:
    graph = build_module_graph("/scratch/t.js", b"await import('./missing.js');",
                               WorkspaceModuleLoader(scope, InputBudget()))
    stub = next(name for name in graph.modules if name.startswith("<tavernlab:unavailable"))
    assert graph.modules["/scratch/t.js"] == f"await import(\"{stub}\");"
    assert graph.modules[stub] == ("throw new Error(\"Cannot find module `/scratch/missing.js` "
                                   "imported from `/scratch/t.js`.\");\n")


def test_module_sources_are_charged_to_the_input_budget(workspace: Path,
                                                        scope: ScopedWorkspaceFs) -> None:
    write(workspace, "scratch/big.js", "// " + "x" * 100 + "\n")
    budget = InputBudget(limit=50)
    with pytest.raises(ModuleLoadError) as caught:
        build_module_graph("/scratch/t.js", b"import './big.js';",
                           WorkspaceModuleLoader(scope, budget))
    assert caught.value.message.startswith("Shell input budget exceeded")
    assert budget.used == 0


def test_snapshot_loader_only_resolves_inside_the_scripts_snapshot() -> None:
    modules = {"scripts/main.js": "import './helper.js'; import './lib/p.js';",
               "scripts/helper.js": "export {};", "scripts/lib/p.js": "import '../helper.js';"}
    graph = build_module_graph("scripts/main.js", modules["scripts/main.js"].encode(),
                               SnapshotModuleLoader(modules))
    assert graph.modules["scripts/main.js"] == (
        "import \"scripts/helper.js\"; import \"scripts/lib/p.js\";")
    assert graph.modules["scripts/lib/p.js"] == "import \"scripts/helper.js\";"
    for source in ("import '../outside.js';", "import 'marked';", "import '/scripts/x.js';"):
        with pytest.raises(ModuleLoadError):
            build_module_graph("scripts/main.js", source.encode(),
                               SnapshotModuleLoader(modules))


# --- built-in modules with a source (how the kit joins the graph) ---------------------------


def answer_module() -> str:
    """A self-contained built-in module's source."""
    return "export default 42;\nimport './not-rewritten.js';\n"


def offline_module() -> str:
    """A built-in module whose source cannot be produced."""
    raise ModuleLoadError("kit unavailable")


SOURCED = BuiltinModules([BuiltinModule(RUNTIME_MODULE),
                          BuiltinModule("@test/answer", source=answer_module, group="test"),
                          BuiltinModule("@test/offline", source=offline_module, group="test")])


def test_a_sourced_builtin_is_registered_verbatim_and_charged_in_v5(
        scope: ScopedWorkspaceFs) -> None:
    budget = InputBudget()
    entry = b"import a from '@test/answer';\nimport b from '@test/answer';\n"
    graph = build_module_graph("/scratch/t.js", entry,
                               WorkspaceModuleLoader(scope, budget, SOURCED))
    assert graph.modules == {"@test/answer": answer_module(),
                             "/scratch/t.js": entry.decode()}
    assert budget.used == len(answer_module().encode())
    assert SOURCED.runtime_names == (RUNTIME_MODULE,)


def test_a_sourced_builtin_is_free_for_legacy_snapshots() -> None:
    modules = {"scripts/main.js": "import a from '@test/answer';"}
    graph = build_module_graph("scripts/main.js", modules["scripts/main.js"].encode(),
                               SnapshotModuleLoader(modules, SOURCED))
    assert graph.modules["@test/answer"] == answer_module()


def test_a_builtin_whose_source_fails_is_a_located_load_failure(
        scope: ScopedWorkspaceFs) -> None:
    with pytest.raises(ModuleLoadError) as caught:
        build_module_graph("/scratch/t.js", b"\nimport x from '@test/offline';",
                           WorkspaceModuleLoader(scope, InputBudget(), SOURCED))
    assert (caught.value.message, caught.value.stack) == (
        "kit unavailable", "    at /scratch/t.js:2:15")
    graph = build_module_graph("/scratch/t.js", b"await import('@test/offline');",
                               WorkspaceModuleLoader(scope, InputBudget(), SOURCED))
    stub = next(name for name in graph.modules if name.startswith("<tavernlab:unavailable"))
    assert graph.modules[stub] == 'throw new Error("kit unavailable");\n'


def test_builtin_names_are_exact(scope: ScopedWorkspaceFs) -> None:
    for specifier in ("@test/Answer", "@test/answer/lib.js", "@tauritavern/Runtime"):
        with pytest.raises(ModuleLoadError) as caught:
            build_module_graph("/scratch/t.js", f"import '{specifier}';".encode(),
                               WorkspaceModuleLoader(scope, InputBudget(), SOURCED))
        assert caught.value.message == MODULE_NOT_AVAILABLE
