"""The `nav` command line, on click. Each command parses its arguments and makes one call into a stage.

Errors: every nav failure is a navigator.core.errors.NavError; `main` is the one place that turns it into
"Error: ..." on stderr and its class's exit code. click's own usage errors (unknown option, missing
argument, bad number) exit 2. Nothing heavy is imported at module level, so `nav --help` and shell
completion are instant.

Adding a command: decorate a function with `@cli.command(...)` below; keep its body to one call into a stage.
Shell completion (bash, zsh, fish) comes from click: `eval "$(_NAV_COMPLETE=bash_source nav)"`.
"""
from __future__ import annotations

import json
import os
import sys

import click

from navigator.context.build import DEFAULT_BUDGET  # light: config and errors only

EPILOG = """\b
exit codes: 0 ok, 1 error, 2 bad usage or input, 3 index missing/corrupt/locked/read-only/mismatched,
4 model cannot be loaded, 5 answer key inside the indexed tree, 6 LLM API failed, 7 no ANTHROPIC_API_KEY,
8 chroma server (NAV_CHROMA_URL) unreachable or failed, 141 output reader left early
shell completion: eval "$(_NAV_COMPLETE=bash_source nav)"  (zsh_source, fish_source for other shells)"""

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 110}


def _print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def _complete_retriever(ctx, param, incomplete: str) -> list[str]:
    """Registered retriever names (built-ins and plugins); the registry imports no retriever to list them."""
    from retrievers.registry import registered_names
    return [name for name in registered_names() if name.startswith(incomplete)]


class RepoPath(click.Path):
    """A repository directory: completed as a directory by the shell, checked by nav (resolve_repo), so a
    missing path or a file gets nav's own message and exit code."""

    def __init__(self) -> None:
        super().__init__(file_okay=False)

    def convert(self, value, param, ctx):
        return value


# Options several commands share, spelled once.
def repo_option(fn):
    return click.option("--repo", default=".", show_default=True, type=RepoPath(),
                        help="repository root")(fn)


def retriever_option(fn):
    return click.option("--retriever", default=None, shell_complete=_complete_retriever,
                        help="graph | hybrid | vector | bm25 | rerank | plugin (default: $RETRIEVER or graph)")(fn)


def policy_option(help_text: str):
    return click.option("--policy", default=None, type=click.Path(dir_okay=False), help=help_text)


def _set_chroma_url(ctx, param, value):
    # The flag overrides the variable; every stage reads it through Config.from_env.
    if value:
        os.environ["NAV_CHROMA_URL"] = value


def chroma_url_option(fn):
    return click.option("--chroma-url", metavar="URL", default=None, expose_value=False, callback=_set_chroma_url,
                        help="http://host:port of a chroma server holding the vectors "
                             "(default: $NAV_CHROMA_URL, else the embedded store)")(fn)


def _allow_secrets(ctx: click.Context, _param, value: bool) -> None:
    """--allow-secrets means NAV_ALLOW_SECRETS=1 for this run; either way it is said on every run."""
    import os
    from navigator.index.secrets import ALLOW_ENV, ALLOWED_WARNING, secrets_allowed
    if value:
        os.environ[ALLOW_ENV] = "1"
    if secrets_allowed():
        click.echo(f"warning: {ALLOWED_WARNING}", err=True)


def allow_secrets_option(fn):
    return click.option("--allow-secrets", is_flag=True, expose_value=False, callback=_allow_secrets,
                        is_eager=True, help="index and serve secret-shaped files (.env, keys) and secret values as "
                                            "they are (default: skipped and redacted; $NAV_ALLOW_SECRETS=1)")(fn)


def refresh_option(fn):
    return click.option("--refresh", is_flag=True,
                        help="first bring files changed since the build into the index (at most "
                             "$NAV_REFRESH_MAX_FILES, default 50; embedded in the background)")(fn)


def _refresh_first(repo: str) -> None:
    from navigator.index.refresh import refresh_repository
    result = refresh_repository(repo)
    note = result.note() if result is not None else None
    if note:
        click.echo(f"note: {note}", err=True)


def json_option(help_text: str = "print the result as JSON"):
    return click.option("--json", "as_json", is_flag=True, help=help_text)


def _version(ctx: click.Context, _param, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from navigator.core.version import __version__
        click.echo(f"nav {__version__}")
        ctx.exit(0)


@click.group(context_settings=CONTEXT_SETTINGS, epilog=EPILOG, no_args_is_help=True)
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_version,
              help="print nav's version and exit (`nav version --json` says more)")
