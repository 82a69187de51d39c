"""The real RoboRumble client's wire format: bytes and strings in, dataclasses or text out.

Pure code: no Flask, no database. ``../shared/protocol.md`` (observed from Robocode 1.9.3.9)
is the specification.
"""

# The paths the client requests besides the participants list (protocol.md sections 5 to 7).
CLIENT_PATHS = frozenset({"/UploadedResults", "/RatingsFile", "/RemoveOldParticipant"})


class ProtocolError(ValueError):
    """A request the server refuses for good; ``str(error)`` is the reason shown to the client."""
