"""One module per `workbench` command; `workbench.cli` registers them."""
