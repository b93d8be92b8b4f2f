"""Configuration (docs/worktrees.md): lifecycle hooks and their environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tavernlab.worktree import HookError
from tavernlab.worktree._environment import (
    HookContext,
    ServiceEndpoint,
    peer_environment,
    service_environment,
    service_token,
    turbo_cache_dir,
)
from tavernlab.worktree._hooks import run_setup, run_teardown

NOISE = "Failed to replace env in config: ${NODE_AUTH_TOKEN}"


@pytest.fixture
def ctx(tmp_path: Path) -> HookContext:
    worktree = tmp_path / "wt"
    worktree.mkdir()
    return HookContext(str(tmp_path), str(worktree), "wt/hooks")


def test_diagnostic_kept_and_token_noise_dropped(ctx: HookContext) -> None:
    with pytest.raises(HookError) as caught:
        run_setup([f"echo 'real diagnostic'; echo '{NOISE}' 1>&2; exit 1"], ctx)
    message = caught.value.message
    assert message.startswith("worktree setup hook failed (exit 1): echo 'real diagnostic'")
    assert "real diagnostic" in message
    assert "NODE_AUTH_TOKEN" not in message.split("\n", 1)[1]


def test_npmrc_warning_is_filtered(ctx: HookContext) -> None:
    with pytest.raises(HookError) as caught:
        run_setup(["echo ' WARN  Issue while reading \"/x/.npmrc\".'; exit 2"], ctx)
    assert caught.value.message.endswith("(no output captured)")


def test_log_path_in_message_and_log(ctx: HookContext, tmp_path: Path) -> None:
    log = tmp_path / "logs" / "setup.log"
    with pytest.raises(HookError) as caught:
        run_setup(["echo first-ok", f"echo diag; echo '{NOISE}' 1>&2; exit 1"], ctx,
                  log_path=str(log))
    assert str(log) in caught.value.message
    assert caught.value.message.endswith(f"\n\n(full hook output: {log})")
    assert caught.value.log_path == str(log)
    text = log.read_text()
    assert NOISE in text and "diag" in text and "(exit 1)" in text
    assert "$ echo first-ok\nfirst-ok\n(exit 0)" in text


def test_last_line_survives_long_noise(ctx: HookContext) -> None:
    command = f"i=0; while [ $i -lt 200 ]; do echo '{NOISE}'; i=$((i+1)); done; " \
              "echo 'THE ACTUAL FAILURE'; exit 1"
    with pytest.raises(HookError) as caught:
        run_setup([command], ctx)
    assert "THE ACTUAL FAILURE" in caught.value.message


def test_tail_keeps_last_sixty_lines(ctx: HookContext) -> None:
    with pytest.raises(HookError) as caught:
        run_setup(["seq 1 100; exit 1"], ctx)
    tail = caught.value.message.split("\n")[1:]
    assert tail == [str(n) for n in range(41, 101)]


def test_without_log_path(ctx: HookContext) -> None:
    with pytest.raises(HookError) as caught:
        run_setup(["exit 4"], ctx)
    assert caught.value.log_path is None
    assert "full hook output" not in caught.value.message
    assert caught.value.result.exit_code == 4


def test_retry_once_and_log_label(ctx: HookContext, tmp_path: Path) -> None:
    log = tmp_path / "retry.log"
    flag = tmp_path / "second-time"
    command = f"test -e {flag} || {{ touch {flag}; exit 1; }}"
    runs = run_setup([command], ctx, log_path=str(log), retry_on_failure=True)
    assert [(run.command, run.result.exit_code) for run in runs] == [
        (command, 1), (f"{command} (retry 1/1)", 0)]  # both attempts, as upstream returns
    assert f"$ {command} (retry 1/1)\n(exit 0)" in log.read_text()


def test_retry_that_fails_again_raises_with_the_last_attempt(ctx: HookContext) -> None:
    with pytest.raises(HookError) as caught:
        run_setup(["echo attempt; exit 6"], ctx, retry_on_failure=True)
    assert caught.value.command == "echo attempt; exit 6"
    assert caught.value.result.exit_code == 6
    assert caught.value.message == ("worktree setup hook failed (exit 6): echo attempt; exit 6"
                                    "\nattempt")


def test_failing_teardown_returns_run_and_logs(ctx: HookContext, tmp_path: Path) -> None:
    log = tmp_path / "teardown.log"
    runs = run_teardown(["echo going; exit 1"], ctx, log_path=str(log))
    assert len(runs) == 1 and runs[0].result.exit_code == 1
    assert "going" in log.read_text()


def test_setup_environment(ctx: HookContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("npm_config_confirm_modules_purge", "keep-mine")
    runs = run_setup(['printf "%s|%s|%s|%s|%s|%s" "$AGENTPROTO_SOURCE_CHECKOUT_PATH" '
                      '"$AGENTPROTO_WORKTREE_PATH" "$AGENTPROTO_BRANCH_NAME" "$CI" '
                      '"$npm_config_confirm_modules_purge" "$TURBO_CACHE_DIR"'], ctx)
    home = os.environ["HOME"]
    assert runs[0].result.stdout == (f"{ctx.source}|{ctx.worktree}|wt/hooks|true|keep-mine|"
                                     f"{home}/.agentproto/turbo-cache")
    teardown = run_teardown(['printf "%s|%s" "$CI" "${TURBO_CACHE_DIR-unset}"'], ctx)
    assert teardown[0].result.stdout == "true|unset"


def test_tokens_and_peers() -> None:
    assert service_token("web-api") == "WEB_API"
    assert service_token("my.svc 2") == "MY_SVC_2"
    assert "AGENTPROTO_SERVICE_WEB_PORT" in peer_environment([ServiceEndpoint("web", 1, "u")])
    peers = [ServiceEndpoint("web", 3000, "http://web.localhost:18780"),
             ServiceEndpoint("api", 4000, "http://api.localhost:18780")]
    assert peer_environment(peers) == {
        "AGENTPROTO_SERVICE_WEB_PORT": "3000",
        "AGENTPROTO_SERVICE_WEB_URL": "http://web.localhost:18780",
        "AGENTPROTO_SERVICE_API_PORT": "4000",
        "AGENTPROTO_SERVICE_API_URL": "http://api.localhost:18780",
    }
    env = service_environment(HookContext("/src", "/wt", "b"), peers[0], peers)
    assert env == {
        "AGENTPROTO_SOURCE_CHECKOUT_PATH": "/src",
        "AGENTPROTO_WORKTREE_PATH": "/wt",
        "AGENTPROTO_BRANCH_NAME": "b",
        "AGENTPROTO_PORT": "3000",
        "AGENTPROTO_URL": "http://web.localhost:18780",
        "AGENTPROTO_SERVICE_API_PORT": "4000",
        "AGENTPROTO_SERVICE_API_URL": "http://api.localhost:18780",
    }


def test_turbo_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    assert turbo_cache_dir({"AGENTPROTO_WORKTREES_TURBO_CACHE_DIR": "relative-cache",
                            "TURBO_CACHE_DIR": "/x"}) == os.path.join(os.getcwd(),
                                                                      "relative-cache")
    assert turbo_cache_dir({"TURBO_CACHE_DIR": "rel/kept"}) == "rel/kept"
    assert turbo_cache_dir({}) == os.path.join(os.environ["HOME"], ".agentproto", "turbo-cache")
