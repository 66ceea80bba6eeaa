"""Live mode: search providers, live page fetches recorded into a capture snapshot, replay."""
