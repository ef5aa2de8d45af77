"""The `nav` command line. Each command parses its arguments and makes one call into a stage.

Errors: every nav failure is a navigator.core.errors.NavError; `main` prints it as "Error: ..." on stderr and
exits with its class's code. Nothing heavy is imported at module level, so `nav --help` is instant.
"""
from __future__ import annotations

import argparse
import json
import sys

EPILOG = """exit codes: 0 ok, 1 error, 2 bad usage or input, 3 index missing/corrupt/locked/mismatched,
4 model cannot be loaded, 5 answer key inside the indexed tree, 6 LLM API failed, 7 no ANTHROPIC_API_KEY"""


def _print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def cmd_index(args) -> int:
    from navigator.core.config import Config
    from navigator.index.nav_index import resolve_repo
    from navigator.index.indexer import build_index
    summary = build_index(resolve_repo(args.path), Config.from_env(), skip=args.skip, rebuild=args.rebuild)
    _print_json(summary.to_json()) if args.json else print(summary.render())
    return 0


def cmd_status(args) -> int:
    from navigator.index.status import status
    report = status(args.path)
    _print_json(report.to_json()) if args.json else print(report.render())
    return 0


def cmd_search(args) -> int:
    from navigator.context.search import read_query, search
    response = search(args.repo, read_query(args.query, args.query_file), args.k, args.retriever, level=args.level)
    if args.json:
        _print_json(response.to_json())
    else:
        print(response.render(explain=args.explain, full=args.full))
    return 0


def cmd_context(args) -> int:
    from navigator.context.build import build_context
    from navigator.context.search import read_query
    envelope = build_context(read_query(args.question, args.query_file), args.budget, args.repo, args.retriever,
                             policy=args.policy)
    _print_json(envelope.to_json()) if args.json else print(envelope.render_text())
    return 0


def cmd_ask(args) -> int:
    from agent_loop.ask import ask
    from navigator.context.build import build_context
    from navigator.core.errors import MissingAPIKeyError

    def show(event) -> None:
        if args.verbose:
            sys.stderr.write(f"[step {event.step}] {event.kind}: {event.detail}\n")

    try:
        answer = ask(args.question, args.repo, retriever_name=args.retriever, model=args.model,
                     max_steps=args.max_steps, max_tokens=args.max_tokens, budget=args.budget, on_event=show)
    except MissingAPIKeyError as exc:
        # Still useful without a model: print the budgeted context the agent would have started from.
        sys.stderr.write(exc.format() + "\n  Printing the budgeted context for the question instead.\n")
        from agent_loop.settings import resolve_settings
        budget = resolve_settings(budget=args.budget).budget  # the agent's own search budget
        print(build_context(args.question, budget, args.repo, args.retriever).render_text())
        return exc.exit_code
    print(answer.text)
    if answer.truncated:
        print(f"\n[answer truncated: {answer.stopped_reason}]")
    print(f"\n--\nfiles used: {', '.join(answer.files_used) or 'none'}\n"
          f"steps: {answer.steps}; tokens in/out: {answer.input_tokens}/{answer.output_tokens}; stop: {answer.stopped_reason}")
    return 0


def _emit(output, as_json: bool, out_file: str | None = None) -> None:
    if out_file:
        with open(out_file, "w", encoding="utf-8") as fh:
            json.dump(output.payload, fh, indent=1, ensure_ascii=False)
    _print_json(output.payload) if as_json else print(output.text)


def cmd_eval(args) -> int:
    from navigator.evaluation.commands import evaluate, evaluate_budgets
    if args.budget:
        retriever = args.retriever[0] if args.retriever else None
        _emit(evaluate_budgets(args.queries, args.repo, retriever, args.budget), args.json, args.out)
        return 0
    _emit(evaluate(args.queries, args.repo, args.retriever, k=args.k, level=args.level, heads=args.heads,
                   depth=args.depth, file_rank=args.file_rank), args.json, args.out)
    return 0


def cmd_ceiling(args) -> int:
    from navigator.evaluation.commands import ceiling
    _emit(ceiling(args.queries, args.repo, args.retriever, depth=args.depth, pools=args.pools), args.json, args.out)
    return 0


def cmd_compare(args) -> int:
    from navigator.evaluation.commands import compare
    _emit(compare(args.a, args.b, k=args.k, seed=args.seed, queries_path=args.queries, repo=args.repo), args.json)
    return 0


def cmd_tune(args) -> int:
    from navigator.tuning.run import make_worker, render_summary, run_tune

    def show(entry) -> None:
        sys.stderr.write(f"[trial {entry['trial']}] {entry['decision']}: {entry['reason']}\n")

    result = run_tune(args.queries, args.repo, make_worker(args.worker, model=args.model), trials=args.trials,
                      holdout_share=args.holdout, seed=args.seed, budget=args.budget, retriever=args.retriever,
                      policy=args.policy, out_dir=args.out, on_trial=show)
    print(render_summary(result))
    return 0


