"""lipread: a silent mouth video in, the sentence out (issue 8; not built yet)."""
