"""The sandbox's JavaScript and job protocol against the previous version (an oracle).

``oracle/previous_worker.py`` and ``oracle/previous_bootstrap.py`` are the worker and the
sandbox's own JavaScript as they were before the per-job JavaScript was made smaller. Every
script below runs once through each, in this process, with the same job and the same answers
to its capability calls; the messages a job sends (output, calls) and its outcome (with the
stack as the caller sees it) must be identical.
"""

from __future__ import annotations

import json
import pickle
import time
from types import ModuleType
from typing import Any

import pytest

from tavernlab.js import _worker
from tavernlab.js._job import Job, public_stack

from .oracle import previous_worker

RUNTIME = "import { workspace, context, macros, log } from '@tauritavern/runtime';\n"
V1 = "import { workspace, context, log } from '@tauritavern/runtime/v1';\n"
DESCRIBE = ("const d = (o, k) => JSON.stringify(Object.getOwnPropertyDescriptor(o, k), "
            "(key, v) => typeof v === 'function' ? String(v) : v);\n")
CONTEXT = json.dumps({"worldInfo": {"entries": [{"uid": "1"}]},
                      "variables": {"local": {"a": 1}, "global": {}}, "macro": {"names": {}}})


class FakeConn:
    """The parent's side of the socket: records what the job sends, answers its calls."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, ...]] = []
        self._call: tuple[Any, ...] | None = None

    def send(self, message: tuple[Any, ...]) -> None:
        self.sent.append(message)
        if message[0] == "call":
            self._call = message

    def send_bytes(self, data: bytes) -> None:
        self.send(pickle.loads(data))

    def poll(self, timeout: float) -> bool:
        return False

    def recv(self) -> tuple[Any, ...]:
        assert self._call is not None
        _, op, a, _ = self._call
        if a == "bad":
            return ("reply", ("error", "Error", "Invalid data: Workspace path must be relative"))
        if a == "stop":
            return ("reply", ("interrupt", "cancel"))
        answers = {"readText": f"text of {a}", "exists": str(a).endswith("yes"),
                   "listFiles": ["a.txt", "b/c.txt"], "render": str(a).upper()}
        return ("reply", ("ok", answers.get(op)))


def run(worker: ModuleType, job: Job) -> tuple[list[tuple[Any, ...]], dict[str, Any]]:
    """Run ``job`` with ``worker``'s SpareRuntime and JobRunner; the messages and outcome."""
    engine = worker.load_engine()
    spare = worker.SpareRuntime(engine)
    conn = FakeConn()
    runner = worker.JobRunner(engine, conn, job, time.monotonic() + 20)
    outcome = dict(runner.run(spare))
    outcome.pop("started")
    outcome.pop("finished")
    outcome["stack"] = public_stack(outcome.get("stack", ""))
    return conn.sent, outcome


def command(source: str, *, context: str | None = None, cap: int | None = 131072,
            origin: int | None = None, state: tuple[int, int, int, int] | None = None,
            extra: dict[str, str] | None = None) -> Job:
    return Job(mode="command", entry="/scratch/t.js",
               modules={"/scratch/t.js": source, **(extra or {})},
               runtime_names=("@tauritavern/runtime",), context=context,
               argv=("js", "/scratch/t.js", "x", "y"), output_cap=cap, time_origin=origin,
               random_state=state)


def legacy(source: str, *, args: str = '{"x": 4}', limit: int = 1000,
           origin: int | None = None, state: tuple[int, int, int, int] | None = None) -> Job:
    return Job(mode="legacy", entry="scripts/t.js", modules={"scripts/t.js": source},
               runtime_names=("@tauritavern/runtime/v1", "@tauritavern/runtime"),
               context=CONTEXT, args=args, result_limit=limit, time_origin=origin,
               random_state=state)


