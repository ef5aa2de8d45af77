"""Stage 1, walk: the files of the tree, minus what the ignore files, skip rules and size limit leave out."""
from __future__ import annotations

from navigator.index.secrets import secrets_allowed
from navigator.index.stages.run import IndexRun
from navigator.index.walk import walk_tree


def walk(run: IndexRun, skip: list[str] | None):
    """The walked tree; the skip rules given now, else the ones the previous run recorded."""
    run.skip_rules = list(skip) if skip is not None else list(run.manifest.get("skip") or [])
    walked = walk_tree(run.repo_root, skip=run.skip_rules, max_file_bytes=run.config.max_file_bytes,
                       extra_skip_dirs=(run.index_dir,), allow_secrets=secrets_allowed(run.config.extra))
    run.skipped.update(walked.skipped)
    return walked
