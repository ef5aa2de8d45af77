"""The symbol graph: definitions, references and containment extracted at index time, kept in step with the
chunks incrementally, resolved across files at query time; the graph retriever and the graph tools of `nav ask`."""
from __future__ import annotations

import gc
import sqlite3
from pathlib import Path

import pytest

from navigator.core.config import Config
from navigator.index import store
from navigator.index.graph import GRAPH_META_KEY, GRAPH_VERSION, SymbolGraph
from navigator.index.indexer import build_index
from navigator.index.nav_index import NavIndex
from tests.repo_factory import write

SHOP = {
    "shop/__init__.py": '"""The shop package."""\nfrom .cart import Cart\n',
    "shop/pricing.py": (
        '"""Prices and taxes."""\n'
        "VAT_RATE = 0.2\n"
        "ROUNDING_DIGITS = 2\n"
        "\n\n"
        "def price_with_vat(net):\n"
        "    return round(net * (1 + VAT_RATE), ROUNDING_DIGITS)\n"
    ),
    "shop/base.py": (
        "class Container:\n"
        "    def size(self):\n"
        "        return len(self.items)\n"
    ),
    "shop/cart.py": (
        '"""The shopping cart."""\n'
        "from shop.pricing import price_with_vat\n"
        "from . import base\n"
        "\n"
        "MAX_ITEMS = 50\n"
        "\n\n"
        "class Cart(base.Container):\n"
        '    """Items someone means to buy."""\n'
        "\n"
        "    def __init__(self, limit=MAX_ITEMS):\n"
        "        self.items = []\n"
        "        self.limit = limit\n"
        "\n"
        "    def add(self, item):\n"
        "        if self.size() >= self.limit:\n"
        "            raise ValueError('full')\n"
        "        self.items.append(item)\n"
        "\n"
        "    def total(self):\n"
        "        return sum(price_with_vat(i) for i in self.items)\n"
    ),
    "checkout.py": (
        "from shop.cart import Cart\n"
        "\n\n"
        "def checkout(items):\n"
        "    cart = Cart()\n"
        "    for item in items:\n"
        "        cart.add(item)\n"
        "    return cart.total()\n"
    ),
}


def make_shop(root: Path) -> Path:
    for rel, text in SHOP.items():
        write(root, rel, text)
    return root


def index_of(root: Path) -> NavIndex:
    build_index(root, Config.from_env())
    return NavIndex.open(root)


def one(defs, qualname: str):
    """The one non-module definition with this qualified name (a module "checkout" and its function share it)."""
    found = [d for d in defs if d.qualname == qualname and d.kind != "module"]
    assert len(found) == 1, (qualname, defs)
    return found[0]


def graph_rows(root: Path, sql: str):
    conn = sqlite3.connect(root / ".nav" / "nav.db")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_definitions_containment_and_their_chunks(tmp_path, nav_env):
    root = make_shop(tmp_path / "repo")
    index = index_of(root)
    graph = SymbolGraph(index.conn)
    cart = one(graph.definitions("Cart"), "Cart")
    assert (cart.path, cart.kind, cart.parent) == ("shop/cart.py", "class", None)
    members = {d.qualname: d.kind for d in graph.members(cart)}
    assert members == {"Cart.__init__": "method", "Cart.add": "method", "Cart.total": "method"}
    module = graph.container(cart)
    assert module is not None and module.kind == "module" and module.qualname == "shop.cart"
    top = {d.qualname: d.kind for d in graph.members(module)}
    assert top == {"MAX_ITEMS": "constant", "Cart": "class"}
    assert one(graph.definitions("VAT_RATE"), "VAT_RATE").kind == "constant"
    # Every definition points at the chunk that holds its first line.
    for d in [cart, *graph.members(cart), *graph.definitions("price_with_vat")]:
        chunk = index.chunk_by_id(d.chunk_id)
        assert chunk.path == d.path and chunk.start_line <= d.start_line <= chunk.end_line
    assert graph.definitions("Cart.total")[0].qualname == "Cart.total"
    assert graph.definitions("shop.pricing")[0].kind == "module"


