"""Benchmark: the agent loop against the bare ``openai`` client on the same local server
(not a test).

The model is the local HTTP server of the tests (``tests/model_servers.py``: the OpenAI Chat
Completions wire format, JSON and SSE, on 127.0.0.1), in a process of its own, serving the
same turns to both sides; it stamps each chunk it sends with ``time.monotonic()`` (one clock
for every process of the machine), right after the chunk's write returns. Rows, each
measured in rounds that interleave the baseline with the path:

* **agent round, one tool call** (streamed, and not streamed): ``Lab.run_agent`` over
  ``OpenAICompatible(base_url=<server>)`` for a run of ``--agent-rounds`` rounds of one tool
  call each (``workspace_write_file`` in every round, ``workspace_finish`` in the last), per
  round, against the raw baseline: a run started by hand, the bare ``openai`` client sending
  the very request bodies the loop sent (captured from a warm-up run; same turns, same
  stream setting, a streamed answer read to its end) and, after each answer, the same tool
  call made directly (``run.call_tool``). Target: at most 1.5x. The note splits the baseline
  into its requests and its tool calls, and gives both sides' CPU time (this process's, the
  server not included: steadier than wall time on a loaded machine).
* **first streamed text -> on_delta**: for each round, the time from the server sending the
  first chunk that carries text (its ``sent_at``, ``time.monotonic()``) to ``on_delta`` (the
  callback a cell's display hangs on) receiving that text; the baseline is the bare client
  iterating the same stream to its first text chunk. Target: at most 50 ms (median).
* **first streamed text -> %%agent cell (iopub)**: the same through a ``%%agent`` cell in a
  real tavernlab kernel (from ``kernel-spec/``): from the server's send to this process
  receiving the cell's ``stream`` message with that text on the iopub channel (one machine,
  one monotonic clock). Skipped with ``--no-kernel``.

Text turns stream one chunk every ``--chunk-ms`` (default 5 ms), as a model's tokens arrive;
the overhead turns stream without pauses. Runs are ``background`` (no commit handshake), in a
fresh lab on tmpfs when there is one. The load average is read around every row's samples: a
row measured while it was above 1.5 or moved by more than 1 is noisy (:func:`timing.noisy`).

Usage: ``.venv/bin/python bench/agent.py [--rounds N] [--agent-rounds N] [--chunk-ms MS]
[--no-kernel] [--quick] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
from timing import Row, absolute_row, emit, fresh_dir, load_average, ms, table_options

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the tests' local model server

import tests.model_servers as model_servers  # noqa: E402
from tests.model_servers import ModelServer, openai_chunks  # noqa: E402

from tavernlab import Lab  # noqa: E402
from tavernlab.models import OpenAICompatible, TextDelta  # noqa: E402

TASK = "Write the parts, one file per round, then finish."
#: The most a round may cost, as a multiple of the bare client's request plus its tool call.
OVERHEAD_LIMIT = 1.5
#: The most the first streamed text may lag behind the server's send (ms).
FIRST_TEXT_LIMIT_MS = 50.0


def _call(call_id: str, alias: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": alias, "arguments": json.dumps(arguments)}}


def _turn(text: str | None, call: dict[str, Any], delay_ms: float = 0.0) -> dict[str, Any]:
    message = {"role": "assistant", "content": text, "tool_calls": [call]}
    turn: dict[str, Any] = {"choices": [{"message": message, "finish_reason": "tool_calls"}],
                            "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                      "total_tokens": 15}}
    if delay_ms:
        turn["delayMs"] = delay_ms
    return turn


def write_arguments(number: int) -> dict[str, Any]:
    """The arguments of round ``number``'s ``workspace_write_file``."""
    return {"path": f"output/part-{number}.md", "content": f"Part {number} of the answer.\n"}


def text_of(number: int) -> str:
    """Round ``number``'s streamed text: its first piece names the round."""
    return f"Round {number:02d} writes part {number} of the answer to its own file."


def turns(rounds: int, *, text: bool, delay_ms: float = 0.0) -> list[dict[str, Any]]:
    """``rounds`` turns of one tool call each: a write in every round, the finish last."""
    out = [_turn(text_of(n) if text else None,
                 _call(f"call_write_{n}", "workspace_write_file", write_arguments(n)), delay_ms)
           for n in range(1, rounds)]
    out.append(_turn(text_of(rounds) if text else None,
                     _call("call_finish", "workspace_finish", {}), delay_ms))
    return out


def first_text_chunk(turn: dict[str, Any]) -> int:
    """The index of the first SSE chunk of ``turn`` that carries text."""
    for index, chunk in enumerate(openai_chunks(turn, 0, "bench", True)):
        for choice in chunk.get("choices") or []:
            if (choice.get("delta") or {}).get("content"):
                return index
    raise ValueError("the turn streams no text")


