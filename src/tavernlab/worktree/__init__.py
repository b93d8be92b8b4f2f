"""Git worktrees for agents: tavernlab's re-implementation of ``@agentproto/worktree``.

Seven tools provision, gate, clean up and serve worktrees; call them by upstream name with
:func:`call_tool` (``call_tool("worktree.provision", {"repoRoot": …, "slug": …})``) or
through the snake_case functions. Services sit behind a ``*.localhost`` proxy started with
:func:`start_proxy`; heavy provisioning phases share a fair process-wide queue. A
:class:`WorktreeRuntime` holds what the tools run against (scheduler, services, routes,
clock, ids); :func:`default_runtime` is the process-wide one.
"""

from tavernlab.cancel import CancelToken
from tavernlab.errors import ToolError
from tavernlab.worktree._agent_args import (
    USAGE,
    CannotAsk,
    CliUsageError,
    ParsedCli,
    build_input,
    make_approve,
    parse_args,
)
from tavernlab.worktree._commands import (
    CLI,
    NOTEBOOK,
    Command,
    Target,
    ToolCaller,
    archive,
    commands_for,
    gate,
    gc_options,
    list_repo,
    list_target_services,
    new_repo,
    new_request,
    proxy_info,
    remove,
    repo_of,
    run_caller,
    run_target_script,
    start_services,
    stop_target_service,
    target_of,
    tool_caller,
    write_file_spec,
)
from tavernlab.worktree._context import (
    DoneEvent,
    Outcome,
    OutputLine,
    ProgressEvent,
    ProvisionContext,
    current_provision_context,
    run_with_provision_context,
)
from tavernlab.worktree._daemon import DaemonAgentHost, resolve_mcp_url
from tavernlab.worktree._errors import (
    ConfigError,
    DaemonUnreachableError,
    ForgeUnavailableError,
    GlobTraversalError,
    HookError,
    ProvisionCancelledError,
    WorktreeNotRemovableError,
)
from tavernlab.worktree._forge import Forge, UnreachableForge, forge_for_repo
from tavernlab.worktree._gc import apply_gc, plan_gc
from tavernlab.worktree._git import DEFAULT_REF, git, git_run, resolves_to_commit
from tavernlab.worktree._limits import ProvisionLimits, parse_provision_limits
from tavernlab.worktree._listing import list_worktrees, main_repo_root, real
from tavernlab.worktree._proxy import ProxyServer, start_proxy
from tavernlab.worktree._proxy_table import ProxyTable, proxy_table
from tavernlab.worktree._runtime import WorktreeRuntime, default_runtime
from tavernlab.worktree._scheduler import provision_scheduler
from tavernlab.worktree._services import ServiceRegistry
from tavernlab.worktree._status import list_worktree_statuses
from tavernlab.worktree._tool_inputs import ProvisionInput
from tavernlab.worktree._tools import (
    call_tool,
    cleanup,
    invoke_tool,
    list_services,
    provision,
    run_gate,
    run_script,
    start_service,
    stop_service,
    worktree_tool_specs,
)
from tavernlab.worktree._workflow import run_worktree_agent

__all__ = [
    "CLI",
    "DEFAULT_REF",
    "NOTEBOOK",
    "USAGE",
    "CancelToken",
    "CannotAsk",
    "CliUsageError",
    "Command",
    "ConfigError",
    "DaemonAgentHost",
    "DaemonUnreachableError",
    "DoneEvent",
    "Forge",
    "ForgeUnavailableError",
    "GlobTraversalError",
    "HookError",
    "Outcome",
    "OutputLine",
    "ParsedCli",
    "ProgressEvent",
    "ProvisionCancelledError",
    "ProvisionContext",
    "ProvisionInput",
    "ProvisionLimits",
    "ProxyServer",
    "ProxyTable",
    "ServiceRegistry",
    "Target",
    "ToolCaller",
    "ToolError",
    "UnreachableForge",
    "WorktreeNotRemovableError",
    "WorktreeRuntime",
    "apply_gc",
    "archive",
    "build_input",
    "call_tool",
    "cleanup",
    "commands_for",
    "current_provision_context",
    "default_runtime",
    "forge_for_repo",
    "gate",
    "gc_options",
    "git",
    "git_run",
    "invoke_tool",
    "list_repo",
    "list_services",
    "list_target_services",
    "list_worktree_statuses",
    "list_worktrees",
    "main_repo_root",
    "make_approve",
    "new_repo",
    "new_request",
    "parse_args",
    "parse_provision_limits",
    "plan_gc",
    "provision",
    "provision_scheduler",
    "proxy_info",
    "proxy_table",
    "real",
    "remove",
    "repo_of",
    "resolve_mcp_url",
    "resolves_to_commit",
    "run_caller",
    "run_gate",
    "run_script",
    "run_target_script",
    "run_with_provision_context",
    "run_worktree_agent",
    "start_proxy",
    "start_service",
    "start_services",
    "stop_service",
    "stop_target_service",
    "target_of",
    "tool_caller",
    "worktree_tool_specs",
    "write_file_spec",
]