def test_references_resolve_across_files_through_self_and_to_base_classes(tmp_path, nav_env):
    root = make_shop(tmp_path / "repo")
    graph = SymbolGraph(index_of(root).conn)
    price = one(graph.definitions("price_with_vat"), "price_with_vat")
    # Cart.total calls it through `from shop.pricing import price_with_vat`: a cross-file caller.
    assert [(d.path, d.qualname) for d in graph.callers(price)] == [("shop/cart.py", "Cart.total")]
    # What price_with_vat reads: the two constants of its own module.
    used = {(t.qualname, r.kind) for r, t in graph.callees(price)}
    assert used == {("VAT_RATE", "name"), ("ROUNDING_DIGITS", "name")}
    # self.size() resolves to the base class's method only by name (it is not Cart's); self.add to Cart.add.
    add = one(graph.definitions("add"), "Cart.add")
    callees = {(t.path, t.qualname) for r, t in graph.callees(add) if r.kind == "call"}
    assert ("shop/base.py", "Container.size") in callees
    checkout = one(graph.definitions("checkout"), "checkout")
    called = {(t.path, t.qualname) for r, t in graph.callees(checkout) if r.kind == "call"}
    assert ("shop/cart.py", "Cart") in called                      # through `from shop.cart import Cart`
    assert {("shop/cart.py", "Cart.add"), ("shop/cart.py", "Cart.total")} <= called   # cart.add: by name
    # The base class, through `from . import base` and `base.Container`.
    cart = one(graph.definitions("Cart"), "Cart")
    bases = [(t.path, t.qualname) for r, t in graph.callees(cart) if r.kind == "base"]
    assert bases == [("shop/base.py", "Container")]
    # The constructor's default reads MAX_ITEMS; Cart's users are found in another file.
    init = one(graph.definitions("__init__"), "Cart.__init__")
    assert {t.qualname for r, t in graph.callees(init)} == {"MAX_ITEMS"}
    assert {(r.path, r.scope) for r in graph.references_to(cart)} >= {("checkout.py", "checkout")}
    # Imports point at the repository's files; relative imports are made absolute.
    imports = {(p, n, t) for p, n, t in graph_rows(root, "SELECT path, name, target_path FROM graph_refs WHERE kind='import'")}
    assert ("shop/cart.py", "price_with_vat", "shop/pricing.py") in imports
    assert ("shop/cart.py", "base", "shop/base.py") in imports
    assert ("shop/__init__.py", "Cart", "shop/cart.py") in imports


def test_incremental_update_after_edit_and_delete(tmp_path, nav_env):
    root = make_shop(tmp_path / "repo")
    index_of(root)
    before = graph_rows(root, "SELECT path, qualname FROM graph_defs WHERE path='shop/pricing.py' ORDER BY qualname")
    untouched = graph_rows(root, "SELECT rowid, * FROM graph_defs WHERE path='shop/base.py'")
    write(root, "shop/pricing.py", SHOP["shop/pricing.py"].replace("price_with_vat", "gross_price")
          + "\n\ndef discount(net):\n    return net * 0.9\n")
    (root / "checkout.py").unlink()
    summary = build_index(root, Config.from_env())
    assert summary.files_changed == 1 and summary.files_deleted == 1
    after = {q for _, q in graph_rows(root, "SELECT path, qualname FROM graph_defs WHERE path='shop/pricing.py'")}
    assert ("shop/pricing.py", "price_with_vat") in before
    assert after == {"shop.pricing", "VAT_RATE", "ROUNDING_DIGITS", "gross_price", "discount"}
    assert not graph_rows(root, "SELECT 1 FROM graph_defs WHERE path='checkout.py'")
    assert not graph_rows(root, "SELECT 1 FROM graph_refs WHERE path='checkout.py'")
    # Only the changed file was re-extracted: the other files' rows are the same rows.
    assert graph_rows(root, "SELECT rowid, * FROM graph_defs WHERE path='shop/base.py'") == untouched
    # Every chunk id the graph names is a chunk of the current index.
    dangling = graph_rows(root, "SELECT COUNT(*) FROM graph_defs WHERE chunk_id NOT IN (SELECT id FROM chunks)")
    assert dangling == [(0,)]
    graph = SymbolGraph(NavIndex.open(root).conn)
    # The old name is gone, and Cart.total's call of it no longer resolves to anything.
    assert graph.definitions("price_with_vat") == []
    gross = one(graph.definitions("gross_price"), "gross_price")
    assert graph.callers(gross) == []
    # A file added later becomes the target of an import written earlier.
    write(root, "shop/__init__.py", SHOP["shop/__init__.py"] + "from .extras import gift\n")
    write(root, "shop/extras.py", "def gift():\n    return 'bow'\n")
    build_index(root, Config.from_env())
    assert ("shop/__init__.py", "shop/extras.py") in graph_rows(
        root, "SELECT path, target_path FROM graph_refs WHERE kind='import' AND name='gift'")


