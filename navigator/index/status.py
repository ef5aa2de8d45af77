"""`nav status`: what the index holds, when it was built, and how many files changed since."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from navigator.core.config import Config


@dataclass
class StatusReport:
    root: str
    state: dict
    manifest: dict

    def to_json(self) -> dict:
        return {"root": self.root, **self.state, "manifest": self.manifest}

    def render(self) -> str:
        s, m = self.state, self.manifest
        if s["state"] == "missing" and s.get("building_pid"):
            return (f"Index of {self.root} is being built (nav index, pid {s['building_pid']}) in {s['index_dir']}.\n"
                    "  The lexical index is committed first: searches work in a few seconds.")
        if s["state"] == "missing":
            return f"No index for {self.root} (looked in {s['index_dir']}).\n  Build one: nav index {self.root}"
        skipped = ", ".join(f"{n} {r}" for r, n in sorted((m.get("skipped") or {}).items())) or "none"
        lines = [
            f"Index of {self.root}: {s['state'].upper()}",
            f"  built      {s['built_at']} ({_age(s['age_seconds'])} ago) at git HEAD {(s['git_head'] or 'n/a')[:12]}",
            f"  files      {s['files_indexed']} indexed; skipped: {skipped}",
            f"  chunks     {s['chunk_count']}  (embedder {m.get('embedder')})",
            *([f"  languages  {render_languages(m['languages'])}"] if m.get("languages") else []),
            *(f"  fallback   {facts['files']} {language} files read as plain text: its grammar did not load "
              f"({facts['reason']})" for language, facts in sorted((m.get("fallback") or {}).items())),
            *([f"  secrets    {(m.get('skipped') or {}).get('secret', 0)} secret-shaped files skipped, "
               f"{m['redacted']['values']} values redacted in {m['redacted']['files']} files"]
              if m.get("redaction", "").startswith("redact") else []),
            *(["  WARNING    secrets allowed: secret-shaped files and values are indexed (--allow-secrets)"]
              if m.get("redaction") == "allowed" else []),
            f"  vectors    {_vectors_line(s)}",
            *(f"  cached     {model} has vectors of {n:,} of these {s['embedded_texts']:,} chunk texts: "
              "switching to it embeds only the rest" for model, n in sorted((s.get("other_models") or {}).items())),
            *(f"  outdated   {reason}" for reason in s.get("outdated") or []),
            f"  changed    {s['files_changed_since']} files since the build"
            + (f": {', '.join(s['changed_examples'])}" if s["changed_examples"] else ""),
            f"  index dir  {s['index_dir']}",
        ]
        lines.extend(f"  damaged    {p}" for p in s.get("problems") or [])
        if s.get("vector_store") == "server":
            lines.append(f"  vectors    chroma server {s['chroma_url']}, collection {s['chroma_collection']}")
        if s["state"] == "stale":
            lines.append(f"  refresh:   nav index {self.root}"
                         + ("  (built by an older nav: rebuilds what is outdated)" if s.get("outdated") else ""))
        return "\n".join(lines)


def render_languages(languages: dict[str, int]) -> str:
    """"python 120, go 94, typescript 3": most files first."""
    return ", ".join(f"{name} {n}" for name, n in sorted(languages.items(), key=lambda item: (-item[1], item[0])))


def _vectors_line(s: dict) -> str:
    if s.get("vector_note"):
        line = s["vector_note"]
    elif "vectors_embedded" in s:
        line = f"complete: {s['vectors_embedded']:,} chunks embedded"
    else:
        line = "complete"
    if s.get("vectors_excluded"):
        line += (f"; {s['vectors_excluded']:,} chunks not embedded: data/lock/generated/vendored files "
                 "(NAV_EMBED_ALL=1 to embed them)")
    return line


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"


def status(path: str | Path | None, config: Config | None = None) -> StatusReport:
    from navigator.core.errors import IndexMissingError
    from navigator.index.nav_index import NavIndex, missing_index_state, resolve_repo
    config = config or Config.from_env()
    root = resolve_repo(path)
    try:
        index = NavIndex.open(root, config, check_embedder=False)
    except IndexMissingError:
        return StatusReport(str(root), missing_index_state(root, config.index_dir_for(root)), {})
    from navigator.index.repair import database_errors
    problems = index_problems(index)
    with database_errors(index.index_dir / "nav.db"):
        state = {**index.state(), **index.vector_store_state(), **other_models_state(index)} \
            if not _db_damaged(problems) else \
            {**missing_index_state(root, index.index_dir), "chunk_count": index.chunk_count}
    state["problems"] = problems
    if problems:
        state["state"] = "damaged"
    return StatusReport(str(root), state, index.manifest)


def other_models_state(index) -> dict:
    """Vectors the cache keeps from models other than the index's own (a switch back re-embeds none of those)."""
    from navigator.index import store
    counts = store.cached_vectors_by_model(index.conn)
    own = index.manifest.get("embedder")
    return {"embedded_texts": counts.get(own, 0), "other_models": {m: n for m, n in counts.items() if m != own}}


def _db_damaged(problems: list[str]) -> bool:
    return any(p.startswith("the index database is damaged") for p in problems)


def index_problems(index) -> list[str]:
    """What `nav status` reports as damaged in an open NavIndex (each item says what to do)."""
    from navigator.index import store
    from navigator.index.repair import chroma_missing, quick_check
    problems: list[str] = []
    damage = quick_check(index.conn)
    if damage is not None:
        problems.append(f"the index database is damaged ({damage}): run `nav index {index.root} --rebuild`")
        return problems
    # Under exact search (the default up to 250k chunks) no reader needs the store: nav index does not keep it.
    if index.chunk_count and not index.config.chroma_url and not index._searches_exactly \
            and chroma_missing(index.index_dir / store.CHROMA_DIR):
        problems.append(f"the vector store is missing: run `nav index {index.root}` to rebuild it from nav.db")
    onnx = onnx_problem(index)
    if onnx:
        problems.append(onnx)
    return problems


def onnx_problem(index) -> str | None:
    from navigator.index.onnx_query import export_problem, onnx_dir_for, onnx_enabled
    if not onnx_enabled(index.config):
        return None
    identity = index.manifest.get("embedder", index.config.embed_model)
    why = export_problem(onnx_dir_for(index.index_dir, identity))
    if why is None:
        return None
    return f"the ONNX query model is damaged ({why}): run `nav index {index.root}` to export it again"
