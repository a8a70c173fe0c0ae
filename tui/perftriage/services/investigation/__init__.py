"""A named investigation and its session: the one place events enter (session),
opening and continuing one (named), playing one back (replay), following one
being written (watch), serving it to a browser (share), its report file."""
