"""A shared recording never runs code: ``tavernlab notebook from-run`` copies every recorded
value into its cells as data, and the notebook, executed by nbclient in the real tavernlab
kernel, creates nothing outside its lab and plays back exactly what was recorded.

Each case records a run whose free-form inputs (shell commands, workdirs, tool ids, tool
arguments, js argv, eval names, stdin, finish reasons) carry payloads that would run on the
host if they reached a cell as code: ``!touch`` and ``%system`` lines, ``open(...)`` calls,
``{...}`` and ``$name`` expansions, quotes and triple quotes, backslashes, NUL, lone
surrogates, prompt-like lines and a megabyte of text. Ids, which are checked where they enter
(``run.call_tool(call_id=...)``), are injected by editing the bundle on disk; the generator
refuses such a bundle with one line. Every generated notebook is also checked without a
kernel: after IPython's own input transformation, the payload's marker appears only inside
string constants (never in code or comments), and the only IPython calls are the
``ws_shell``, ``js`` and ``config`` magics.
"""

from __future__ import annotations

import ast
import base64
import io
import json
import os
import shlex
import shutil
import tokenize
from collections.abc import Callable, Iterator
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager
from nbclient import NotebookClient

from tavernlab.cli import main
from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.errors import InvalidData
from tavernlab.host import Lab, Run
from tavernlab.replay import Bundle, read_bundle
from tavernlab.replay._bundle import sha256_of
from tavernlab.replay._walkthrough import notebook_from_bundle

KERNEL_SPEC = Path(__file__).resolve().parents[2] / "kernel-spec" / "tavernlab"
#: The word every payload carries, so that a generated cell can be searched for it.
MARKER = "PWNED"
MAGICS = {"ws_shell", "js", "config"}


