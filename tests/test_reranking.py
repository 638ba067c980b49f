"""The rerank step's reranker: the ONNX cross-encoder, on a model these tests build (a token
weight table summed under the attention mask, so each pair's score has a pure-Python
reference), its batching, truncation, progress and missing-model error; the step through a
request, the chain and ``hdq search --rerank``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pyarrow as pa
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, pre_tokenizers, processors

from hotdata_retrieval.cli import main
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.embed.reranking import (
    PROGRESS_PAIRS,
    CrossEncoderReranker,
    register_reranker,
    reranker_for,
)
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import PlanError, RerankerUnavailableError
from hotdata_retrieval.plan.steps import Rerank
from hotdata_retrieval.routing import SearchRequest

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "disk", "full", "crash", "error", "the",
              "app", "on", "start", "is", "slow", "login", "fails"]  # fmt: skip
WEIGHTS = np.linspace(-1.0, 2.0, len(VOCABULARY)).astype(np.float32)


def _tokens(query: str, text: str, max_length: int = 512) -> list[str]:
    """The pair as the model reads it, cut from the text's end (the reference)."""
    first = query.split()
    second = text.split()[: max(0, max_length - len(first) - 3)]
    known = set(VOCABULARY)
    words = ["[CLS]", *first, "[SEP]", *second, "[SEP]"]
    return [word if word in known else "[UNK]" for word in words]


def _reference(query: str, text: str, max_length: int = 512) -> float:
    index = {word: position for position, word in enumerate(VOCABULARY)}
    return float(sum(WEIGHTS[index[word]] for word in _tokens(query, text, max_length)))


