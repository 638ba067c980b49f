"""Latency of the rerank step's cross-encoder per candidate, on this machine.

The model is all-MiniLM-L6-v2 int8 ONNX (the ``local`` extra's installed embedding model)
read as a cross-encoder: it has ms-marco-MiniLM-L-6-v2's architecture (6 layers, 384 hidden,
BERT WordPiece), so it costs what that cross-encoder costs per pair; its scores mean
nothing and are not used. Nothing is downloaded. Each pair is a 7-word query and a passage
of about 120 words (about 160 tokens), cut to 256 tokens.

    python benchmarks/bench_rerank.py
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

from hotdata_retrieval.embed import minilm
from hotdata_retrieval.embed.reranking import CrossEncoderReranker

QUERY = "why does the app crash after the upgrade"
PASSAGE = (
    "the upgrade to version four left the app unable to start on some laptops while "
    "others report a crash when opening settings after login and the logs show a "
    "timeout from the sync service followed by an error about the local cache "
)
WORDS = PASSAGE.split()


def main() -> None:
    model, tokenizer = minilm._installed_model(), minilm._installed_tokenizer()
    assert model is not None and tokenizer is not None, "install the local extra"
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory) / "minilm-as-cross-encoder"
        folder.mkdir()
        shutil.copyfile(str(model), folder / "model.onnx")
        shutil.copyfile(tokenizer, folder / "tokenizer.json")
        print("threads  top_n  ms total  ms per candidate (median of 5; batch 32)")
        for threads in (1, None):
            for top_n in (10, 50, 100):
                reranker = CrossEncoderReranker(
                    folder, max_length=256, batch_size=32, threads=threads, progress=False
                )
                pairs = [
                    (QUERY, " ".join(WORDS[i % 7 :] + WORDS[: i % 7] + WORDS)) for i in range(top_n)
                ]
                reranker.score(pairs[:2])  # load the model
                runs = []
                for _ in range(5):
                    start = time.perf_counter()
                    reranker.score(pairs)
                    runs.append((time.perf_counter() - start) * 1000)
                total = statistics.median(runs)
                shown = "auto" if threads is None else str(threads)
                print(f"{shown:>7}  {top_n:5d}  {total:8.1f}  {total / top_n:8.2f}")


if __name__ == "__main__":
    main()
