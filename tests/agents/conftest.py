"""Agent fixtures: the real CPU model server (shared with every area through
drarena.models.testing) for the end-to-end tests."""

from __future__ import annotations

from drarena.models.testing import model_role, model_server  # noqa: F401  (fixtures)
