"""Tournament configs: typed, strict (extra keys are errors), every field documented.

A role whose model is `served` is bound at run time to the model server the command uses
(the local CPU server it starts, or DRARENA_MODEL_API_BASE): one config runs on a laptop and
on a GPU box. The run header keeps both the config as written and the bound roles.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from drarena.arena.match import MatchSettings
from drarena.errors import DrarenaError
from drarena.models.config import ModelsConfig
from drarena.registry import ComponentSpec
from drarena.yamlfile import load_yaml_mapping

SERVED = "served"


class TreesSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int = Field(3, ge=1, description="trees every pairing plays (the same set for all)")
    seed: int = Field(
        1, description="seed of `drarena snapshot trees` when the trees must be built"
    )
    ids: tuple[str, ...] = Field((), description="explicit tree ids; default: the first count")


class AgentEntry(BaseModel):
    """A named candidate: `kind` and `args` as registered in drarena.agents.registry."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")
    kind: str
    args: dict[str, Any] = Field(default_factory=dict)

    def spec(self) -> ComponentSpec:
        return ComponentSpec(kind=self.kind, args=self.args)


class IndexSettings(BaseModel):
    """How `drarena tournament` builds missing indexes (see `drarena search index --help`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dense_per_doc: int | None = Field(
        1,
        ge=1,
        description="passages per page in the dense index (None: all; a full dense "
        "index of pydocs takes minutes on 2 CPU cores)",
    )


class RatingSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    resamples: int = Field(1000, ge=0, description="bootstrap resamples for the intervals")
    seed: int = Field(0, description="bootstrap seed")


class LiveSettings(BaseModel):
    """The `live:` block: where live mode searches, how it fetches, where it captures.

    `web` holds drarena.live.web.LiveWebSettings fields (checked against that model when a
    live run starts, so a frozen-only install never imports the live stack)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: ComponentSpec = Field(
        default_factory=lambda: ComponentSpec(
            kind="searxng", args={"url": "http://127.0.0.1:8888"}
        ),
        description="live search provider {kind, args}: searxng (args.url) or brave "
        "(args.api_key_env)",
    )
    web: dict[str, Any] = Field(
        default_factory=dict,
        description="LiveWebSettings: user_agent, timeout_s, "
        "max_bytes, connect_to, allow_private_addresses, ...",
    )
    capture_root: Path = Field(
        Path("snapshots"), description="captures go to <capture_root>/<run>-live-<UTC time>"
    )


class TournamentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", description="run folder name under runs_root"
    )
    snapshot: Path = Field(description="snapshot folder (WARC + CDXJ + manifest)")
    index_root: Path = Field(Path("index"), description="where `drarena search index` writes")
    runs_root: Path = Field(Path("runs"))
    seed: int = Field(0, description="run seed: Swiss draws and every match's generator")
    offline: bool = Field(True, description="frozen web only; a guard refuses other hosts")
    swiss_rounds: int | None = Field(None, ge=1, description="default: ceil(log2 n) + 1")
    concurrency: int = Field(2, ge=1, description="matches played at once within a round")
    trees: TreesSettings = Field(default_factory=TreesSettings)
    match: MatchSettings = Field(default_factory=MatchSettings)
    rating: RatingSettings = Field(default_factory=RatingSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    live: LiveSettings | None = Field(
        None,
        description="live mode settings (offline: false "
        "or --live); default provider: a "
        "SearXNG on 127.0.0.1:8888",
    )
    models: ModelsConfig
    agents: tuple[AgentEntry, ...] = Field(min_length=2)

    @field_validator("agents")
    @classmethod
    def _unique(cls, agents: tuple[AgentEntry, ...]) -> tuple[AgentEntry, ...]:
        names = [a.name for a in agents]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"agent names must be unique, repeated: {', '.join(dupes)}")
        return agents

    def agent_names(self) -> list[str]:
        return sorted(a.name for a in self.agents)

    def as_live(self) -> TournamentConfig:
        """The config of a live run (`--live` overrides `offline: true`)."""
        return self.model_copy(
            update={"offline": False, "live": self.live or LiveSettings.model_validate({})}
        )


def load_config(path: Path) -> TournamentConfig:
    """Parse and validate; every problem is one line naming the file and the field."""
    return parse_config(load_yaml_mapping(path, "tournament config"), str(path))


def parse_config(data: dict[str, Any], where: str) -> TournamentConfig:
    try:
        return TournamentConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = (
            ".".join(
                str(p) if str(p).isprintable() else repr(p)  # one line, always
                for p in err["loc"]
            )
            or "(top)"
        )
        raise DrarenaError(f"{where}: {field}: {err['msg']}") from None
