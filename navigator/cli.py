"""The `nav` command line. Each command parses its arguments and makes one call into a stage.

Errors: every nav failure is a navigator.errors.NavError; `main` prints it as "Error: ..." on stderr and
exits with its class's code. Nothing heavy is imported at module level, so `nav --help` is instant.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

EPILOG = """exit codes: 0 ok, 1 error, 2 bad usage or input, 3 index missing/corrupt/locked/mismatched,
4 model cannot be loaded, 5 answer key inside the indexed tree, 6 LLM API failed, 7 no ANTHROPIC_API_KEY"""


def _print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def cmd_index(args) -> int:
    from navigator.config import Config
    from navigator.index import resolve_repo
    from navigator.indexer import build_index
    summary = build_index(resolve_repo(args.path), Config.from_env(), skip=args.skip, rebuild=args.rebuild)
    _print_json(summary.to_json()) if args.json else print(summary.render())
    return 0


def cmd_status(args) -> int:
    from navigator.status import status
    report = status(args.path)
    _print_json(report.to_json()) if args.json else print(report.render())
    return 0


def cmd_search(args) -> int:
    from navigator.search import search
    response = search(args.repo, args.query, args.k, args.retriever)
    if args.json:
        _print_json(response.to_json())
    else:
        print(response.render(explain=args.explain, full=args.full))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nav", description="Index a local repository and find the code that answers a question.",
                                     epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("index", help="build or update the index of a repository (incremental)")
    p.add_argument("path", nargs="?", default=".", help="repository root (default: .)")
    p.add_argument("--skip", action="append", default=None, metavar="NAMES",
                   help="comma-separated names or globs to leave out, gitignore syntax (repeatable), e.g. --skip repos,data")
    p.add_argument("--rebuild", action="store_true", help="discard the index and build it anew (re-embeds everything)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("status", help="what the index holds and how stale it is")
    p.add_argument("path", nargs="?", default=".", help="repository root (default: .)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("search", help="ranked chunks for a query")
    p.add_argument("query")
    p.add_argument("-k", type=int, default=10, help="number of results (default 10)")
    p.add_argument("--repo", default=".", help="repository root (default: .)")
    p.add_argument("--retriever", default=None, help="vector | bm25 | hybrid | rerank | plugin (default: $RETRIEVER or hybrid)")
    p.add_argument("--explain", action="store_true", help="show which heads found each result, at which rank")
    p.add_argument("--full", action="store_true", help="print whole chunks instead of previews")
    p.add_argument("--json", action="store_true", help="machine-readable output (see README)")
    p.set_defaults(func=cmd_search)
    return parser


def main(argv: list[str] | None = None, *, standalone: bool = True) -> int:
    """Entry point. With standalone=False (tests), NavErrors propagate instead of being printed."""
    from navigator.errors import NavError, UsageError
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except NavError as exc:
        if not standalone:
            raise
        sys.stderr.write(exc.format() + "\n")
        if isinstance(exc, UsageError):
            sys.stderr.write("  (see `nav --help`)\n")
        return exc.exit_code
    except KeyboardInterrupt:
        if not standalone:
            raise
        sys.stderr.write("Interrupted. The previous index is intact; rerun the command to finish.\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
