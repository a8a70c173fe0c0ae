"""Profile captures from a running server and their summaries (in a child process)."""
