"""Drift: how far a frozen snapshot has moved from the live web or a later snapshot."""
