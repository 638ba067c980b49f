"""Does ``hdq tune`` ever write a setting worse than the default on queries it did not see?

Run from the repository root (needs ``pip install 'hotdata-retrieval[tune]'`` and databases
``hdq load`` made of the collections)::

    python benchmarks/quality/bench_tune_holdout.py --cranfield-db DIR --scifact-db DIR \\
        [--splits 5] [--json PATH]

What it does, in one run:

1. Cranfield (every query judged, no train split): ``--splits`` seeded random halves of the
   judged queries. For each, ``hdq tune`` runs (the command itself, through click's runner)
   on one half's qrels, and the setting it writes is scored against the default on the other
   half: nDCG@10 and recall@100 with ir-measures, the paired difference with a 95% bootstrap
   interval (1,000 resamples, seed 0).
2. SciFact: ``hdq tune`` on the train split's qrels; the written setting against the default
   on the test split, the same way.

"Worse" is a held-out paired difference below zero on either measure. This script reports;
it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # measure the checked-out tree

from click.testing import CliRunner  # noqa: E402

from hotdata_retrieval import tuning  # noqa: E402
from hotdata_retrieval.cli import main as hdq  # noqa: E402
from hotdata_retrieval.embed import default_embedder  # noqa: E402
from hotdata_retrieval.engines.local import LocalEngine  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
TABLE = "corpus"


def _write_qrels(path: Path, qrels: dict[str, dict[str, int]], query_ids: Sequence[str]) -> None:
    lines = ["query-id\tcorpus-id\tscore"]
    for query_id in query_ids:
        lines.extend(f"{query_id}\t{doc}\t{grade}" for doc, grade in qrels[query_id].items())
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _tune(database: Path, queries: Path, qrels: Path, output: Path) -> dict[str, Any]:
    result = CliRunner().invoke(
        hdq,
        [
            "tune",
            "--queries",
            str(queries),
            "--qrels",
            str(qrels),
            "--database",
            str(database),
            "--output",
            str(output),
            "--format",
            "json",
        ],
        catch_exceptions=False,
    )
    if result.exit_code != 0:
        raise SystemExit(f"hdq tune failed: {result.stderr}")
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _held_out(
    database: Path,
    texts: dict[str, str],
    qrels: dict[str, dict[str, int]],
    query_ids: Sequence[str],
    fragment: dict[str, Any],
) -> dict[str, Any]:
    fusion = dict(fragment["fusion"])
    depth = int(fusion.pop("depth"))
    method = fusion.pop("method")
    setting = tuning.FusionSetting(
        method,
        tuple((name, tuple(v) if isinstance(v, list) else v) for name, v in fusion.items()),
    )
    with LocalEngine(database, embedder=default_embedder()) as engine:
        runs = tuning.collect_runs(engine, TABLE, {q: texts[q] for q in query_ids}, depth=depth)
    settings = [tuning.DEFAULT_SETTING] + ([] if setting == tuning.DEFAULT_SETTING else [setting])
    results = tuning.evaluate(runs, qrels, settings, depth=depth)
    chosen = results[-1]
    return {
        "setting": setting.label,
        "queries": len(query_ids),
        **{
            name: {
                "default": results[0].means[name].mean,
                "chosen": chosen.means[name].mean,
                "difference": chosen.differences[name].document(),
            }
            for name in tuning.MEASURES
        },
    }


def _row(label: str, report: dict[str, Any], held: dict[str, Any]) -> str:
    cells = [label, str(report["queries"]), f"`{held['setting']}`"]
    for name in tuning.MEASURES:
        d = held[name]["difference"]
        cells.append(f"{d['mean']:+.4f} [{d['low']:+.3f}, {d['high']:+.3f}]")
    cells.append(f"`{tuning.FusionSetting(**_setting(report['highest_mean'])).label}`")
    worse = any(held[name]["difference"]["mean"] < 0 for name in tuning.MEASURES)
    cells.append("yes" if worse else "no")
    return "| " + " | ".join(cells) + " |"


def _setting(document: dict[str, Any]) -> dict[str, Any]:
    options = {k: v for k, v in document.items() if k != "method"}
    return {
        "method": document["method"],
        "options": tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in options.items()),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cranfield-db", type=Path)
    parser.add_argument("--scifact-db", type=Path)
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--json", type=Path, metavar="PATH")
    options = parser.parse_args(argv)

    lines = [
        "| tuned on | judged queries | written | held-out Δ nDCG@10 | held-out Δ recall@100 "
        "| highest mean (not written) | worse on held-out |",
        "|---|---:|---|---:|---:|---|---|",
    ]
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        cranfield = DATA / "cranfield"
        texts = tuning.load_queries(cranfield)
        qrels, _ = tuning.load_qrels(cranfield, split="test")
        judged = sorted((q for q in qrels if q in texts), key=int)
        for split in range(options.splits if options.cranfield_db is not None else 0):
            shuffled = judged[:]
            random.Random(split).shuffle(shuffled)
            half = len(shuffled) // 2
            train, test = sorted(shuffled[:half], key=int), sorted(shuffled[half:], key=int)
            _write_qrels(work / f"train-{split}.tsv", qrels, train)
            output = work / f"fusion-{split}.json"
            print(f"cranfield split {split}: tuning on {len(train)} ...", file=sys.stderr)
            report = _tune(options.cranfield_db, cranfield, work / f"train-{split}.tsv", output)
            fragment = json.loads(output.read_text(encoding="utf-8"))
            held = _held_out(options.cranfield_db, texts, qrels, test, fragment)
            lines.append(_row(f"Cranfield half (seed {split})", report, held))
            records.append({"split": split, "report": report, "held_out": held})
        if options.scifact_db is not None:
            scifact = DATA / "scifact"
            texts = tuning.load_queries(scifact)
            test_qrels, _ = tuning.load_qrels(scifact, split="test")
            output = work / "fusion-scifact.json"
            print("scifact: tuning on train ...", file=sys.stderr)
            report = _tune(options.scifact_db, scifact, scifact, output)
            fragment = json.loads(output.read_text(encoding="utf-8"))
            test = sorted((q for q in test_qrels if q in texts), key=int)
            held = _held_out(options.scifact_db, texts, test_qrels, test, fragment)
            lines.append(_row("SciFact train", report, held))
            lines.append(
                f"\nSciFact test nDCG@10: written setting {held['nDCG@10']['chosen']:.4f}, "
                f"default {held['nDCG@10']['default']:.4f}."
            )
            records.append({"split": "scifact", "report": report, "held_out": held})
    print("\n".join(lines))
    if options.json is not None:
        options.json.write_text(json.dumps(records, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
