"""Requests served in a worker's main thread, each as a greenlet (a *task*) that the worker's event
loop suspends while it waits and resumes when what it waits for is ready.

``rumble serve``'s worker (rumble.server.serving) answers a whole upload this way: the upload is read,
checked and sent to the writer process (rumble.server.single_writer) in the main thread, the task
is suspended until the writer's answer arrives on the worker's one connection to it, and the answer
is then written by the same task. A pool thread would instead be handed the request, block in a
``recv`` for the writer's answer, be woken and take the interpreter lock back, then hand the
connection back to the main thread: four wake-ups per upload where a task needs two, and two
threads of one process contending for the lock. Everything else (pages, exports, long or chunked
bodies, TLS) is still served by the pool's threads, which may block.

A task must never block the main thread: while it runs, the worker reads, accepts and answers
nothing else. What it waits for goes through the ``Loop``: a socket watched by the worker's
poller, work sent to a pool thread, a check run every turn of the loop. A task is resumed only
from the loop itself (the main greenlet), never from another task.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any, Protocol

from greenlet import getcurrent, greenlet


class Loop(Protocol):
    """What a worker's event loop offers its tasks (rumble.server.serving.DeadlineThreadWorker implements it)."""

    def watch(self, sock: socket.socket, ready: Callable[[], None], writing: bool) -> None:
        """Call ``ready()`` in the loop when ``sock`` can be read, and also written if ``writing``
        (registers ``sock``, or changes what it is watched for)."""

    def unwatch(self, sock: socket.socket) -> None:
        """Stop watching ``sock``."""

    def soon(self, call: Callable[[], None]) -> None:
        """Call ``call()`` in the loop at its next turn (safe from any thread or task)."""

    def in_thread(self, call: Callable[[], None]) -> None:
        """Run ``call()`` in one of the worker's pool threads (work that may block)."""

    def every_turn(self, call: Callable[[float], bool]) -> None:
        """Call ``call(monotonic_now)`` at every turn of the loop (at least once a second) for as
        long as it returns True."""

    def decline(self, seconds: float) -> None:
        """Serve no request in the main thread for ``seconds`` (what it waits for cannot be had)."""


class Task(greenlet):
    """One request served in the main thread; ``loop`` is the loop that runs it."""

    def __init__(self, run: Callable[[], Any], loop: Loop) -> None:
        super().__init__(run)
        self.loop = loop


def current_loop() -> Loop | None:
    """The loop running the calling task, or None outside a task (a pool thread, a test, a script)."""
    return getattr(getcurrent(), "loop", None)


def current_task() -> Task:
    """The calling task (a RuntimeError outside one)."""
    task = getcurrent()
    if not isinstance(task, Task):
        raise RuntimeError("not in a task of a worker's main thread")
    return task


def suspend() -> Any:
    """Suspend the calling task until the loop resumes it (``task.switch(value)``); return ``value``."""
    return current_task().parent.switch()
