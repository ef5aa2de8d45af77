"""What a long query (a bug report, a pasted traceback or log) names exactly, pulled out so it can be looked up
exactly before any fuzzy search: traceback frames, file paths, dotted names, identifiers and error messages.

Pure text in, a QueryAnalysis out: no index, no model. The lookups against an index live in
retrievers.file_rank; the salient windows (what the embedder reads of a long query) are chosen here.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

# A query longer than this (characters) is treated as a report: the embedder reads salient windows of it.
LONG_QUERY_CHARS = 600
WINDOW_WORDS = 120          # ~ 200 word pieces: inside the embedder's 256-token limit with code-heavy text
MAX_WINDOWS = 3

# File "/x/site-packages/django/db/models/query.py", line 1212, in _fetch_all
_FRAME = re.compile(r'File "(?P<path>[^"\n]+)", line (?P<line>\d+)(?:, in (?P<func>[\w<>.]+))?')
# Paths with at least one slash and a file extension, or a bare module file name (query.py).
_PATH = re.compile(r"(?<![\w/.-])(?:[A-Za-z]:[/\\])?(?:[\w.-]+[/\\])+[\w.-]+\.(?:py|pyi|md|rst|txt|html|js|ts|toml|cfg|ini|json|yaml|yml)\b"
                   r"|(?<![\w/.-])[\w-]+\.(?:py|pyi)\b")
_DOTTED = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b")
_IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
# An exception line of a traceback or log: "TypeError: unhashable type: 'ModelChoiceIteratorValue'".
_ERROR_LINE = re.compile(r"^\s*(?P<exc>[A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt))\s*:\s*(?P<msg>.+?)\s*$",
                         re.MULTILINE)
_QUOTED = re.compile(r"""(?<!\w)(?:"([^"\n]{8,160})"|'([^'\n]{8,160})'|`([^`\n]{2,160})`)""")

# Python's own names and English words written in code shape: not evidence of a place in the repository.
_COMMON = frozenset("""
self cls none true false def class return import from pass raise try except finally with as for while if elif else
lambda yield async await print len str int float bool dict list set tuple object type super isinstance range
args kwargs init new call repr get set add the and not this that django python foo bar baz test tests
""".split())


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str | None


@dataclass
class QueryAnalysis:
    text: str
    frames: list[Frame] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)           # every path-like string, frames' included, in order
    dotted: list[str] = field(default_factory=list)          # a.b.c, first-occurrence order
    identifiers: list[str] = field(default_factory=list)     # code-shaped names (snake, Camel, dunder), by frequency
    errors: list[str] = field(default_factory=list)          # "TypeError: unhashable type: ..." lines and quoted messages

    @property
    def is_long(self) -> bool:
        return len(self.text) > LONG_QUERY_CHARS

    def symbol_names(self) -> list[str]:
        """Names a definition could carry: each dotted name's parts (last part first: in QuerySet.union the
        method is the point, and a plain word is a name there), then the identifiers."""
        seen: dict[str, None] = {}
        for name in self.dotted:
            for part in reversed(name.split(".")):
                if len(part) >= 3 and part.lower() not in _COMMON:
                    seen.setdefault(part, None)
        for name in self.identifiers:
            seen.setdefault(name, None)
        return list(seen)


def _code_shaped(word: str) -> bool:
    """A name a person would not write in prose: snake_case, CamelCase with an inner capital, dunder, or with
    digits and letters mixed; lower-case English words and common Python names are not."""
    if len(word) < 3 or word.lower() in _COMMON:
        return False
    if "_" in word.strip("_") or word.startswith("__"):
        return True
    if re.search(r"[a-z][A-Z]", word) or re.match(r"[A-Z][a-z]+[A-Z]", word):
        return True
    return bool(re.match(r"[A-Z][A-Z0-9_]{3,}$", word))   # CONSTANT_NAMES (FILE_UPLOAD_PERMISSIONS)


def analyse_query(text: str) -> QueryAnalysis:
    analysis = QueryAnalysis(text=text)
    for m in _FRAME.finditer(text):
        analysis.frames.append(Frame(m.group("path").replace("\\", "/"), int(m.group("line")), m.group("func")))
    paths: dict[str, None] = {f.path: None for f in analysis.frames}
    for m in _PATH.finditer(text):
        paths.setdefault(m.group(0).replace("\\", "/"), None)
    analysis.paths = list(paths)
    path_spans = [m.span() for m in _PATH.finditer(text)]

    dotted: dict[str, None] = {}
    for m in _DOTTED.finditer(text):
        if any(a <= m.start() < b for a, b in path_spans):
            continue  # part of a path (django/db/models/query.py), already taken as a path
        name = m.group(0)
        if re.fullmatch(r"[\d.]+", name) or name.count(".") > 6:
            continue
        dotted.setdefault(name, None)
    analysis.dotted = [d for d in dotted if any(_code_shaped(p) or p[:1].isupper() for p in d.split("."))]

    counts = Counter(m.group(0) for m in _IDENT.finditer(text) if _code_shaped(m.group(0)))
    for frame in analysis.frames:
        if frame.function and _code_shaped(frame.function):
            counts[frame.function] += 1
    analysis.identifiers = [name for name, _ in counts.most_common()]

    errors: dict[str, None] = {}
    for m in _ERROR_LINE.finditer(text):
        errors.setdefault(f"{m.group('exc')}: {m.group('msg')}", None)
    for m in _QUOTED.finditer(text):
        quoted = next(g for g in m.groups() if g is not None)
        if " " in quoted.strip():   # a message, not a name (names are identifiers already)
            errors.setdefault(quoted.strip(), None)
    analysis.errors = list(errors)
    return analysis


def names_code(text: str) -> bool:
    """Whether a question names code: a code-shaped identifier, a dotted name, a path or a traceback frame.
    A question that names none is prose ("how many cells long is the progress bar by default")."""
    analysis = analyse_query(text)
    return bool(analysis.identifiers or analysis.dotted or analysis.paths or analysis.frames)


def salient_windows(analysis: QueryAnalysis, max_windows: int = MAX_WINDOWS, words: int = WINDOW_WORDS) -> list[str]:
    """What the embedder reads of a long query: its opening (title and first paragraph), then the windows
    densest in code-shaped names and error lines, so a 3,000-word report is not cut to its first 256 tokens.
    A short query is returned whole, as the only window."""
    text = analysis.text
    if not analysis.is_long:
        return [text]
    tokens = text.split()
    windows = [(i, tokens[i:i + words]) for i in range(0, len(tokens), words)]
    salient = set(analysis.identifiers[:40]) | {p.rsplit("/", 1)[-1] for p in analysis.paths}

    def density(chunk: list[str]) -> float:
        hits = sum(1 for tok in chunk if any(name in tok for name in salient) or tok.endswith(("Error:", "Exception:")))
        return hits / max(len(chunk), 1)

    chosen = [windows[0]]
    rest = sorted(windows[1:], key=lambda w: -density(w[1]))
    chosen += [w for w in rest[:max_windows - 1] if density(w[1]) > 0]
    return [" ".join(chunk) for _, chunk in sorted(chosen, key=lambda w: w[0])]
