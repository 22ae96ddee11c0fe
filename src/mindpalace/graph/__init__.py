"""The entity graph: mentions found on write, supersession of changed facts,
propagation over entities on recall, and consolidation."""
