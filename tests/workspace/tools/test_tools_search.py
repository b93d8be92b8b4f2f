"""``workspace.search_files`` (docs/workspace.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tavernlab.host import Run
from tavernlab.paths import WorkspacePath
from tavernlab.workspace.storage._fs import WriteGuard, sha256_hex

#: The ``put`` fixture (tests/conftest.py): a shell-like unchecked write.
Put = Callable[[Run, str, str], None]


HEADER = ("Search `{q}` matched {n} workspace {noun}. Use workspace_read_file with path "
          "and start_line/line_count to read exact text.")


def header(query: str, hits: int) -> str:
    """Part 1 of the content: ``location`` for one hit, ``locations`` for more."""
    return HEADER.format(q=query, n=hits, noun="location" if hits == 1 else "locations")


def test_content_and_structured_payload(run: Run, put: Put) -> None:
    text = "intro\nsay hello\nthird\nhello world here\nfifth"
    put(run, "output/main.md", text)
    result = run.call_tool("workspace.search_files", {"query": "  Hello, World!\n"})
    assert not result.is_error
    assert result.content == (
        header("Hello, World!", 1)
        + "\n\noutput/main.md score 1.000 ref workspace:output/main.md#L2-L5\n"
        + "2 | say hello\n3 | third\n4 | hello world here\n5 | fifth")
    assert result.structured == {
        "query": "Hello, World!",
        "hits": [{"path": "output/main.md", "score": 1.0, "startLine": 2, "endLine": 5,
                  "snippet": "2 | say hello\n3 | third\n4 | hello world here\n5 | fifth",
                  "chars": 54, "words": 11, "sha256": sha256_hex(text.encode()),
                  "ref": "workspace:output/main.md#L2-L5"}],
        "searchedFiles": 1, "skippedFiles": 0, "truncated": False}
    assert result.resource_refs == ["workspace:output/main.md#L2-L5"]


def test_half_scores_and_cross_file_order(run: Run, put: Put) -> None:
    put(run, "scratch/b.md", "hello")
    put(run, "scratch/a.md", "hello")
    put(run, "scratch/c.md", "x\nhello world")
    result = run.call_tool("workspace.search_files",
                           {"query": "hello world", "context_lines": 0, "path": "scratch"})
    assert [(h["path"], h["score"], h["startLine"]) for h in result.structured["hits"]] == [
        ("scratch/c.md", 1.0, 2), ("scratch/a.md", 0.5, 1), ("scratch/b.md", 0.5, 1)]
    assert result.content.split("\n\n")[1:] == [
        "scratch/c.md score 1.000 ref workspace:scratch/c.md#L2-L2\n2 | hello world",
        "scratch/a.md score 0.500 ref workspace:scratch/a.md#L1-L1\n1 | hello",
        "scratch/b.md score 0.500 ref workspace:scratch/b.md#L1-L1\n1 | hello",
    ]
    assert result.resource_refs == ["workspace:scratch/c.md#L2-L2",
                                    "workspace:scratch/a.md#L1-L1",
                                    "workspace:scratch/b.md#L1-L1"]
    assert result.content.startswith(header("hello world", 3))


def test_three_decimal_scores(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "alpha\nbeta")  # weights 5 and 4: 5/9 and 4/9
    result = run.call_tool("workspace.search_files",
                           {"query": "alpha beta", "context_lines": 0, "path": "scratch"})
    assert "scratch/a.md score 0.556 ref workspace:scratch/a.md#L1-L1\n1 | alpha" in (
        result.content)
    assert "scratch/a.md score 0.444 ref workspace:scratch/a.md#L2-L2\n2 | beta" in (
        result.content)
    assert result.structured["hits"][0]["score"] == pytest.approx(5 / 9)


def test_snippet_alignment(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "\n".join(f"line {i}" if i != 10 else "needle" for i in
                                       range(1, 20)))
    result = run.call_tool("workspace.search_files",
                           {"query": "needle", "context_lines": 1, "path": "scratch/a.md"})
    assert result.structured["hits"][0]["snippet"] == " 9 | line 9\n10 | needle\n11 | line 11"
    assert result.structured["hits"][0]["ref"] == "workspace:scratch/a.md#L9-L11"


def test_no_hits(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "nothing to see")
    result = run.call_tool("workspace.search_files", {"query": "zebra", "path": "scratch"})
    assert result.content == "No visible workspace files matched `zebra`."
    assert result.structured == {"query": "zebra", "hits": [], "searchedFiles": 1,
                                 "skippedFiles": 0, "truncated": False}
    assert result.resource_refs == []


def test_one_file_never_truncates_on_its_own(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "\n".join(["key"] + ["x"] * 5 + ["key"] + ["x"] * 5 + ["key"]))
    result = run.call_tool("workspace.search_files",
                           {"query": "key", "limit": 2, "context_lines": 0, "path": "scratch"})
    assert len(result.structured["hits"]) == 2
    assert result.structured["truncated"] is False
    assert "Results were truncated." not in result.content
    assert result.content.startswith(header("key", 2))
    everything = run.call_tool("workspace.search_files",
                               {"query": "key", "limit": 3, "context_lines": 0,
                                "path": "scratch"})
    assert everything.structured["truncated"] is False
    assert not everything.content.endswith("Results were truncated.")


def test_truncation_across_files(run: Run, put: Put) -> None:
    for name in "abc":
        put(run, f"scratch/{name}.md", "key")
    result = run.call_tool("workspace.search_files",
                           {"query": "key", "limit": 2, "path": "scratch"})
    assert [h["path"] for h in result.structured["hits"]] == ["scratch/a.md", "scratch/b.md"]
    assert result.structured["truncated"] is True
    assert result.content.endswith("Results were truncated.")


def test_non_utf8_files_are_skipped_and_counted(run: Run, put: Put) -> None:
    run.internals.scope.write_file(WorkspacePath("scratch/bin.dat"), b"key \xff\xfe",
                                   WriteGuard.unchecked())
    put(run, "scratch/t.md", "key")
    result = run.call_tool("workspace.search_files", {"query": "key", "path": "scratch"})
    assert (result.structured["searchedFiles"], result.structured["skippedFiles"]) == (1, 1)
    assert [h["path"] for h in result.structured["hits"]] == ["scratch/t.md"]


def test_default_scope_is_every_visible_root_including_tool_results(run: Run, put: Put) -> None:
    put(run, "output/main.md", "plain words")
    first = run.call_tool("workspace.search_files", {"query": "zebracorn"})
    assert first.structured["hits"] == []
    # the stored result of the first call now holds the query text
    second = run.call_tool("workspace.search_files", {"query": "zebracorn"})
    paths = [h["path"] for h in second.structured["hits"]]
    assert len(paths) == 1
    assert paths[0].startswith(f"tool-results/{run.internals.main.id}/round-001-call_")


def test_hidden_files_are_never_searched(run: Run, put: Put) -> None:
    put(run, "output/main.md", "nothing")
    (run.dir / "input" / "secret.md").write_text("zebracorn")
    (run.dir / "output_extra").mkdir()
    (run.dir / "output_extra" / "x.md").write_text("zebracorn")
    result = run.call_tool("workspace.search_files", {"query": "zebracorn"})
    assert result.structured["hits"] == []


@pytest.mark.parametrize(("args", "code", "message"), [
    ({"limit": 0}, "workspace.search_limit_invalid", "limit must be >= 1"),
    ({"limit": -4}, "tool.invalid_arguments", "limit must be a non-negative integer"),
    ({"limit": 51}, "workspace.search_limit_too_large", "limit must be <= 50"),
    ({"context_lines": 6}, "workspace.search_context_too_large", "context_lines must be <= 5"),
    ({"context_lines": -1}, "tool.invalid_arguments",
     "context_lines must be a non-negative integer"),
    ({"limit": 2.5}, "tool.invalid_arguments", "limit must be a non-negative integer"),
    ({"query": ""}, "tool.invalid_arguments", "query is required"),
    ({"query": "   "}, "tool.invalid_arguments", "query is required"),
    ({"query": 3}, "tool.invalid_arguments", "query is required"),
    ({"path": "scratch/none"}, "workspace.path_not_found",
     "workspace path `scratch/none` was not found."),
])
def test_argument_errors(run: Run, args: dict[str, object], code: str, message: str) -> None:
    result = run.call_tool("workspace.search_files", {"query": "key", **args})
    assert (result.is_error, result.error_code, result.content) == (True, code, message)


def test_limit_and_context_bounds_are_accepted(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "key")
    for args in ({"limit": 1}, {"limit": 50}, {"context_lines": 0}, {"context_lines": 5}):
        assert not run.call_tool("workspace.search_files",
                                 {"query": "key", "path": "scratch", **args}).is_error


def test_at_most_1000_files(run: Run, put: Put) -> None:
    for i in range(1001):
        put(run, f"scratch/d{i % 10}/f{i:04d}.md", "nothing")
    result = run.call_tool("workspace.search_files", {"query": "absent", "path": "scratch"})
    assert result.structured["searchedFiles"] == 1000
    assert result.structured["truncated"] is True


def test_depth_eight(run: Run, put: Put) -> None:
    put(run, "scratch/1/2/3/4/5/6/7/deep.md", "needle")        # level 8 below scratch
    put(run, "scratch/1/2/3/4/5/6/7/8/deeper.md", "needle")    # level 9
    result = run.call_tool("workspace.search_files", {"query": "needle", "path": "scratch"})
    assert [h["path"] for h in result.structured["hits"]] == ["scratch/1/2/3/4/5/6/7/deep.md"]


# --- Revision 2 Acceptance facts -------------------------------------------------------------


def test_acceptance_4_one_hit_in_moon_md(run: Run, put: Put) -> None:
    put(run, "scratch/notes/moon.md", "red\nsilver moon rising\nblue")
    result = run.call_tool("workspace.search_files", {"query": "silver moon",
                                                       "path": "scratch/notes",
                                                       "context_lines": 1})
    assert result.content.startswith(
        "Search `silver moon` matched 1 workspace location. Use workspace_read_file")
    assert result.content == (
        header("silver moon", 1) + "\n\nscratch/notes/moon.md score 1.000 ref "
        "workspace:scratch/notes/moon.md#L1-L3\n1 | red\n2 | silver moon rising\n3 | blue")
    (hit,) = result.structured["hits"]
    assert (hit["startLine"], hit["endLine"], hit["snippet"], hit["chars"], hit["words"]) == (
        1, 3, "1 | red\n2 | silver moon rising\n3 | blue", 39, 8)
    assert hit["sha256"] == sha256_hex(b"red\nsilver moon rising\nblue")
    assert result.resource_refs == ["workspace:scratch/notes/moon.md#L1-L3"]


def test_acceptance_5_two_windows_are_locations(run: Run, put: Put) -> None:
    put(run, "scratch/a.md", "key\nx\nx\nx\nkey")
    result = run.call_tool("workspace.search_files",
                           {"query": "key", "path": "scratch", "context_lines": 0})
    assert "matched 2 workspace locations." in result.content
    assert result.content.startswith(header("key", 2))


@pytest.mark.parametrize("query", ["?!", "***", " ?! "])
def test_acceptance_6_a_query_without_tokens_gets_the_no_hit_answer(run: Run, put: Put,
                                                                     query: str) -> None:
    put(run, "scratch/a.md", "?! *** text")
    result = run.call_tool("workspace.search_files", {"query": query, "path": "scratch"})
    assert not result.is_error
    assert result.content == f"No visible workspace files matched `{query.strip()}`."
    assert result.structured == {"query": query.strip(), "hits": [], "searchedFiles": 1,
                                 "skippedFiles": 0, "truncated": False}
    assert result.resource_refs == []


def test_acceptance_7_the_truncation_rule(run: Run, put: Put) -> None:
    put(run, "scratch/one/a.md", "\n".join(["key"] * 12))
    single = run.call_tool("workspace.search_files",
                           {"query": "key", "path": "scratch/one", "limit": 5,
                            "context_lines": 0})
    assert len(single.structured["hits"]) == 5
    assert single.structured["truncated"] is False
    assert "Results were truncated." not in single.content
    put(run, "scratch/two/a.md", "\n".join(["key"] * 4))
    put(run, "scratch/two/b.md", "\n".join(["key"] * 4))
    double = run.call_tool("workspace.search_files",
                           {"query": "key", "path": "scratch/two", "limit": 5,
                            "context_lines": 0})
    assert len(double.structured["hits"]) == 5
    assert double.structured["truncated"] is True
    assert double.content.endswith("\n\nResults were truncated.")


def test_acceptance_8_skipped_files_are_noted(run: Run, put: Put) -> None:
    put(run, "scratch/two/t.md", "key")
    for name in ("x.bin", "y.bin"):
        run.internals.scope.write_file(WorkspacePath(f"scratch/two/{name}"), b"key \xff",
                             WriteGuard.unchecked())
    two = run.call_tool("workspace.search_files", {"query": "key", "path": "scratch/two"})
    assert (two.structured["searchedFiles"], two.structured["skippedFiles"]) == (1, 2)
    assert two.content.endswith("\n\nSkipped 2 files that could not be read as text.")
    put(run, "scratch/one/t.md", "key")
    run.internals.scope.write_file(WorkspacePath("scratch/one/x.bin"), b"\xfe",
                                   WriteGuard.unchecked())
    one = run.call_tool("workspace.search_files", {"query": "key", "path": "scratch/one"})
    assert one.structured["skippedFiles"] == 1
    assert one.content.endswith("\n\nSkipped 1 file that could not be read as text.")
    none = run.call_tool("workspace.search_files", {"query": "zebra", "path": "scratch/one"})
    assert none.content == ("No visible workspace files matched `zebra`.\n\n"
                            "Skipped 1 file that could not be read as text.")
