"""The exact text the client understands in an answer (protocol.md section 7.3).

The client reads an answer line by line: a line containing ``OK`` marks the upload accepted;
otherwise a line with ``<`` and ``>`` is a battle-count line and one with ``[`` and ``]`` a
priority battle, and a malformed one of those kills the client. So free text never carries
those brackets, and counts and priorities are only ever made here.
"""

from __future__ import annotations

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
    """The answer to a stored upload held for review (rumble/plausibility.py): the client is done
    with it (``OK``), and told why it does not count yet."""
    return counts_line(*counts) + "\n" + plain(f"OK. {first} vs {second} received for {game}, held for review: {reason}") + "\n"


def duplicate(first: str, second: str, game: str, counts: tuple[int, int]) -> str:
    """The answer to a result already stored (a retry): acknowledged, not counted again."""
    return counts_line(*counts) + "\n" + plain(f"OK. {first} vs {second} for {game} was already received; not counted again") + "\n"


def refused(reason: str) -> str:
    """A refusal for good: the ``OK`` makes the client drop the result instead of resending it."""
    return plain(f"OK. ERROR: {reason}") + "\n"
