"""The agent loop of `nav ask`: anthropic messages.create with four repository tools.

    run_agent(question, repo_root, search_code) -> AgentAnswer

Each step is one model call. Every stop_reason has its own branch:
  end_turn        the answer
  tool_use        run each tool call, send the results (errors as is_error tool results), go on
  max_tokens      a cut-off tool call is answered with is_error results and the loop goes on;
                  a cut-off answer is returned as it is, marked truncated. No empty message is sent.
  stop_sequence   nav sets none; the text up to it is returned as the answer
  pause_turn      the paused assistant turn is sent back as it is, so the model resumes it
  refusal         reported as a refusal, with the API's explanation when it gives one
  model_context_window_exceeded   what there is, marked truncated
  anything else   LLMError naming the unknown value
After max_steps model calls without an answer the loop ends with "Stopped after N steps ...".

Settings and their defaults: agent_loop.settings (NAV_AGENT_MODEL default claude-sonnet-5-5,
NAV_AGENT_MAX_STEPS 12, NAV_AGENT_MAX_TOKENS 4096, NAV_AGENT_BUDGET 4000 tokens per search_code).
API failures (401, 403, 404, 429, 5xx, timeouts, no network) surface as navigator.core.errors.LLMError
after the SDK's own retries; no ANTHROPIC_API_KEY is MissingAPIKeyError.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_loop.prompts import SYSTEM_PROMPT
from agent_loop.settings import (
    ENV_MAX_STEPS,
    ENV_MAX_TOKENS,
    ENV_MODEL,
    AgentSettings,
    resolve_settings,
)
from agent_loop.tools import TOOL_SCHEMAS, OpenGraph, RepoTools, SearchCode, ToolOutcome
from navigator.core.errors import InputError, LLMError, MissingAPIKeyError, UsageError

if TYPE_CHECKING:
    import anthropic
    from anthropic.types import Message

API_TIMEOUT_S = 180.0        # one model call; the SDK retries (2 by default) on top of this
MAX_QUESTION_CHARS = 20_000
EVENT_DETAIL_CHARS = 200

STOP_END_TURN = "end_turn"
STOP_TOOL_USE = "tool_use"
STOP_MAX_TOKENS = "max_tokens"
STOP_SEQUENCE = "stop_sequence"
STOP_PAUSE_TURN = "pause_turn"
STOP_REFUSAL = "refusal"
STOP_CONTEXT_WINDOW = "model_context_window_exceeded"
STOPPED_MAX_STEPS = "max_steps"       # AgentAnswer.stopped_reason when the step limit ends the loop


@dataclass
class AgentAnswer:
    text: str
    truncated: bool
    stopped_reason: str     # a stop_reason of the last model call, or "max_steps"
    steps: int              # model calls made
    files_used: list[str]   # repository-relative files read with read_file, in first-read order
    input_tokens: int       # summed over all calls, cache reads and writes included
    output_tokens: int


@dataclass(frozen=True)
class AgentEvent:
    """Progress for the CLI: kind is "model_call", "tool_call", "tool_result" or "finished"."""
    kind: str
    step: int
    detail: str = ""
    tool: str | None = None
    is_error: bool = False


EventHandler = Callable[[AgentEvent], None]


class _Conversation:
    """The messages list, with the invariant the API needs: no message is ever empty."""

    def __init__(self, question: str):
        self.messages: list[dict[str, Any]] = []
        self.add("user", question)

    def add(self, role: str, content: str | list[dict[str, Any]]) -> None:
        if not content or (isinstance(content, str) and not content.strip()):
            raise LLMError(f"nav was about to send an empty {role} message; this is a bug in nav",
                           hint="please report it with the question that caused it")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        if self.messages and self.messages[-1]["role"] == role:
            # A resumed pause_turn adds to the assistant turn it continues instead of starting a new one.
            self.messages[-1]["content"].extend(blocks)
        else:
            self.messages.append({"role": role, "content": blocks})


def _text_of(message: Message) -> str:
    return "".join(block.text for block in message.content if block.type == "text").strip()


def _tool_result(tool_use_id: str, outcome: ToolOutcome) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_use_id,
            "content": outcome.content if outcome.content.strip() else "(empty result)",
            "is_error": outcome.is_error}


def default_client() -> anthropic.Anthropic:
    api_key = os.environ.get("ANTHROPIC_API_KEY")
    auth_token = os.environ.get("ANTHROPIC_AUTH_TOKEN")
    if not api_key and not auth_token:
        raise MissingAPIKeyError(
            "ANTHROPIC_API_KEY is not set, so nav cannot ask the model",
            hint="export ANTHROPIC_API_KEY=<your key> to get an answer; without it nav shows the retrieved context",
        )
    import anthropic

    if api_key:
        return anthropic.Anthropic(api_key=api_key, timeout=API_TIMEOUT_S)
    return anthropic.Anthropic(auth_token=auth_token, timeout=API_TIMEOUT_S)


def create_message(client: anthropic.Anthropic, settings: AgentSettings, messages: list[dict[str, Any]], *,
                   system: str = SYSTEM_PROMPT, tools: list[dict[str, Any]] = TOOL_SCHEMAS,
                   tool_choice: dict[str, Any] | None = None) -> Message:
    """One model call. Every SDK failure, after the SDK's own retries, becomes an LLMError. The agent's own
    prompt and tools by default; `nav tune`'s worker passes its own."""
    import anthropic

    retries = getattr(client, "max_retries", None)
    after = f" (after {retries} retries)" if retries else ""
    try:
        return client.messages.create(
            model=settings.model,
            max_tokens=settings.max_tokens,
            system=system,
            tools=tools,
            messages=messages,
            **({"tool_choice": tool_choice} if tool_choice else {}),
        )
    except anthropic.AuthenticationError as err:
        raise LLMError(f"the Anthropic API rejected the credentials (401: {_detail(err)})",
                       hint="check ANTHROPIC_API_KEY: it may be mistyped, revoked or for another workspace") from err
    except anthropic.PermissionDeniedError as err:
        raise LLMError(f"the Anthropic API refused access (403: {_detail(err)})",
                       hint=f"the key may not have access to model {settings.model!r}; "
                            f"try another {ENV_MODEL}") from err
    except anthropic.NotFoundError as err:
        raise LLMError(f"the Anthropic API does not know model {settings.model!r} (404: {_detail(err)})",
                       hint=f"set {ENV_MODEL} to a current model name") from err
    except anthropic.RateLimitError as err:
        raise LLMError(f"the Anthropic API is rate-limiting this key (429){after}: {_detail(err)}",
                       hint=f"wait a minute and retry, or lower {ENV_MAX_STEPS}/{ENV_MAX_TOKENS}") from err
    except anthropic.InternalServerError as err:
        raise LLMError(f"the Anthropic API failed with a server error ({err.status_code}){after}: {_detail(err)}",
                       hint="this is on the API's side; retry in a few minutes") from err
    except anthropic.BadRequestError as err:
        raise LLMError(f"the Anthropic API rejected the request (400: {_detail(err)})",
                       hint=f"check {ENV_MODEL} and {ENV_MAX_TOKENS}; "
                            "a very long conversation can also exceed the context") from err
    except anthropic.APIStatusError as err:
        raise LLMError(f"the Anthropic API answered HTTP {err.status_code}{after}: {_detail(err)}",
                       hint="retry later; if it persists, check the API status page") from err
    except anthropic.APITimeoutError as err:
        raise LLMError(f"the Anthropic API did not answer in time{after}",
                       hint="check the network and retry; the API may be overloaded") from err
    except anthropic.APIConnectionError as err:
        raise LLMError(f"could not reach the Anthropic API{after}: {err}",
                       hint="check the network connection (and ANTHROPIC_BASE_URL if it is set)") from err
    except anthropic.APIError as err:   # e.g. a response that does not match the API's schema
        raise LLMError(f"the Anthropic API returned something nav cannot use: {err}",
                       hint="retry; if it persists, upgrade the anthropic package") from err
    except anthropic.CredentialsError as err:
        raise LLMError(f"the Anthropic credentials could not be loaded: {err}",
                       hint="set ANTHROPIC_API_KEY") from err


