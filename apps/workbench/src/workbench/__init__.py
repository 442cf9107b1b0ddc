"""workbench: one CLI and a Textual TUI for the whole mdla pipeline (issue 7; not built yet)."""
