"""One module per `lipread` command."""
