"""Scripts that import the kit (docs/js-and-skills.md, "The script kit").

V5 scripts run through ``run_js_command`` (the ``js`` fixture); legacy scripts through
``run_skill_script`` and through the ``skill.run_script`` tool of a real lab. The kit comes
from the session's cache (``kit_env``), or from an empty cache with a dead or local registry.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tavernlab.skills._run_script  # noqa: F401  (registers skill.run_script)
from tavernlab.host import Lab
from tavernlab.js import (
    LEGACY_MAX_MODULES,
    InputBudget,
    SkillScriptError,
    SkillScriptRequest,
    run_skill_script,
)
from tavernlab.js.kit import KitSettings, kit_key
from tavernlab.js.kit._cache import CACHE_ENV
from tavernlab.js.kit._pins import PINS, PINS_BY_MODULE, CommonJsBuild
from tavernlab.js.kit._provider import kit_module_source
from tavernlab.js.kit._registry import REGISTRY_ENV, download_tarball

from ..conftest import JsRunner, write
from .conftest import LocalRegistry

ALL_SIX = """\
import dayjs from '@tauritavern/kit/dayjs';
import { uniq, chunk } from '@tauritavern/kit/es-toolkit';
import { XMLParser, XMLBuilder, XMLValidator } from '@tauritavern/kit/fast-xml-parser';
import { marked } from '@tauritavern/kit/marked';
import Papa from '@tauritavern/kit/papaparse';
import slugify from '@tauritavern/kit/slugify';
console.log(JSON.stringify([
  dayjs('2026-08-20').add(2, 'day').format('YYYY-MM-DD'),
  uniq([1, 1, 2]),
  new XMLParser().parse('<a><b>1</b></a>'),
  marked.parse('# Hi'),
  Papa.parse('a,b\\n1,2', {header: true}).data,
  slugify('Hello World!'),
]));
"""
EXPECTED = ('["2026-08-22",[1,2],{"a":{"b":1}},"<h1>Hi</h1>\\n",[{"a":"1","b":"2"}],'
            '"Hello-World!"]\n')

SPEC_HELP = """\
js, node, deno: run a JavaScript ES module in the workspace sandbox (QuickJS).

Usage:
  js FILE [ARG...]          run a .js/.mjs workspace file
  js -- FILE [ARG...]       same; use when FILE starts with "-"
  js - [ARG...] < FILE      read the module from stdin
  js -e SOURCE [ARG...]     run SOURCE; put -- before args that look like options
  deno run FILE [ARG...] | deno eval SOURCE [ARG...]
Examples:
  js /scratch/task.js arg1 --option 'arg with spaces'
  js -e 'console.log(process.argv)' -- --help
Arguments: everything after the entry (or after the eval source) is passed
  as strings in process.argv: [command, entry, ...args]; eval has no entry.
Files: import { workspace, context, macros, log } from '@tauritavern/runtime'
  workspace.readText/writeText/exists/listFiles use workspace-root paths
  (output/main.md); writes are immediate and are not rolled back.
  Relative imports resolve from the importing file; FILE resolves from cwd.
Context: context.worldInfo, context.variables, context.macro are frozen at
  run start; macros.render(text) expands {{macros}} once.
Output: console.log/info/debug -> stdout, console.warn/error and log.* ->
  stderr; 128 KiB per stream. Print results with JSON.stringify.
Exit: process.exitCode (integer 0-255, default 0); an uncaught error exits 1.
Built-in modules: @tauritavern/runtime and the kit: @tauritavern/kit/dayjs,
  es-toolkit, fast-xml-parser, marked, papaparse, slugify. Bundle other
  libraries into the skill (scripts/vendor/). No Node/Deno APIs, npm,
  TypeScript, network, timers or processes.
