"""The Python API (`drarena/api/functions.py`), exported lazily by `drarena/__init__.py`: the
commands' work (a tournament, rank, replay, rejudge, the examiner-check) as typed calls.

Why a room, the top one: it plays runs (the runs room) and finishes them (the report room),
so it sits above both; no room imports it, only `import drarena`'s lazy exports and users'
scripts do.
"""
