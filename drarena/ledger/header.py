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

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from drarena.models.types import RoleUsage

RUN_SCHEMA_VERSION = 1


class BoundRole(BaseModel):
    """The model a role actually used: `served` resolved to the server's model and endpoint."""

    model_config = ConfigDict(extra="forbid")

    model: str
    api_base: str | None = None
    sampling: dict[str, JsonValue] = Field(default_factory=dict)

    def as_json(self) -> dict[str, JsonValue]:
        """The role as run.json holds it (fields never set left out)."""
        data: dict[str, JsonValue] = self.model_dump(mode="json", exclude_unset=True)
        return data


class Block(BaseModel):
    """A sub-block of run.json: its known fields typed, any other kept as it is (a later
    drarena of the same schema may add some); `as_json` gives it back as written."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    def as_json(self) -> dict[str, JsonValue]:
        """The block as run.json holds it (fields never set left out)."""
        data: dict[str, JsonValue] = self.model_dump(mode="json", exclude_unset=True)
        return data


class ToolRecordRef(Block):
    """`tool_record`: the table of the run's llm-cache.sqlite that holds its tool results
    and that table's schema version (drarena.models.cache.TOOL_SCHEMA_VERSION)."""

    table: str
    version: str


class ProviderSpec(Block):
    """A live run's search provider as configured: {kind, args}."""

    kind: str
    args: dict[str, JsonValue] = Field(default_factory=dict)


class Capture(Block):
    """One capture snapshot of a live run (one per part of a resumed run): its folder, its
    fingerprint once closed, and its status ("in progress", "unfinished", "finished"; a
    replay lists the captures it reads without one)."""

    path: str
    fingerprint: str | None = None
    status: str | None = None


class LiveBlock(Block):
    """`live`: a live run's provider, fetch settings (drarena.live.web.LiveWebSettings
    fields) and capture snapshots; `replayed`: an offline replay of a live run."""

    provider: ProviderSpec
    web: dict[str, JsonValue] = Field(default_factory=dict)
    captures: list[Capture] = Field(default_factory=list)
    replayed: bool = False


class ExaminerCheckBlock(Block):
    """`examiner_check`: the examiner-check's figures as drarena.validity keeps them in a
    run header (validity.reuse.header_block): the verdict, figures per judge mode
    (`results`), the reuse key, and the rest of the check's summary kept as it is."""

    can_rank: bool | None = None
    verdict: str | None = None
    results: JsonValue = None  # {mode: {figures, ...}}; any shape is shown as it is
    key: str | None = None
    reused: bool | None = None
    tasks: int | None = None


class RunHeader(BaseModel):
    """run.json. `config` is the resolved tournament config as a JSON object (typed by
    drarena.config.tournament.config_of where it is used: the ledger sits below the config
    room). Every block is typed; a field never set is left out of the file."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    run_schema_version: int = RUN_SCHEMA_VERSION
    match_schema_version: int = 1
    created: str = ""
    mode: Literal["offline", "live"] = "offline"
    config: dict[str, JsonValue]
    config_digest: str = ""
    bound_roles: dict[str, BoundRole] = Field(default_factory=dict)
    snapshot_fingerprint: str | None = None
    index_manifests: dict[str, str] = Field(default_factory=dict)
    trees: dict[str, str] = Field(default_factory=dict)
    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)
    # venv -> "sha256:<hex>" of the lock it was installed from ("none": without one)
    lock_sha256: dict[str, str] | None = None
    git_revision: str = "unknown"
    seed: int = 0
    # what confines the command agents (drarena.agents.sandbox.isolation_note)
    agent_isolation: str | None = None
    # frozen runs with command agents: the frozen-web proxy's counts over the run (proxies,
    # requests, missing, searches, outside_connections; drarena.webproxy.backend.ProxyTally),
    # summed over the answers in its tool record: resumed parts included, a replay's the same
    web_proxy: dict[str, int] | None = None
    derived_digests: dict[str, str] = Field(default_factory=dict)
    tool_record: ToolRecordRef | None = None
    live: LiveBlock | None = None
    usage: dict[str, RoleUsage] = Field(default_factory=dict)
    model_calls: int | None = None
    replay_of: str | None = None
    examiner_check: ExaminerCheckBlock | None = None  # drarena.validity figures, if run

    def bound_role_dicts(self) -> dict[str, dict[str, JsonValue]]:
        """`bound_roles` as run.json holds them (what a replay binds its roles to again)."""
        return {k: r.as_json() for k, r in self.bound_roles.items()}

    def has(self, field: str) -> bool:
        """Whether run.json holds `field` (set when written or read; a default is not)."""
        return field in self.model_fields_set or field in (self.model_extra or {})

    def as_json(self) -> dict[str, JsonValue]:
        """run.json as a JSON object: fields never set are left out, unknown ones kept."""
        data: dict[str, JsonValue] = self.model_dump(mode="json", exclude_unset=True)
        return data

    def to_json(self) -> str:
        """Sorted, indented JSON; fields never set are left out (a header carries what the
        run knew, nothing invented)."""
        import json

        return json.dumps(self.as_json(), indent=2, sort_keys=True) + "\n"
