"""Execute every demo notebook and write its outputs back: ``python notebooks/regenerate.py``
(from the repository root, with the test extras installed).

It runs ``tests/notebook/test_demo_notebooks.py`` with ``TAVERNLAB_REGENERATE_NOTEBOOKS=1``,
so the outputs are made exactly as the test makes the ones it compares (the tavernlab kernel
from ``kernel-spec/``, a copy of each notebook executed in a temporary directory, no timing),
except that the system's temporary folder is kept, so the saved outputs show
``/tmp/tavernlab-NN-…`` paths. Extra arguments go to pytest (``-k 04`` for one notebook).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

if __name__ == "__main__":
    env = {**os.environ, "TAVERNLAB_REGENERATE_NOTEBOOKS": "1"}
    sys.exit(subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              "tests/notebook/test_demo_notebooks.py", *sys.argv[1:]],
                             cwd=REPO, env=env))