CASES: dict[str, Job] = {
    "console": command(
        "console.log('a', 1, {}, [1, 2], null, undefined, true, Symbol('s'));"
        "console.info('i'); console.debug('d'); console.warn('w', {}); console.error('e');"
        "console.log(); console.log('\\ud800x'); console.log({ toString() { return 't'; } });"),
    "shapes": command(
        DESCRIBE + "console.log(d(globalThis, 'console'), d(globalThis, 'process'), "
        "d(process, 'argv'), d(process, 'exitCode'), String(console.log), console.log.name, "
        "console.log.length, console.log === console.info, Object.keys(console).join(), "
        "Object.keys(process).join(), JSON.stringify(process.argv), "
        "JSON.stringify(Object.getOwnPropertyNames(globalThis).sort()), "
        "JSON.stringify(Object.getOwnPropertySymbols(globalThis).map(String)), "
        "Object.isFrozen(console), Object.getPrototypeOf(process) === Object.prototype);"),
    "exit code": command("process.exitCode = 3; console.log(process.exitCode);"),
    "exit code invalid": command(
        "for (const v of [1.5, -1, 256, '2', null]) {"
        " try { process.exitCode = v; } catch (e) { console.log(String(e), e.stack); } }"
        "process.exitCode = 255;"),
    "stacks through console": command(
        "const o = { toString() { console.error(new Error('in').stack); return 'o'; } };\n"
        "console.log(o);\n"
        "try { console.log({ toString() { throw new Error('t'); } }); }"
        " catch (e) { console.log(e.stack); }"),
    "stacks through the cap": command(
        "console.log('1234567890');\ntry { console.log('abc'); } catch (e) { console.log(1); "
        "process.exitCode = 4; throw e; }", cap=12),
    "stacks through describe": command(
        "throw { toString() { console.log(new Error('d').stack); return 'x'; }, "
        "get stack() { console.log(new Error('s').stack); return 'S'; } };"),
    "stacks through Date": command(
        "try { new Date({ valueOf() { throw new Error('v'); } }); }"
        " catch (e) { console.log(e.stack); }\n"
        "try { new Date(Symbol()); } catch (e) { console.log(e.stack); }",
        origin=5, state=(1, 1, 1, 1)),
    "throw error": command("function f() { throw new TypeError('deep'); }\nf();"),
    "throw value": command("throw 5;"),
    "throw null": command("throw null;"),
    "throw bad string": command("throw { toString() { throw 1; } };"),
    "throw object": command("throw { name: 'N', message: 'M', stack: 'S' };"),
    "syntax error": command("let = ;"),
    "import error": command("import { nope } from '/scratch/lib.js';\n",
                            extra={"/scratch/lib.js": "export const yes = 1;\n"}),
    "pending await": command("await new Promise(() => {});"),
    "rejected await": command("await Promise.reject(new RangeError('r'));"),
    "user eval frames": command("eval('(function f() { throw new Error(1); })()');"),
    "stack overflow": command("function r() { r(); }\nr();"),
    "out of memory": command("const a = []; for (;;) a.push(new Array(100000).fill(1));"),
    "runtime api": command(
        RUNTIME + "console.log(workspace.readText('a.txt'), workspace.exists('b-yes'), "
        "workspace.exists('b'), workspace.listFiles().join(), workspace.listFiles('d').join(), "
        "macros.render('m'));\nlog.info('hi', 2); log.error({}); workspace.writeText('o', 'z');\n"
        "try { workspace.readText('bad'); } catch (e) { console.log(String(e)); }\n"
        "try { workspace.readText(1); } catch (e) { console.log(String(e)); }\n"
        "try { context.worldInfo; } catch (e) { console.log(e.message); }\n"
        "console.log(Object.keys(log).join(), Object.isFrozen(workspace), String(log.info));"),
    "runtime context": command(
        RUNTIME + "console.log(JSON.stringify(context.worldInfo), context.variables.local.a, "
        "Object.keys(context).join());", context=CONTEXT),
    "runtime interrupt": command(
        RUNTIME + "try { workspace.readText('stop'); } catch (e) { console.log(String(e)); }\n"
        "for (;;) {}"),
    "internals": command(
        "const core = await import(['<tavernlab:', 'core>'].join(''));\n"
        "const start = await import('<tavernlab:' + 'start>');\n"
        "console.log(core.takeInternals(), typeof core.workspace.readText, "
        "start.take('job'), start.take('runtime'), typeof globalThis.__tavernlab_core);"),
    "tampered globals": command(
        "String.prototype.toWellFormed = () => 'x'; JSON.parse = () => 1; Object.freeze = 0;"
        "Error = function () {}; console.log('still', 1);\n"
        "const { workspace, log } = await import('@tauritavern/' + 'runtime');\n"
        "log.warn('w'); try { workspace.readText('bad'); } catch (e) { console.log(e.message); }"),
    "cap full": command("console.log('12345'); console.log('67890'); console.log('z');", cap=12),
    "cap line": command("console.log('x'.repeat(20));", cap=12),
    "no console": command("console.log(1);", cap=None),
    "determinism": command(
        "console.log(Date.now(), new Date().getTime(), performance.now(), Date(), "
        "Math.random(), Math.random(), String(Date), Date.length, Date.name, "
        "String(Math.random), Object.getOwnPropertyNames(Date).join(), "
        "Date.prototype.constructor === Date, new Date(0).toISOString(), String(Date.now), "
        "Object.keys(performance).join(), performance.timeOrigin, String(performance.now), "
        "Object.isFrozen(performance), new Date(2000, 1) instanceof Date);",
        origin=1_700_000_000_000, state=(1, 2, 3, 4)),
    "clock only": command("console.log(Date.now(), typeof Math.random());",
                          origin=1_700_000_000_000),
    "seed only": command("console.log(Math.random(), typeof Date.now());", state=(5, 6, 7, 8)),
    "legacy default": legacy(
        "export default (a) => ({ x: a.x, c: typeof console, p: typeof process, "
        "g: Object.getOwnPropertyNames(globalThis).length });"),
    "legacy main": legacy("export function main(a) { return a.x * 2; }"),
    "legacy undefined": legacy("export default () => undefined;"),
    "legacy no entry": legacy("export const y = 1;"),
    "legacy async throw": legacy("export default async () => { throw new Error('no'); };"),
    "legacy over limit": legacy("export default () => 'x'.repeat(5000);"),
    "legacy runtime": legacy(
        V1 + "export default () => { log.info('m'); workspace.writeText('w', 'v');"
        " try { log.warn(1); } catch (e) { return [String(e), context.variables.local.a]; } };"),
    "legacy stacks": legacy(
        V1 + "export default (a) => { log.info(new Error('x').stack); "
        "return { toJSON() { log.info(new Error('j').stack); return 1; } }; };"),
    "legacy determinism": legacy("export default () => [Date.now(), Math.random()];",
                                 origin=1_000, state=(9, 9, 9, 9)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_job_sends_and_ends_exactly_as_before(name: str) -> None:
    job = CASES[name]
    assert run(_worker, job) == run(previous_worker, job)


def test_the_oracle_cases_cover_every_outcome() -> None:
    statuses = {run(_worker, job)[1]["status"] for job in CASES.values()}
    reasons = {run(_worker, job)[1].get("reason") for job in CASES.values()}
    assert statuses == {"ok", "error", "interrupted"}
    assert {"memory", "stack", "cancel"} <= reasons
