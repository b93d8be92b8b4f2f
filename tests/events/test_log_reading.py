"""Bulk reading of run logs: ``types=`` skips lines on their bytes without changing what a
read returns, damage still raises, and the garbage collector is paused only while reading."""

from __future__ import annotations

import gc
import json
import threading

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tavernlab.events import Event, ToolResultStored, collector_paused, parse_records
from tavernlab.events._reading import TypeFilter
from tavernlab.host import Lab, Run


def busy(run: Run) -> None:
    """A run with tool calls (events of many types) and a js job (journal records)."""
    for index in range(3):
        run.call_tool("workspace.write_file", {"path": f"output/{index}.md", "content": "x"})
    run.js(["-e", "console.log(1)"])


def dumped(records: list[Event]) -> list[tuple[str, str, dict[str, object]]]:
    return [(r.source, r.type, r.model_dump(mode="json")) for r in records]


def test_a_filtered_read_is_the_full_read_filtered(run: Run) -> None:
    busy(run)
    everything = run.events()
    for types in (["tool_result_stored"], ["js_job_finished", "tool_call_completed"],
                  ["status_changed", "file_changed"], ["no_such_type"]):
        expected = [r for r in everything if r.type in types]
        assert dumped(run.events(types=types)) == dumped(expected)
        after = everything[len(everything) // 2]
        assert dumped(run.events(after_seq=after, types=types)) == dumped(
            [r for r in everything[len(everything) // 2 + 1:] if r.type in types])
    stored = run.events(types="tool_result_stored", journal=False)
    assert [type(r) for r in stored] == [ToolResultStored] * 3
    assert [r.payload.tool_id for r in stored] == ["workspace.write_file"] * 3


def test_a_type_spelled_with_escapes_is_still_found(lab: Lab, run: Run) -> None:
    busy(run)
    log = run.dir / "events.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if b'"tool_result_stored"' in line)
    data = json.loads(lines[index])
    lines[index] = (json.dumps(data, ensure_ascii=True)
                    .replace('"tool_result_stored"', '"tool\\u005fresult_stored"')
                    .encode() + b"\n")  # how another writer may spell the same line
    log.write_bytes(b"".join(lines))
    reopened = Lab(lab.root).open_run(run.id)  # the line moved: a fresh index
    expected = [r.seq for r in reopened.events(journal=False) if r.type == "tool_result_stored"]
    assert len(expected) == 3
    assert [r.seq for r in reopened.events(types="tool_result_stored", journal=False)
            ] == expected


def test_a_filter_never_skips_a_line_it_could_not_rule_out() -> None:
    names = TypeFilter(["run_failed"])
    assert not names.may_match(b'{"seq": 1, "type": "run_completed", "payload": {}}')
    assert names.may_match(b'{"seq": 1, "type": "run_failed", "payload": {}}')
    assert names.may_match(b'{"seq": 1, "type": "run\\u005ffailed", "payload": {}}')
    assert names.may_match(b'{"seq": 1, "type": "run_compl')  # cut: parsed, so it raises
    assert not names.may_match(b'{"type": "run_completed", "payload": {"text": "a\\nb"}}')
    slash = TypeFilter(["a/b"])  # "/" has a short escape: any backslash may spell it
    assert slash.may_match(b'{"type": "a\\/b"}')


def test_a_damaged_line_still_raises_in_a_filtered_read(run: Run) -> None:
    busy(run)
    log = run.dir / "events.jsonl"
    data = log.read_bytes()
    first = data.index(b"\n")
    log.write_bytes(b"!" * first + data[first:])  # same length: the offsets stay right
    with pytest.raises(json.JSONDecodeError):
        run.events(types="tool_result_stored", journal=False)


def test_the_collector_is_paused_only_while_reading(run: Run) -> None:
    busy(run)
    seen: list[bool] = []
    with collector_paused():
        seen.append(gc.isenabled())
        with collector_paused():
            seen.append(gc.isenabled())
        seen.append(gc.isenabled())
    assert seen == [False, False, False]
    assert gc.isenabled()
    assert run.events() and gc.isenabled()
    gc.disable()  # the caller's choice is kept
    try:
        assert run.events() and not gc.isenabled()
    finally:
        gc.enable()


def test_concurrent_reads_share_one_pause(run: Run) -> None:
    busy(run)
    counts: list[int] = []
    threads = [threading.Thread(target=lambda: counts.append(len(run.events())))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counts == [len(run.events())] * 4
    assert gc.isenabled()


def test_a_type_with_no_model_reads_as_the_generic_event_in_bulk(run: Run) -> None:
    busy(run)
    log = run.dir / "events.jsonl"
    typed = run.events(journal=False)
    last = typed[-1]
    upstream = {"seq": last.seq + 1, "id": "evt_up", "runId": run.id,
                "timestamp": "2026-12-01T00:00:00Z", "type": "checkpoint_created",
                "payload": {"rounds": [1, 2]}}
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(upstream) + "\n")
    records = parse_records(log.read_bytes().splitlines())
    assert [type(r) for r in records] == [type(r) for r in typed] + [Event]
    assert (records[-1].type, records[-1].payload) == ("checkpoint_created", {"rounds": [1, 2]})
    assert dumped(records[:-1]) == dumped(typed)


def test_a_bad_payload_of_a_known_type_names_the_line(run: Run) -> None:
    busy(run)
    lines = (run.dir / "events.jsonl").read_bytes().splitlines()
    index = next(i for i, line in enumerate(lines) if b'"tool_result_stored"' in line)
    data = json.loads(lines[index])
    data["payload"] = {"path": 5}
    lines[index] = json.dumps(data).encode()
    with pytest.raises(pydantic.ValidationError) as caught:
        parse_records(lines)
    assert caught.value.title == "ToolResultStored"


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text().filter(lambda key: key not in ("seq", "eventSeq")),
                       st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12), min_size=1, max_size=6),
       st.integers(min_value=1, max_value=2**40), st.integers(min_value=0, max_value=2**40),
       st.booleans())
def test_a_record_line_is_json_dumps_of_its_object(data: dict[str, object], seq: int,
                                                   event_seq: int, anchored: bool) -> None:
    """A record's line - the rest encoded when it is built by the log's one C encoder (no
    cycle check), the numbers put in front when it is written - is what ``json.dumps(record,
    ensure_ascii=False)`` writes for the whole record, floats, NaN and any text included;
    text that cannot be written is refused when the record is built."""
    from tavernlab.events._log import _ENCODE, _line, _unnumbered

    numbers: dict[str, object] = {"seq": seq, "eventSeq": event_seq} if anchored else {
        "seq": seq}
    try:
        expected = (json.dumps({**numbers, **data}, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: both refuse it
        with pytest.raises(UnicodeEncodeError):
            _unnumbered("x", "t", _ENCODE(data)[1:], anchored=anchored)
        return
    built = _unnumbered("x", "t", _ENCODE(data)[1:], anchored=anchored)
    built.update(numbers)
    assert _line(built) == expected
