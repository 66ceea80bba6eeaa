"""Configuration of the model layer: roles, sampling, retries, cache.

Why pydantic with extra="forbid": a misspelt key in a tournament config must fail loudly
rather than silently fall back to a default that changes the results.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# A model call's timeout and retry pauses: at most an hour each (finite: `.inf` was accepted)
MAX_WAIT_S = 3600.0


class Sampling(BaseModel):
    """Decoding parameters; all of them are part of the cache key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(default=0.0, ge=0.0, le=2.0, description="0 = greedy, reproducible")
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(default=512, ge=1, description="completion token limit")
    seed: int | None = Field(default=0, description="server-side sampling seed (vLLM honours it)")
    stop: tuple[str, ...] = Field(default=(), description="stop strings")

    def as_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
        }
        if self.seed is not None:
            params["seed"] = self.seed
        if self.stop:
            params["stop"] = list(self.stop)
        return params


class RetryPolicy(BaseModel):
    """Exponential backoff with full jitter: delay_n = uniform(0, min(cap, base * 2**n))."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: int = Field(default=4, ge=1, description="tries per call, the first one included")
    base_delay_s: float = Field(default=0.5, ge=0.0, le=MAX_WAIT_S, allow_inf_nan=False)
    max_delay_s: float = Field(default=8.0, ge=0.0, le=MAX_WAIT_S, allow_inf_nan=False)

    def delay(self, retry_index: int, unit_random: float) -> float:
        """Pure: the pause before retry number `retry_index` (0-based), given a U[0,1) draw."""
        ceiling = min(self.max_delay_s, self.base_delay_s * (2.0**retry_index))
        return ceiling * unit_random


class ModelRole(BaseModel):
    """One named model: the Examiner, or one candidate agent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(description="litellm model string, e.g. 'openai/smollm2-135m'")
    api_base: str | None = Field(
        default=None, description="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1"
    )
    api_bases: tuple[str, ...] | None = Field(
        default=None,
        description="several replicas serving the same model (instead of api_base): each "
        "attempt goes to the one with the fewest calls in flight; not in the "
        "cache key",
    )
    api_key_env: str | None = Field(
        default=None, description="environment variable holding the API key"
    )
    sampling: Sampling = Field(default_factory=lambda: Sampling())
    timeout_s: float = Field(
        default=120.0,
        gt=0.0,
        le=MAX_WAIT_S,
        allow_inf_nan=False,  # `.inf` was accepted: a call that hangs, waited on for ever
        description="per-attempt timeout, at most an hour (not in the cache key)",
    )

    @field_validator("model")
    @classmethod
    def _model_nonempty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("model must not be empty")
        return value

    @model_validator(mode="after")
    def _one_way_to_name_endpoints(self) -> ModelRole:
        if self.api_bases is None:
            return self
        if self.api_base is not None:
            raise ValueError("give either api_base or api_bases, not both")
        if not self.api_bases:
            raise ValueError("api_bases must list at least one endpoint")
        for base in self.api_bases:
            if not base.strip():
                raise ValueError("api_bases: an endpoint is empty")
        twice = sorted({b for b in self.api_bases if self.api_bases.count(b) > 1})
        if twice:
            raise ValueError(f"api_bases: endpoint listed twice: {twice[0]}")
        return self

    def endpoints(self) -> tuple[str, ...]:
        """The endpoints this role's calls may go to; empty = the provider's default."""
        if self.api_bases is not None:
            return self.api_bases
        return (self.api_base,) if self.api_base else ()


class CacheMode(StrEnum):
    OFF = "off"
    READ_WRITE = "read-write"
    REPLAY = "replay"


class CacheConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    path: Path | None = Field(default=None, description="SQLite file; required unless mode is off")
    mode: CacheMode = CacheMode.OFF

    @model_validator(mode="after")
    def _path_when_on(self) -> CacheConfig:
        if self.mode is not CacheMode.OFF and self.path is None:
            raise ValueError(f"cache.path is required when cache.mode is {self.mode.value!r}")
        return self


class ModelsConfig(BaseModel):
    """The `models:` block of a run config."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    roles: dict[str, ModelRole] = Field(description="'examiner' and one entry per agent")
    concurrency: int = Field(
        default=4, ge=1, description="model calls in flight at once, all roles"
    )
    retry: RetryPolicy = Field(default_factory=lambda: RetryPolicy())
    cache: CacheConfig = Field(default_factory=lambda: CacheConfig())
    transport: Literal["direct", "litellm"] = Field(
        default="direct",
        description=(
            "'direct': a call litellm would only forward (the openai/ provider with an "
            "api_base, a model litellm does not know) is posted straight to the server, same "
            "body and reply for a fraction of the CPU (drarena/models/direct.py); 'litellm': "
            "every call through litellm. Not in the config digest: the replies are the same"
        ),
    )
