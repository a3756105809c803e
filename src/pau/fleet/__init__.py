"""Fleets: many runs over time (DESIGN §7)."""
