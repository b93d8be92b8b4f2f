"""Configuration of the tavernlab kernel (an ordinary ipykernel): load the tavernlab
extension at start, so %%js, %ws_shell, %worktree and %tavern are there in every notebook.

kernel.json passes this file with --config={resource_dir}/kernel_config.py; `c` is the
traitlets configuration object. Settings of the magics can be added here too, for example
c.TavernMagics.stream = False (see `%config TavernMagics` in a notebook).
"""

c = get_config()  # noqa: F821 - provided by traitlets when it runs a config file
c.InteractiveShellApp.extensions.append("tavernlab")