"""


def printed(js: JsRunner, source: str) -> object:
    """Run ``js -e SOURCE``; it must succeed silently on stderr; its stdout as JSON."""
    result = js("-e", source)
    assert (result.exit_code, result.stderr) == (0, "")
    return json.loads(result.stdout)


# --- V5 -------------------------------------------------------------------------------------


def test_acceptance_1_all_six_modules_in_one_script(workspace: Path, js: JsRunner,
                                                    kit_env: KitSettings) -> None:
    write(workspace, "scratch/kit.mjs", ALL_SIX)
    result = js("/scratch/kit.mjs")
    assert (result.exit_code, result.stdout, result.stderr) == (0, EXPECTED, "")


@pytest.mark.parametrize("name", ["dayjs", "papaparse", "slugify"])
def test_commonjs_libraries_export_module_exports_and_its_properties(
        js: JsRunner, kit_env: KitSettings, name: str) -> None:
    keys = printed(js, f"import * as ns from '@tauritavern/kit/{name}';\n"
                   "const own = Object.keys(ns.default).filter((k) => k !== 'default');\n"
                   "console.log(JSON.stringify([Object.keys(ns), ['default', ...own].sort(), "
                   "own.every((k) => ns[k] === ns.default[k])]));")
    assert isinstance(keys, list) and keys[0] == keys[1] and keys[2] is True
    build = PINS_BY_MODULE[f"@tauritavern/kit/{name}"].build
    assert isinstance(build, CommonJsBuild)
    assert keys[0] == sorted(["default", *build.names])


def test_fast_xml_parser_has_the_esm_entrys_exports(js: JsRunner, kit_env: KitSettings) -> None:
    assert printed(js, "import * as ns from '@tauritavern/kit/fast-xml-parser';\n"
                   "const xml = new ns.XMLBuilder().build({a: {b: 1}});\n"
                   "console.log(JSON.stringify([Object.keys(ns), xml, "
                   "ns.XMLValidator.validate('<a>'), ns.XMLValidator.validate('<a/>')]));"
                   ) == [["XMLBuilder", "XMLParser", "XMLValidator"], "<a><b>1</b></a>",
                         {"err": {"code": "InvalidTag", "col": 1, "line": 1,
                                  "msg": "Unclosed tag 'a'."}}, True]


def test_marked_and_es_toolkit_have_their_esm_exports(js: JsRunner,
                                                      kit_env: KitSettings) -> None:
    marked = printed(js, "import * as ns from '@tauritavern/kit/marked';\n"
                     "console.log(JSON.stringify(Object.keys(ns)));")
    assert marked == ["Hooks", "Lexer", "Marked", "Parser", "Renderer", "TextRenderer",
                      "Tokenizer", "defaults", "getDefaults", "lexer", "marked", "options",
                      "parse", "parseInline", "parser", "setOptions", "use", "walkTokens"]
    toolkit = printed(js, "import * as ns from '@tauritavern/kit/es-toolkit';\n"
                      "const keys = Object.keys(ns);\n"
                      "console.log(JSON.stringify([keys.length, keys.filter((k) => "
                      "ns[k] === undefined), 'default' in ns, ns.chunk([1, 2, 3], 2), "
                      "ns.camelCase('kit module'), ns.isPlainObject({})]));")
    assert toolkit == [190, [], False, [[1, 2], [3]], "kitModule", True]


def test_acceptance_2_other_kit_names_are_not_available(js: JsRunner,
                                                        kit_env: KitSettings) -> None:
    for name in ("@tauritavern/kit/lodash", "@tauritavern/kit/marked/lib.js",
                 "@tauritavern/Kit/marked"):
        result = js("-e", f"import x from '{name}';")
        assert result.exit_code == 1
        assert result.stderr.startswith(
            "js: /<eval>: This module is not available. Import a workspace .js/.mjs file or a "
            "built-in module listed in js --help.\n")


def test_js_help_lists_the_kit(js: JsRunner) -> None:
    assert js("--help").stdout == SPEC_HELP


def test_kit_bytes_count_toward_the_shell_call_input_budget(js: JsRunner,
                                                            kit_env: KitSettings) -> None:
    source = "import { marked } from '@tauritavern/kit/marked';\nconsole.log(typeof marked);"
    kit_bytes = len(kit_module_source("@tauritavern/kit/marked").encode())
    budget = InputBudget()
    result = js("-e", source, budget=budget)
    assert (result.exit_code, result.stdout) == (0, "function\n")
    assert budget.used == len(source) + kit_bytes
    tight = InputBudget(limit=len(source) + kit_bytes - 1)
    result = js("-e", source, budget=tight)
    assert result.exit_code == 1
    assert result.stderr.startswith(
        f"js: /<eval>: Shell input budget exceeded: this call would read "
        f"{len(source) + kit_bytes} bytes, over the {tight.limit}-byte limit.\n")


def test_acceptance_4_offline_without_a_cache_fails_like_a_load_failure(
        js: JsRunner, tmp_path: Path, closed_registry: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "empty"))
    monkeypatch.setenv(REGISTRY_ENV, closed_registry)
    result = js("-e", "import dayjs from '@tauritavern/kit/dayjs'")
    directory = tmp_path / "empty" / kit_key()
    assert (result.exit_code, result.stdout) == (1, "")
    first, stack = result.stderr.splitlines()
    assert first.startswith(f"js: /<eval>: Cannot load `@tauritavern/kit/dayjs`: it is not in "
                            f"the kit cache {directory} and could not be fetched. Downloading "
                            "dayjs 1.11.21 from ")
    assert first.endswith(" Run `tavernlab kit fetch` while the npm registry is reachable (or "
                          "set TAVERNLAB_KIT_CACHE to a directory that holds the kit).")
    assert stack == "    at /<eval>:1:19"
    after = js("-e", "console.log(1)")
    assert (after.exit_code, after.stdout, after.stderr) == (0, "1\n", "")
    assert not (tmp_path / "empty").exists()


def test_the_first_import_fetches_on_demand(
        js: JsRunner, tmp_path: Path, local_registry: LocalRegistry, kit_settings: KitSettings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    slugify = PINS_BY_MODULE["@tauritavern/kit/slugify"]
    local_registry.serve(slugify, download_tarball(slugify, kit_settings.registry))
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(REGISTRY_ENV, local_registry.url)
    source = "import slugify from '@tauritavern/kit/slugify';\nconsole.log(slugify('a b'));"
    assert js("-e", source).stdout == "a-b\n"
    assert js("-e", source).stdout == "a-b\n"
    assert local_registry.requests == ["/slugify/-/slugify-1.6.9.tgz"]
    assert sorted(p.name for p in (tmp_path / "cache" / kit_key()).iterdir()) == [
        "slugify.js", "slugify.json"]


def test_acceptance_5_a_tampered_tarball_fails_the_import(
        js: JsRunner, tmp_path: Path, local_registry: LocalRegistry, kit_settings: KitSettings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    slugify = PINS_BY_MODULE["@tauritavern/kit/slugify"]
    data = bytearray(download_tarball(slugify, kit_settings.registry))
    data[-10] ^= 0x20
    local_registry.serve(slugify, bytes(data))
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(REGISTRY_ENV, local_registry.url)
    result = js("-e", "import slugify from '@tauritavern/kit/slugify';")
    assert result.exit_code == 1
    assert result.stderr.startswith("js: /<eval>: The slugify 1.6.9 tarball failed its "
                                    "integrity check: expected ")
    assert not (tmp_path / "cache").exists()


# --- legacy ---------------------------------------------------------------------------------


def legacy(modules: dict[str, str]) -> SkillScriptRequest:
    """A legacy request for ``scripts/main.js`` with no workspace files."""
    return SkillScriptRequest(skill="demo", entry="scripts/main.js", modules=modules,
                              args={"text": "# Hi"}, visible_roots=("output",),
                              writable_roots=("output",))


def test_acceptance_3_a_legacy_script_imports_marked(kit_env: KitSettings) -> None:
    outcome = run_skill_script(legacy({"scripts/main.js": (
        "import { marked } from '@tauritavern/kit/marked';\n"
        "export default (args) => marked.parse(args.text);\n")}))
    assert outcome.value == "<h1>Hi</h1>\n"


def test_acceptance_3_kit_modules_are_not_skill_modules(kit_env: KitSettings) -> None:
    imports = "".join(f"import * as k{i} from '{pin.module}';\n" for i, pin in enumerate(PINS))
    helpers = {f"scripts/lib/h{i}.js": f"export const v = {i};\n"
               for i in range(LEGACY_MAX_MODULES - 1)}
    main = (imports + "".join(f"import {{ v as v{i} }} from './lib/h{i}.js';\n"
                              for i in range(LEGACY_MAX_MODULES - 1))
            + "export default () => [" + " + ".join(
                f"v{i}" for i in range(LEGACY_MAX_MODULES - 1))
            + ", k3.marked.parse('# Hi'), typeof k1.uniq];\n")
    outcome = run_skill_script(legacy({"scripts/main.js": main, **helpers}))
    assert outcome.value == [sum(range(63)), "<h1>Hi</h1>\n", "function"]
    big = {"scripts/main.js": "import * as t from '@tauritavern/kit/es-toolkit';\n"
                              "export default () => typeof t.uniq;\n",
           "scripts/pad.js": "// " + "x" * (2 * 1024 * 1024 - 200) + "\n"}
    assert run_skill_script(legacy(big)).value == "function"


def test_legacy_offline_without_a_cache_is_an_execution_failure(
        tmp_path: Path, closed_registry: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "empty"))
    monkeypatch.setenv(REGISTRY_ENV, closed_registry)
    with pytest.raises(SkillScriptError) as caught:
        run_skill_script(legacy({"scripts/main.js": (
            "import { marked } from '@tauritavern/kit/marked';\nexport default () => 1;\n")}))
    assert caught.value.code == "skill.run_script_execution_failed"
    assert caught.value.message.startswith(
        "Skill script scripts/main.js failed: Cannot load `@tauritavern/kit/marked`: it is not "
        "in the kit cache ")
    assert "tavernlab kit fetch" in caught.value.message


def test_acceptance_3_through_the_tool_with_63_own_modules(tmp_path: Path,
                                                           kit_env: KitSettings) -> None:
    package = tmp_path / "md"
    write(package, "SKILL.md", "---\nname: md\ndescription: Markdown.\n---\n# md\n")
    for i in range(LEGACY_MAX_MODULES - 2):
        write(package, f"scripts/lib/h{i}.js", f"export const v = {i};\n")
    write(package, "scripts/render.js", (
        "import { marked } from '@tauritavern/kit/marked';\n"
        "import slugify from '@tauritavern/kit/slugify';\n"
        "import { v } from './lib/h0.js';\n"
        "export default (args) => ({ html: marked.parse(args.text), slug: slugify(args.text),"
        " v });\n"))
    lab = Lab(tmp_path / "lab")
    lab.skills.install(package)
    run = lab.start_run(chat_id="alice", legacy_run_script=True)
    result = run.call_tool("skill.run_script",
                           {"skill": "md", "script": "render", "args": {"text": "# Hi there"}})
    assert not result.is_error, result.content
    assert result.structured == {"html": "<h1>Hi there</h1>\n", "slug": "Hi-there", "v": 0}
