"""perftriage: a terminal cockpit for performance investigation of GPU inference servers."""

__version__ = "0.1.0"
