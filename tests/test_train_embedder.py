"""training/train_embedder.py's data handling (issue 24): the data curve's shares nest, every batch's negatives
are real negatives, an epoch uses each pair at most once, and a killed checkpoint write leaves one checkpoint."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "training"))
import train_embedder as te  # noqa: E402


def _pairs(n_per_source: int) -> list[dict]:
    return [{"qid": f"{source}-{lib}-{i}", "lib": lib, "source": source, "query": f"q {i}", "positives": [f"c{i}"]}
            for source in te.SOURCES for lib in ("liba", "libb", "heldout") for i in range(n_per_source)]


def test_a_smaller_share_is_a_prefix_of_a_larger_one_per_source():
    pairs = _pairs(40)
    quarter = te.select_pairs(pairs, {"liba", "libb"}, {"question", "bug_report"}, 0.25, seed=0)
    half = te.select_pairs(pairs, {"liba", "libb"}, {"question", "bug_report"}, 0.5, seed=0)
    assert {p["source"] for p in quarter} == {"question", "bug_report"}
    assert all(p["lib"] != "heldout" for p in half)
    for source in ("question", "bug_report"):
        q = [p["qid"] for p in quarter if p["source"] == source]
        h = [p["qid"] for p in half if p["source"] == source]
        assert len(q) == 20 and len(h) == 40 and h[:20] == q     # the 25% point's pairs are all in the 50% point's
    other_seed = te.select_pairs(pairs, {"liba", "libb"}, {"question"}, 0.25, seed=1)
    assert [p["qid"] for p in other_seed] != [p["qid"] for p in quarter if p["source"] == "question"]


def test_the_default_training_mix_leaves_the_docstring_pairs_out():
    """patches/0027, qbd-25: the docstring pairs cost held-out MRR, so the one command trains the shipped mix."""
    args = te.parse_args(["train", "--out", "x"])
    assert set(args.sources.split(",")) == {"question", "bug_report"}


def test_positives_of_a_row_are_never_its_negatives():
    batch = [
        {"qid": "q1", "positives": ["a", "b"]},
        {"qid": "q2", "positives": ["b"]},            # shares b with q1
        {"qid": "q3#0", "positives": ["c"]},          # two places of one expect_all question
        {"qid": "q3#1", "positives": ["d"]},
        {"qid": "q4", "positives": ["e"]},
    ]
    negatives = {"q4": ["a"], "q1": ["z"]}          # q4's BM25-hard negative is one of q1's positives
    doc_ids, targets = te.batch_documents(batch, negatives, step=0)
    assert doc_ids == ["a", "b", "c", "d", "e", "z", "a"] and targets == [0, 1, 2, 3, 4]
    cells = set(te.false_negatives(batch, doc_ids, targets))
    assert (0, 1) in cells and (1, 0) not in cells      # q2's positive b is q1's too; q1's pick a is not q2's
    assert (0, 6) in cells                              # q4's hard negative a is q1's positive
    assert (2, 3) in cells and (3, 2) in cells          # the other place of the same question
    assert all(i != 4 for i, _ in cells)                # q4 shares nothing: all its negatives stay
    assert all(j != targets[i] for i, j in cells)       # a row's own target is never masked


def test_an_epoch_uses_each_pair_at_most_once_in_full_batches():
    pairs = [{"query": "x" * random.Random(i).randint(1, 200), "positives": [f"c{i}"]} for i in range(1000)]
    chunks = {f"c{i}": {"embed_text": "y" * (i % 37)} for i in range(1000)}
    batches = te.length_bucketed_batches(pairs, chunks, 32, random.Random(0))
    flat = [i for b in batches for i in b]
    assert all(len(b) == 32 for b in batches) and len(flat) == len(set(flat)) and len(flat) >= 1000 - 32
    again = te.length_bucketed_batches(pairs, chunks, 32, random.Random(0))
    assert again == batches                             # a resumed run sees the same order


class _Saves:
    """What save_checkpoint asks of a model, optimizer and scheduler: a folder written, a state dict."""
    def __init__(self, tag: str, fail: bool = False):
        self.tag, self.fail = tag, fail

    def save(self, path: str) -> None:
        if self.fail:
            raise KeyboardInterrupt("killed while writing the model")
        Path(path).mkdir(parents=True)
        (Path(path) / "weights").write_text(self.tag)

    def state_dict(self) -> dict:
        return {"tag": self.tag}


def test_a_checkpoint_write_killed_midway_leaves_the_last_complete_one(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    te.save_checkpoint(_Saves("step25"), _Saves("o"), _Saves("s"), 25, tmp_path, torch)
    with pytest.raises(KeyboardInterrupt):
        te.save_checkpoint(_Saves("step50", fail=True), _Saves("o"), _Saves("s"), 50, tmp_path, torch)
    assert (tmp_path / "checkpoint" / "model" / "weights").read_text() == "step25"

    # Killed between the two renames: the new checkpoint never landed, the old one was moved aside.
    real_replace = te.os.replace
    def replace_then_die(src, dst):
        real_replace(src, dst)
        if Path(dst).name == "checkpoint.old":
            raise KeyboardInterrupt("killed between the renames")
    monkeypatch.setattr(te.os, "replace", replace_then_die)
    with pytest.raises(KeyboardInterrupt):
        te.save_checkpoint(_Saves("step75"), _Saves("o"), _Saves("s"), 75, tmp_path, torch)
    monkeypatch.setattr(te.os, "replace", real_replace)
    assert not (tmp_path / "checkpoint").exists()
    te.restore_checkpoint(tmp_path)
    assert (tmp_path / "checkpoint" / "model" / "weights").read_text() == "step25"
    assert torch.load(tmp_path / "checkpoint" / "state.pt", weights_only=False)["step"] == 25

    te.save_checkpoint(_Saves("step100"), _Saves("o"), _Saves("s"), 100, tmp_path, torch)
    assert (tmp_path / "checkpoint" / "model" / "weights").read_text() == "step100"
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint"]    # the killed runs' leftovers are gone
    assert torch.load(tmp_path / "checkpoint" / "state.pt", weights_only=False)["step"] == 100


def test_inverse_order_restores_the_input_order():
    texts = ["ccc", "a", "bbbb", "dd", ""]
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    by_length = [texts[i] for i in order]
    assert [by_length[r] for r in te.inverse_order(order)] == texts


def test_length_grouped_encoding_gives_the_one_call_vectors_in_input_order(tiny_embed_model, monkeypatch):
    torch = pytest.importorskip("torch")
    model = te.load_model(tiny_embed_model)
    model.eval()
    texts = [f"def f{i}(x):\n    return " + "x + " * (i * 7 % 40) + "1" for i in range(45)]
    monkeypatch.setattr(te, "EMBED_GROUP", 8)
    grouped = te.embed(model, texts, torch, grad=False, bf16=False)
    monkeypatch.setattr(te, "EMBED_GROUP", 1000)
    one_call = te.embed(model, texts, torch, grad=False, bf16=False)
    assert grouped.shape == (45, 32)
    assert torch.allclose(grouped, one_call, atol=1e-5)
    assert not torch.allclose(grouped[0], grouped[1], atol=1e-3)    # distinct texts, distinct rows


def test_training_queries_are_the_text_nav_embeds():
    """A Chinese question trains as nav's vector head reads it, glossary words appended (MiniLM's vocabulary
    turns most Chinese characters into [UNK]); English questions and bug-report windows are unchanged."""
    from retrievers.vector import embedding_query
    zh = {"source": "question", "query": "帮助文本默认多宽"}
    en = {"source": "question", "query": "default help width"}
    report = {"source": "bug_report", "query": "帮助文本 crashes"}
    assert te.query_text(zh, "nav") == embedding_query(zh["query"])[0] != zh["query"]
    assert te.query_text(zh, "raw") == zh["query"]
    assert te.query_text(en, "nav") == en["query"]
    assert te.query_text(report, "nav") == report["query"]


def test_a_resume_refuses_other_training_settings_but_takes_other_speed_settings():
    def config(*argv: str) -> dict:
        args = te.parse_args(["train", "--out", "/tmp/run", *argv])
        return {k: v for k, v in vars(args).items() if k != "func"} | {"pairs": 100}

    saved = config("--fraction", "0.25", "--threads", "1", "--bf16")
    # another machine, another thread count and checkpoint rhythm: the same run, resumed
    assert te.resume_conflicts(saved, config("--fraction", "0.25", "--threads", "2", "--no-bf16",
                                             "--checkpoint-every", "10")) == []
    # another share of the data or learning rate would mix two runs in one model
    conflicts = te.resume_conflicts(saved, config("--fraction", "0.5", "--lr", "1e-4", "--threads", "1"))
    assert [c.split(":")[0] for c in conflicts] == ["fraction", "lr"]
    assert "0.25 then, 0.5 now" in conflicts[0]
