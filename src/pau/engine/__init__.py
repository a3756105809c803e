"""The engine: columns in, exact ledgers out (no files, no figures)."""
