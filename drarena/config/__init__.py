"""The tournament config: the YAML a run is described by, and the resolved copy every run
keeps in its run.json (`tournament.TournamentConfig`, `tournament.config_of`).

Why a room apart from the runs room: the runs room assembles and plays a config, and the report
room reads one back from a run folder; the report's commands are what the runs room's commands
end with, so the two must not import each other. Both read the config from here.
"""
