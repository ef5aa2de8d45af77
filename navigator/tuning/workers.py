"""Workers propose new versions of the policy file, one per trial. The supervisor trusts none of them.

- ClaudeWorker: a Claude agent on the Anthropic SDK (agent_loop's client and error handling) that reads the
  trial log and the incumbent's per-query results, states a hypothesis and a strategy family, and writes the
  whole new policy file through one forced tool call.
- FolderWorker (`--worker patches DIR`): feeds candidate files from a folder, in name order: whole policy
  files (*.py) or unified diffs against the incumbent (*.patch, *.diff). A sidecar NAME.json, or
  `# hypothesis:` / `# family:` comment lines, say what each one tries.
"""
from __future__ import annotations

import json
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from navigator.core.errors import InputError

FAMILIES = ("span_trimming", "rank_cutoff", "relevance_bar", "dedup", "reserve", "novelty", "other")


@dataclass
class Proposal:
    hypothesis: str
    family: str
    path: str                      # the file the worker edits; anything but the policy file is rejected
    source: str | None             # the whole new policy file
    error: str = ""                # why there is no usable proposal (the trial is rejected with it)


@dataclass
class WorkerView:
    """What a worker is shown: the incumbent file, the rules, the dev results and the log. Never the holdout."""
    policy_name: str
    incumbent_source: str
    thresholds: dict
    incumbent_results: list[dict]   # per dev query: id, category, question, answered, tokens
    log: list[dict]                 # earlier trials: hypothesis, family, decision, reason, metrics
    trial: int


# ---------------------------------------------------------------------------------------- folder worker

class FolderWorker:
    def __init__(self, folder: str | Path):
        self.folder = Path(folder).expanduser()
        if not self.folder.is_dir():
            raise InputError(f"no such folder of candidate policies: {self.folder}",
                             hint="give a folder of *.py policy files or *.patch / *.diff files")
        self.files = sorted(p for p in self.folder.iterdir() if p.suffix in (".py", ".patch", ".diff"))
        if not self.files:
            raise InputError(f"{self.folder} holds no *.py, *.patch or *.diff files",
                             hint="put candidate policy files or patches there")
        self.position = 0

    def propose(self, view: WorkerView) -> Proposal | None:
        if self.position >= len(self.files):
            return None
        file = self.files[self.position]
        self.position += 1
        text = file.read_text(encoding="utf-8", errors="replace")
        hypothesis, family = _described(file, text)
        if file.suffix == ".py":
            return Proposal(hypothesis, family, view.policy_name, text)
        targets = _patch_targets(text)
        others = [t for t in targets if Path(t).name != view.policy_name]
        if others or not targets:
            return Proposal(hypothesis, family, others[0] if others else "(no file named)", None,
                            error=f"the patch edits {', '.join(others) or 'no file'}, not {view.policy_name}")
        return _applied(view, text, hypothesis, family)


def _described(file: Path, text: str) -> tuple[str, str]:
    sidecar = file.with_suffix(".json")
    if sidecar.is_file():
        try:
            meta = json.loads(sidecar.read_text(encoding="utf-8"))
            return str(meta.get("hypothesis", "")), str(meta.get("family", "other"))
        except json.JSONDecodeError:
            pass
    hyp = re.search(r"^[+ ]?#\s*hypothesis:\s*(.+)$", text, re.MULTILINE)
    fam = re.search(r"^[+ ]?#\s*family:\s*(\S+)", text, re.MULTILINE)
    return (hyp.group(1).strip() if hyp else f"(from {file.name})", fam.group(1).strip() if fam else "other")


def _patch_targets(diff: str) -> list[str]:
    targets = []
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:].split("\t")[0].strip()
            if name != "/dev/null":
                targets.append(re.sub(r"^[ab]/", "", name))
    return targets