@pytest.fixture(scope="module")
def jupyter_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The tavernlab kernel from ``kernel-spec/``, first on ``JUPYTER_PATH``."""
    root = tmp_path_factory.mktemp("jupyter-path")
    shutil.copytree(KERNEL_SPEC, root / "kernels" / "tavernlab")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", os.pathsep.join(
            [str(root), *filter(None, [os.environ.get("JUPYTER_PATH")])]))
        yield root


def _sentinel(tmp_path: Path) -> Path:
    """The file a payload that ran on the host would create (outside every lab)."""
    return tmp_path / f"{MARKER}-sentinel"


def _payload(sentinel: Path) -> str:
    """Lines that create ``sentinel`` when they run as Python, as IPython input or as a host
    shell command, plus every quoting character and IPython's other escapes (help requests,
    autocall quoting)."""
    path = str(sentinel)
    return (f"{MARKER}\n!touch {path}\n%system touch {path}\nopen({path!r}, 'w').close()\n"
            f"{{__import__('pathlib').Path({path!r}).touch()}} $HOME ''' \"\"\" \\ ' \" #\n"
            f"?open\n/print {path}\n;print {path}\n,print {path}\nopen??")


def _record(tmp_path: Path, play: Callable[[Run], None]) -> Path:
    """Record ``play`` in a deterministic lab and export the run."""
    with Lab(tmp_path / "recorded", clock=FixedClock(), ids=SequentialIds("hostile")) as lab:
        run = lab.start_run(chat_id="mallory")
        play(run)
        return run.export(tmp_path / "bundles" / "hostile.tavernrun")


def _generate(bundle: Path, tmp_path: Path) -> Path:
    target = tmp_path / "notebooks" / "hostile.ipynb"
    assert main(["notebook", "from-run", str(bundle), "-o", str(target)]) == 0
    return target


def _code(notebook: nbformat.NotebookNode) -> list[str]:
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


def _check_inert(notebook: nbformat.NotebookNode) -> None:
    """The marker appears only inside string constants of the Python each code cell becomes,
    never in code or comments, and only the expected magics are called."""
    transformer = TransformerManager()
    for source in _code(notebook):
        python = transformer.transform_cell(source)
        tree = ast.parse(python)
        for node in ast.walk(tree):
            call = node.func if isinstance(node, ast.Call) else None
            if (isinstance(call, ast.Attribute) and isinstance(call.value, ast.Call)
                    and isinstance(call.value.func, ast.Name)
                    and call.value.func.id == "get_ipython"):
                assert call.attr in ("run_cell_magic", "run_line_magic"), python[:200]
                first = node.args[0]  # type: ignore[union-attr]
                assert isinstance(first, ast.Constant) and first.value in MAGICS, python[:200]
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
                node.value = ""
        assert MARKER not in ast.unparse(tree), source[:200]
        comments = [token.string for token in
                    tokenize.generate_tokens(io.StringIO(python).readline)
                    if token.type == tokenize.COMMENT]
        assert not [c for c in comments if MARKER in c]


def _files(root: Path) -> set[Path]:
    return set(root.rglob("*"))


def _execute(target: Path, tmp_path: Path, *, identical: bool = True
             ) -> nbformat.NotebookNode:
    """Check the notebook is inert, run it in the kernel (every cell must succeed) and check
    it created nothing outside its (temporary) lab: no sentinel, no new file under
    ``tmp_path``; and that its last cell says the replay was identical."""
    notebook = nbformat.read(str(target), as_version=4)
    _check_inert(notebook)
    before = _files(tmp_path)
    NotebookClient(notebook, timeout=300, allow_errors=False, record_timing=False,
                   resources={"metadata": {"path": str(target.parent)}}).execute()
    assert not _sentinel(tmp_path).exists()
    assert _files(tmp_path) == before
    verdict = notebook.cells[-1].outputs[-1].data["text/plain"]
    assert verdict.startswith("identical: " if identical else "diverged: "), verdict
    return notebook


def _outputs(notebook: nbformat.NotebookNode) -> str:
    """Everything the code cells streamed or returned as text."""
    texts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            texts.append(output.get("text", ""))
            texts.append(output.get("data", {}).get("text/plain", ""))
    return "\n".join(texts)


# -- recorded payloads, played in the kernel ---------------------------------------------------


def test_a_shell_command_carrying_host_commands_runs_only_in_the_sandbox(
        jupyter_path: Path, tmp_path: Path) -> None:
    sentinel = _sentinel(tmp_path)
    command = f"echo start\n!touch {sentinel}\n%system touch {sentinel}\necho {MARKER}-end"
    bundle = _record(tmp_path, lambda run: run.shell(command))
    target = _generate(bundle, tmp_path)
    notebook = _execute(target, tmp_path)
    assert _code(notebook)[1] == f"%%ws_shell --workdir /\n{command}"
    assert "start\n" in _outputs(notebook) and f"{MARKER}-end\n" in _outputs(notebook)


def test_a_shell_command_that_ipython_would_rewrite_is_played_as_data(
        jupyter_path: Path, tmp_path: Path) -> None:
    # IPython strips ">>> " prompts from a whole cell when its second line has one: as a
    # %%ws_shell body that command would not be the one recorded, nor one with a NUL. The
    # other line breaks Python knows (\x0b, \u2028) reach a cell magic's body unchanged.
    sentinel = _sentinel(tmp_path)
    commands = [f">>> echo {MARKER}-prompt\n>>> open({str(sentinel)!r}, 'w')",
                f"echo {MARKER}-a\x0b!touch {sentinel}", f"echo {MARKER}-b\u2028echo c",
                f"echo {MARKER}-nul\x00"]

    def play(run: Run) -> None:
        for command in commands:
            run.call_tool("workspace.shell", {"command": command, "workdir": "/"})

    notebook = _execute(_generate(_record(tmp_path, play), tmp_path), tmp_path)
    cells = _code(notebook)[1:1 + len(commands)]
    assert [cell.split("(")[0].split("\n")[0] for cell in cells] == [
        "run.call_tool", "%%ws_shell --workdir /", "%%ws_shell --workdir /", "run.call_tool"]
    assert f"{MARKER}-b\u2028echo c" in _outputs(notebook)


def test_lone_surrogates_are_refused_where_they_enter_or_kept_as_escapes(
        jupyter_path: Path, tmp_path: Path) -> None:
    lone = f"{MARKER}\ud800\n!touch {_sentinel(tmp_path)}"

    def play(run: Run) -> None:
        for refused in (lambda: run.js(["-e", "1", "--", lone]),
                        lambda: run.js(["-e", "1"], eval_name=lone),
                        lambda: run.js(["-e", "1"], cwd=lone),
                        lambda: run.call_tool(lone, {}),
                        lambda: run.call_tool("workspace.list_files", {}, call_id=lone)):
            with pytest.raises(InvalidData, match=r"lone surrogate|must match"):
                refused()
        run.call_tool("workspace.shell", {"command": lone, "workdir": "/"})
        run.call_tool("workspace.write_file", {"path": "output/s.md", "content": lone})

    target = _generate(_record(tmp_path, play), tmp_path)
    assert "\\ud800" in target.read_text(encoding="utf-8")
    # A refused call's arguments are recorded as their description (a string), which a
    # replay can only pass on as a string: the refusal it gets back says so.
    notebook = _execute(target, tmp_path, identical=False)
    assert "arguments must be a JSON object" in _outputs(notebook)


def test_a_workdir_carrying_code_is_data(jupyter_path: Path, tmp_path: Path) -> None:
    sentinel = _sentinel(tmp_path)
    workdirs = [f"/output\n!touch {sentinel}", f"/{{open({str(sentinel)!r}, 'w')}}",
                f"/$HOME/{MARKER}", f"-{MARKER}", f"/output' {MARKER} '"]

    def play(run: Run) -> None:
        for workdir in workdirs:
            run.call_tool("workspace.shell", {"command": f"echo {MARKER}", "workdir": workdir})

    notebook = _execute(_generate(_record(tmp_path, play), tmp_path), tmp_path)
    cells = _code(notebook)[1:1 + len(workdirs)]
    assert all(cell.startswith("run.call_tool('workspace.shell', ") for cell in cells[:4])
    # a quote is no danger to a magic line: shlex quotes it and the magic reads it back
    assert cells[4].startswith("%%ws_shell --workdir '/output'\"'\"' ")
    assert "is not a workspace directory" in _outputs(notebook)


def test_a_tool_id_carrying_code_is_data(jupyter_path: Path, tmp_path: Path) -> None:
    sentinel = _sentinel(tmp_path)
    tool = f"x', {{}})\nopen({str(sentinel)!r}, 'w')  # {MARKER}\n!touch {sentinel}"
    notebook = _execute(_generate(_record(tmp_path, lambda run: run.call_tool(tool, {})),
                                  tmp_path), tmp_path)
    assert _code(notebook)[1] == f"run.call_tool({tool!r}, {{}})"
    assert "tool.unknown" in _outputs(notebook)


def test_tool_arguments_with_quotes_backslashes_and_nul_are_data(
        jupyter_path: Path, tmp_path: Path) -> None:
    text = _payload(_sentinel(tmp_path))

    def play(run: Run) -> None:
        run.call_tool("workspace.write_file", {"path": "output/p.md", "content": text})
        run.call_tool("workspace.read_file", {"path": "output/p.md"})
        run.call_tool("workspace.write_file", {"path": f"output/{MARKER}\n!x.md",
                                               "content": text + "\x00"})
        run.call_tool("workspace.search_files", {"query": text, f"{MARKER}'\n": [text]})

    notebook = _execute(_generate(_record(tmp_path, play), tmp_path), tmp_path)
    assert f"Wrote {len(text)} chars" in _outputs(notebook)


def test_a_megabyte_argument_is_data(jupyter_path: Path, tmp_path: Path) -> None:
    line = _payload(_sentinel(tmp_path)).replace("\n", " ") + "\n"
    text = line * (1024 * 1024 // len(line) + 1)
    command = f"cat /output/big.md | wc -c; echo {MARKER}\n!touch {_sentinel(tmp_path)}"

    def play(run: Run) -> None:
        run.call_tool("workspace.write_file", {"path": "output/big.md", "content": text})
        run.shell(command + "\n# " + "x" * 100_000)

    target = _generate(_record(tmp_path, play), tmp_path)
    notebook = _execute(target, tmp_path)
    assert target.stat().st_size > 1024 * 1024
    assert f"Wrote {len(text)} chars" in _outputs(notebook)
    assert f"\n{len(text.encode())}\n" in _outputs(notebook)


def test_js_argv_eval_names_and_stdin_carrying_code_are_data(jupyter_path: Path,
                                                             tmp_path: Path) -> None:
    sentinel = _sentinel(tmp_path)
    show = "console.log(JSON.stringify(process.argv))"
    argvs = [["-e", show, "--", f"{MARKER}\n!touch {sentinel} #", "$HOME", "{x}", "-v"],
             ["-e", f"console.log('{MARKER}-inline')"],
             ["-e", f"\nconsole.log('{MARKER}-cell')\n", "--", "--save", "x.js"]]

    def play(run: Run) -> None:
        for argv in argvs:
            run.js(argv)
        run.js(["-e", f"\nconsole.log('{MARKER}-named')\n"],
               eval_name=f"<cell 5>\n!touch {sentinel}")
        # the job's stdin is compared by its digest in the journal
        stdin = b"\x00'''\"\"\"\\\n!touch " + str(sentinel).encode() + MARKER.encode()
        run.js(["-e", f"console.log('{MARKER}-stdin')"], stdin=stdin)

    notebook = _execute(_generate(_record(tmp_path, play), tmp_path), tmp_path)
    cells = _code(notebook)
    assert cells[1].startswith("run.js(['-e',")
    assert cells[2] == "%js -- -e " + shlex.quote(f"console.log('{MARKER}-inline')")
    assert cells[3].startswith("run.js(['-e',")
    assert cells[4].startswith("run.js(['-e',") and "eval_name='<cell 5>\\n!touch" in cells[4]
    assert cells[5].startswith("import base64\nstdin_4 = base64.b64decode(")
    outputs = _outputs(notebook)
    assert json.dumps(f"{MARKER}\n!touch {sentinel} #") + ',"$HOME","{x}","-v"]' in outputs
    assert f"{MARKER}-inline" in outputs and f"{MARKER}-named" in outputs
    assert f"{MARKER}-stdin" in outputs


def test_a_finish_reason_and_a_subagent_result_carrying_code_are_data(
        jupyter_path: Path, tmp_path: Path) -> None:
    text = _payload(_sentinel(tmp_path))

    def play(run: Run) -> None:
        helper = run.start_subagent("helper.v2:x-1")
        run.call_tool("task.return", {"result": text}, invocation=helper)
        run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "hi"})
        run.call_tool("workspace.commit", {"path": "output/main.md", "reason": text})
        run.finish(text)

    notebook = _execute(_generate(_record(tmp_path, play), tmp_path), tmp_path)
    cells = _code(notebook)
    assert cells[1] == "agent_helper_v2_x_1_1 = run.start_subagent('helper.v2:x-1')"
    finish = ast.parse(cells[-2]).body[0].value  # type: ignore[attr-defined]
    assert ast.literal_eval(finish.args[0]) == text


# -- values a bundle cannot carry as code, checked without a kernel ------------------------------


def test_non_finite_numbers_and_deep_nesting_become_a_json_literal(tmp_path: Path) -> None:
    bundle = _record(tmp_path, lambda run: run.call_tool("workspace.list_files", {}))
    deep: object = MARKER
    for _ in range(200):
        deep = [deep]
    arguments = {"n": float("nan"), "inf": float("inf"), "deep": deep, "text": MARKER}
    tampered = _tamper(bundle, arguments={"arguments": arguments})
    notebook = notebook_from_bundle(read_bundle(tampered), "hostile.tavernrun")
    _check_inert(notebook)
    cell = _code(notebook)[1]
    assert cell.startswith("import json\nrun.call_tool('workspace.list_files', json.loads(")
    call = ast.parse(cell).body[1].value  # type: ignore[attr-defined]
    literal = call.args[1].args[0].value
    assert json.dumps(json.loads(literal)) == json.dumps(arguments)


def test_a_call_id_or_agent_id_carrying_code_is_refused_where_it_enters(
        tmp_path: Path) -> None:
    with Lab(tmp_path / "lab", clock=FixedClock(), ids=SequentialIds("hostile")) as lab:
        run = lab.start_run(chat_id="mallory")
        before = len(run.events())
        for bad in ["call_1\n!touch x", "", " call_1", "call'1", "call_1%", "é", "x" * 257]:
            with pytest.raises(InvalidData, match=r"^call_id must match \[A-Za-z0-9_.:-\]"):
                run.call_tool("workspace.list_files", {}, call_id=bad)
            with pytest.raises(InvalidData, match=r"^agent_id must match"):
                run.start_subagent(bad)
        with pytest.raises(InvalidData, match="call_id must be a string"):
            run.call_tool("workspace.list_files", {}, call_id=7)  # type: ignore[arg-type]
        assert len(run.events()) == before
        assert not (run.dir / "tool-args").exists()
        for good in ["call_1", "call_write", "duplicate_call", "call_mcp", "toolu_01A-b.c:d",
                     "x" * 256]:
            assert not run.call_tool("workspace.list_files", {}, call_id=good).is_error
        message = ""
        try:
            run.call_tool("workspace.list_files", {}, call_id="y" * 1_000_000)
        except InvalidData as exc:
            message = exc.message
        assert message.endswith("... (1000000 characters)") and len(message) < 200


def _tamper(bundle_path: Path, *, arguments: object = None,
            edit: Callable[[Bundle], None] | None = None, files: dict[str, bytes] | None = None
            ) -> Path:
    """A copy of the bundle with its first tool call's arguments file replaced (``arguments``,
    as JSON with NaN allowed), run files replaced (``files``) and the manifest edited
    (``edit``), re-sealed as the export would seal it."""
    bundle = read_bundle(bundle_path)
    copy = Bundle(bundle.manifest.model_copy(deep=True), dict(bundle.blobs))
    replaced = dict(files or {})
    if arguments is not None:
        first = next(a for a in copy.manifest.actions if a.kind == "tool_call")
        replaced[first.arguments_path] = json.dumps(arguments).encode()  # type: ignore[union-attr]
    for path, data in replaced.items():
        copy.blobs[sha256_of(data)] = data  # type: ignore[index]
        copy.manifest.run.files[path] = sha256_of(data)
    if edit is not None:
        edit(copy)
    return copy.write(bundle_path.with_name("tampered.tavernrun"))


def _set(kind: str, field: str, value: str) -> Callable[[Bundle], None]:
    def edit(bundle: Bundle) -> None:
        action = next(a for a in bundle.manifest.actions if a.kind == kind)
        setattr(action, field, value)
    return edit


def _set_skill_name(bundle: Bundle) -> None:
    bundle.manifest.skills[0].name = f"greet`\n!touch {MARKER}"


def _set_run_id(bundle: Bundle) -> None:
    bundle.manifest.run_id = f"run_1`\n# {MARKER}"


BAD_ID = f"call_1\n!touch /tmp/{MARKER}"
TAMPERED_IDS = {
    "call_id": (_set("tool_call", "call_id", BAD_ID), "action 0: call_id must match"),
    "invocation_id": (_set("tool_call", "invocation_id", BAD_ID),
                      "action 0: invocation id must match"),
    "agent_id": (_set("subagent", "agent_id", BAD_ID), "action 1: agent_id must match"),
    "job_id": (_set("js_job", "job_id", BAD_ID), "action 3: job id must match"),
    "skill_name": (_set_skill_name, "bound skill name"),
    "run_id": (_set_run_id, "run id must match"),
}


@pytest.fixture(scope="module")
def plain_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recorded run with a tool call, a sub-agent, a js job and a bound skill."""
    root = tmp_path_factory.mktemp("plain")
    skill = root / "greet"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: greet\ndescription: Greets.\n---\nHi.\n")
    (skill / "scripts" / "hi.js").write_text("console.log('hi')\n")
    with Lab(root / "recorded", clock=FixedClock(), ids=SequentialIds("hostile")) as lab:
        lab.skills.install(skill)
        run = lab.start_run(chat_id="mallory", skills=["greet"])
        run.call_tool("workspace.list_files", {})
        helper = run.start_subagent("helper")
        run.call_tool("task.return", {"result": "ok"}, invocation=helper)
        run.js(["/skills/greet/scripts/hi.js"])
        return run.export(root / "bundles" / "plain.tavernrun")


