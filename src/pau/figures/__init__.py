"""Figures over ledgers and runs."""
