"""Answer lines the client can read (protocol.md 7.3) and the ratings-file name form."""

from __future__ import annotations

import re

import pytest

from rumble.protocol import names, replies


def test_accepted_answer_has_priority_counts_and_ok_on_separate_lines():
    text = replies.accepted("sample.Corners 1.0", "sample.RamFire 1.0", "roborumble", (12, 7), "[a.B_1.0,c.D_2]")
    assert text == "[a.B_1.0,c.D_2]\n<12 7>\nOK. sample.Corners 1.0 vs sample.RamFire 1.0 received for roborumble\n"


def _client_reads(line: str) -> str:
    """How the client classifies a line (protocol.md 7.3, first match wins)."""
    if "OK" in line:
        return "ok"
    if "<" in line and ">" in line:
        return "counts"
    if "[" in line and "]" in line:
        return "priority"
    return "print"


def test_refusal_is_one_ok_line_and_never_looks_like_counts_or_priority():
    text = replies.refused("bad <name> [x]\nsecond line")
    assert text.count("\n") == 1
    assert _client_reads(text.strip()) == "ok"
    assert not re.search(r"[<>\[\]]", text)


def test_counts_line_has_exactly_two_numbers():
    line = replies.counts_line(3, 4)
    assert line == "<3 4>"
    parts = line.replace("<", "").replace(">", "").split(" ")
    assert [float(p) for p in parts] == [3.0, 4.0]


def test_priority_line_round_trips_through_the_clients_rule():
    """The client drops the brackets, splits on ',' and turns each item's last '_' into a space."""
    line = replies.priority_line("dcs.Eater_of_Worlds_Mini 1.0", "sample.SpinBot 1.2.3")
    items = line[1:-1].split(",")
    back = [item[: item.rindex("_")] + " " + item[item.rindex("_") + 1 :] for item in items[:2]]
    assert back == ["dcs.Eater_of_Worlds_Mini 1.0", "sample.SpinBot 1.2.3"]


def test_no_priority_line_for_a_version_with_an_underscore():
    assert replies.priority_line("pkg.Bot 1_0", "sample.SpinBot 1.2.3") is None


def test_answers_are_ascii():
    assert replies.refused("user Zoë Ł").isascii()


def test_key_candidates_try_each_underscore_last_first():
    assert names.key_candidates("dcs.Eater_of_Worlds_Mini_1.0") == [
        "dcs.Eater_of_Worlds_Mini 1.0",
        "dcs.Eater_of_Worlds Mini_1.0",
        "dcs.Eater_of Worlds_Mini_1.0",
        "dcs.Eater of_Worlds_Mini_1.0",
    ]
    assert names.key_candidates("nounderscore") == []


def test_split_name():
    assert names.split_name("jk.mega.DrussGT 3.1.7") == ("jk.mega", "DrussGT", "3.1.7")
    assert names.to_key("jk.mega.DrussGT 3.1.7") == "jk.mega.DrussGT_3.1.7"


@pytest.mark.parametrize("name", ["sample.Walls 0.9b", "jk.mega.DrussGT 3.1.7", "a.bc 1", "x.Y 1.0-beta_2"])
def test_valid_names(name):
    assert names.check_name(name, "fname") == name


def test_each_upload_outcome_renders_as_the_answer_the_client_reads():
    """The upload view decides an outcome; ``render`` writes it in the protocol's words (7.3)."""
    a, b = "sample.Corners 1.0", "sample.RamFire 1.0"
    Kind, Outcome = replies.Kind, replies.UploadOutcome
    accepted = Outcome(Kind.ACCEPTED, "roborumble", a, b, (12, 7), priority=("a.B 1.0", "c.D 2"))
    assert (
        replies.render(accepted)
        == "[a.B_1.0,c.D_2]\n<12 7>\nOK. sample.Corners 1.0 vs sample.RamFire 1.0 received for roborumble\n"
    )
    assert (
        replies.render(Outcome(Kind.ACCEPTED, "roborumble", a, b, (1, 1)))
        == "<1 1>\nOK. sample.Corners 1.0 vs sample.RamFire 1.0 received for roborumble\n"
    )
    held = Outcome(Kind.HELD, "roborumble", a, b, (1, 1), reason="bullet damage above the score")
    assert (
        replies.render(held)
        == "<1 1>\nOK. sample.Corners 1.0 vs sample.RamFire 1.0 received for roborumble, held for review: bullet damage above the score\n"
    )
    duplicate = Outcome(Kind.DUPLICATE, "minirumble", a, b, (3, 4))
    assert (
        replies.render(duplicate)
        == "<3 4>\nOK. sample.Corners 1.0 vs sample.RamFire 1.0 for minirumble was already received; not counted again\n"
    )
    assert replies.render(Outcome(Kind.REFUSED, reason="unknown game 'x'")) == "OK. ERROR: unknown game 'x'\n"
    with pytest.raises(ValueError):
        replies.render(Outcome(Kind.ERROR, reason="server error (OSError)"))