def test_an_index_from_before_the_graph_gets_one_on_its_next_run(tmp_path, nav_env):
    root = make_shop(tmp_path / "repo")
    build_index(root, Config.from_env())
    conn = sqlite3.connect(root / ".nav" / "nav.db")
    conn.executescript("DROP TABLE graph_defs; DROP TABLE graph_refs; DELETE FROM meta WHERE key='graph_version';"
                       "UPDATE meta SET value='1' WHERE key='schema_version';")
    conn.close()
    index = NavIndex.open(root)      # schema 1 is upgraded in place; its graph is empty until the next run
    assert store.get_meta(index.conn, "schema_version") == store.SCHEMA_VERSION
    assert not SymbolGraph(index.conn).available and SymbolGraph(index.conn).definitions("Cart") == []
    index.conn.close()
    summary = build_index(root, Config.from_env())
    assert summary.files_changed == 0          # nothing re-chunked: the graph comes from the stored chunks
    graph = SymbolGraph(NavIndex.open(root).conn)
    assert graph.available and store.get_meta(graph.conn, GRAPH_META_KEY) == GRAPH_VERSION
    assert one(graph.definitions("Cart"), "Cart").path == "shop/cart.py"


# ---------------------------------------------------------------------------------------- the retriever

FORMATTER = (
    '"""Layout of help pages."""\n'
    "from layout.defaults import DEFAULT_INDENT, MAX_WIDTH\n"
    "\n\n"
    "class ZebraFormatter:\n"
    '    """The zebrafish layout engine: zebrafish pages, zebrafish columns, zebrafish margins."""\n'
    "\n"
    "    widest = MAX_WIDTH\n"
    "\n"
    "    def __init__(self, indent=DEFAULT_INDENT, width=None):\n"
    "        self.indent = indent\n"
    "        self.width = width\n"
    "        self.buffer = []\n"
    "\n"
    + "".join(
        f"    def write_part_{n}(self, text):\n"
        f'        """Write part {n} of the page, padded and wrapped to the configured width."""\n'
        f"        self.buffer.append(' ' * self.indent + text[:self.width or {n} + 40])\n"
        "\n" for n in range(8))
)


def make_layout(root: Path) -> Path:
    from tests.repo_factory import make_repo
    make_repo(root, modules=4)
    write(root, "layout/__init__.py", '"""Layout."""\n')
    write(root, "layout/defaults.py", '"""Defaults."""\nDEFAULT_INDENT = 2\n\n\nMAX_WIDTH = 78\n')
    write(root, "layout/formatter.py", FORMATTER)
    return root


