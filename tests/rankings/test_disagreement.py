"""The disagreement marks of the alternative-rankings page, on rows worked out by hand."""

from __future__ import annotations

from rumble.rankings.disagreement import annotate


def row(name: str, aps: int, schulze: int | None, borda: int, vote: int) -> dict:
    return {"name": name, "aps_rank": aps, "schulze_rank": schulze, "borda_rank": borda, "vote_rank": vote}


METHODS = ["schulze", "borda", "vote"]


def test_spread_and_furthest_method_per_bot():
    [a, b, c] = annotate([row("a", 1, 3, 1, 1), row("b", 2, 1, 4, 3), row("c", 3, None, 3, 3)], METHODS)
    assert (a["spread"], a["furthest"]) == (2, "schulze")  # ranks 1, 3, 1
    assert (b["spread"], b["furthest"]) == (3, "borda")  # ranks 2, 1, 4: borda is 2 away, schulze 1
    assert (c["spread"], c["furthest"]) == (0, None)  # no Schulze rank; Borda agrees with APS


def test_a_tie_for_furthest_goes_to_the_first_method_in_table_order():
    [r] = annotate([row("a", 2, 1, 3, 2)], METHODS)
    assert r["furthest"] == "schulze"


def test_vote_is_left_out_of_the_marks():
    [r] = annotate([row("a", 1, 1, 1, 20)], METHODS)
    assert (r["spread"], r["furthest"], r["top_spread"]) == (0, None, False)


def test_the_top_spreads_are_marked_ties_included_and_never_a_spread_of_zero():
    rows = [
        row("a", 1, 6, 1, 1),
        row("b", 2, 2, 5, 1),
        row("c", 3, 1, 3, 1),
        row("d", 4, 2, 4, 1),
        row("e", 5, 5, 3, 1),
        row("f", 6, 6, 6, 1),
    ]
    marks = {r["name"]: (r["spread"], r["top_spread"]) for r in annotate(rows, METHODS)}
    # spreads 5, 3, 2, 2, 2, 0: the top three (at least 3 rows) reach down to 2, so every 2 is marked too
    assert marks == {"a": (5, True), "b": (3, True), "c": (2, True), "d": (2, True), "e": (2, True), "f": (0, False)}


def test_the_input_rows_are_not_changed():
    rows = [row("a", 1, 2, 1, 1)]
    annotate(rows, METHODS)
    assert "spread" not in rows[0]
