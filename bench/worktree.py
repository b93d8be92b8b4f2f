"""Benchmark: worktree provisioning and clone globs against their raw baselines.

Prints medians (ms) and ratios measured in one run:

1. ``worktree.provision`` with no heavy phase vs a raw ``git worktree add`` of the same
   repository (target ratio <= 1.3);
2. cloning a 20,000-file ``node_modules`` through ``cloneGlobs`` vs ``cp -a`` of the same tree;
3. the ``*.localhost`` proxy vs a direct connection to the same service (a separate process
   on 127.0.0.1, the proxy in another): small keep-alive requests per second, and the
   throughput of 4 MiB responses.

Usage: ``.venv/bin/python bench/worktree.py [--files N] [--runs N]``. Not a test.
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tavernlab.worktree import call_tool
from tavernlab.worktree._globs import clone_entries

IDENTITY = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def make_repo(base: Path, files: int) -> Path:
    repo = base / "app"
    git(base, "init", "-q", "-b", "main", str(repo))
    for index in range(files):
        path = repo / "src" / f"pkg{index % 40}" / f"module{index}.ts"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"export const value{index} = {index};\n")
    (repo / ".gitignore").write_text("node_modules/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


def make_node_modules(root: Path, files: int) -> None:
    for index in range(files):
        path = root / "node_modules" / f"pkg{index % 400}" / "lib" / f"file{index}.js"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"module.exports = {index};\n")


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def remove_worktree(repo: Path, path: Path, branch: str) -> None:
    git(repo, "worktree", "remove", "--force", str(path))
    git(repo, "branch", "-D", branch)


def bench_provision(repo: Path, runs: int) -> tuple[float, float]:
    raw_times, tool_times = [], []
    pool = repo.parent / "_worktrees"
    for run in range(runs + 1):  # the first round warms caches and is discarded
        raw_dir, raw_branch = pool / f"raw-{run}", f"raw/{run}"
        raw_argv = ["git", "-C", str(repo), "worktree", "add", "-b", raw_branch, str(raw_dir),
                    "main"]
        raw = timed(lambda argv=raw_argv: subprocess.run(argv, check=True, capture_output=True))
        remove_worktree(repo, raw_dir, raw_branch)
        slug = f"tool-{run}"
        tool_input = {"repoRoot": str(repo), "slug": slug, "base": "main"}
        tool = timed(lambda data=tool_input: call_tool("worktree.provision", data))
        remove_worktree(repo, pool / slug, f"wt/{slug}")
        if run:
            raw_times.append(raw)
            tool_times.append(tool)
    return statistics.median(raw_times), statistics.median(tool_times)


def bench_clone(base: Path, files: int, runs: int) -> tuple[float, float]:
    source = base / "clone-src"
    make_node_modules(source, files)
    cp_times, clone_times = [], []
    for run in range(runs + 1):
        cp_dest, clone_dest = base / f"cp-{run}", base / f"clone-{run}"
        cp_dest.mkdir()
        clone_dest.mkdir()
        cp_argv = ["cp", "-a", str(source / "node_modules"), str(cp_dest / "node_modules")]
        cp = timed(lambda argv=cp_argv: subprocess.run(argv, check=True))
        clone = timed(lambda dest=clone_dest: clone_entries(source, dest, ["node_modules"]))
        assert (clone_dest / "node_modules").is_dir()
        shutil.rmtree(cp_dest)
        shutil.rmtree(clone_dest)
        if run:
            cp_times.append(cp)
            clone_times.append(clone)
    return statistics.median(cp_times), statistics.median(clone_times)


SERVICE = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 20  # head and body leave in one write, so Nagle never delays a reply
    def log_message(self, *args):
        pass
    def do_GET(self):
        size = int(self.path.strip("/") or "64")
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        self.wfile.write(b"x" * size)

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""

PROXY = """
import sys
from tavernlab.worktree._proxy import start_proxy
from tavernlab.worktree._proxy_table import ProxyTable