def cli() -> None:
    """Index a local repository and find the code that answers a question."""


@cli.command("version")
@json_option("print the versions as JSON")
def cmd_version(as_json: bool) -> int:
    """nav's version, the embedder it would use, the index schema and chunker versions, Python."""
    from navigator.core.config import Config
    from navigator.index.versions import versions
    facts = versions(Config.from_env())
    if as_json:
        _print_json(facts)
    else:
        for key, value in facts.items():
            print(f"{key:<12} {', '.join(value) if isinstance(value, list) else value}")
    return 0


@cli.command("index")
@chroma_url_option
@allow_secrets_option
@click.argument("path", default=".", required=False, type=RepoPath())
@click.option("--skip", multiple=True, metavar="NAMES",
              help="comma-separated names or globs to leave out, gitignore syntax (repeatable), e.g. --skip repos,data")
@click.option("--rebuild", is_flag=True, help="discard the index and build it anew (re-embeds everything)")
@click.option("--lexical-only", is_flag=True,
              help="stop after files, chunks, graph and BM25 are committed; a later nav index embeds the rest")
@json_option("print the summary as JSON")
def cmd_index(path: str, skip: tuple[str, ...], rebuild: bool, lexical_only: bool, as_json: bool) -> int:
    """Build or update the index of PATH (default: .), incrementally."""
    from navigator.core.config import Config
    from navigator.index.indexer import build_index
    from navigator.index.nav_index import resolve_repo
    summary = build_index(resolve_repo(path), Config.from_env(), skip=list(skip) or None, rebuild=rebuild,
                          embed_vectors=not lexical_only)
    _print_json(summary.to_json()) if as_json else print(summary.render())
    return 0


@cli.command("status")
@chroma_url_option
@click.argument("path", default=".", required=False, type=RepoPath())
@json_option()
def cmd_status(path: str, as_json: bool) -> int:
    """What the index of PATH (default: .) holds, how stale it is."""
    from navigator.index.status import status
    report = status(path)
    _print_json(report.to_json()) if as_json else print(report.render())
    return 0


@cli.command("search")
@chroma_url_option
@click.argument("query", required=False)
@click.option("--query-file", default=None, metavar="FILE", help="read the query from FILE (a bug report, a log)")
@click.option("--level", type=click.Choice(["chunk", "file"]), default="chunk", show_default=True,
              help="rank chunks or files")
@click.option("-k", "k", type=int, default=10, show_default=True, help="number of results")
@repo_option
@retriever_option
@click.option("--explain", is_flag=True, help="show which heads found each result, at which rank, and how they were weighed")
@click.option("--full", is_flag=True, help="print whole chunks instead of previews")
@refresh_option
@json_option("machine-readable output (see README)")
def cmd_search(query: str | None, query_file: str | None, level: str, k: int, repo: str, retriever: str | None,
               explain: bool, full: bool, refresh: bool, as_json: bool) -> int:
    """Ranked chunks (or files, --level file) for QUERY; QUERY - reads it from standard input."""
    from navigator.context.search import read_query, search
    if query is None and query_file is None:   # click's own wording and usage line, as for any missing argument
        raise click.UsageError("Missing argument 'QUERY' (or --query-file FILE; - reads standard input).")
    if refresh:
        _refresh_first(repo)
    response = search(repo, read_query(query, query_file), k, retriever, level=level)
    _print_json(response.to_json()) if as_json else print(response.render(explain=explain, full=full))
    return 0


@cli.command("context")
@chroma_url_option
@click.argument("question", required=False)
@click.option("--query-file", default=None, metavar="FILE", help="read the question from FILE (a bug report, a log)")
@click.option("--budget", type=int, default=DEFAULT_BUDGET, show_default=True, help="token budget")
@repo_option
@retriever_option
@policy_option("a selection policy file (default: $NAV_POLICY or the shipped one)")
@refresh_option
@json_option("the envelope as JSON (keys documented in navigator/context/envelope.py)")
def cmd_context(question: str | None, query_file: str | None, budget: int, repo: str, retriever: str | None,
                policy: str | None, refresh: bool, as_json: bool) -> int:
    """A budgeted, self-describing selection of code for QUESTION; QUESTION - reads it from standard input."""
    from navigator.context.build import build_context
    from navigator.context.search import read_query
    if question is None and query_file is None:
        raise click.UsageError("Missing argument 'QUESTION' (or --query-file FILE; - reads standard input).")
    if refresh:
        _refresh_first(repo)
    envelope = build_context(read_query(question, query_file), budget, repo, retriever, policy=policy)
    _print_json(envelope.to_json()) if as_json else print(envelope.render_text())
    return 0


