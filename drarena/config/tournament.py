"""Tournament configs: typed, strict (extra keys are errors), every field documented.

A role whose model is `served` is bound at run time to the model server the command uses
(the local CPU server it starts, or DRARENA_MODEL_API_BASE): one config runs on a laptop and
on a GPU box. The run header keeps both the config as written and the bound roles.

Two things are resolved while parsing, so that run.json's config says what the run did:
- `protocol: paper` fills every `match:` switch the config does not set with the DR-Arena
  paper's choice (PAPER_MATCH; docs/deviations.md lists them). A key written in `match:`
  wins over the preset, so an ablation can run on top of it.
- Task generation and judging have their own model roles (the reference samples tasks at
  temperature 0.7 and judgments at 0.1). A config that defines no role of that name gets one
  derived from the Examiner's role with the paper's temperature.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from drarena.arena.match import MatchSettings
from drarena.errors import DrarenaError
from drarena.ledger.header import RunHeader
from drarena.models.config import ModelRole, ModelsConfig
from drarena.registry import ComponentSpec
from drarena.yamlfile import load_yaml_mapping

SERVED = "served"

# The paper's sampling temperatures (reference core/examiner.py: generate_question at 0.7,
# judge_answers at 0.1), given to a task-generation or judge role derived from the Examiner.
TASKGEN_TEMPERATURE = 0.7
JUDGE_TEMPERATURE = 0.1

# `protocol: paper`: each match switch at the paper's (and its reference code's) choice.
# tests/arena/test_paper_protocol.py compares every resolved field with a table written from
# the reference code, line by line.
PAPER_MATCH: dict[str, Any] = {
    "max_rounds": 10,
    "gap_to_stop": 2,
    "max_void_rounds": None,
    "start_depth": 1,
    "start_width": 2,
    "page_chars": None,
    "page_budget_chars": None,
    "task_attempts": 1,
    "content_min_chars": 21,
    "judge_order": "tree",
    "backtrack_to_root": True,
    "failed_answers": "judged",
    "agent_instruction": "paper",
    "cut_history_on_backtrack": True,
    "leaf_fallback_widen": True,
    "checklist_max_items": None,
    "task_text_caps": False,
    "flat_context": False,
    "first_round_only": False,
    "word_limit_root_counted": True,
    "chain_ancestors": 2,
    # judging (drarena/examiner/judge.py): the paper's prompt, one judgment per round with the
    # A/B order alternating, both answers in one prompt, the checklist shown
    "judge_prompt": "paper",
    "taskgen_prompt": "taskgen",
    "judge_mode": "pairwise",
    "judge_orders": 1,
    "judge_sees_checklist": True,
}

# match switches added by issue 35; a stored run without them played their defaults
ISSUE35_KEYS = (
    "content_min_chars",
    "judge_order",
    "backtrack_to_root",
    "failed_answers",
    "agent_instruction",
    "task_text_caps",
)

# `protocol: paper`'s trees: every pairing plays every tree (tournament_cli.py 186-190)
PAPER_TREES: dict[str, Any] = {"count": None}

# A run recorded before issue 16 stored a config without these keys; it replays with what
# drarena did then (one Examiner role for tasks and judgments; no history cut; no leaf
# fallback; checklists capped at 6; D without the root; every ancestor in the chain; the
# total page budget only).
LEGACY_MATCH: dict[str, Any] = {
    "cut_history_on_backtrack": False,
    "leaf_fallback_widen": False,
    "checklist_max_items": 6,
    "word_limit_root_counted": False,
    "chain_ancestors": None,
}


class TreesSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int | None = Field(
        3,
        ge=1,
        description="trees every pairing plays (the same set for all); null: every tree of "
        "the snapshot, as the paper plays every pairing on every tree",
    )
    seed: int = Field(
        1, description="seed of `drarena snapshot trees` when the trees must be built"
    )
    ids: tuple[str, ...] = Field((), description="explicit tree ids; default: the first count")

    def built(self) -> int:
        """How many trees `drarena snapshot trees` builds when the snapshot has none: 10
        whatever the count, so the trees do not change with it (more when count asks)."""
        return max(self.count or 0, 10)


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
        None,
        ge=1,
        description="passages per page in the dense index (None: all). All passages: dense "
        "recall@10 0.985 against 0.922 for the first passage of each page on pydocs "
        "(docs/search.md); about 65 s for pydocs on 2 AVX512-BF16 cores, several minutes "
        "on torch fp32 elsewhere",
    )


class RatingSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    resamples: int = Field(1000, ge=0, description="bootstrap resamples for the intervals")
    seed: int = Field(0, ge=0, description="bootstrap seed")


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


class ExaminerCheckSettings(BaseModel):
    """The examiner-check every tournament runs (or reuses) before its first match
    (drarena.validity; docs/validity.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: int = Field(
        1,
        ge=0,
        le=100,
        description="tasks to generate; each gives five decisive answer pairs (a claim of "
        "'can rank' needs about 15: 3 tasks) and one of each other kind; 0: no check "
        "(`--examiner-check-pairs N` overrides it)",
    )
    paraphrase: bool = Field(
        True,
        description="also ask the task model to rewrite each task's reference (one call a "
        "task): the paraphrase pair, whose right verdict is a tie",
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
    concurrency: int = Field(2, ge=1, description="matches played at once")
    early_start: int = Field(
        4,
        ge=0,
        le=6,
        description="start a next-round match as soon as its pairing is certain, once at most "
        "this many matches of the round are unfinished (4^k plans); 0: round by round. The "
        "same matches and records either way; not in config_digest",
    )
    trees: TreesSettings = Field(default_factory=TreesSettings)
    examiner_check: ExaminerCheckSettings = Field(
        default_factory=ExaminerCheckSettings,
        description="the examiner-check run before the first match; not in config_digest",
    )
    match: MatchSettings = Field(default_factory=MatchSettings)
    rating: RatingSettings = Field(default_factory=RatingSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    live: LiveSettings | None = Field(
        None,
        description="live mode settings (offline: false "
        "or --live); default provider: a "
        "SearXNG on 127.0.0.1:8888",
    )
    protocol: Literal["drarena", "paper"] = Field(
        "drarena",
        description="drarena: the match: defaults (the paper's rules except the documented "
        "improvements in docs/deviations.md); paper: every match: switch not written in the "
        "config set to the paper's choice",
    )
    models: ModelsConfig
    agents: tuple[AgentEntry, ...] = Field(min_length=2)

    @model_validator(mode="before")
    @classmethod
    def _resolve(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = derive_stage_roles(default_judging(apply_protocol(data)))
            data = citing_agents(data, True)
        return data

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


def legacy_match(config: dict[str, Any]) -> dict[str, Any]:
    """A stored run config (run.json) from before issue 16, recognised by its match block
    having no `taskgen_role`, with the switches that reproduce its rounds; one without
    `forbid_entity_names` (stored before that check) gets false; one without `judge` or
    `taskgen`, the judging and task making of its time (`legacy_judge`); others as given."""
    config = legacy_judge(legacy_agents(config))
    match = config.get("match")
    if isinstance(match, dict) and "failed_answers" not in match:
        # stored before issue 35's switches: played with their defaults, even under
        # `protocol: paper`, whose preset would otherwise fill them in on replay
        match = {**{k: MatchSettings.model_fields[k].default for k in ISSUE35_KEYS}, **match}
        config = {**config, "match": match}
    if isinstance(match, dict) and "task_text_caps" not in match:
        # stored before the caps were a switch: its tasks were asked for with them
        match = {**match, "task_text_caps": True}
        config = {**config, "match": match}
    if isinstance(match, dict) and "forbid_entity_names" not in match:
        # stored before the entity-name check: its cached questions passed the looser one
        match = {**match, "forbid_entity_names": False}
        config = {**config, "match": match}
    if not isinstance(match, dict) or "taskgen_role" in match:
        return config
    examiner = match.get("examiner_role", "examiner")
    old = {**LEGACY_MATCH, "taskgen_role": examiner, "judge_role": examiner}
    budget = match.get("page_budget_chars")
    if isinstance(budget, int):
        old["page_chars"] = max(budget, 200)  # a page never exceeded the total budget
    return {**config, "match": {**old, **match}}


def apply_protocol(data: dict[str, Any]) -> dict[str, Any]:
    """The raw config with `protocol: paper`'s match switches filled in where not written
    (its judge switches too, unless `match.judge` is written: then that judge decides), and
    its trees (every tree) unless `trees.count` or `trees.ids` is written."""
    if data.get("protocol") != "paper":
        return data
    trees = data.get("trees")
    if isinstance(trees, TreesSettings):
        trees = trees.model_dump(exclude_unset=True)
    if trees is None or (isinstance(trees, dict) and not {"count", "ids"} & set(trees)):
        data = {**data, "trees": {**PAPER_TREES, **(trees or {})}}
    match = data.get("match")
    if isinstance(match, MatchSettings):
        match = match.model_dump(exclude_unset=True)
    if match is not None and not isinstance(match, dict):
        return data  # the field's own validation names the problem
    preset = dict(PAPER_MATCH)
    if isinstance(match, dict) and match.get("judge") is not None:
        preset = {k: v for k, v in preset.items() if k not in FLAT_JUDGE_KEYS}
    return {**data, "match": {**preset, **(match or {})}}


# the LLM judge's settings as flat match keys, from before judges were components
FLAT_JUDGE_KEYS = ("judge_mode", "judge_prompt", "judge_orders", "judge_sees_checklist")


def _match_dict(data: dict[str, Any]) -> dict[str, Any] | None:
    match = data.get("match", {})
    if isinstance(match, MatchSettings):
        match = match.model_dump(exclude_unset=True)
    return match if isinstance(match, dict) else None


def _flat_llm_judge(match: dict[str, Any]) -> dict[str, Any]:
    """The {kind, args} of the LLM judge the flat keys describe (defaults where unset)."""
    fields = MatchSettings.model_fields
    mode = match.get("judge_mode", fields["judge_mode"].default)
    return {
        "kind": getattr(mode, "value", mode),
        "args": {
            "prompt": match.get("judge_prompt", fields["judge_prompt"].default),
            "orders": match.get("judge_orders", fields["judge_orders"].default),
            "sees_checklist": match.get(
                "judge_sees_checklist", fields["judge_sees_checklist"].default
            ),
        },
    }


def default_judging(data: dict[str, Any]) -> dict[str, Any]:
    """A new config's judge and task generator when it writes neither (issue 33): the
    hybrid judge, whose LLM judge the flat keys describe (it decides; the evidence judge
    grades alongside), and the grounded llm task generator with `taskgen_prompt`. A config
    that writes `match.judge` may not also write the flat judge keys (which would be
    ignored): one line says so."""
    match = _match_dict(data)
    if match is None:
        return data  # the field's own validation names the problem
    if match.get("judge") is not None:
        _check_flat_keys(match)
    added: dict[str, Any] = {}
    if match.get("judge") is None:
        added["judge"] = {"kind": "hybrid", "args": {"llm": _flat_llm_judge(match)}}
    if match.get("taskgen") is None:
        prompt = match.get("taskgen_prompt", MatchSettings.model_fields["taskgen_prompt"].default)
        added["taskgen"] = {"kind": "llm", "args": {"prompt": prompt, "ground": True}}
    return {**data, "match": {**match, **added}} if added else data


def _check_flat_keys(match: dict[str, Any]) -> None:
    """With `match.judge` written, a flat judge key may only say what that judge does (a
    stored run.json holds both, consistent): ValueError naming the key otherwise, since the
    judge alone decides. A judge without an LLM part (evidence) leaves them at their
    defaults."""
    from drarena.errors import DrarenaError
    from drarena.examiner.judges import LLM_KINDS, build_judge

    try:
        spec = build_judge(match["judge"]).spec
    except (DrarenaError, ValueError):
        return  # the field's own validation names the problem
    llm = spec if spec.kind in LLM_KINDS else None
    if spec.kind == "hybrid":
        llm = ComponentSpec.model_validate(spec.args["llm"])
    fields = MatchSettings.model_fields
    implied: dict[str, Any] = {k: fields[k].default for k in FLAT_JUDGE_KEYS}
    if llm is not None:
        implied = {
            "judge_mode": llm.kind,
            "judge_prompt": llm.args.get("prompt"),
            "judge_orders": llm.args.get("orders"),
            "judge_sees_checklist": llm.args.get("sees_checklist"),
        }
    for key in FLAT_JUDGE_KEYS:
        if key in match and _plain(match[key]) != _plain(implied[key]):
            raise ValueError(
                f"match.{key} is {_plain(match[key])!r} but match.judge ({spec.kind}) says "
                f"{_plain(implied[key])!r}: give the judge's settings in match.judge.args "
                "alone"
            )


def _plain(value: Any) -> Any:
    return getattr(value, "value", value)


# agent kinds whose prompt and answer tool changed with issue 33, by the arg that keeps the
# old ones (citations from the pages shown or seen, each part answered briefly)
CITING_ARG = {"oracle": "cite_shown", "rag": "cite_shown", "react": "cite_seen"}


def legacy_agents(config: dict[str, Any]) -> dict[str, Any]:
    """A stored run config whose oracle, rag or react agents lack the arg of CITING_ARG
    (recorded before their citations came from the pages they had): false, as they ran."""
    return citing_agents(config, False)


def citing_agents(config: dict[str, Any], value: bool) -> dict[str, Any]:
    """The config with the CITING_ARG of every oracle, rag and react agent that lacks it
    set to `value`: true for a new config (written into run.json, so a replay knows), false
    for a stored one from before the arg existed (`legacy_agents`)."""
    agents = config.get("agents")
    if not isinstance(agents, list):
        return config
    out = []
    for a in agents:
        args = a.get("args") if isinstance(a, dict) else None
        key = CITING_ARG.get(str(a.get("kind"))) if isinstance(a, dict) else None
        if key is not None and key not in (args if isinstance(args, dict) else {}):
            a = {**a, "args": {**(args if isinstance(args, dict) else {}), key: value}}
        out.append(a)
    return {**config, "agents": out}


def legacy_judge(config: dict[str, Any]) -> dict[str, Any]:
    """A stored run config (run.json) from before judges and task generators were components
    (no `match.judge`, no `match.taskgen`): the LLM judge of its flat keys alone, and the
    llm task generator without grounding, which is what it was played with."""
    match = config.get("match")
    if not isinstance(match, dict):
        return config
    added: dict[str, Any] = {}
    if "judge" not in match:
        added["judge"] = _flat_llm_judge(match)
    if "taskgen" not in match:
        prompt = match.get("taskgen_prompt", MatchSettings.model_fields["taskgen_prompt"].default)
        added["taskgen"] = {"kind": "llm", "args": {"prompt": prompt, "ground": False}}
    return {**config, "match": {**match, **added}} if added else config


def derive_stage_roles(data: dict[str, Any]) -> dict[str, Any]:
    """The raw config with a task-generation and a judge role derived from the Examiner's
    role (its model and sampling, at the paper's temperature) when models.roles has no role
    of the configured name. A config that names its own roles is left as it is."""
    models, match = data.get("models"), data.get("match") or {}
    if isinstance(match, MatchSettings):
        match = match.model_dump()
    if not isinstance(models, dict | ModelsConfig) or not isinstance(match, dict):
        return data
    raw = models if isinstance(models, dict) else models.model_dump(exclude_unset=True)
    roles = raw.get("roles")
    if not isinstance(roles, dict):
        return data
    defaults = MatchSettings.model_fields
    name = match.get("examiner_role", defaults["examiner_role"].default)
    if not isinstance(name, str):
        return data  # the field's own validation names the problem (a list is unhashable)
    examiner = roles.get(name)
    if examiner is None:
        return data  # check_components names the missing role
    added = dict(roles)
    for key, temperature in (
        ("taskgen_role", TASKGEN_TEMPERATURE),
        ("judge_role", JUDGE_TEMPERATURE),
    ):
        name = match.get(key, defaults[key].default)
        if isinstance(name, str) and name not in added:
            added[name] = _with_temperature(examiner, temperature)
    if len(added) == len(roles):
        return data
    return {**data, "models": {**raw, "roles": added}}


def _with_temperature(role: Any, temperature: float) -> Any:
    if isinstance(role, ModelRole):
        return role.model_copy(
            update={"sampling": role.sampling.model_copy(update={"temperature": temperature})}
        )
    if not isinstance(role, dict):
        return role  # the role's own validation names the problem
    sampling = role.get("sampling") or {}
    if isinstance(sampling, BaseModel):
        sampling = sampling.model_dump()
    if not isinstance(sampling, dict):
        return role
    return {**role, "sampling": {**sampling, "temperature": temperature}}


def load_config(path: Path) -> TournamentConfig:
    """Parse and validate; every problem is one line naming the file and the field."""
    return parse_config(load_yaml_mapping(path, "tournament config"), str(path))


def config_of(header: RunHeader, where: str) -> TournamentConfig:
    """The tournament config a run header keeps (run.json's `config`), typed; a field this
    drarena cannot read is one line naming `where`."""
    return parse_config(header.config, where)


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
