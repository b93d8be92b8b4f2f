"""``python -m tavernlab.cli``: the same as the ``tavernlab`` command."""

from tavernlab.cli import main

raise SystemExit(main())