def _write_model(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["n", "t"])
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["n", "t"])
    types = helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["n", "t"])
    logits = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["n", 1])
    table = numpy_helper.from_array(WEIGHTS.reshape(-1), name="weights")
    axes = numpy_helper.from_array(np.array([1], dtype=np.int64), name="axes")
    nodes = [
        helper.make_node("Gather", ["weights", "input_ids"], ["token_weights"]),
        helper.make_node("Cast", ["attention_mask"], ["mask_float"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["token_weights", "mask_float"], ["kept"]),
        helper.make_node("ReduceSum", ["kept", "axes"], ["logits"], keepdims=1),
    ]
    graph = helper.make_graph(nodes, "sum", [ids, mask, types], [logits], [table, axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(directory / "model.onnx"))
    tokenizer = Tokenizer(
        models.WordLevel({word: i for i, word in enumerate(VOCABULARY)}, unk_token="[UNK]")
    )
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    tokenizer.save(str(directory / "tokenizer.json"))
    return directory


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_model(tmp_path_factory.mktemp("cross-encoder") / "tiny")


PAIRS = [
    ("disk full", "the disk is full"),
    ("crash on start", "the app is slow"),
    ("login fails", "login fails on start with error crash disk"),
    ("disk", "unknown words only"),
    ("error", ""),
]


@pytest.mark.parametrize("batch_size", [1, 2, 32])
def test_the_cross_encoder_scores_each_pair_as_the_reference(
    model_dir: Path, batch_size: int
) -> None:
    reranker = CrossEncoderReranker(model_dir, batch_size=batch_size)
    expected = [_reference(query, text) for query, text in PAIRS]
    assert reranker.score(PAIRS) == pytest.approx(expected, abs=1e-5)
    assert reranker.name.startswith("cross-encoder:tiny:")


def test_the_cross_encoder_cuts_each_pair_to_max_length_from_the_text(model_dir: Path) -> None:
    reranker = CrossEncoderReranker(model_dir, max_length=7)
    expected = [_reference(query, text, 7) for query, text in PAIRS]
    assert reranker.score(PAIRS) == pytest.approx(expected, abs=1e-5)
    assert expected != [_reference(query, text) for query, text in PAIRS]


def test_long_work_reports_progress(model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reranker = CrossEncoderReranker(model_dir, batch_size=64)
    reranker.score(PAIRS[:2])
    assert "reranking" not in capsys.readouterr().err
    reranker.score([PAIRS[0]] * PROGRESS_PAIRS)
    assert f"reranking: {PROGRESS_PAIRS}/{PROGRESS_PAIRS} (100%)" in capsys.readouterr().err


def test_bounds_are_refused() -> None:
    with pytest.raises(PlanError, match="max_length must be a whole number from 1 to 512"):
        CrossEncoderReranker("x", max_length=100_000)
    with pytest.raises(PlanError, match="top_n must be at most 1000"):
        Rerank(model="term-overlap", top_n=5000)


def test_a_missing_model_is_one_line_naming_it_and_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(RerankerUnavailableError) as raised:
        reranker_for(str(tmp_path / "nowhere"))
    message = str(raised.value)
    assert str(tmp_path / "nowhere") in message and "is no directory" in message
    assert "optimum-cli export onnx" in message and "\n" not in message
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "model.onnx").write_bytes(b"")
    with pytest.raises(RerankerUnavailableError, match=r"lacks tokenizer\.json"):
        reranker_for(str(tmp_path / "half"))


# -- the step through the doors ------------------------------------------------------------

QUERY = "disk full"
BODIES = ["disk", "the disk is full", "full", "crash on start", "disk full disk full",
          "the app is slow", "login fails", "disk error", "full disk", "the"]  # fmt: skip


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("rerank") / "db"
    table = pa.table({"id": list(range(1, len(BODIES) + 1)), "body": BODIES})
    with LocalEngine(directory, embedder=HashingEmbedder()) as engine:
        engine.load_table("docs", table, text_columns=["body"], embed_columns=["body"])
    return directory


@pytest.fixture(scope="module")
def engine(database: Path) -> Iterator[LocalEngine]:
    with LocalEngine(database, embedder=HashingEmbedder()) as opened:
        yield opened


def _expected(engine: LocalEngine, mode: str, top_n: int, limit: int) -> list[Any]:
    plain = engine.plan_search(SearchRequest(table="docs", query=QUERY, mode=mode, limit=top_n))
    hits = engine.search(plain).hits
    scores = [_reference(QUERY, hit.columns["body"]) for hit in hits]
    order = sorted(range(len(hits)), key=lambda position: -scores[position])
    return [hits[position].key for position in order][:limit]


@pytest.mark.parametrize("mode", ["text", "nearest", "hybrid"])
def test_a_request_and_the_chain_rerank_with_the_model(
    engine: LocalEngine, model_dir: Path, mode: str
) -> None:
    request = SearchRequest(
        table="docs", query=QUERY, mode=mode, limit=3, rerank=str(model_dir), top_n=8
    )
    plan = engine.plan_search(request)
    assert plan.steps[0].text_column(plan) == "body"  # a nearest search: the table's text
    result = engine.search(plan)
    assert result.keys == _expected(engine, mode, 8, 3)
    assert [hit.rerank_score for hit in result] == pytest.approx(
        sorted((_reference(QUERY, hit.columns["body"]) for hit in result), reverse=True)
    )
    chained = engine.table("docs").search(QUERY, mode=mode).limit(3)
    chained = chained.rerank(str(model_dir), top_n=8, column="body", query=QUERY)
    assert chained.run().keys == result.keys
    assert "-- step 1: rerank: " in chained.explain()


def test_a_reranker_object_is_registered_by_its_name(engine: LocalEngine, model_dir: Path) -> None:
    reranker = CrossEncoderReranker(model_dir)
    plan = engine.plan_search(
        SearchRequest(table="docs", query=QUERY, mode="text", limit=3, rerank=reranker)
    )
    assert plan.steps[0].model == reranker.name == register_reranker(reranker)
    assert engine.search(plan).keys == _expected(engine, "text", 12, 3)


def test_hdq_search_reranks_and_refuses_a_missing_model(database: Path, model_dir: Path) -> None:
    arguments = ["search", QUERY, "--table", "docs", "--database", str(database), "--mode",
                 "text", "-k", "3", "--format", "json"]  # fmt: skip
    result = CliRunner().invoke(main, [*arguments, "--rerank", str(model_dir), "--top-n", "8"])
    assert result.exit_code == 0, result.stderr
    hits = json.loads(result.stdout)["hits"]
    with LocalEngine(database, embedder=HashingEmbedder()) as engine:
        assert [hit["key"] for hit in hits] == _expected(engine, "text", 8, 3)
    assert all("rerank_score" in hit for hit in hits)
    missing = CliRunner().invoke(main, [*arguments, "--rerank", str(database / "no-model")])
    assert missing.exit_code != 0
    assert len(missing.stderr.strip().splitlines()) == 1, missing.stderr
    assert "no cross-encoder model in" in missing.stderr
    alone = CliRunner().invoke(main, [*arguments, "--top-n", "8"])
    assert "give rerank too" in alone.stderr


@pytest.mark.parametrize(
    ("broken", "file"),
    [("tokenizer", "tokenizer.json"), ("model", "model.onnx"), ("both", "tokenizer.json")],
)
def test_a_model_that_does_not_load_is_one_line_naming_the_file(
    tmp_path: Path, model_dir: Path, broken: str, file: str
) -> None:
    directory = tmp_path / "broken"
    directory.mkdir()
    good = {"model.onnx": model_dir / "model.onnx", "tokenizer.json": model_dir / "tokenizer.json"}
    for name, source in good.items():
        (directory / name).write_bytes(source.read_bytes())
    if broken in ("tokenizer", "both"):
        (directory / "tokenizer.json").write_text("{}")
    if broken in ("model", "both"):
        (directory / "model.onnx").write_text("junk")
    with pytest.raises(RerankerUnavailableError) as raised:
        CrossEncoderReranker(directory).score([("disk", "disk full")])
    message = str(raised.value)
    assert str(directory) in message and f"{file} is unreadable" in message
    assert "\n" not in message and raised.value.missing == (str(directory / file),)


def test_a_broken_model_is_a_whole_message_at_each_door(
    database: Path, engine: LocalEngine, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from hotdata_retrieval.adapters.settings import SearchSettings
    from hotdata_retrieval.adapters.toolkit import SearchToolkit, ToolError

    broken = tmp_path / "badm"
    broken.mkdir()
    (broken / "model.onnx").write_text("junk")
    (broken / "tokenizer.json").write_text("{}")
    arguments = ["search", QUERY, "--table", "docs", "--database", str(database),
                 "--rerank", str(broken)]  # fmt: skip
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code != 0
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "tokenizer.json is unreadable" in result.stderr
    for reranker in (str(broken), str(tmp_path / "nowhere")):
        toolkit = SearchToolkit(engine, SearchSettings(table="docs", reranker=reranker))
        with caplog.at_level("WARNING"), pytest.raises(ToolError) as raised:
            toolkit.search_text(QUERY)
        message = str(raised.value)
        assert "optimum-cli export onnx --model cross-encoder/ms-marco-MiniLM-L-6-v2 DIR" in (
            message
        )
        assert "characters)" not in message and not message.startswith("Exception")
    assert "failed unexpectedly" not in caplog.text
