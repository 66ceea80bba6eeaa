"""Examiner validity: judge answer pairs whose preference is known by construction."""
