"""The Textual TUI: `app.py` wires modes and keys; one module per screen; `state.py` holds the
session the screens share (attributes down, messages up); styles in `workbench.tcss`."""