def _detail(err: anthropic.APIStatusError) -> str:
    return err.api_message or err.message


class _Run:
    """The state of one run_agent call."""

    def __init__(self, question: str, repo_root: Path, search_code: SearchCode, settings: AgentSettings,
                 client: anthropic.Anthropic, on_event: EventHandler | None, open_graph: OpenGraph | None = None):
        self.settings = settings
        self.client = client
        self.on_event = on_event
        self.tools = RepoTools(repo_root=repo_root, search_code=search_code, search_budget=settings.budget,
                               open_graph=open_graph, allow_secrets=settings.allow_secrets)
        self.conversation = _Conversation(question)
        self.input_tokens = 0
        self.output_tokens = 0
        self.steps = 0
        self.last_note = ""     # the latest text the model wrote, kept for the step-limit answer

    def emit(self, kind: str, detail: str = "", tool: str | None = None, is_error: bool = False) -> None:
        if self.on_event is not None:
            self.on_event(AgentEvent(kind=kind, step=self.steps, detail=detail[:EVENT_DETAIL_CHARS],
                                     tool=tool, is_error=is_error))

    def answer(self, text: str, *, truncated: bool, stopped_reason: str) -> AgentAnswer:
        self.emit("finished", stopped_reason)
        return AgentAnswer(text=text, truncated=truncated, stopped_reason=stopped_reason, steps=self.steps,
                           files_used=list(self.tools.files_read), input_tokens=self.input_tokens,
                           output_tokens=self.output_tokens)

    def call_model(self) -> Message:
        self.steps += 1
        self.emit("model_call", self.settings.model)
        response = create_message(self.client, self.settings, self.conversation.messages)
        usage = response.usage
        self.input_tokens += (usage.input_tokens + (usage.cache_creation_input_tokens or 0)
                              + (usage.cache_read_input_tokens or 0))
        self.output_tokens += usage.output_tokens
        return response

    def run_tools(self, response: Message) -> list[dict[str, Any]]:
        results = []
        for block in response.content:
            if block.type != "tool_use":
                continue
            self.emit("tool_call", repr(block.input), tool=block.name)
            outcome = self.tools.call(block.name, block.input)
            self.emit("tool_result", outcome.content, tool=block.name, is_error=outcome.is_error)
            results.append(_tool_result(block.id, outcome))
        return results

    def loop(self) -> AgentAnswer:
        paused_text: list[str] = []    # text of paused turns, which the resumed response continues
        for _ in range(self.settings.max_steps):
            response = self.call_model()
            stop = response.stop_reason
            text = _text_of(response)
            if text:
                self.last_note = text
            # Sent back exactly as received (unset fields stay unset); no warning for odd tool input.
            assistant_blocks = [block.to_dict(mode="json", warnings=False) for block in response.content]
            tool_uses = [block for block in response.content if block.type == "tool_use"]

            if stop == STOP_END_TURN:
                full = "\n".join([*paused_text, text]).strip()
                return self.answer(full or "(the model ended its turn without writing an answer)",
                                   truncated=False, stopped_reason=stop)
            elif stop == STOP_TOOL_USE:
                if not tool_uses:
                    raise LLMError("the model stopped for tool_use but sent no tool call",
                                   hint="retry; if it persists, try another NAV_AGENT_MODEL")
                self.conversation.add("assistant", assistant_blocks)
                self.conversation.add("user", self.run_tools(response))
                paused_text.clear()
            elif stop == STOP_MAX_TOKENS:
                if tool_uses:
                    # A tool call cut off mid-input cannot be trusted; say so and let the model retry it.
                    self.conversation.add("assistant", assistant_blocks)
                    self.conversation.add("user", [
                        _tool_result(block.id, ToolOutcome(
                            f"not run: the tool call was cut off at max_tokens={self.settings.max_tokens} "
                            "before its input was complete; send it again, shorter", is_error=True))
                        for block in tool_uses])
                    paused_text.clear()
                    continue
                partial = "\n".join([*paused_text, text]).strip()
                note = (f"[answer truncated: the model reached max_tokens={self.settings.max_tokens}; "
                        f"raise {ENV_MAX_TOKENS} for a longer answer]")
                return self.answer(f"{partial}\n\n{note}" if partial else note, truncated=True, stopped_reason=stop)
            elif stop == STOP_SEQUENCE:
                full = "\n".join([*paused_text, text]).strip()
                return self.answer(full or f"(the model stopped at stop sequence {response.stop_sequence!r})",
                                   truncated=False, stopped_reason=stop)
            elif stop == STOP_PAUSE_TURN:
                # Resume: send the paused turn back as it is; the API continues it. Nothing is added
                # when the paused turn is empty: the same conversation is simply sent again.
                if assistant_blocks:
                    self.conversation.add("assistant", assistant_blocks)
                if text:
                    paused_text.append(text)
            elif stop == STOP_REFUSAL:
                details = response.stop_details
                explanation = details.explanation if details is not None and details.explanation else ""
                category = details.category if details is not None and details.category else ""
                message = "The model declined to answer this question"
                message += f" (category: {category})" if category else ""
                message += f": {explanation}" if explanation else "."
                return self.answer(message, truncated=False, stopped_reason=stop)
            elif stop == STOP_CONTEXT_WINDOW:
                partial = "\n".join([*paused_text, text]).strip()
                note = ("[answer truncated: the conversation filled the model's context window; ask a narrower "
                        "question or lower NAV_AGENT_BUDGET]")
                return self.answer(f"{partial}\n\n{note}" if partial else note, truncated=True, stopped_reason=stop)
            else:
                raise LLMError(f"the Anthropic API returned an unknown stop_reason {stop!r}",
                               hint="nav does not know how to continue; upgrade nav, or report this")
        files = ", ".join(self.tools.files_read) or "none"
        text = (f"Stopped after {self.settings.max_steps} steps without a final answer "
                f"(raise {ENV_MAX_STEPS} to allow more). Files read: {files}.")
        if self.last_note:
            text += f"\nThe model's last note: {self.last_note}"
        return self.answer(text, truncated=True, stopped_reason=STOPPED_MAX_STEPS)


