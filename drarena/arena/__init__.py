"""The arena: the tournament engine (a match's rounds, Swiss pairing, the early-start planner and
the tournament that plays them into a run folder).

Why kept apart from the runs room above it: the engine takes agents, trees, a model client and
match settings already built, so it is tested and reused without a config, a snapshot's
preparation or a model server (drarena.runs assembles those).
"""