def _applied(view: WorkerView, diff: str, hypothesis: str, family: str) -> Proposal:
    with tempfile.TemporaryDirectory(prefix="nav-tune-patch-") as tmp:
        original = Path(tmp) / view.policy_name
        original.write_text(view.incumbent_source, encoding="utf-8")
        out = Path(tmp) / "patched.py"
        proc = subprocess.run(["patch", "--force", "--silent", "--no-backup-if-mismatch", "-o", str(out),
                               str(original)], input=diff, capture_output=True, text=True, timeout=30)
        if proc.returncode != 0 or not out.is_file():
            return Proposal(hypothesis, family, view.policy_name, None,
                            error=f"the patch does not apply to the incumbent: {(proc.stdout + proc.stderr).strip()[:200]}")
        return Proposal(hypothesis, family, view.policy_name, out.read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------- Claude worker

WORKER_SYSTEM = """You improve one Python file: the selection policy of nav, a code search tool. The policy
receives a question, the retrieved code chunks (ranked best first) and a token budget, and returns which
chunks to show and which of their lines to keep. The goal: return fewer tokens while every question keeps
its answer.

Rules the supervisor enforces (a proposal that breaks one is rejected):
- You edit only the file {policy_name}; propose its whole new content with the propose_policy tool.
- The file must define select_context(question, candidates, budget, params) and params_for_retriever(name);
  select_context returns an object with `pieces` (each with .chunk, .text), like the incumbent's Selection.
- A piece's text may only keep whole lines of its chunk, in order; elided runs may be marked with a line
  "<indent>... (N lines)". Any other text is rejected. Tokens are recounted by the supervisor.
- The policy runs in a sandbox: no network, no files, no processes, limited CPU time.
- Thresholds fixed before the loop: {thresholds}

Each trial, state one hypothesis and its strategy family (one of: {families}), and make one focused edit.
Learn from the log: do not repeat an edit that was discarded for the same reason."""

PROPOSE_TOOL = {
    "name": "propose_policy",
    "description": "Submit the whole new content of the policy file for this trial.",
    "input_schema": {
        "type": "object",
        "properties": {
            "hypothesis": {"type": "string", "description": "what this edit changes and why it should cut tokens without losing answers"},
            "family": {"type": "string", "enum": list(FAMILIES)},
            "path": {"type": "string", "description": "the file this edit is for"},
            "source": {"type": "string", "description": "the complete new content of the file"},
        },
        "required": ["hypothesis", "family", "path", "source"],
    },
}


class ClaudeWorker:
    def __init__(self, *, model: str | None = None, max_tokens: int = 16000, client=None):
        from agent_loop.loop import default_client
        from agent_loop.settings import resolve_settings
        self.settings = resolve_settings(model=model, max_tokens=max_tokens)
        self.client = client if client is not None else default_client()

    def propose(self, view: WorkerView) -> Proposal | None:
        from agent_loop.loop import create_message
        system = WORKER_SYSTEM.format(policy_name=view.policy_name, thresholds=json.dumps(view.thresholds),
                                      families=", ".join(FAMILIES))
        message = create_message(self.client, self.settings, [{"role": "user", "content": _brief(view)}],
                                 system=system, tools=[PROPOSE_TOOL],
                                 tool_choice={"type": "tool", "name": PROPOSE_TOOL["name"]})
        call = next((b for b in message.content if getattr(b, "type", "") == "tool_use"
                     and b.name == PROPOSE_TOOL["name"]), None)
        stop = message.stop_reason
        if stop == "max_tokens":
            return Proposal("", "other", view.policy_name, None,
                            error="the worker's answer was cut off (max_tokens) before the file was complete")
        if stop == "refusal":
            return Proposal("", "other", view.policy_name, None, error="the worker declined this trial (refusal)")
        if call is None:
            return Proposal("", "other", view.policy_name, None,
                            error=f"the worker proposed nothing (stop reason {stop!r})")
        data = call.input if isinstance(call.input, dict) else {}
        source = data.get("source")
        if not isinstance(source, str) or not source.strip():
            return Proposal(str(data.get("hypothesis", "")), str(data.get("family", "other")),
                            str(data.get("path", view.policy_name)), None, error="the proposal has no file content")
        return Proposal(str(data.get("hypothesis", "")), str(data.get("family", "other")),
                        str(data.get("path", "")), source)


def _brief(view: WorkerView) -> str:
    lines = [f"Trial {view.trial}. The incumbent {view.policy_name}:", "```python", view.incumbent_source, "```", "",
             "Incumbent on the dev queries (id | category | answered | tokens | question):"]
    for r in view.incumbent_results:
        lines.append(f"{r['id']} | {r['category']} | {'yes' if r['answered'] else 'NO'} | {r['tokens']} | "
                     f"{r['question'][:160]}")
    lines += ["", "Trial log so far:"]
    for entry in view.log[-30:]:
        lines.append(f"#{entry['trial']} [{entry['family']}] {entry['decision']}: {entry['reason']} "
                     f"-- {entry['hypothesis'][:200]}")
    if not view.log:
        lines.append("(none yet)")
    return "\n".join(lines)
