"""Services (docs/worktrees.md): ports, hostnames, the proxy (real HTTP and WebSocket traffic) and
supervised services end to end."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tavernlab.worktree import ProxyServer, ToolError, call_tool, proxy_table, start_proxy
from tavernlab.worktree._errors import ServiceError
from tavernlab.worktree._hostnames import default_branch, service_hostname, service_url, slugify
from tavernlab.worktree._ports import allocate_port, ephemeral_port, is_port_free
from tavernlab.worktree._proxy_table import ProxyTable, strip_port
from tavernlab.worktree._services import default_registry, stop_service

from .conftest import Repo
from .netclient import get_json, http_request, wait_listening, websocket_echo

ECHO = Path(__file__).with_name("echo_service.py")
ECHO_COMMAND = f"exec {sys.executable} {ECHO}"


@pytest.fixture
def proxy() -> Iterator[ProxyServer]:
    server = start_proxy(port=0)
    yield server
    server.close()


def test_free_declared_port_and_reserved_port() -> None:
    port = ephemeral_port()
    assert allocate_port(port, set()) == port
    reserved = {port}
    other = allocate_port(port, reserved)
    assert other != port and other in reserved


def test_taken_port_is_replaced() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        assert not is_port_free(taken)
        assert allocate_port(taken, set()) != taken


def test_five_allocations_never_repeat() -> None:
    reserved: set[int] = set()
    ports = [allocate_port(None, reserved) for _ in range(5)]
    assert len(set(ports)) == 5


def test_slugify_and_hostnames() -> None:
    assert slugify("Fix Flaky_Test!!") == "fix-flaky-test"
    assert slugify("wt/fix--thing") == "wt-fix-thing"
    assert slugify("--Edge--") == "edge"
    assert service_hostname("web", "wt/fix-flaky", "My Repo", False) == \
        "web--wt-fix-flaky--my-repo.localhost"
    assert service_hostname("web", "main", "my-repo", True) == "web--my-repo.localhost"
    assert service_url(service_hostname("api", "main", "app", True), 18780) == \
        "http://api--app.localhost:18780"


def test_default_branch_detection(repo: Repo, tmp_path: Path) -> None:
    assert default_branch(repo.root) == "main"
    repo.git("remote", "set-head", "origin", "-d")
    repo.git("branch", "-m", "main", "master")
    assert default_branch(repo.root) == "master"
    repo.git("branch", "-m", "master", "trunk")
    assert default_branch(repo.root) == "main"


def test_proxy_table() -> None:
    table = ProxyTable()
    table.set("web--repo.localhost", 3000)
    for host in ("web--repo.localhost", "web--repo.localhost:18780", "WEB--REPO.localhost:18780"):
        assert table.resolve(host) == 3000
    assert table.resolve("other.localhost") is None
    assert table.resolve(None) is None
    assert table.delete("WEB--repo.localhost") is True
    assert table.hosts() == []
    assert table.delete("web--repo.localhost") is False


def test_strip_port() -> None:
    assert strip_port("host:8080") == "host"
    assert strip_port("host") == "host"
    assert strip_port("[::1]:8080") == "[::1]"


def test_proxy_routes_http_and_websocket(repo: Repo, proxy: ProxyServer, tmp_path: Path
                                         ) -> None:
    repo.commit_config({"scripts": {
        "web": {"command": ECHO_COMMAND, "type": "service"},
        "api": {"command": ECHO_COMMAND, "type": "service"}}})
    status = call_tool("worktree.start-service", {
        "repoRoot": repo.root, "worktreePath": repo.root, "branch": "main", "script": "web",
        "proxyPort": proxy.port})
    call_tool("worktree.start-service", {
        "repoRoot": repo.root, "worktreePath": repo.root, "branch": "main", "script": "api",
        "proxyPort": proxy.port})
    assert status["hostname"] == "web--app.localhost"
    for name in ("web", "api"):
        wait_listening(default_registry().get(repo.root).status(name)["port"])
    seen = get_json(proxy.port, "web--app.localhost")
    assert seen["host"] == "web--app.localhost"
    seen = get_json(proxy.port, f"api--app.localhost:{proxy.port}")
    assert seen["host"] == f"api--app.localhost:{proxy.port}"
    code, headers, body = http_request(proxy.port, "nobody.localhost")
    assert code == 502 and headers["content-type"].startswith("text/plain")
    assert body.decode() == ('worktree-proxy: no service for host "nobody.localhost"\n'
                             "known hosts:\n  web--app.localhost\n  api--app.localhost\n")
    code, _, body = http_request(proxy.port, "web--app.localhost", "POST", "/p", b"payload")
    assert (code, body) == (200, b"echo:payload")
    status_line, echoed = websocket_echo(proxy.port, "web--app.localhost", "ping")
    assert b" 101 " in status_line and echoed == "ping"
    status_line, _ = websocket_echo(proxy.port, "nobody.localhost", "ping")
    assert status_line == b"HTTP/1.1 502 Bad Gateway"


def test_proxy_without_routes_and_without_host(proxy: ProxyServer) -> None:
    code, _, body = http_request(proxy.port, None, version="HTTP/1.0")
    assert code == 502
    assert body.decode() == ('worktree-proxy: no service for host "(none)"\n'
                             "no services registered\n")
    code, _, body = http_request(proxy.port, None)  # HTTP/1.1 requires Host (as node does)
    assert code == 400 and body.startswith(b"worktree-proxy: bad request: ")


def test_proxy_upstream_error(proxy: ProxyServer) -> None:
    dead = ephemeral_port()
    proxy_table.set("dead.localhost", dead)
    code, _, body = http_request(proxy.port, "dead.localhost")
    assert code == 502 and body.decode().startswith("worktree-proxy: upstream error: ")


def test_keep_alive_requests_are_routed_one_by_one(repo: Repo, proxy: ProxyServer) -> None:
    repo.commit_config({"scripts": {
        "web": {"command": ECHO_COMMAND, "type": "service"},
        "api": {"command": ECHO_COMMAND, "type": "service"}}})
    for name in ("web", "api"):
        call_tool("worktree.start-service", {"repoRoot": repo.root, "worktreePath": repo.root,
                                             "branch": "main", "script": name})
        wait_listening(default_registry().get(repo.root).status(name)["port"])
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=30) as sock:
        answers = []
        for host in ("web--app.localhost", "api--app.localhost"):
            sock.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            data = b""
            while b"\r\n\r\n" not in data:
                data += sock.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            while len(body) < length:
                body += sock.recv(65536)
            answers.append(json.loads(body)["env"]["AGENTPROTO_PORT"])
    web, api = (default_registry().get(repo.root).status(n)["port"] for n in ("web", "api"))
    assert answers == [str(web), str(api)]


def test_close_destroys_upgraded_sockets(repo: Repo) -> None:
    repo.commit_config({"scripts": {"web": {"command": ECHO_COMMAND, "type": "service"}}})
    call_tool("worktree.start-service", {"repoRoot": repo.root, "worktreePath": repo.root,
                                         "branch": "main", "script": "web"})
    wait_listening(default_registry().get(repo.root).status("web")["port"])
    server = start_proxy()
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sock.sendall(b"GET / HTTP/1.1\r\nHost: web--app.localhost\r\nUpgrade: websocket\r\n"
                 b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                 b"Sec-WebSocket-Version: 13\r\n\r\n")
    assert b" 101 " in sock.recv(4096)
    server.close()
    assert sock.recv(4096) == b""
    sock.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=5).close()


def test_services_end_to_end(repo: Repo, proxy: ProxyServer) -> None:
    repo.commit({".gitignore": "node_modules/\n.agentproto/\nsetup-ran.txt\n"})
    repo.commit_config({
        "worktree": {
            "setup": 'printf "%s" "$AGENTPROTO_BRANCH_NAME" > setup-ran.txt',
            "teardown": 'printf ok > "$AGENTPROTO_SOURCE_CHECKOUT_PATH/teardown-ran.txt"',
        },
        "scripts": {
            "web": {"command": ECHO_COMMAND, "type": "service"},
            "api": {"command": ECHO_COMMAND, "type": "service"},
            "test": {"command": "true"},
        }})
    out = call_tool("worktree.provision", {"repoRoot": repo.root, "slug": "svc-test"})
    cwd = out["cwd"]
    assert Path(cwd, "setup-ran.txt").read_text() == "wt/svc-test"
    common = {"repoRoot": repo.root, "worktreePath": cwd, "branch": "wt/svc-test",
              "proxyPort": proxy.port}
    web = call_tool("worktree.start-service", {**common, "script": "web"})
    api = call_tool("worktree.start-service", {**common, "script": "api"})
    assert web["status"] == api["status"] == "running"
    assert web["hostname"] == "web--wt-svc-test--app.localhost"
    assert web["url"] == f"http://web--wt-svc-test--app.localhost:{proxy.port}"
    assert isinstance(web["pid"], int) and web["startedAt"] and web["exitCode"] is None
    wait_listening(web["port"])
    wait_listening(api["port"])
    again = call_tool("worktree.start-service", {**common, "script": "web"})
    assert again["pid"] == web["pid"]

    web_env = get_json(proxy.port, web["hostname"])["env"]
    assert web_env["AGENTPROTO_PORT"] == str(web["port"])
    assert web_env["AGENTPROTO_URL"] == web["url"]
    assert web_env["AGENTPROTO_SERVICE_API_PORT"] == str(api["port"])
    assert web_env["AGENTPROTO_SERVICE_API_URL"] == api["url"]
    assert "AGENTPROTO_SERVICE_WEB_PORT" not in web_env
    assert web_env["AGENTPROTO_WORKTREE_PATH"] == cwd
    api_env = get_json(proxy.port, api["hostname"])["env"]
    assert api_env["AGENTPROTO_SERVICE_WEB_PORT"] == str(web["port"])

    listed = call_tool("worktree.list-services", {**common})["services"]
    assert [(s["name"], s["status"]) for s in listed] == [("web", "running"),
                                                          ("api", "running")]
    assert call_tool("worktree.stop-service", {"worktreePath": cwd, "script": "web"}) == {
        "stopped": True}
    assert proxy_table.get(web["hostname"]) is None
    code, _, _ = http_request(proxy.port, web["hostname"])
    assert code == 502
    stopped = default_registry().get(cwd).status("web")
    assert (stopped["status"], stopped["exitCode"], stopped["signal"]) == (
        "exited", None, "SIGTERM")
    assert call_tool("worktree.stop-service", {"worktreePath": cwd, "script": "web"}) == {
        "stopped": False}

    assert call_tool("worktree.cleanup", {"repoRoot": repo.root, "cwd": cwd,
                                          "branch": "wt/svc-test", "deleteBranch": True}) == {
        "removed": True}
    assert (repo.path / "teardown-ran.txt").read_text() == "ok"
    assert not Path(cwd).exists()
    assert proxy_table.get(api["hostname"]) is None
    assert default_registry().get(cwd) is None


def test_list_services_before_start(repo: Repo) -> None:
    repo.commit_config({"scripts": {
        "web": {"command": ECHO_COMMAND, "type": "service", "port": ephemeral_port()},
        "job": {"command": "true"}}})
    listed = call_tool("worktree.list-services", {"repoRoot": repo.root,
                                                  "worktreePath": repo.root, "branch": "main"})
    assert listed == {"services": [{
        "name": "web", "hostname": "web--app.localhost", "port": listed["services"][0]["port"],
        "url": "http://web--app.localhost:18780", "pid": None, "status": "exited",
        "exitCode": None, "signal": None, "startedAt": None}]}


def test_undeclared_services(repo: Repo) -> None:
    repo.commit_config({"scripts": {"job": {"command": "true"}}})
    common = {"repoRoot": repo.root, "worktreePath": repo.root, "branch": "main"}
    with pytest.raises(ToolError) as caught:
        call_tool("worktree.start-service", {**common, "script": "job"})
    assert caught.value.code == "not_found"
    assert caught.value.message == \
        'no service "job" declared (type: "service") in origin/main:agentproto.json'
    assert stop_service("/no/such/worktree", "web") == {"stopped": False}
    with pytest.raises(ServiceError, match=r'^no service "job" declared in agentproto\.json$'):
        stop_service(repo.root, "job")


def test_crashed_service_reports_exit_code(repo: Repo) -> None:
    repo.commit_config({"scripts": {"flaky": {"command": "exit 9", "type": "service"}}})
    common = {"repoRoot": repo.root, "worktreePath": repo.root, "branch": "main"}
    call_tool("worktree.start-service", {**common, "script": "flaky"})
    supervisor = default_registry().get(repo.root)
    assert supervisor is not None
    supervisor._services["flaky"].process.wait()  # type: ignore[union-attr]
    from .test_scheduler_git import wait_until

    wait_until(lambda: supervisor.status("flaky")["status"] == "exited", "exit recorded")
    assert supervisor.status("flaky")["exitCode"] == 9


def test_bad_proxy_port_input(repo: Repo) -> None:
    with pytest.raises(ToolError) as caught:
        call_tool("worktree.start-service", {"repoRoot": repo.root, "worktreePath": repo.root,
                                             "branch": "main", "script": "x",
                                             "proxyPort": 70000})
    assert caught.value.code == "input_invalid"
