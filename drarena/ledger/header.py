"""The run header (run.json): typed and versioned, so every reader sees the same fields.

Why typed: run.json is what makes a run traceable (the resolved config, the models each role
was bound to, the fingerprints of the snapshot, trees, indexes and derived files, prompt
hashes, package versions, the lock's hash, the git revision) and what a replay checks its
inputs against. Written through this model, a field of the wrong type is a bug caught where it
is made; read through it, a damaged header is one line naming the file. Fields added later are
optional, so run folders written by earlier versions of the same schema still load; unknown
fields (a later drarena of the same schema) are kept as they are.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RUN_SCHEMA_VERSION = 1


class BoundRole(BaseModel):
    """The model a role actually used: `served` resolved to the server's model and endpoint."""

    model_config = ConfigDict(extra="forbid")

    model: str
    api_base: str | None = None
    sampling: dict[str, Any] = Field(default_factory=dict)


class RunHeader(BaseModel):
    """run.json. `config` is the resolved tournament config as a JSON object (parsed by
    drarena.runs.config.parse_config where it is used: the ledger sits below the runs room)."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    run_schema_version: int = RUN_SCHEMA_VERSION
    match_schema_version: int = 1
    created: str = ""
    mode: Literal["offline", "live"] = "offline"
    config: dict[str, Any]
    config_digest: str = ""
    bound_roles: dict[str, BoundRole] = Field(default_factory=dict)
    snapshot_fingerprint: str | None = None
    index_manifests: dict[str, str] = Field(default_factory=dict)
    trees: dict[str, str] = Field(default_factory=dict)
    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)
    lock_sha256: Any = None
    git_revision: str = "unknown"
    seed: int = 0
    agent_isolation: Any = None
    # frozen runs with command agents: the frozen-web proxy's counts over the run (proxies,
    # requests, missing, searches, outside_connections; drarena.webproxy.backend.ProxyTally)
    web_proxy: dict[str, int] | None = None
    derived_digests: dict[str, str] = Field(default_factory=dict)
    tool_record: dict[str, Any] | None = None
    live: dict[str, Any] | None = None
    usage: dict[str, Any] = Field(default_factory=dict)
    model_calls: int | None = None
    replay_of: str | None = None
    examiner_check: dict[str, Any] | None = None  # drarena.validity figures, if run

    def to_json(self) -> str:
        """Sorted, indented JSON; fields never set are left out (a header carries what the
        run knew, nothing invented)."""
        import json

        data = self.model_dump(mode="json", exclude_unset=True)
        return json.dumps(data, indent=2, sort_keys=True) + "\n"