class ServerProcess:
    """The local model server in a process of its own (``agent.py --serve-model``), so that
    its threads never share this process's interpreter lock with the client being timed;
    driven over its stdin and stdout, one JSON line each way. It stamps each chunk's
    ``sent_at`` with ``time.monotonic()``, the machine's one monotonic clock, which this
    process reads too."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve-model"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.base_url = str(self._ask({"op": "url"}))

    def _ask(self, command: dict[str, Any]) -> Any:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(command) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"the model server process ended (exit {self._process.wait()})")
        return json.loads(line)["answer"]

    def serve(self, served: list[dict[str, Any]]) -> int:
        """Queue ``served``; returns the index of the request that gets the first."""
        return int(self._ask({"op": "serve", "turns": served}))

    def requests(self, first: int) -> list[dict[str, Any]]:
        """The bodies of the requests from index ``first`` on."""
        return list(self._ask({"op": "requests", "first": first}))

    def sent_at(self, first: int) -> list[list[float]]:
        """Each request's chunk send times, from index ``first`` on."""
        return list(self._ask({"op": "sent_at", "first": first}))

    def close(self) -> None:
        """Stop the server process and wait for it."""
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()


def serve_model() -> None:
    """The ``--serve-model`` process: a :class:`ModelServer` answering :class:`ServerProcess`
    until its stdin closes. Its sockets send without Nagle's delay, as production servers
    do (else a JSON answer, headers and body in two writes, waits for the client's delayed
    ACK: some 40 ms on both sides)."""
    model_servers._Handler.disable_nagle_algorithm = True
    with ModelServer("openai", [], model="bench") as server:
        for line in sys.stdin:
            command = json.loads(line)
            op = command["op"]
            answer: Any
            if op == "url":
                answer = server.base_url
            elif op == "serve":
                answer = len(server.turns)
                if answer != len(server.requests):
                    raise RuntimeError("a turn was left unserved")
                server.turns.extend(command["turns"])
            elif op == "requests":
                answer = server.requests[command["first"]:]
            else:
                answer = server.sent_at[command["first"]:]
            print(json.dumps({"answer": answer}), flush=True)


@dataclass
class Bench:
    """The server, the lab, the loop's provider and the bare client, shared by every row."""

    server: ServerProcess
    lab: Lab
    provider: OpenAICompatible
    client: openai.OpenAI
    rounds: int
    bodies: dict[tuple[bool, bool], list[dict[str, Any]]] = field(default_factory=dict)

    def serve(self, served: list[dict[str, Any]]) -> int:
        """Queue ``served``; returns the index of the request that gets the first."""
        return self.server.serve(served)

    def agent(self, served: list[dict[str, Any]], stream: bool,
              on_delta: Callable[[Any], None] | None = None) -> tuple[float, int]:
        """One loop run over ``served``: ``(seconds, index of its first request)``."""
        first = self.serve(served)
        start = time.perf_counter()
        outcome = self.lab.run_agent(TASK, model=self.provider, presentation="background",
                                     stream=stream, on_delta=on_delta)
        elapsed = time.perf_counter() - start
        if outcome.status != "completed" or outcome.rounds != len(served):
            raise RuntimeError(f"the loop run ended {outcome!r}: {outcome.failure}")
        return elapsed, first

    def captured(self, stream: bool, text: bool, served: list[dict[str, Any]]
                 ) -> list[dict[str, Any]]:
        """The request bodies a loop run sends for ``served`` (from a warm-up run)."""
        key = (stream, text)
        if key not in self.bodies:
            _, first = self.agent(served, stream)
            self.bodies[key] = self.server.requests(first)
        return self.bodies[key]

    def bare(self, body: dict[str, Any]) -> Any:
        """One request of the bare client; a stream is read to its end."""
        answer = self.client.chat.completions.create(**body)
        if body.get("stream"):
            for _ in answer:
                pass
        return answer


# --- (a) the loop's overhead per round ---------------------------------------------------

