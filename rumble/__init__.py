"""rumble: a RoboRumble-style competition server.

Only the version lives here, so that importing ``rumble.rankings`` or ``rumble.protocol``
never loads Flask or the database layer.
"""

__version__ = "0.1.0"
