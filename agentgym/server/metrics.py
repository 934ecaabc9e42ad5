"""Counters and latency histograms of the env server, rendered in the Prometheus text format."""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict

__all__ = ["ServerMetrics", "LATENCY_BUCKETS_S"]

LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class ServerMetrics:
    """What ``GET /metrics`` reports. Updated on the event loop thread only, so no locks."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, int]] = Counter()
        self._buckets: dict[str, list[int]] = defaultdict(lambda: [0] * (len(LATENCY_BUCKETS_S) + 1))
        self._latency_sum: Counter[str] = Counter()
        self.sessions_created = 0
        self.sessions_closed: Counter[str] = Counter()
        """By reason: ``client``, ``ttl``, ``timeout``, ``shutdown``."""
        self.steps = 0
        self.resets = 0
        self.replayed = 0
        """Retried calls answered from the stored reply."""

    def observe(self, route: str, status: int, seconds: float) -> None:
        self.requests[route, status] += 1
        self._buckets[route][bisect.bisect_left(LATENCY_BUCKETS_S, seconds)] += 1
        self._latency_sum[route] += seconds

    def render(self, active_sessions: int, max_sessions: int) -> str:
        lines = [
            "# HELP agentgym_sessions_active Open env sessions.", "# TYPE agentgym_sessions_active gauge",
            f"agentgym_sessions_active {active_sessions}",
            "# HELP agentgym_sessions_max The server's session limit.", "# TYPE agentgym_sessions_max gauge",
            f"agentgym_sessions_max {max_sessions}",
            "# HELP agentgym_sessions_created_total Sessions created.",
            "# TYPE agentgym_sessions_created_total counter",
            f"agentgym_sessions_created_total {self.sessions_created}",
            "# HELP agentgym_sessions_closed_total Sessions closed, by reason.",
            "# TYPE agentgym_sessions_closed_total counter",
            *(f'agentgym_sessions_closed_total{{reason="{r}"}} {n}' for r, n in sorted(self.sessions_closed.items())),
            "# HELP agentgym_steps_total Env steps taken.", "# TYPE agentgym_steps_total counter",
            f"agentgym_steps_total {self.steps}",
            "# HELP agentgym_resets_total Env resets.", "# TYPE agentgym_resets_total counter",
            f"agentgym_resets_total {self.resets}",
            "# HELP agentgym_replayed_total Retried calls answered with the stored reply.",
            "# TYPE agentgym_replayed_total counter", f"agentgym_replayed_total {self.replayed}",
            "# HELP agentgym_requests_total HTTP requests, by route and status.",
            "# TYPE agentgym_requests_total counter",
            *(f'agentgym_requests_total{{route="{route}",status="{status}"}} {n}'
              for (route, status), n in sorted(self.requests.items())),
        ]
        return "\n".join(lines + self._histograms()) + "\n"

    def _histograms(self) -> list[str]:
        lines = ["# HELP agentgym_request_seconds Request latency, by route.",
                 "# TYPE agentgym_request_seconds histogram"]
        for route, counts in sorted(self._buckets.items()):
            cumulative = 0
            for bound, count in zip((*LATENCY_BUCKETS_S, "+Inf"), counts):
                cumulative += count
                lines.append(f'agentgym_request_seconds_bucket{{route="{route}",le="{bound}"}} {cumulative}')
            lines.append(f'agentgym_request_seconds_sum{{route="{route}"}} {self._latency_sum[route]:.6f}')
            lines.append(f'agentgym_request_seconds_count{{route="{route}"}} {cumulative}')
        return lines
