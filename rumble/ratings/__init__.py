"""Online rating systems, updated after each battle: pure functions over floats and numpy arrays."""
