"""The fleet-wide view: many hosts' GPU and engine metrics (from Prometheus),
their robust medians and outliers, and host lists folded into node sets.

Pure logic, no I/O: :mod:`.model` (types), :mod:`perftriage.core.analysis.outliers` (median/MAD),
:mod:`.nodeset` (folding with ClusterShell), :mod:`.promql` (reading the
Prometheus HTTP API's JSON into samples).
"""