def test_a_class_hit_brings_its_constructor_and_the_constants_it_reads(tmp_path, nav_env, monkeypatch):
    from retrievers.registry import get_retriever
    # The tiny test model's vectors are random: equal head weights keep BM25's evidence for the prose query
    # at full strength, so this test is about graph expansion, not about the fusion's prose rule (0010).
    monkeypatch.setenv("NAV_PROSE_BM25", "1")
    root = make_layout(tmp_path / "repo")
    index = index_of(root)
    config = Config.from_env()
    retriever = get_retriever("graph", index, config)
    graph = SymbolGraph(index.conn)
    cls = one(graph.definitions("ZebraFormatter"), "ZebraFormatter")
    init = one(graph.definitions("__init__"), "ZebraFormatter.__init__")
    assert cls.chunk_id != init.chunk_id          # the class is long enough to be cut into its methods
    max_width = one(graph.definitions("MAX_WIDTH"), "MAX_WIDTH")
    neighbours = dict(retriever.neighbours(index.chunk_by_id(cls.chunk_id)))
    assert neighbours[init.chunk_id] == 1.0                      # the constructor
    assert max_width.chunk_id in neighbours                      # a constant the class body reads, in another file
    init_neighbours = dict(retriever.neighbours(index.chunk_by_id(init.chunk_id)))
    assert one(graph.definitions("DEFAULT_INDENT"), "DEFAULT_INDENT").chunk_id in init_neighbours

    query = "zebrafish layout engine"
    hybrid = [r.chunk.id for r in get_retriever("hybrid", index, config).retrieve(query, 30)]
    assert hybrid[0] == cls.chunk_id
    results = retriever.retrieve(query, 5)
    ids = [r.chunk.id for r in results]
    # The class stays on top with its constructor beside it (a neighbour with evidence of its own may pass it).
    assert {cls.chunk_id, init.chunk_id} <= set(ids[:3]) and max_width.chunk_id in ids
    assert "graph" in results[ids.index(init.chunk_id)].heads
    assert [r.rank for r in results] == list(range(1, len(results) + 1))
    # Scores are the ranking's: best first.
    assert all(a.score >= b.score for a, b in zip(results, results[1:]))


def test_a_neighbour_hybrid_ranked_40th_still_lands_behind_its_source(tmp_path, nav_env, monkeypatch):
    """patches/0014: a neighbour keeps its own hybrid score under the lift only inside the pool. With a pool of
    30, a constant that hybrid ranked 40th started from 0 and stayed below rank 5 (and a search with k = 50 ranked
    it higher than one with k = 5); with 50 it reaches the cap behind the class that reads it, whatever k."""
    from retrievers.base import RetrievedChunk
    from retrievers.registry import get_retriever
    monkeypatch.setenv("NAV_HYBRID_DEPTH", "200")           # hybrid's depth on a corpus of 2,000 chunks (click)
    root = make_layout(tmp_path / "repo")
    for n in range(4, 14):                                   # enough chunks for a 60-deep hybrid ranking
        write(root, f"pkg/extra{n}.py", "".join(f"def helper_{n}_{i}(x):\n    return x + {i}\n\n\n" for i in range(5)))
    index = index_of(root)
    retriever = get_retriever("graph", index, Config.from_env())
    graph = SymbolGraph(index.conn)
    cls = one(graph.definitions("ZebraFormatter"), "ZebraFormatter").chunk_id
    max_width = one(graph.definitions("MAX_WIDTH"), "MAX_WIDTH").chunk_id
    fillers = [c for c in index.chunks() if c.id not in {cls, max_width}]
    assert len(fillers) >= 60
    order = [index.chunk_by_id(cls)] + fillers[:38] + [index.chunk_by_id(max_width)] + fillers[38:60]
    # hybrid's scores fall slowly, as fused reciprocal ranks do: rank 5 keeps 96% of rank 1's score
    pool = [RetrievedChunk(chunk=c, score=1.0 - 0.01 * i, rank=i + 1) for i, c in enumerate(order)]
    retriever.hybrid.retrieve = lambda query, k: pool[:k]
    top5 = [r.chunk.id for r in retriever.retrieve("zebra layout", 5)]
    assert top5[0] == cls and max_width in top5[:4]
    assert [r.chunk.id for r in retriever.retrieve("zebra layout", 50)][:5] == top5


