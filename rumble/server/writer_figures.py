"""The writer process's figures for /metrics: a prometheus_client collector reading its ``Pulse``
(memory the server's processes share), so that every worker answers the same figures."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from rumble.server.single_writer import Pulse


class WriterFigures(Collector):
    """``rumble_writer_*``: whether the writer answers, its restarts, and the groups and requests it applied."""

    def __init__(self, pulse: Pulse) -> None:
        self.pulse = pulse

    def collect(self) -> Iterable[Metric]:
        state = self.pulse.state()
        answering = GaugeMetricFamily(
            "rumble_writer_answering",
            "1 while the writer process beats (within HUNG_SECONDS), 0 while it is silent (the workers "
            "then apply uploads themselves, until the supervisor has replaced it).",
        )
        answering.add_metric([], 1 if state["state"] == "answering" else 0)
        restarts = CounterMetricFamily(
            "rumble_writer_restarts",
            "Writer processes started in place of one that ended or hung, since the server started.",
        )
        restarts.add_metric([], state["restarts"])
        groups = CounterMetricFamily(
            "rumble_writer_groups", "Groups (one transaction each) the writer processes applied."
        )
        groups.add_metric([], state["groups"])
        requests = CounterMetricFamily(
            "rumble_writer_requests", "Requests (uploads, saved counts) the writer processes applied."
        )
        requests.add_metric([], state["requests"])
        queue = GaugeMetricFamily(
            "rumble_writer_queue_depth", "Requests that were waiting for the writer when it took its latest group."
        )
        queue.add_metric([], state["queue_depth"])
        return [answering, restarts, groups, requests, queue]
