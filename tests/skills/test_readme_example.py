"""The README's "Skill packages" example is real: built from the README and run as documented.

The ``readme_greet`` fixture writes each fenced block of that section whose info string names
a file; the package is validated, installed and run the way the README's Python
snippet says, and the documented outputs are pinned.
"""

from __future__ import annotations

from pathlib import Path

from tavernlab.host import Lab


def test_the_readme_example_validates_installs_and_runs(readme_greet: Path,
                                                         tmp_path: Path) -> None:
    greet = readme_greet
    lab = Lab(tmp_path / "my-lab")
    (package,) = lab.skills.validate(greet).packages
    assert package.warnings == (
        "Skill contains scripts; review them before use: an agent can run them with the js "
        "command (and skill.run_script in compatibility mode).",)
    assert (package.frontmatter.license, package.frontmatter.version, package.tags) == (
        "MIT", "1.0", ["demo", "writing"])
    assert package.sidecar is not None and package.sidecar.display_name == "Greeting cards"
    assert lab.skills.install(greet).installed == ["greet"]

    run = lab.start_run(chat_id="alice",
                        context={"macroContext": {"names": {"char": "Alice"}}})
    shell = run.shell("js /skills/greet/scripts/greet.js Bob")
    assert (shell.exit_code, shell.stdout) == (
        0, '{"card":"output/cards/bob.md","text":"Dear Bob, warm greetings from Alice.\\n"}\n')
    assert shell.stderr == "wrote output/cards/bob.md\n"
    usage = run.shell("js /skills/greet/scripts/greet.js")
    assert (usage.exit_code, usage.stderr) == (2, "usage: js greet.js NAME [--loud]\n")
    style = run.call_tool("workspace.read_file", {"path": "skills/greet/references/style.md"})
    assert "One line, warm, signed by Alice." in style.content
    skill_md = run.call_tool("workspace.read_file", {"path": "skills/greet/SKILL.md"})
    assert "Writes a greeting from Alice to a person." in skill_md.content

    legacy = lab.start_run(chat_id="bea", legacy_run_script=True)
    result = legacy.call_tool("skill.run_script", {
        "skill": "greet", "script": "greet-legacy", "args": {"name": "Bob", "from": "Alice"}})
    assert not result.is_error, result.content
    assert result.structured == {"card": "output/cards/bob.md",
                                 "text": "Dear Bob, warm greetings from Alice.\n"}