def test_the_default_search_is_the_graph_and_its_file_ranking_loads_the_postings_once(tmp_path, nav_env, monkeypatch):
    """patches/0011: without --retriever or RETRIEVER, search lifts graph neighbours; a file ranking over it
    reuses hybrid's bm25 head instead of loading a second copy of the postings."""
    from navigator.context.search import search
    from retrievers.file_rank import FileRanker
    monkeypatch.setenv("NAV_PROSE_BM25", "1")      # random test vectors: see the test above
    root = make_layout(tmp_path / "repo")
    build_index(root, Config.from_env())
    response = search(root, "zebrafish layout engine", 5, None)
    assert response.retriever == "graph"
    by_symbol = {r.chunk.symbol: r for r in response.results}
    assert "graph" in by_symbol["ZebraFormatter.__init__"].heads       # brought in by the class hit
    assert response.to_json()["retriever"] == "graph"
    index = NavIndex.open(root, Config.from_env())
    ranker = FileRanker(index, Config.from_env(), base="graph")
    assert ranker.bm25 is ranker.base.hybrid.bm25
    files = [hit.path for hit in ranker.rank("zebrafish layout engine", 3)]
    assert files[0] == "layout/formatter.py"


def test_without_a_graph_the_retriever_is_hybrid_and_says_so(tmp_path, nav_env):
    from retrievers.graph import NO_GRAPH_NOTE
    from retrievers.registry import get_retriever
    root = make_layout(tmp_path / "repo")
    build_index(root, Config.from_env())
    conn = sqlite3.connect(root / ".nav" / "nav.db")
    conn.execute("DELETE FROM meta WHERE key=?", (GRAPH_META_KEY,))
    conn.commit()
    conn.close()
    index = NavIndex.open(root)
    config = Config.from_env()
    graph_results = get_retriever("graph", index, config)
    got = [r.chunk.id for r in graph_results.retrieve("zebrafish layout engine", 5)]
    assert got == [r.chunk.id for r in get_retriever("hybrid", index, config).retrieve("zebrafish layout engine", 5)]
    assert NO_GRAPH_NOTE in graph_results.notes


# ---------------------------------------------------------------------------------- the tools of nav ask

def shop_tools(root: Path):
    from agent_loop.tools import RepoTools
    from navigator.index.graph import SymbolGraph

    def no_search(query: str, budget: int) -> str:
        raise AssertionError("the graph tools must not search")

    return RepoTools(repo_root=root, search_code=no_search, search_budget=1000,
                     open_graph=lambda: SymbolGraph(NavIndex.open(root).conn))


def test_find_definition_tool(tmp_path, nav_env):
    root = make_shop(tmp_path / "repo")
    build_index(root, Config.from_env())
    tools = shop_tools(root)
    outcome = tools.call("find_definition", {"name": "price_with_vat"})
    assert not outcome.is_error
    assert outcome.content == "shop/pricing.py:6-7  function price_with_vat"
    method = tools.call("find_definition", {"name": "Cart.total"})
    assert method.content == "shop/cart.py:20-21  method Cart.total (in Cart)"
    # A qualified name picks one; a bare name shared by several definitions lists them all.
    assert "shop.cart" in tools.call("find_definition", {"name": "shop.cart"}).content
    missing = tools.call("find_definition", {"name": "no_such_thing"})
    assert not missing.is_error and "no definition named 'no_such_thing'" in missing.content
    assert tools.call("find_definition", {"name": "  "}).is_error
    assert tools.call("find_definition", {"name": 3}).is_error
    assert tools.call("find_definition", {"name": "x", "kind": "class"}).is_error      # unknown field


def test_find_references_tool_crosses_files(tmp_path, nav_env):
    root = make_shop(tmp_path / "repo")
    build_index(root, Config.from_env())
    tools = shop_tools(root)
    outcome = tools.call("find_references", {"name": "Cart"})
    assert not outcome.is_error
    lines = outcome.content.splitlines()
    assert lines[0].startswith("shop/cart.py:8-21  class Cart: ")
    assert "  checkout.py:5  call  in checkout" in lines            # Cart() through `from shop.cart import Cart`
    assert "  shop/__init__.py:2  import  in <module>" not in lines  # imports are bindings, not uses
    price = tools.call("find_references", {"name": "price_with_vat", "path": "shop/pricing.py"}).content
    assert "  shop/cart.py:21  call  in Cart.total" in price.splitlines()
    assert "no definition" in tools.call("find_references", {"name": "price_with_vat", "path": "other.py"}).content


