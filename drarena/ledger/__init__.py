"""What a run writes and every later stage reads: match and round records, the run folder.

Why a room of its own: the arena and the runs room write these, and the report, drift and the
validity tools read them; kept below all of them, none needs to import the arena or the runs
room (or each other) to read a finished run.
"""