def run_agent(
    question: str,
    repo_root: Path,
    search_code: Callable[[str, int], str],
    *,
    model: str | None = None,
    max_steps: int | None = None,
    max_tokens: int | None = None,
    budget: int | None = None,
    client: anthropic.Anthropic | None = None,
    on_event: EventHandler | None = None,
    open_graph: OpenGraph | None = None,
) -> AgentAnswer:
    """Answer `question` about the repository at `repo_root`.

    `search_code(query, budget_tokens)` returns nav's budgeted context as text. `client` is an
    anthropic.Anthropic (tests pass one aimed at a local fake server); without it one is built from
    ANTHROPIC_API_KEY. `open_graph()` opens the index's symbol graph for the graph tools (None: they
    answer with an error). Raises MissingAPIKeyError, LLMError, UsageError or InputError.
    """
    if not question or not question.strip():
        raise UsageError("the question is empty", hint='ask something, e.g. nav ask "where is the config read?"')
    if len(question) > MAX_QUESTION_CHARS:
        raise UsageError(f"the question is {len(question)} characters long; the limit is {MAX_QUESTION_CHARS}")
    root = Path(repo_root)
    if not root.is_dir():
        raise InputError(f"repository root {str(root)!r} is not a directory", hint="pass the repository's directory")
    settings = resolve_settings(model=model, max_steps=max_steps, max_tokens=max_tokens, budget=budget)
    run = _Run(question.strip(), root.resolve(), search_code, settings,
               client if client is not None else default_client(), on_event, open_graph)
    return run.loop()