@cli.command("ask")
@click.argument("question")
@allow_secrets_option
@repo_option
@retriever_option
@click.option("--model", default=None, help="default $NAV_AGENT_MODEL or claude-sonnet-5-5")
@click.option("--max-steps", type=int, default=None, help="default $NAV_AGENT_MAX_STEPS or 12")
@click.option("--max-tokens", type=int, default=None, help="per model call; default $NAV_AGENT_MAX_TOKENS or 4096")
@click.option("--budget", type=int, default=None, help="tokens per search_code result; default $NAV_AGENT_BUDGET or 4000")
@click.option("-v", "--verbose", is_flag=True, help="print each step to stderr")
def cmd_ask(question: str, repo: str, retriever: str | None, model: str | None, max_steps: int | None,
            max_tokens: int | None, budget: int | None, verbose: bool) -> int:
    """Answer QUESTION with an agent that searches, reads and greps.

    The agent runs on the Anthropic Messages API (ANTHROPIC_API_KEY); without a key it prints the
    budgeted context for QUESTION and exits 7."""
    from agent_loop.ask import ask
    from navigator.context.build import build_context
    from navigator.core.errors import MissingAPIKeyError

    def show(event) -> None:
        if verbose:
            sys.stderr.write(f"[step {event.step}] {event.kind}: {event.detail}\n")

    try:
        answer = ask(question, repo, retriever_name=retriever, model=model, max_steps=max_steps,
                     max_tokens=max_tokens, budget=budget, on_event=show)
    except MissingAPIKeyError as exc:
        # Still useful without a model: print the budgeted context the agent would have started from.
        sys.stderr.write(exc.format() + "\n  Printing the budgeted context for the question instead.\n")
        from agent_loop.settings import resolve_settings
        agent_budget = resolve_settings(budget=budget).budget  # the agent's own search budget
        print(build_context(question, agent_budget, repo, retriever).render_text())
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


@cli.command("eval")
@click.option("--queries", required=True, type=click.Path(dir_okay=False), help="JSONL query set")
@click.option("--repo", default=".", show_default=True, type=RepoPath(), help="indexed repository root")
@click.option("--retriever", multiple=True, shell_complete=_complete_retriever,
              help="retriever to measure (repeatable: laid side by side); default $RETRIEVER or graph")
@click.option("--k", "k", default="1,3,5,10", show_default=True, help="cut-offs")
@click.option("--level", type=click.Choice(["chunk", "file"]), default="chunk", show_default=True)
@click.option("--file-rank", type=click.Choice(["evidence", "first"]), default=None,
              help="with --level file: evidence = nav's file ranking (default), first = a file at its first "
                   "chunk's rank (SWE-bench convention)")
@click.option("--depth", type=int, default=None, help="ranking depth kept per query (default max k)")
@click.option("--heads", is_flag=True, help="add a column group per head (vector, bm25) beside the fused result")
@json_option("print every query's ranks as JSON (input to nav compare)")
@click.option("--out", default=None, type=click.Path(dir_okay=False), help="also save the JSON run to this file")
@click.option("--budget", default=None, metavar="N[,N...]",
              help="score what `nav context` returns at these token budgets, beside plain top-5")
@click.option("--html", "html_file", default=None, type=click.Path(dir_okay=False),
              help="also write the run as one self-contained HTML page (charts need the extra nav[report])")
def cmd_eval(queries: str, repo: str, retriever: tuple[str, ...], k: str, level: str, file_rank: str | None,
             depth: int | None,
             heads: bool, as_json: bool, out: str | None, budget: str | None, html_file: str | None) -> int:
    """Measure retrieval on a query set (shared/eval-format.md)."""
    from navigator.evaluation.commands import evaluate, evaluate_budgets, write_html
    if budget:
        if html_file:
            from navigator.core.errors import UsageError
            raise UsageError("--html draws the retriever runs of nav eval; it does not apply with --budget")
        _emit(evaluate_budgets(queries, repo, retriever[0] if retriever else None, budget), as_json, out)
        return 0
    output = evaluate(queries, repo, list(retriever) or None, k=k, level=level, heads=heads, depth=depth,
                      file_rank=file_rank)
    if html_file:
        write_html(output, html_file, queries)
    _emit(output, as_json, out)
    return 0