def overhead_row(bench: Bench, stream: bool, samples: int) -> Row:
    """The per-round cost of a loop run against the bare client plus the direct tool calls,
    interleaved, ``samples`` of each."""
    served = turns(bench.rounds, text=False)
    bodies = bench.captured(stream, False, served)
    requests: list[float] = []
    tools: list[float] = []

    def baseline() -> float:
        bench.serve(served)
        start = time.perf_counter()
        run = bench.lab.start_run(chat_id="bench", presentation="background")
        spent_requests = spent_tools = 0.0
        for number, body in enumerate(bodies, start=1):
            mark = time.perf_counter()
            bench.bare(body)
            done = time.perf_counter()
            if number < len(bodies):
                run.call_tool("workspace.write_file", write_arguments(number))
            else:
                run.call_tool("workspace.finish", {})
            spent_requests += done - mark
            spent_tools += time.perf_counter() - done
        elapsed = time.perf_counter() - start
        if run.status != "completed":
            raise RuntimeError(f"the direct run is {run.status}")
        requests.append(spent_requests)
        tools.append(spent_tools)
        return elapsed

    baseline()  # warm both (the loop was warmed by the capture)
    bench.agent(served, stream)
    requests.clear()
    tools.clear()
    before = load_average()
    ours, theirs, ratios = [], [], []
    cpu_ours, cpu_theirs = [], []
    for _ in range(samples):
        cpu = time.process_time()
        base = baseline()
        cpu_theirs.append(time.process_time() - cpu)
        cpu = time.process_time()
        mine, _ = bench.agent(served, stream)
        cpu_ours.append(time.process_time() - cpu)
        theirs.append(base)
        ours.append(mine)
        ratios.append(mine / base)
    after = load_average()
    per_round = bench.rounds
    figure = statistics.median(ours) / per_round * 1000
    base_ms = statistics.median(theirs) / per_round * 1000
    note = (f"{per_round} rounds per run, {samples} runs each; baseline per round: requests "
            f"{ms(statistics.median(requests) / per_round * 1000)} + tool call "
            f"{ms(statistics.median(tools) / per_round * 1000)} (+ the run's start); CPU of "
            f"this process per round "
            f"{ms(statistics.median(cpu_ours) / per_round * 1000)} vs "
            f"{ms(statistics.median(cpu_theirs) / per_round * 1000)}")
    ratio = statistics.median(ratios)
    how = "streamed" if stream else "not streamed"
    return Row(f"agent round, 1 tool call ({how})", ms(figure),
               f"bare openai client + tool call {ms(base_ms)}", ratio,
               (min(ratios), max(ratios)), f"<= {OVERHEAD_LIMIT}x", ratio <= OVERHEAD_LIMIT,
               note, load=(before, after))


# --- (b) first streamed text -------------------------------------------------------------

def sent_first_text(bench: Bench, first: int, served: list[dict[str, Any]]) -> list[float]:
    """When the server sent each request's first text chunk (``time.monotonic()``)."""
    sent = bench.server.sent_at(first)
    return [sent[n][first_text_chunk(turn)] for n, turn in enumerate(served)]


def loop_first_text(bench: Bench, served: list[dict[str, Any]]) -> list[float]:
    """One loop run: per round, ms from the server's send to ``on_delta``'s receipt."""
    seen: dict[int, float] = {}

    def on_delta(live: Any) -> None:
        if isinstance(live.delta, TextDelta) and live.round not in seen:
            seen[live.round] = time.monotonic()

    _, first = bench.agent(served, True, on_delta)
    sent = sent_first_text(bench, first, served)
    return [(seen[n + 1] - sent[n]) * 1000 for n in range(len(served))]


def bare_first_text(bench: Bench, bodies: list[dict[str, Any]],
                    served: list[dict[str, Any]]) -> list[float]:
    """The bare client over the same bodies: ms from the send to its first text chunk."""
    first = bench.serve(served)
    seen: list[float] = []
    for body in bodies:
        stream = bench.client.chat.completions.create(**body)
        got = None
        for chunk in stream:
            if got is None and chunk.choices and chunk.choices[0].delta.content:
                got = time.monotonic()
        assert got is not None, "the stream carried no text"
        seen.append(got)
    sent = sent_first_text(bench, first, served)
    return [(mine - theirs) * 1000 for mine, theirs in zip(seen, sent, strict=True)]


def first_text_row(bench: Bench, samples: int, chunk_ms: float) -> tuple[Row, float]:
    """The on_delta row, and the bare client's median (the kernel row's baseline)."""
    served = turns(bench.rounds, text=True, delay_ms=chunk_ms)
    bodies = bench.captured(True, True, served)
    bare_first_text(bench, bodies, served)  # warm
    before = load_average()
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(samples):
        theirs += bare_first_text(bench, bodies, served)
        ours += loop_first_text(bench, served)
    after = load_average()
    figure, base = statistics.median(ours), statistics.median(theirs)
    note = (f"{len(ours)} rounds; slowest {ms(max(ours))}; a chunk every {chunk_ms:g} ms")
    return absolute_row("first streamed text -> on_delta", figure,
                        "bare client's first text chunk", base, FIRST_TEXT_LIMIT_MS, note,
                        load=(before, after)), base


# --- (b) through a %%agent cell in a real kernel -----------------------------------------

