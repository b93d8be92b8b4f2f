"""``tavernlab view`` in Chromium: the page of a bundle, opened from ``file://`` with no
network, shows every file and bar, a bar's detail on click and a file's lines, with no
script error."""

from __future__ import annotations

from pathlib import Path

from lab_server import CHROMIUM, CHROMIUM_ARGS

from tavernlab.cli import main
from tavernlab.clock import FixedClock, SequentialIds
from tavernlab.host import Lab


def _bundle(tmp_path: Path) -> Path:
    with Lab(tmp_path / "lab", clock=FixedClock(), ids=SequentialIds("viewer")) as lab:
        run = lab.start_run(chat_id="alice")
        run.call_tool("workspace.write_file", {"path": "output/main.md",
                                               "content": "# Notes\nline 2\n"})
        run.shell("mkdir -p scratch/data && printf 'a,b\\n1,2\\n' > scratch/data/t.csv")
        run.next_round()
        run.call_tool("workspace.read_file", {"path": "nope/x.md"})
        run.call_tool("workspace.write_file", {"path": "output/second.md", "content": "2\n"})
        bundle = tmp_path / "run.tavernrun"
        assert main(["run", "export", run.id, "-o", str(bundle), "--lab",
                     str(tmp_path / "lab"), "--with-view"]) == 0
    return bundle


def test_the_page_of_a_bundle_in_chromium(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    page_file = tmp_path / "run.html"
    assert main(["view", str(_bundle(tmp_path)), "-o", str(page_file)]) == 0
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = chromium.new_context(viewport={"width": 1300, "height": 900}).new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(page_file.as_uri())
            page.wait_for_function("() => document.body.dataset.tlReady === 'true'")
            for path in ("output/main.md", "output/second.md", "scratch/data"):
                page.locator(f'.tl-node[data-path="{path}"]').wait_for()
            bars = page.locator(".tl-bar-row")
            assert [bars.nth(i).get_attribute("data-kind") for i in range(bars.count())] == [
                "tool", "shell", "commit", "tool", "tool"]
            assert page.locator(".tl-round").count() == 2

            page.locator('.tl-bar-row[data-kind="shell"]').click()
            assert "mkdir -p scratch/data" in page.locator(".tl-detail .tl-code").first.inner_text()
            assert "scratch/data/t.csv" in page.locator(".tl-detail .tl-files").inner_text()
            page.locator('.tl-node[data-path="output/main.md"]').click()
            assert "line 2" in page.locator(".tl-preview .tl-code").inner_text()
            # folding a round and filtering by status work without a kernel
            page.locator('.tl-round[data-round="1"]').click()
            page.wait_for_function("() => document.querySelectorAll('.tl-bar-row').length === 2")
            page.locator('.tl-chip[data-filter="statuses:error"]').click()
            page.wait_for_function("() => document.querySelectorAll('.tl-bar-row').length === 1")
            page.locator('.tl-chip[data-filter="statuses:error"]').click()
            page.locator('.tl-round[data-round="1"]').click()
            page.wait_for_function("() => document.querySelectorAll('.tl-bar-row').length === 5")
            assert page.locator(".tl-view-call").count() == 5
            path = shots / "30-run-viewer.png"
            page.screenshot(path=str(path), full_page=True)
            print(f"screenshot: {path}")
            assert errors == []
        finally:
            chromium.close()
