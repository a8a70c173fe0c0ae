"""Sources: long-running readers that turn what hosts, logs, servers and
Prometheus say into events (:mod:`.base`: the Source protocol and the set a
cockpit runs). :mod:`.factories` lists every kind the cockpit starts."""
