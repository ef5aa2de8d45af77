"""The retriever registry: third-party retrievers arrive through the `nav.retrievers` entry-point group and
add names; they cannot replace a built-in, and resolving a built-in never scans installed distributions."""
import sys
import textwrap

import pytest

from navigator.core.errors import RetrieverError
from retrievers import registry


@pytest.fixture
def plugin_on_path(tmp_path, monkeypatch):
    """A distribution installed the way pip leaves one: a module and a .dist-info with entry_points.txt."""
    (tmp_path / "navplugin_demo.py").write_text(textwrap.dedent("""
        from retrievers.bm25 import BM25Retriever

        class EchoRetriever(BM25Retriever):
            pass

        class NotVector(BM25Retriever):
            pass

        def register_retrievers(register):
            register("echo", EchoRetriever)
            register("vector", NotVector)      # must not replace nav's own
    """))
    info = tmp_path / "navplugin_demo-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: navplugin-demo\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[{registry.ENTRY_POINT_GROUP}]\ndemo = navplugin_demo:register_retrievers\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.reset_registry()
    yield
    registry.reset_registry()
    sys.modules.pop("navplugin_demo", None)


def test_a_plugin_adds_a_name_and_cannot_replace_a_builtin(plugin_on_path):
    assert "echo" in registry.registered_names()
    assert registry.retriever_class("echo").__name__ == "EchoRetriever"
    assert registry.retriever_class("vector").__name__ == "VectorRetriever"


def test_a_builtin_resolves_without_the_entry_point_scan(plugin_on_path):
    # The plugin's module is imported only by the scan: resolving a built-in first must not load it.
    assert registry.retriever_class("bm25").__name__ == "BM25Retriever"
    assert "navplugin_demo" not in sys.modules


def test_an_unknown_name_lists_what_is_registered(plugin_on_path):
    with pytest.raises(RetrieverError) as caught:
        registry.retriever_class("nosuch")
    assert "echo" in str(caught.value) and "graph" in str(caught.value)
