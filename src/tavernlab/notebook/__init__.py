"""tavernlab's notebook surface (floor 5): the only place that imports IPython and ipywidgets."""
