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
            f"  vectors    {_vectors_line(s)}",
            f"  changed    {s['files_changed_since']} files since the build"
            + (f": {', '.join(s['changed_examples'])}" if s["changed_examples"] else ""),
            f"  index dir  {s['index_dir']}",
        ]
        if s.get("vector_store") == "server":
            lines.append(f"  vectors    chroma server {s['chroma_url']}, collection {s['chroma_collection']}")
        if s["state"] == "stale":
            lines.append(f"  refresh:   nav index {self.root}")
        return "\n".join(lines)


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
    return StatusReport(str(root), {**index.state(), **index.vector_store_state()}, index.manifest)