@cli.command("ceiling")
@click.option("--queries", required=True, type=click.Path(dir_okay=False), help="JSONL query set")
@repo_option
@retriever_option
@click.option("--depth", type=int, default=200, show_default=True, help="ranking depth searched for each item")
@click.option("--pools", default="5,10,20,50,100", show_default=True, help="candidate pool sizes for the ceiling")
@json_option()
@click.option("--out", default=None, type=click.Path(dir_okay=False), help="also save the JSON run to this file")
def cmd_ceiling(queries: str, repo: str, retriever: str | None, depth: int, pools: str, as_json: bool,
                out: str | None) -> int:
    """Where expected chunks rank: what a perfect reranker could reach."""
    from navigator.evaluation.commands import ceiling
    _emit(ceiling(queries, repo, retriever, depth=depth, pools=pools), as_json, out)
    return 0


@cli.command("compare")
@click.argument("a")
@click.argument("b")
@click.option("--k", "k", type=int, default=5, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--queries", default=None, type=click.Path(dir_okay=False),
              help="query set, when A or B are retriever names")
@repo_option
@json_option()
def cmd_compare(a: str, b: str, k: int, seed: int, queries: str | None, repo: str, as_json: bool) -> int:
    """Pair two runs query by query: gained, lost, bootstrap CI. A and B are saved runs (nav eval --json)
    or retriever names."""
    from navigator.evaluation.commands import compare
    _emit(compare(a, b, k=k, seed=seed, queries_path=queries, repo=repo), as_json)
    return 0


@cli.command("tune", context_settings={"allow_extra_args": True})
@click.option("--queries", required=True, type=click.Path(dir_okay=False), help="JSONL query set (split into dev and holdout)")
@repo_option
@click.option("--trials", type=int, default=20, show_default=True)
@click.option("--holdout", type=float, default=0.25, show_default=True, help="share of the queries held out")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--worker", default="claude", show_default=True, metavar="claude | patches DIR",
              help="who proposes edits: a Claude agent (needs ANTHROPIC_API_KEY) or a folder of candidate files")
@click.option("--model", default=None, help="the worker's model (default $NAV_AGENT_MODEL)")
@click.option("--budget", type=int, default=DEFAULT_BUDGET, show_default=True, help="the token budget the policy is tuned for")
@retriever_option
@policy_option("the starting policy file (default: the shipped one)")
@click.option("--out", default=None, type=RepoPath(), help="run folder (default <index>/tune/<time>)")
@click.pass_context
def cmd_tune(ctx: click.Context, queries: str, repo: str, trials: int, holdout: float, seed: int, worker: str,
             model: str | None, budget: int, retriever: str | None, policy: str | None, out: str | None) -> int:
    """Tune the selection policy on a query set, trial by trial.

    The worker proposes edits of the policy file; the supervisor keeps or discards each on a dev split and
    checks the winner on a held-out split."""
    from navigator.tuning.run import make_worker, render_summary, run_tune

    def show(entry) -> None:
        sys.stderr.write(f"[trial {entry['trial']}] {entry['decision']}: {entry['reason']}\n")

    # `--worker patches DIR`: DIR arrives as the command's extra argument; make_worker checks the whole spec.
    result = run_tune(queries, repo, make_worker([worker, *ctx.args], model=model), trials=trials,
                      holdout_share=holdout, seed=seed, budget=budget, retriever=retriever, policy=policy,
                      out_dir=out, on_trial=show)
    print(render_summary(result))
    return 0


@cli.command("mcp")
@repo_option
@allow_secrets_option
def cmd_mcp(repo: str) -> int:
    """Serve the repository to coding agents over MCP (stdio).

    Tools: search, context, read_span, find_definition, find_references, symbol_neighbours, index_status,
    reindex. The process keeps the index open between
    calls; configure it in an MCP client as the command `nav mcp --repo /path/to/repo` (see README)."""
    from navigator.frontends.mcp_server import serve
    return serve(repo)


@cli.command("cost")
@click.argument("question", required=False)
@click.option("--queries", default=None, type=click.Path(dir_okay=False),
              help="a JSONL query set (shared/eval-format.md): adds hit/coverage and routing")
@repo_option
@click.option("--model", "model", multiple=True, metavar="NAME[,NAME...]",
              help="models from the price table (repeatable; default: all; the first one is routed for)")
@click.option("--turns", type=int, default=10, show_default=True, help="turns of the multi-turn session")
@click.option("--budget", type=int, default=DEFAULT_BUDGET, show_default=True, help="nav context's token budget")
@retriever_option
@click.option("--prices", default=None, metavar="FILE", type=click.Path(dir_okay=False),
              help="price table (TOML); default $NAV_PRICES or the shipped navigator/evaluation/data/prices.toml")