def test_symbol_neighbours_tool(tmp_path, nav_env):
    root = make_shop(tmp_path / "repo")
    build_index(root, Config.from_env())
    tools = shop_tools(root)
    content = tools.call("symbol_neighbours", {"name": "Cart"}).content
    sections = {}
    current = None
    for line in content.splitlines()[1:]:
        if not line.startswith("  "):
            current = line.rstrip(":")
            continue
        sections.setdefault(current, []).append(line.strip())
    assert sections["container"] == ["shop/cart.py:1-21  module shop.cart"]
    assert [m.split("  ")[1] for m in sections["members"]] == [
        "method Cart.__init__ (in Cart)", "method Cart.add (in Cart)", "method Cart.total (in Cart)"]
    uses = " | ".join(sections["uses (calls, reads, bases)"])
    assert "base  shop/base.py:1-3  class Container" in uses
    assert "price_with_vat" in uses and "MAX_ITEMS" in uses        # from its methods
    assert sections["used by (callers)"] == ["checkout.py:4-8  function checkout"]


def test_graph_tools_without_an_index_or_a_graph_say_so(tmp_path, nav_env):
    from agent_loop.tools import RepoTools
    root = make_shop(tmp_path / "repo")
    bare = RepoTools(repo_root=root, search_code=lambda q, b: "", search_budget=100)
    outcome = bare.call("find_definition", {"name": "Cart"})
    assert outcome.is_error and "no index" in outcome.content
    def missing_index():
        return SymbolGraph(NavIndex.open(root).conn)
    unindexed = RepoTools(repo_root=root, search_code=lambda q, b: "", search_budget=100, open_graph=missing_index)
    outcome = unindexed.call("symbol_neighbours", {"name": "Cart"})
    assert outcome.is_error and "nav index" in outcome.content


def test_a_run_that_fails_in_the_graph_stage_changes_nothing(tmp_path, nav_env, monkeypatch):
    import navigator.index.graph as graph_module
    root = make_shop(tmp_path / "repo")
    build_index(root, Config.from_env())
    before_chunks = graph_rows(root, "SELECT id FROM chunks ORDER BY id")
    before_defs = graph_rows(root, "SELECT path, qualname FROM graph_defs ORDER BY path, qualname")
    write(root, "shop/pricing.py", SHOP["shop/pricing.py"] + "\n\ndef discount(net):\n    return net * 0.9\n")

    def broken(path, chunks):
        raise RuntimeError("extraction failed")

    with monkeypatch.context() as patched, pytest.raises(RuntimeError) as failure:
        patched.setattr(graph_module, "extract_file", broken)
        build_index(root, Config.from_env())
    # build_index leaves its connection (and the open transaction) to the garbage collector on an error, as a
    # killed process would leave it to SQLite: drop the traceback that holds it, so the connection closes.
    del failure
    gc.collect()
    # The chunks and the graph are swapped in one transaction: neither moved.
    assert graph_rows(root, "SELECT id FROM chunks ORDER BY id") == before_chunks
    assert graph_rows(root, "SELECT path, qualname FROM graph_defs ORDER BY path, qualname") == before_defs
    summary = build_index(root, Config.from_env())
    assert summary.files_changed == 1
    assert ("shop/pricing.py", "discount") in graph_rows(root, "SELECT path, qualname FROM graph_defs")


def test_graph_settings_read_positive_numbers_and_refuse_the_rest():
    from navigator.core.errors import UsageError
    from retrievers.graph import GraphSettings
    assert GraphSettings.from_extra({}) == GraphSettings(pool=50, sources=3, weight=1.0)
    assert GraphSettings.from_extra({"NAV_GRAPH_POOL": " 12 ", "NAV_GRAPH_WEIGHT": "0.5"}) == \
        GraphSettings(pool=12, sources=3, weight=0.5)
    for bad in ({"NAV_GRAPH_POOL": "0"}, {"NAV_GRAPH_SOURCES": "1.5"}, {"NAV_GRAPH_WEIGHT": "nan"},
                {"NAV_GRAPH_WEIGHT": "-1"}, {"NAV_GRAPH_POOL": "many"}):
        with pytest.raises(UsageError, match=f"{next(iter(bad))} must be a positive number"):
            GraphSettings.from_extra(bad)
