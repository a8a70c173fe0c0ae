"""The probe queue: typed probes run over the hosts' transports."""
