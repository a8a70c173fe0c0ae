"""Every kind of source comes from one factory shape, ``(config, registry,
session) -> Iterable[Source]``, listed once (services/sources/); the cockpit
starts exactly what they give, and nothing when nothing is configured."""

from __future__ import annotations

from perftriage.core.store.config import Config, parse
from perftriage.services.hosts.registry import build_registry
from perftriage.services.investigation.session import Session
from perftriage.services.sources.factories import SOURCE_KINDS

CONFIG = """
[ui]
sample_interval = 0.5

[fleet]
prometheus = "http://127.0.0.1:9"

[[hosts]]
name = "gpu1"
ssh = "me@127.0.0.1"
metrics_url = "http://127.0.0.1:30000/metrics"
"""


def _names(config: Config) -> list[str]:
    registry, session = build_registry(config), Session()
    return [s.name for kind in SOURCE_KINDS for s in kind.start(config, registry, session)]


def test_the_factories_give_every_configured_source_in_start_order() -> None:
    assert _names(parse(CONFIG)) == [
        "sampler:localhost", "sampler:gpu1", "connection:gpu1",  # hosts pane
        "gpm:localhost", "gpm:gpu1", "gap", "checks",  # bandwidth counters, live gap, hypotheses' checks
        "engine:gpu1", "fleet",  # engine /metrics, Prometheus
    ]


def test_with_nothing_configured_only_localhost_is_watched() -> None:
    assert _names(Config()) == ["sampler:localhost", "gpm:localhost", "gap", "checks"]


def test_the_sampling_period_comes_from_the_config_the_cockpit_hands_over() -> None:
    from perftriage.services.cockpit import Cockpit

    cockpit = Cockpit(parse(CONFIG), sample_interval=0.25)
    assert cockpit.sample_interval == cockpit.config.ui.sample_interval == 0.25
    sampler = next(iter(SOURCE_KINDS[0].start(cockpit.config, cockpit.registry, cockpit.session)))
    assert sampler.name == "sampler:localhost" and sampler.interval == 0.25
