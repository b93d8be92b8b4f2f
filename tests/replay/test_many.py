"""Many replays at once, on a process pool and on a dask cluster's executor."""

from __future__ import annotations

import logging
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import distributed
import pytest

from tavernlab.replay import ReplaySummary, read_bundle, replay_many

from .conftest import ROLL, SKILL, deterministic_lab, write_package


@pytest.fixture
def corpus(tmp_path: Path) -> list[Path]:
    """Three runs of the dice skill (shell, js, a commit) and one without it."""
    package = write_package(tmp_path / "dice", SKILL)
    bundles = []
    for number in range(4):
        lab = deterministic_lab(tmp_path / f"lab{number}")
        if number < 3:
            lab.skills.install(package)
        run = lab.start_run(chat_id=f"chat{number}")
        run.call_tool("workspace.write_file", {"path": "output/main.md",
                                               "content": f"run {number}"})
        if number < 3:
            run.shell(f"js /skills/dice/scripts/roll.js {number + 1}")
        run.js(["-e", f"console.log({number} * 7)"])
        run.call_tool("workspace.commit", {})
        run.finish()
        bundles.append(run.export(tmp_path / "corpus" / f"run{number}.tavernrun"))
    (tmp_path / "corpus" / "broken.tavernrun").write_bytes(b"not a zip")
    return [*bundles, tmp_path / "corpus" / "broken.tavernrun"]


def check(summary: ReplaySummary, corpus: list[Path]) -> None:
    assert [r.bundle for r in summary.reports] == [str(p) for p in corpus]
    assert [r.identical for r in summary.reports] == [True, True, True, True, False]
    broken = summary.reports[-1].first
    assert broken is not None and (broken.kind, broken.subject) == ("setup",
                                                                    "replay.bundle_invalid")
    lines = summary.table().splitlines()
    assert lines[0].split() == ["bundle", "actions", "result", "first", "divergence"]
    assert lines[1].split()[:3] == ["run0.tavernrun", "5", "identical"]
    assert lines[4].split()[:3] == ["run3.tavernrun", "4", "identical"]
    assert lines[5].startswith("broken.tavernrun")
    assert lines[-1] == "4 of 5 identical"


def test_on_the_default_process_pool(corpus: list[Path]) -> None:
    check(replay_many(corpus), corpus)


def test_against_a_new_skill_version_on_a_forking_pool(corpus: list[Path],
                                                       tmp_path: Path) -> None:
    """A ``fork`` pool (Linux's default) works too: the children re-create the helpers
    they inherit without their threads."""
    higher = write_package(tmp_path / "higher", {
        **SKILL, "scripts/roll.js": ROLL.replace("1 + Math.floor", "2 + Math.floor")})
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
        summary = replay_many(corpus[:4], skills={"dice": higher}, executor=pool)
    assert [r.identical for r in summary.reports] == [False, False, False, True]
    for report in summary.reports[:3]:
        assert report.first is not None
        assert (report.first.index, report.first.kind) == (1, "result")
        assert report.skills[0].changed
    assert summary.reports[3].skills == []


def test_on_a_dask_cluster(corpus: list[Path]) -> None:
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, host="127.0.0.1",
                                  silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster) as client:
        executor = client.get_executor()
        check(replay_many(corpus, executor=executor), corpus)


def test_a_bad_bundle_is_a_row_of_the_table_and_the_rest_go_on(tmp_path: Path) -> None:
    lab = deterministic_lab(tmp_path / "lab")
    run = lab.start_run(chat_id="alice")
    run.call_tool("workspace.write_file", {"path": "output/main.md", "content": "one"})
    good = run.export(tmp_path / "good.tavernrun")
    loaded = read_bundle(good)
    hostile = replace(loaded, manifest=loaded.manifest.model_copy(update={"record": {}}))
    unpicklable = replace(loaded, blobs=MappingProxyType(dict(loaded.blobs)))
    broken = tmp_path / "broken.tavernrun"
    broken.write_bytes(b"not a zip")
    corpus = [good, hostile, unpicklable, broken, good]
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        summary = replay_many(corpus, executor=pool)
    assert [r.identical for r in summary.reports] == [True, False, False, False, True]
    firsts = [r.first for r in summary.reports[1:4]]
    assert all(f is not None and f.kind == "setup" for f in firsts)
    assert [f.subject for f in firsts if f is not None] == [
        "replay.bundle_invalid", "TypeError", "replay.bundle_invalid"]
    assert firsts[0] is not None and firsts[0].actual == (
        "bundle member manifest.json: record.id: Field required")
    lines = summary.table().splitlines()
    assert len(lines) == 7 and lines[-1] == "2 of 5 identical"
