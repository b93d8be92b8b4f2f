"""``bench/agent.py`` runs end to end with tiny settings and prints every row of its table.

Only the shape of the output is checked (the rows, their units, their verdicts): a figure
measured in a test says nothing, so no timing is asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))

from timing import rows_in  # noqa: E402

PATHS = ["agent round, 1 tool call (streamed)", "agent round, 1 tool call (not streamed)",
         "first streamed text -> on_delta", "first streamed text -> %%agent cell"]


def _bench(*arguments: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, str(BENCH / "agent.py"), "--rounds", "1", "--quick",
                           "--agent-rounds", "2", *arguments], capture_output=True, text=True,
                          timeout=600, env=env, check=False, cwd=REPO)


def test_the_agent_bench_prints_its_rows_as_json() -> None:
    done = _bench("--json")
    assert done.returncode == 0, done.stderr
    rows = rows_in(done.stdout)
    assert [r.path for r in rows] == PATHS
    for row in rows:
        assert row.figure.endswith(" ms") and row.load is not None
        assert row.status() in ("met", "NOT met", "noisy (would be met)",
                                "noisy (would be NOT met)")
    overhead, _, on_delta, cell = rows
    assert overhead.target == "<= 1.5x" and overhead.baseline.startswith(
        "bare openai client + tool call ")
    assert "2 rounds per run, 1 runs each" in overhead.note
    assert on_delta.target == cell.target == "<= 50.0 ms"
    assert on_delta.baseline.startswith("bare client's first text chunk ")
    assert "2 rounds" in cell.note


def test_the_agent_bench_prints_a_table_without_the_kernel_row() -> None:
    done = _bench("--no-kernel")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:3] == ["path", "now", "(median)"]
    assert [line.split("  ")[0] for line in lines[2:5]] == PATHS[:3]
    assert not any("%%agent" in line for line in lines)
    assert lines[-1].startswith("load average ")