@pytest.mark.parametrize("field", sorted(TAMPERED_IDS))
def test_a_bundle_with_a_tampered_id_is_refused_in_one_line(
        field: str, plain_bundle: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    edit, expected = TAMPERED_IDS[field]
    tampered = _tamper(plain_bundle, edit=edit)
    target = tmp_path / "tampered.ipynb"
    assert main(["notebook", "from-run", str(tampered), "-o", str(target)]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: replay.bundle_invalid: bundle member manifest.json: ")
    assert expected in error and error.count("\n") == 1
    assert not target.exists()


BAD_FILES = {
    "arguments_not_json": ("tool-args", b"{not json", "is not JSON"),
    "arguments_not_an_object": ("tool-args", b"[1, 2]", "is not a JSON object"),
    "job_stdin_not_base64": ("js-jobs", b'{"stdin": "!touch x\\n", "evalName": null}',
                             "stdin is not base64"),
    "job_eval_name_not_a_string": ("js-jobs", b'{"evalName": ["<cell 1>"]}',
                                   "evalName is not a string"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bundle_with_a_tampered_recorded_file_is_refused_in_one_line(
        case: str, plain_bundle: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    folder, data, expected = BAD_FILES[case]
    path = next(p for p in read_bundle(plain_bundle).manifest.run.files
                if p.startswith(folder + "/"))
    tampered = _tamper(plain_bundle, files={path: data})
    target = tmp_path / "tampered.ipynb"
    assert main(["notebook", "from-run", str(tampered), "-o", str(target)]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: replay.bundle_invalid: ") and expected in error
    assert error.count("\n") == 1 and not target.exists()


def test_stdin_is_a_base64_literal(plain_bundle: Path) -> None:
    path = next(p for p in read_bundle(plain_bundle).manifest.run.files
                if p.startswith("js-jobs/"))
    stdin = base64.b64encode(b"'''\n!touch x").decode()
    tampered = _tamper(plain_bundle, files={path: json.dumps(
        {"stdin": stdin, "evalName": None, "exitCode": 0}).encode()})
    notebook = notebook_from_bundle(read_bundle(tampered), "t.tavernrun")
    _check_inert(notebook)
    assert f"stdin_3 = base64.b64decode({stdin!r})" in _code(notebook)[4]