@json_option()
@click.option("--out", default=None, type=click.Path(dir_okay=False), help="also save the JSON report to this file")
def cmd_cost(question: str | None, queries: str | None, repo: str, model: tuple[str, ...], turns: int, budget: int,
             retriever: str | None, prices: str | None, as_json: bool, out: str | None) -> int:
    """Tokens and price: pasting the repository into a long context against nav's budgeted context, for
    one turn and a multi-turn session, with hit/coverage and routing per category when --queries is given."""
    from navigator.evaluation.cost import cost_report
    models = [m.strip() for value in model for m in value.split(",") if m.strip()]
    report = cost_report(repo, question=question, queries_path=queries, models=models or None, turns=turns,
                         budget=budget, retriever=retriever, prices=prices)
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            json.dump(report.to_json(), fh, indent=1, ensure_ascii=False)
    _print_json(report.to_json()) if as_json else print(report.render())
    return 0


@cli.group("models")
def cmd_models() -> None:
    """Models nav can use: list what is on disk, pull a named one (the only download nav makes)."""


@cmd_models.command("list")
@json_option()
def cmd_models_list(as_json: bool) -> int:
    """The embedders nav ships (NAV_EMBEDDER) and the models in the local Hugging Face cache."""
    from navigator.index.models import local_models
    found = local_models()
    if as_json:
        _print_json(found)
    else:
        for model in found:
            size = f"  {model['bytes'] / 1e6:.1f} MB" if model.get("bytes") else ""
            chosen = f"  NAV_EMBEDDER={model['embedder']}" if model.get("embedder") else ""
            identity = f"  [{model['identity']}]" if model.get("identity") else ""
            print(f"{model['name']}  ({model['where']}){size}{chosen}{identity}")
    return 0


@cmd_models.command("pull")
@click.argument("name")
@click.option("--yes", is_flag=True, help="download without asking (the size and place are still printed)")
def cmd_models_pull(name: str, yes: bool) -> int:
    """Download NAME (an embedder or cross-encoder on the Hugging Face Hub) into the local cache, after
    saying what and how much; then use it with NAV_EMBED_MODEL=NAME or NAV_RERANK_MODEL=NAME, offline."""
    from navigator.index.models import pull
    path = pull(name, yes=yes)
    print(f"{name}: {path}")
    return 0


def report_error(exc) -> int:
    """The one translation of a NavError into what the user sees: message and hint on stderr, the exit code
    of its class (navigator.core.errors)."""
    from navigator.core.errors import UsageError
    sys.stderr.write(exc.format() + "\n")
    if isinstance(exc, UsageError):
        sys.stderr.write("  (see `nav --help`)\n")
    return exc.exit_code


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout replaced by an object without a descriptor
        pass


def main(argv: list[str] | None = None, *, standalone: bool = True) -> int:
    """Entry point; returns the exit code. With standalone=False (tests), NavErrors propagate instead of
    being printed."""
    import sqlite3
    from navigator.core.errors import NavError
    try:
        try:
            code = cli.main(args=argv, prog_name="nav", standalone_mode=False)
            sys.stdout.flush()   # here, not at exit: a reader that left is then a BrokenPipeError below
        except sqlite3.DatabaseError as exc:
            # nav.db failed where no stage expected it (damaged pages, a read-only folder): a typed error.
            from navigator.index.repair import database_error
            raise database_error(exc) from exc
    except NavError as exc:
        if not standalone:
            raise
        return report_error(exc)
    except BrokenPipeError:
        # `nav status | head -1`: the reader left. Python's recipe: point stdout at devnull so the flush at
        # exit cannot fail again, and exit as a process killed by SIGPIPE would (128 + 13).
        _silence_stdout()
        return 141
    except SystemExit:
        # click met the broken pipe first (inside the command): it wraps stdout to ignore it and exits 1.
        if type(sys.stdout).__name__ == "_PacifyFlushWrapper":
            _silence_stdout()
            return 141
        raise
    except click.ClickException as exc:   # bad usage found by click: message on stderr, exit 2
        exc.show()
        return exc.exit_code
    except click.Abort:                   # click's form of KeyboardInterrupt / EOF
        if not standalone:
            raise KeyboardInterrupt from None
        sys.stderr.write("Interrupted. The previous index is intact; rerun the command to finish.\n")
        return 130
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
