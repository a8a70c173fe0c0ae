"""``perftriage gap``: the bandwidth counters and the log measured together."""
