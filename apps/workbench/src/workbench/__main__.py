"""`python -m workbench` is the `workbench` command."""

from __future__ import annotations

from workbench.cli import main

main()
