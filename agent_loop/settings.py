"""Settings of the agent loop: function argument, else environment variable, else default.

  NAV_AGENT_MODEL       model name (default claude-sonnet-5-5: the newest Sonnet the installed
                        anthropic SDK lists that is not on its deprecation list; claude-sonnet-4-5
                        is listed there as reaching end of life on 2026-11-30)
  NAV_AGENT_MAX_STEPS   model calls before the loop gives up (default 12)
  NAV_AGENT_MAX_TOKENS  max_tokens of each model call (default 4096; at most 20000, under the SDK's
                        limit for a non-streaming request)
  NAV_AGENT_BUDGET      token budget of each search_code result (default 4000, counted with
                        chunkers.base.estimate_tokens)
"""
from __future__ import annotations

from navigator.index.secrets import secrets_allowed

import os
from collections.abc import Mapping
from dataclasses import dataclass

from navigator.core.errors import UsageError

DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_MAX_STEPS = 12
DEFAULT_MAX_TOKENS = 4096
DEFAULT_BUDGET = 4000
MAX_STEPS_CEILING = 100
# The SDK refuses a non-streaming request whose max_tokens could take over 10 minutes
# (60 min * max_tokens / 128000 > 10 min, i.e. above ~21333); nav stays under that.
MAX_TOKENS_CEILING = 20_000
BUDGET_FLOOR = 200
BUDGET_CEILING = 50_000

ENV_MODEL = "NAV_AGENT_MODEL"
ENV_MAX_STEPS = "NAV_AGENT_MAX_STEPS"
ENV_MAX_TOKENS = "NAV_AGENT_MAX_TOKENS"
ENV_BUDGET = "NAV_AGENT_BUDGET"


@dataclass(frozen=True)
class AgentSettings:
    model: str
    max_steps: int
    max_tokens: int
    budget: int
    allow_secrets: bool = False   # NAV_ALLOW_SECRETS / --allow-secrets: read_file and run_command serve secrets


def _bounded_int(name: str, value: int | str, low: int, high: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be an integer, got {value!r}",
                         hint=f"set {name} to a whole number between {low} and {high}") from None
    if not low <= number <= high:
        raise UsageError(f"{name} must be between {low} and {high}, got {number}",
                         hint=f"set {name} to a whole number between {low} and {high}")
    return number


def resolve_settings(
    *,
    model: str | None = None,
    max_steps: int | None = None,
    max_tokens: int | None = None,
    budget: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> AgentSettings:
    env = os.environ if environ is None else environ

    def pick(argument: object, variable: str, default: object) -> tuple[str, object]:
        if argument is not None:
            return variable.lower().removeprefix("nav_agent_"), argument
        if env.get(variable):
            return variable, env[variable]
        return variable, default

    model_name = model if model is not None else (env.get(ENV_MODEL) or DEFAULT_MODEL)
    if not model_name.strip():
        raise UsageError("the agent model name is empty", hint=f"set {ENV_MODEL} or leave it unset for {DEFAULT_MODEL}")
    steps_name, steps_value = pick(max_steps, ENV_MAX_STEPS, DEFAULT_MAX_STEPS)
    tokens_name, tokens_value = pick(max_tokens, ENV_MAX_TOKENS, DEFAULT_MAX_TOKENS)
    budget_name, budget_value = pick(budget, ENV_BUDGET, DEFAULT_BUDGET)
    return AgentSettings(
        model=model_name.strip(),
        max_steps=_bounded_int(steps_name, steps_value, 1, MAX_STEPS_CEILING),  # type: ignore[arg-type]
        max_tokens=_bounded_int(tokens_name, tokens_value, 1, MAX_TOKENS_CEILING),  # type: ignore[arg-type]
        budget=_bounded_int(budget_name, budget_value, BUDGET_FLOOR, BUDGET_CEILING),  # type: ignore[arg-type]
        allow_secrets=secrets_allowed(env),
    )
