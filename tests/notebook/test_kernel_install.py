"""The kernel spec ships with the package, and ``tavernlab kernel install`` puts it elsewhere,
pinned to this Python."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from notebook_support import KERNEL_SPEC

from tavernlab.cli._kernel import shipped_spec


def _tavernlab(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tavernlab.cli", *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


def test_pip_installed_the_kernel_spec_as_jupyter_data() -> None:
    installed = Path(sys.prefix) / "share" / "jupyter" / "kernels" / "tavernlab"
    assert shipped_spec() == installed
    for name in ("kernel.json", "kernel_config.py"):
        assert (installed / name).read_bytes() == (KERNEL_SPEC / name).read_bytes()


def test_install_into_a_prefix_pins_this_python(tmp_path: Path) -> None:
    done = _tavernlab("kernel", "install", "--prefix", str(tmp_path))
    target = tmp_path / "share" / "jupyter" / "kernels" / "tavernlab"
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"installed kernel tavernlab in {target} (python: {sys.executable})\n"
    spec = json.loads((target / "kernel.json").read_text())
    shipped = json.loads((KERNEL_SPEC / "kernel.json").read_text())
    assert spec == {**shipped, "argv": [sys.executable, *shipped["argv"][1:]]}
    assert (target / "kernel_config.py").read_text() == (KERNEL_SPEC / "kernel_config.py"
                                                         ).read_text()


def test_install_for_the_user_is_the_default(tmp_path: Path) -> None:
    done = _tavernlab("kernel", "install", env={"JUPYTER_DATA_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "kernels" / "tavernlab" / "kernel.json").is_file()


def test_the_choices_exclude_each_other() -> None:
    done = _tavernlab("kernel", "install", "--user", "--sys-prefix")
    assert done.returncode == 2
    assert done.stderr.endswith("error: argument --sys-prefix: not allowed with argument "
                                "--user\n")
