"""The selection policy: one Python file that decides what `nav context` keeps of the retrieved candidates.

A policy file defines two functions (the shipped one is navigator/context/selection.py):

    params_for_retriever(name: str) -> params
        its knobs for a retriever's score scale (any object; passed back to select_context)
    select_context(question: str, candidates: list[RetrievedChunk], budget: int, params) -> Selection
        what to return, best first: `pieces` (each with .chunk, .text, .rank, .score) and the accounting
        the envelope reports (left_out, relevance_bar, weak_reasons, ...); see selection.Selection

`nav context` loads the shipped file unless NAV_POLICY=path or --policy path names another; `nav tune`
edits copies of it. Whatever a policy returns is checked here before anyone reads it (verify_selection):
  - every piece is one of the candidates' chunks (by id), taken from the index, not from the policy;
  - its text is made only of that chunk's own text: every line but an elision marker ("<indent>... (N
    lines)") is a whole line of the chunk, in the chunk's order, so a policy can choose and cut spans but
    never write, change or reorder words;
  - its cost is recounted with nav's estimator (chunkers.base.estimate_tokens) and the total must fit
    the budget, so a policy cannot misreport what it spent.
"""
from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

from chunkers.base import estimate_tokens
from navigator.core.errors import PolicyError

POLICY_ENV = "NAV_POLICY"
REQUIRED_FUNCTIONS = ("select_context", "params_for_retriever")
# The only line a policy may add to a chunk's text: selection.ELISION_MARKER, indented like the lines it stands for.
_MARKER_LINE = re.compile(r"^[ \t]*\.\.\. \(\d+ lines\)$")


def shipped_policy_path() -> Path:
    return Path(__file__).with_name("selection.py")


def load_policy(path: str | Path | None = None) -> ModuleType:
    """The policy module at `path`, or the shipped one (imported normally, so it is loaded once)."""
    if path is None or Path(path).resolve() == shipped_policy_path().resolve():
        from navigator.context import selection
        return selection
    file = Path(path).expanduser()
    if not file.is_file():
        raise PolicyError(f"policy file not found: {file}",
                          hint=f"give a Python file that defines {' and '.join(REQUIRED_FUNCTIONS)} "
                               f"(start from a copy of {shipped_policy_path()})")
    source = file.read_bytes()
    # One module per file content: an edited file is a new policy, never a stale cached one.
    name = f"nav_policy_{hashlib.sha256(source).hexdigest()[:16]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module   # dataclasses resolve their module through sys.modules while the file runs
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise PolicyError(f"policy file {file} failed to load: {type(exc).__name__}: {exc}",
                          hint="fix the file, or unset NAV_POLICY to use the shipped policy") from exc
    missing = [fn for fn in REQUIRED_FUNCTIONS if not callable(getattr(module, fn, None))]
    if missing:
        sys.modules.pop(name, None)
        raise PolicyError(f"policy file {file} does not define {', '.join(missing)}",
                          hint=f"a policy file defines {' and '.join(REQUIRED_FUNCTIONS)}; "
                               f"see {shipped_policy_path()}")
    return module


def text_is_made_of(text: str, source: str) -> bool:
    """True when every line of `text` other than an elision marker is a whole line of `source`, and they
    come in `source`'s order (a policy may drop lines, never add, change or reorder them)."""
    source_lines = source.split("\n")
    position = 0
    for line in text.split("\n"):
        if _MARKER_LINE.match(line):
            continue
        while position < len(source_lines) and source_lines[position] != line:
            position += 1
        if position == len(source_lines):
            return False
        position += 1
    return True


def verify_selection(selection, candidates, budget: int):
    """Check a policy's selection against the contract above; recount its cost. Returns the selection with
    each piece's chunk replaced by the candidate's and its tokens recounted; raises PolicyError."""
    by_id = {cand.chunk.id: cand.chunk for cand in candidates}
    spent = 0
    for piece in selection.pieces:
        chunk = by_id.get(getattr(piece.chunk, "id", None))
        if chunk is None:
            raise PolicyError(f"the policy returned a piece that is not one of the candidates "
                              f"({getattr(piece.chunk, 'path', '?')}:{getattr(piece.chunk, 'start_line', '?')})",
                              hint="a policy may only return chunks it was given")
        if not isinstance(piece.text, str) or not piece.text.strip():
            raise PolicyError(f"the policy returned an empty piece for {chunk.location}")
        if not text_is_made_of(piece.text, chunk.text):
            raise PolicyError(f"the policy returned text for {chunk.location} that is not in that chunk",
                              hint="a policy chooses and cuts spans of retrieved chunks; it cannot write text")
        piece.chunk = chunk
        piece.tokens = estimate_tokens(piece.text)
        spent += piece.tokens
    if spent > budget:
        raise PolicyError(f"the policy returned {spent} tokens under a budget of {budget}",
                          hint="a policy must keep what it returns within the budget")
    selection.spent = spent
    return selection


def select_with_policy(policy: ModuleType, question: str, candidates, budget: int, retriever: str):
    """Run `policy` and verify what it returns: the one way nav context, nav eval and nav tune select."""
    params = policy.params_for_retriever(retriever)
    return verify_selection(policy.select_context(question, candidates, budget, params), candidates, budget)