@contextmanager
def kernel(scratch: Path) -> Iterator[Any]:
    """A tavernlab kernel (from ``kernel-spec/``) in ``scratch``, and its client."""
    from jupyter_client import KernelManager

    shutil.copytree(REPO / "kernel-spec" / "tavernlab",
                    scratch / "jp" / "kernels" / "tavernlab")
    previous = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(scratch / "jp"), previous]))
    (scratch / "cwd").mkdir()
    manager = KernelManager(kernel_name="tavernlab")
    manager.start_kernel(cwd=str(scratch / "cwd"))
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=False)
        if previous is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = previous


def execute(client: Any, code: str) -> list[tuple[float, dict[str, Any]]]:
    """Run a cell; its iopub messages up to idle, each with when it arrived here."""
    msg_id = client.execute(code)
    received = []
    while True:
        msg = client.get_iopub_msg(timeout=120)
        arrived = time.monotonic()
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        received.append((arrived, msg))
        if msg["msg_type"] == "error":
            raise RuntimeError(f"the cell failed: {msg['content']['ename']}: "
                               f"{msg['content']['evalue']}")
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return received


def cell_first_text(bench: Bench, client: Any, served: list[dict[str, Any]]) -> list[float]:
    """One ``%%agent`` cell: per round, ms from the server's send to the stream message."""
    first = bench.serve(served)
    cell = (f"%%agent --model local:bench --base-url {bench.server.base_url} "
            f"--presentation background --stream\n{TASK}")
    received = execute(client, cell)
    sent = sent_first_text(bench, first, served)
    streamed = [(t, msg["content"]["text"]) for t, msg in received
                if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout"]
    latencies = []
    for number, at in enumerate(sent, start=1):
        piece = text_of(number)[:8]
        arrival = next((t for t, text in streamed if piece in text), None)
        if arrival is None:
            raise RuntimeError(f"round {number}'s text never reached the cell")
        latencies.append((arrival - at) * 1000)
    return latencies


def kernel_row(bench: Bench, samples: int, chunk_ms: float, base: float) -> Row:
    """The ``%%agent`` row (its baseline: the bare client's figure from the on_delta row)."""
    served = turns(bench.rounds, text=True, delay_ms=chunk_ms)
    with tempfile.TemporaryDirectory(prefix="tavernlab-bench-kernel-") as scratch, \
            kernel(Path(scratch)) as client:
        execute(client, f"%tavern lab {Path(scratch) / 'lab'}")
        cell_first_text(bench, client, served)  # warm (imports, the provider's client)
        before = load_average()
        ours: list[float] = []
        for _ in range(samples):
            ours += cell_first_text(bench, client, served)
        after = load_average()
    figure = statistics.median(ours)
    note = (f"{len(ours)} rounds; slowest {ms(max(ours))}; send -> stream message received "
            "on iopub here")
    return absolute_row("first streamed text -> %%agent cell", figure,
                        "bare client's first text chunk", base, FIRST_TEXT_LIMIT_MS, note,
                        load=(before, after))


def measure(samples: int, rounds: int, chunk_ms: float, with_kernel: bool) -> list[Row]:
    """Every row."""
    if rounds < 1:
        raise SystemExit("--agent-rounds must be at least 1")
    kind = "tmpfs" if os.path.isdir("/dev/shm") else "disk"
    with ExitStack() as stack:
        root = stack.enter_context(fresh_dir(kind))
        server = ServerProcess()
        stack.callback(server.close)
        lab = stack.enter_context(Lab(root / "lab"))
        provider = OpenAICompatible("bench", base_url=server.base_url, api_key_env=None)
        stack.callback(provider.close)
        client = openai.OpenAI(base_url=server.base_url, api_key="tavernlab-no-key",
                               max_retries=0)
        stack.callback(client.close)
        bench = Bench(server, lab, provider, client, rounds)
        rows = [overhead_row(bench, True, samples), overhead_row(bench, False, samples)]
        text_row, base = first_text_row(bench, samples, chunk_ms)
        rows.append(text_row)
        if with_kernel:
            rows.append(kernel_row(bench, samples, chunk_ms, base))
    return rows


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9,
                        help="interleaved samples of each side per row (default 9)")
    parser.add_argument("--agent-rounds", type=int, default=6,
                        help="model rounds per run, one tool call each (default 6)")
    parser.add_argument("--chunk-ms", type=float, default=5.0,
                        help="the pause before each chunk of a text turn (default 5 ms)")
    parser.add_argument("--no-kernel", action="store_true",
                        help="leave out the %%agent row (no kernel is started)")
    parser.add_argument("--serve-model", action="store_true", help=argparse.SUPPRESS)
    table_options(parser)
    options = parser.parse_args()
    if options.serve_model:
        serve_model()
        return
    samples = max(1, min(options.rounds, 5) if options.quick else options.rounds)
    emit(measure(samples, options.agent_rounds, options.chunk_ms, not options.no_kernel),
         options.json)


if __name__ == "__main__":
    main()
