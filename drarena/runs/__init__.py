"""Runs: a tournament config assembled into a run, played with the arena's engine, and read back.

Why a room apart from the arena: the arena (match, rounds, Swiss pairing, the tournament) is
the engine, and knows nothing of configs, run folders' headers, model servers or commands; this
room is the application around it: the config, the prepare stage (a snapshot's derived files),
the run context, executing, replaying, placing, re-judging, drift-runs and the examiner-check.
"""
