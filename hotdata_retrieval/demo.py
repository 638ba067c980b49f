"""A small support-ticket corpus, generated deterministically, and the searches ``hdq demo`` runs.

Each ticket reports one of a dozen problems. Some bodies carry an exact token — an error code
such as ``E4012`` or a version such as ``4.2.1`` — and describe the symptom in plain words;
others only paraphrase the symptom ("the app closes as soon as I
open it" for a crash on start). So BM25 finds the exact tokens that an embedding blurs, the
embedding finds the paraphrases that share no word with the query, and the fused search finds
both.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from hotdata_retrieval.extras import missing_extra

if TYPE_CHECKING:
    import pyarrow as pa


@attrs.frozen(kw_only=True)
class Problem:
    """One underlying problem: its error code, component and ways users describe it."""

    code: str
    component: str
    title: str
    phrasings: tuple[str, ...]


PROBLEMS: tuple[Problem, ...] = (
    Problem(
        code="E4012",
        component="desktop app",
        title="Crash on start",
        phrasings=(
            "The desktop app crashes on startup every time.",
            "The application closes immediately after I launch it.",
            "As soon as I open the program it quits without any message.",
            "Window flashes for a second and then the app disappears.",
        ),
    ),
    Problem(
        code="E2001",
        component="login",
        title="Cannot sign in",
        phrasings=(
            "Login fails even though my password is correct.",
            "I can't sign in to my account any more.",
            "Entering my credentials just returns me to the sign-in page.",
            "Authentication keeps rejecting me after I type my details.",
        ),
    ),
    Problem(
        code="E3307",
        component="sync",
        title="Files not syncing",
        phrasings=(
            "Files are not syncing between my laptop and phone.",
            "Changes I make on one device never show up on the other.",
            "Documents stay out of date across my computers.",
            "Upload seems stuck and nothing reaches the cloud folder.",
        ),
    ),
    Problem(
        code="E5120",
        component="billing",
        title="Charged twice",
        phrasings=(
            "I was charged twice for the same monthly plan.",
            "My card shows a duplicate payment this month.",
            "The subscription fee was taken two times.",
            "There are two identical invoices on my bank statement.",
        ),
    ),
    Problem(
        code="E6004",
        component="export",
        title="PDF export empty",
        phrasings=(
            "Exporting a report to PDF produces a blank file.",
            "The saved PDF has no pages in it.",
            "When I print to PDF the document comes out empty.",
            "Report download opens as a white page with no content.",
        ),
    ),
    Problem(
        code="E7731",
        component="notifications",
        title="No email notifications",
        phrasings=(
            "I stopped receiving email notifications.",
            "Alerts never arrive in my inbox anymore.",
            "The app no longer tells me by mail when something changes.",
            "Reminder messages are not being delivered to me.",
        ),
    ),
    Problem(
        code="E8090",
        component="performance",
        title="Very slow dashboard",
        phrasings=(
            "The dashboard takes minutes to load.",
            "Opening the overview page is extremely sluggish.",
            "Everything freezes for a long time before charts appear.",
            "The main screen is painfully slow since this week.",
        ),
    ),
    Problem(
        code="E1150",
        component="mobile app",
        title="Battery drain",
        phrasings=(
            "The mobile app drains my battery quickly.",
            "My phone gets hot and loses charge when the app runs.",
            "Power usage is huge even in the background.",
            "Since installing it my handset dies by lunchtime.",
        ),
    ),
    Problem(
        code="E9402",
        component="import",
        title="CSV import rejects file",
        phrasings=(
            "CSV import rejects my spreadsheet.",
            "Uploading the comma separated file gives an invalid format error.",
            "The importer refuses the table I exported from Excel.",
            "My contacts list won't load from the file.",
        ),
    ),
    Problem(
        code="E2250",
        component="password reset",
        title="Reset link expired",
        phrasings=(
            "The password reset link says it has expired.",
            "The recovery email link no longer works when I click it.",
            "I can't change my password, the emailed link is invalid.",
            "Resetting my account access fails from the message I received.",
        ),
    ),
    Problem(
        code="E3999",
        component="search",
        title="Search returns nothing",
        phrasings=(
            "Search returns no results for documents I know exist.",
            "Looking up a file by name finds nothing.",
            "The find box is empty even for exact titles.",
            "I type a word I can see on screen and get zero matches.",
        ),
    ),
    Problem(
        code="E4480",
        component="printing",
        title="Printer not found",
        phrasings=(
            "The printer is not detected by the app.",
            "My office printer doesn't appear in the device list.",
            "No printing devices are available to choose from.",
            "I cannot send anything to paper, the machine is missing.",
        ),
    ),
)

_VERSIONS = ("4.1.0", "4.1.3", "4.2.0", "4.2.1", "5.0.0")
_PLATFORMS = ("Windows 11", "macOS 14", "Ubuntu 24.04", "Android 15", "iOS 18")
_OPENERS = ("Hello,", "Hi team,", "Urgent:", "Good morning.", "")
_CLOSERS = ("Thanks.", "Please help.", "Any idea?", "This blocks my work.", "")


def support_tickets(count: int = 144, seed: int = 20_241) -> pa.Table:
    """Generate ``count`` tickets (``id``, ``ticket``, ``title``, ``body``, ``component``,
    ``version``, ``priority``); the same arguments always give the same table.

    Roughly half of the tickets quote their error code, a third their version, and every
    ticket uses one of four phrasings of its problem. A ticket's reference (``TCK-1043``) is
    its ``ticket`` column, not quoted in its body, so a search of the body does not find it.

    Raises:
        MissingExtraError: pyarrow (the ``local`` extra) is not installed.
    """
    try:
        import pyarrow as pa
    except ImportError:
        raise missing_extra("local", missing=["pyarrow"], needed_by="support_tickets()") from None

    rng = random.Random(seed)
    rows: dict[str, list[object]] = {
        key: [] for key in ("id", "ticket", "title", "body", "component", "version", "priority")
    }
    for number in range(count):
        problem = PROBLEMS[number % len(PROBLEMS)]
        phrasing = problem.phrasings[(number // len(PROBLEMS)) % len(problem.phrasings)]
        version = rng.choice(_VERSIONS)
        parts = [rng.choice(_OPENERS), phrasing]
        if rng.random() < 0.5:
            parts.append(f"The error dialog shows code {problem.code}.")
        if rng.random() < 0.35:
            parts.append(f"Started after updating to version {version}.")
        parts.append(f"I am on {rng.choice(_PLATFORMS)}.")
        parts.append(rng.choice(_CLOSERS))
        rows["id"].append(number + 1)
        rows["ticket"].append(f"TCK-{1000 + number + 1}")
        rows["title"].append(f"{problem.title} ({problem.component})")
        rows["body"].append(" ".join(part for part in parts if part))
        rows["component"].append(problem.component)
        rows["version"].append(version)
        rows["priority"].append(rng.choice(("low", "normal", "high")))
    return pa.table(rows)


@attrs.frozen(kw_only=True)
class DemoQuery:
    """A demo search and what it shows."""

    text: str
    point: str


DEMO_QUERIES: Sequence[DemoQuery] = (
    DemoQuery(
        text="E6004",
        point="An exact error code: BM25 matches the token; the embedding only sees a string.",
    ),
    DemoQuery(
        text="program shuts down right when I start it",
        point="A paraphrase: few shared words, so the embedding finds what BM25 misses.",
    ),
    DemoQuery(
        text="billed two times after updating to 4.2.1",
        point="Both: a symptom in other words and an exact version; fusion ranks tickets "
        "that match either, and those that match both first.",
    ),
)