table = ProxyTable()
table.set("svc.localhost", int(sys.argv[1]))
server = start_proxy(table=table)
print(server.port, flush=True)
sys.stdin.read()
server.close()
"""


@contextmanager
def child_port(code: str, *args: str) -> Iterator[int]:
    """Run a helper process that prints the port it listens on; stop it afterwards."""
    child = subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        yield int(child.stdout.readline())
    finally:
        child.kill()
        child.wait()


def requests_over_one_connection(port: int, count: int, size: int) -> float:
    """Milliseconds for ``count`` keep-alive GETs of ``size``-byte bodies."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    started = time.perf_counter()
    for _ in range(count):
        connection.request("GET", f"/{size}", headers={"Host": "svc.localhost"})
        response = connection.getresponse()
        assert len(response.read()) == size
    elapsed = (time.perf_counter() - started) * 1000
    connection.close()
    return elapsed


def bench_proxy(runs: int) -> dict[str, tuple[float, float]]:
    """Median ms per batch, direct vs proxied: 1000 small requests, 20 x 4 MiB."""
    figures: dict[str, tuple[float, float]] = {}
    with child_port(SERVICE) as service, child_port(PROXY, str(service)) as proxy:
        for label, count, size in (("small", 1000, 64), ("bulk", 20, 4 * 1024 * 1024)):
            direct, proxied = [], []
            for run in range(runs + 1):
                one = requests_over_one_connection(service, count, size)
                two = requests_over_one_connection(proxy, count, size)
                if run:
                    direct.append(one)
                    proxied.append(two)
            figures[label] = (statistics.median(direct), statistics.median(proxied))
    return figures


def print_proxy(figures: dict[str, tuple[float, float]], runs: int) -> None:
    direct, proxied = figures["small"]
    print(f"proxy vs direct connection ({runs} runs)")
    print(f"  1000 keep-alive GETs, direct   {1000 / direct * 1000:8.0f} req/s")
    print(f"  1000 keep-alive GETs, proxied  {1000 / proxied * 1000:8.0f} req/s")
    print(f"  ratio (proxied time / direct)   {proxied / direct:8.2f}")
    direct, proxied = figures["bulk"]
    megabytes = 20 * 4
    print(f"  80 MiB in 4 MiB bodies, direct {megabytes / direct * 1000:8.0f} MiB/s")
    print(f"  80 MiB in 4 MiB bodies, proxied{megabytes / proxied * 1000:8.0f} MiB/s")
    print(f"  ratio (proxied time / direct)   {proxied / direct:8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000, help="tracked files in the repo")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--node-modules", type=int, default=20000)
    parser.add_argument("--clone-runs", type=int, default=3)
    parser.add_argument("--proxy-runs", type=int, default=3)
    args = parser.parse_args()
    os.environ.update(IDENTITY)
    with tempfile.TemporaryDirectory(prefix="tavernlab-bench-") as tmp:
        base = Path(tmp)
        repo = make_repo(base, args.files)
        raw, tool = bench_provision(repo, args.runs)
        print(f"provision, no heavy phase ({args.files} tracked files, {args.runs} runs)")
        print(f"  git worktree add (raw)   median {raw:8.1f} ms")
        print(f"  worktree.provision       median {tool:8.1f} ms")
        print(f"  ratio                           {tool / raw:8.2f}  (target <= 1.3)")
        cp, clone = bench_clone(base, args.node_modules, args.clone_runs)
        print(f"clone of a {args.node_modules}-file node_modules ({args.clone_runs} runs)")
        print(f"  cp -a (raw)              median {cp:8.1f} ms")
        print(f"  cloneGlobs               median {clone:8.1f} ms")
        print(f"  ratio                           {clone / cp:8.2f}")
    print_proxy(bench_proxy(args.proxy_runs), args.proxy_runs)


if __name__ == "__main__":
    main()
