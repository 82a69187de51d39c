"""End-to-end tests (a package so that its conftest does not take the module name ``conftest``,
which the other test directories import ``battle`` from)."""
