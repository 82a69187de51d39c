"""Whole numbers typed by people into a URL, a form or a command line: one strict parser for every
page, API parameter and admin field, so that none can answer a 500 for input that ``int()`` either
refuses or takes unexpectedly.

``str.isdigit()`` is true for '²' (which ``int()`` refuses) and for '٣' (which ``int()`` reads as 3);
``int()`` also takes ' 7', '+7' and '1_000', and refuses more than 4,300 digits. Here a whole number
is ASCII digits only, and its bounds are checked before it is converted.

>>> whole_number("42", "page", 1, 1000)
42
>>> whole_number("²", "page", 1, 1000)
Traceback (most recent call last):
...
rumble.parameters.ParameterError: page must be a whole number from 1 to 1000, not '²'
"""

from __future__ import annotations

MAX_PAGE = 1_000_000  # far past the last page of any rumble's table, so never a real limit
SHOWN = 20  # characters of a refused value repeated in the answer


class ParameterError(ValueError):
    """A parameter is not a whole number within its bounds: the message names it and says why."""


def shown(text: str) -> str:
    """``text`` as a refusal repeats it: quoted, and cut after SHOWN characters."""
    return repr(text[:SHOWN]) + ("..." if len(text) > SHOWN else "")


def whole_number(text: str, name: str, least: int, most: int) -> int:
    """``text`` as an int from ``least`` to ``most``: ASCII digits only (leading zeros allowed),
    else ParameterError naming ``name``."""
    significant = text.lstrip("0") or "0"
    # The length test first: it keeps int() away from thousands of digits.
    if not (
        text.isascii() and text.isdigit() and len(significant) <= len(str(most)) and least <= int(significant) <= most
    ):
        raise ParameterError(f"{name} must be a whole number from {least} to {most}, not {shown(text)}")
    return int(significant)
