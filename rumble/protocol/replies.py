"""The exact text the client understands in an answer (protocol.md section 7.3).

The client reads an answer line by line: a line containing ``OK`` marks the upload accepted;
otherwise a line with ``<`` and ``>`` is a battle-count line and one with ``[`` and ``]`` a
priority battle, and a malformed one of those kills the client. So free text never carries
those brackets, and counts and priorities are only ever made here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from rumble.protocol.names import priority_safe, to_key

_BRACKETS = str.maketrans({"<": "|", ">": "|", "[": "|", "]": "|", "\r": " ", "\n": " "})


def plain(text: str) -> str:
    """Make free text safe for an answer line: ASCII, no brackets, no line breaks."""
    return text.translate(_BRACKETS).encode("ascii", "replace").decode("ascii")


def counts_line(first_battles: int, second_battles: int) -> str:
    """``<n m>``: fname's then sname's battle count in the game (section 7.3 rule 2)."""
    return f"<{int(first_battles)} {int(second_battles)}>"


def priority_line(first: str, second: str) -> str | None:
    """``[a_v,b_v]`` asking the client to fight this pair next, or None if it could not read it."""
    if not (priority_safe(first) and priority_safe(second)):
        return None
    return f"[{to_key(first)},{to_key(second)}]"


def accepted(first: str, second: str, game: str, counts: tuple[int, int], priority: str | None) -> str:
    """The answer to a stored upload."""
    lines = [priority] if priority else []
    lines.append(counts_line(*counts))
    lines.append(plain(f"OK. {first} vs {second} received for {game}"))
    return "\n".join(lines) + "\n"


def held(first: str, second: str, game: str, counts: tuple[int, int], reason: str) -> str:
    """The answer to a stored upload held for review (rumble/ingest/plausibility.py): the client is done
    with it (``OK``), and told why it does not count yet."""
    return (
        counts_line(*counts)
        + "\n"
        + plain(f"OK. {first} vs {second} received for {game}, held for review: {reason}")
        + "\n"
    )


def duplicate(first: str, second: str, game: str, counts: tuple[int, int]) -> str:
    """The answer to a result already stored (a retry): acknowledged, not counted again."""
    return (
        counts_line(*counts)
        + "\n"
        + plain(f"OK. {first} vs {second} for {game} was already received; not counted again")
        + "\n"
    )


def refused(reason: str) -> str:
    """A refusal for good: the ``OK`` makes the client drop the result instead of resending it."""
    return plain(f"OK. ERROR: {reason}") + "\n"


class Kind(StrEnum):
    """What became of an upload."""

    ACCEPTED = "accepted"  # stored and counted
    DUPLICATE = "duplicate"  # a repeat of a stored result: acknowledged, not counted again
    HELD = "held"  # stored, held for review (rumble/ingest/plausibility.py), not counted yet
    REFUSED = "refused"  # refused for good: the client drops it
    ERROR = "error"  # the server failed (a 500): the client sends it again later


@dataclass(frozen=True)
class UploadOutcome:
    """One upload's outcome, as the upload endpoint decides it: ``render`` makes the client's answer
    from it, and the upload statistics count it."""

    kind: Kind
    game: str = ""
    first: str = ""
    second: str = ""
    counts: tuple[int, int] | None = None  # the two bots' battle counts after the upload
    reason: str = ""  # why it was refused, held, or failed
    priority: tuple[str, str] | None = None  # the priority battle handed out with the answer


def render(outcome: UploadOutcome) -> str:
    """The answer text for ``outcome`` (a server error has none: it is answered with a 500)."""
    first, second, game, counts = outcome.first, outcome.second, outcome.game, outcome.counts
    if outcome.kind is Kind.ACCEPTED:
        assert counts is not None
        return accepted(first, second, game, counts, priority_line(*outcome.priority) if outcome.priority else None)
    if outcome.kind is Kind.HELD:
        assert counts is not None
        return held(first, second, game, counts, outcome.reason)
    if outcome.kind is Kind.DUPLICATE:
        assert counts is not None
        return duplicate(first, second, game, counts)
    if outcome.kind is Kind.REFUSED:
        return refused(outcome.reason)
    raise ValueError(f"no answer text for a {outcome.kind.value} outcome")