def build_parser() -> argparse.ArgumentParser:
    from navigator.context.build import DEFAULT_BUDGET  # light: config and errors only
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
    p.add_argument("query", nargs="?", help="the query; - reads it from standard input")
    p.add_argument("--query-file", default=None, metavar="FILE", help="read the query from FILE (a bug report, a log)")
    p.add_argument("--level", choices=("chunk", "file"), default="chunk", help="rank chunks (default) or files")
    p.add_argument("-k", type=int, default=10, help="number of results (default 10)")
    p.add_argument("--repo", default=".", help="repository root (default: .)")
    p.add_argument("--retriever", default=None, help="vector | bm25 | hybrid | rerank | plugin (default: $RETRIEVER or hybrid)")
    p.add_argument("--explain", action="store_true", help="show which heads found each result, at which rank")
    p.add_argument("--full", action="store_true", help="print whole chunks instead of previews")
    p.add_argument("--json", action="store_true", help="machine-readable output (see README)")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("context", help="a budgeted, self-describing selection of code for a question")
    p.add_argument("question", nargs="?", help="the question; - reads it from standard input")
    p.add_argument("--query-file", default=None, metavar="FILE", help="read the question from FILE (a bug report, a log)")
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help=f"token budget (default {DEFAULT_BUDGET})")
    p.add_argument("--repo", default=".")
    p.add_argument("--retriever", default=None)
    p.add_argument("--policy", default=None, help="a selection policy file (default: $NAV_POLICY or the shipped one)")
    p.add_argument("--json", action="store_true", help="the envelope as JSON (keys documented in navigator/context/envelope.py)")
    p.set_defaults(func=cmd_context)

    p = sub.add_parser("ask", help="answer a question with an agent (Anthropic API) that searches, reads and greps")
    p.add_argument("question")
    p.add_argument("--repo", default=".")
    p.add_argument("--retriever", default=None)
    p.add_argument("--model", default=None, help="default $NAV_AGENT_MODEL or claude-sonnet-5-5")
    p.add_argument("--max-steps", type=int, default=None, help="default $NAV_AGENT_MAX_STEPS or 12")
    p.add_argument("--max-tokens", type=int, default=None, help="per model call; default $NAV_AGENT_MAX_TOKENS or 4096")
    p.add_argument("--budget", type=int, default=None, help="tokens per search_code result; default $NAV_AGENT_BUDGET or 4000")
    p.add_argument("-v", "--verbose", action="store_true", help="print each step to stderr")
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("eval", help="measure retrieval on a query set (shared/eval-format.md)")
    p.add_argument("--queries", required=True, help="JSONL query set")
    p.add_argument("--repo", default=".", help="indexed repository root (default: .)")
    p.add_argument("--retriever", action="append", default=None,
                   help="retriever to measure (repeatable: laid side by side); default $RETRIEVER or hybrid")
    p.add_argument("--k", default="1,3,5,10", help="cut-offs (default 1,3,5,10)")
    p.add_argument("--level", choices=("chunk", "file"), default="chunk")
    p.add_argument("--file-rank", choices=("evidence", "first"), default=None,
                   help="with --level file: evidence = nav's file ranking (default), first = a file at its first "
                        "chunk's rank (SWE-bench convention)")
    p.add_argument("--depth", type=int, default=None, help="ranking depth kept per query (default max k)")
    p.add_argument("--heads", action="store_true", help="add a column group per head (vector, bm25) beside the fused result")
    p.add_argument("--json", action="store_true", help="print every query's ranks as JSON (input to nav compare)")
    p.add_argument("--out", default=None, help="also save the JSON run to this file")
    p.add_argument("--budget", default=None, metavar="N[,N...]",
                   help="score what `nav context` returns at these token budgets, beside plain top-5")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("ceiling", help="where the expected chunks rank: what a perfect reranker could reach")
    p.add_argument("--queries", required=True)
    p.add_argument("--repo", default=".")
    p.add_argument("--retriever", default=None)
    p.add_argument("--depth", type=int, default=200, help="ranking depth searched for each item (default 200)")
    p.add_argument("--pools", default="5,10,20,50,100", help="candidate pool sizes for the ceiling")
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", default=None)
    p.set_defaults(func=cmd_ceiling)

    p = sub.add_parser("compare", help="pair two runs query by query: gained, lost, bootstrap CI")
    p.add_argument("a", help="saved run (nav eval --json) or a retriever name")
    p.add_argument("b", help="saved run (nav eval --json) or a retriever name")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--queries", default=None, help="query set, when A or B are retriever names")
    p.add_argument("--repo", default=".")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("tune", help="improve the selection policy file: a worker proposes, a supervisor keeps or discards")
    p.add_argument("--queries", required=True, help="JSONL query set (split into dev and holdout)")
    p.add_argument("--repo", default=".")
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--holdout", type=float, default=0.25, help="share of the queries held out (default 0.25)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--worker", nargs="+", default=["claude"], metavar="claude | patches DIR",
                   help="who proposes edits: a Claude agent (needs ANTHROPIC_API_KEY) or a folder of candidate files")
    p.add_argument("--model", default=None, help="the worker's model (default $NAV_AGENT_MODEL)")
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="the token budget the policy is tuned for")
    p.add_argument("--retriever", default=None)
    p.add_argument("--policy", default=None, help="the starting policy file (default: the shipped one)")
    p.add_argument("--out", default=None, help="run folder (default <index>/tune/<time>)")
    p.set_defaults(func=cmd_tune)
    return parser


def main(argv: list[str] | None = None, *, standalone: bool = True) -> int:
    """Entry point. With standalone=False (tests), NavErrors propagate instead of being printed."""
    from navigator.core.errors import NavError, UsageError
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
