"""The cockpit runs each host's sampler (and an SSH host's connection) as a
Source in its list: no private task list, no duck-typed transports."""

from perftriage.services.cockpit import Cockpit
from perftriage.services.sources.samplers import ConnectionSource, host_sources
from perftriage.services.hosts.registry import HostRegistry, local_host
from perftriage.transport.base import ChecksConnection, MaintainsConnection
from perftriage.transport.local import LocalTransport

from tests.support.helpers import wait_for


async def test_local_sampler_is_a_source_the_cockpit_lists_and_stops(tmp_path):
    registry = HostRegistry()
    registry.add(local_host())
    cockpit = Cockpit(registry=registry, sessions_dir=tmp_path, sample_interval=0.1)
    await cockpit.start()
    source = cockpit.sources.get("sampler:localhost")
    assert source is not None and source.host == "localhost"
    await wait_for(lambda: cockpit.session.state.hosts["localhost"].sample is not None)
    assert source.state == "up"
    await cockpit.stop()
    assert source.state == "stopped" and len(cockpit.sources) == 0


def test_only_a_transport_that_keeps_its_connection_gets_a_connection_source(sshd):
    from perftriage.core.store.config import HostConfig
    from perftriage.services.hosts.registry import Host
    from perftriage.services.investigation.session import Session
    from perftriage.transport.ssh import SSHTransport

    assert not isinstance(LocalTransport(), MaintainsConnection)
    assert not isinstance(LocalTransport(), ChecksConnection)  # `hosts --check` runs `true`
    ssh = SSHTransport("loopback", sshd.alias, ssh_config=sshd.ssh_config)
    assert isinstance(ssh, MaintainsConnection) and isinstance(ssh, ChecksConnection)
    host = Host("loopback", HostConfig(name="loopback", ssh=sshd.alias), ssh)
    names = [s.name for s in host_sources(host, Session(), 1.0)]
    assert names == ["sampler:loopback", "connection:loopback"]
    assert isinstance(host_sources(host, Session(), 1.0)[1], ConnectionSource)
