"""Settings: defaults, RUMBLE_* environment variables, then what a test or the CLI passes."""

from __future__ import annotations

import pytest

from rumble import settings


def test_database_path_defaults_to_the_xdg_data_directory():
    values = settings.load(environ={"XDG_DATA_HOME": "/data"})
    assert values["DB"] == "/data/rumble/rumble.db"


def test_environment_variables_override_defaults_and_are_parsed():
    values = settings.load(
        environ={
            "RUMBLE_DB": "/srv/r.db",
            "RUMBLE_ACCEPTED_CLIENTS": "1.9.3.9, 1.10.3",
            "RUMBLE_MAX_BATTLE_AGE_HOURS": "12",
        }
    )
    assert values["DB"] == "/srv/r.db"
    assert values["ACCEPTED_CLIENTS"] == ("1.9.3.9", "1.10.3")
    assert values["MAX_BATTLE_AGE_HOURS"] == 12.0


def test_overrides_beat_the_environment_and_unknown_names_are_refused():
    assert settings.load({"DB": "/a.db"}, environ={"RUMBLE_DB": "/b.db"})["DB"] == "/a.db"
    with pytest.raises(KeyError, match="NOT_A_SETTING"):
        settings.load({"NOT_A_SETTING": 1}, environ={})


def test_accepted_clients_include_the_debian_client_by_default():
    assert "1.9.3.9" in settings.load(environ={})["ACCEPTED_CLIENTS"]
