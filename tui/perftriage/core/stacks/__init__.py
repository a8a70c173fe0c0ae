"""Python stacks of a running engine, sampled by py-spy (the ``stacks`` probe):
py-spy's output read into samples (:mod:`.folded`), summarised per process
and thread into top frames by self and inclusive share, idle and GIL shares
(:mod:`.summary`), and two samples compared (:mod:`.compare`).

Pure and Textual-free: the probe kind, the Stacks view, the report and the
triage all read the same :class:`~.summary.StacksSummary`."""
