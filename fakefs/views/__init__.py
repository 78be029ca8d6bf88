"""Pictures of what the simulated kernel shows (``fakefs picture``,
``fakefs heatmap``): SVG flame graphs, charts and heat maps, pure functions
of the files' text (docs/pictures.md)."""
