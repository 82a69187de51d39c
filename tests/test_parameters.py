"""The one strict whole-number parser (rumble/parameters.py) of every page, API and admin field."""

from __future__ import annotations

import doctest

import pytest

from rumble import parameters
from rumble.parameters import ParameterError, whole_number


@pytest.mark.parametrize(
    "text, least, most, expected",
    [("1", 1, 10, 1), ("10", 1, 10, 10), ("0007", 1, 10, 7), ("0", 0, 5, 0), ("000", 0, 5, 0), ("5000", 1, 5000, 5000)],
)
def test_ascii_digits_within_the_bounds_are_read(text, least, most, expected):
    assert whole_number(text, "limit", least, most) == expected


@pytest.mark.parametrize(
    "text",
    [
        "²",
        "٣",
        "１",
        "+1",
        "-1",
        " 1",
        "1 ",
        "1_0",
        "1e3",
        "1e999",
        "0x1",
        "1.0",
        "",
        "1\x00",
        "\ufffd",
        "11",
        "0",
        str(10**32),
    ],
)
def test_anything_else_is_refused_naming_the_parameter(text):
    with pytest.raises(ParameterError) as refused:
        whole_number(text, "page", 1, 10)
    quoted = repr(text[:20]) + ("..." if len(text) > 20 else "")  # a refusal repeats at most 20 characters
    assert str(refused.value) == f"page must be a whole number from 1 to 10, not {quoted}"


def test_a_long_value_is_refused_before_int_sees_it_and_shown_cut_short():
    # int() itself refuses more than 4,300 digits with a ValueError of its own; here it never gets them.
    with pytest.raises(ParameterError) as refused:
        whole_number("9" * 10240, "limit", 1, 5000)
    assert str(refused.value) == "limit must be a whole number from 1 to 5000, not '" + "9" * 20 + "'..."


def test_the_module_examples_hold():
    assert doctest.testmod(parameters).failed == 0
