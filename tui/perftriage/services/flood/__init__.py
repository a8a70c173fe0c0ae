"""Log floods parsed off the app's thread: the helper process, its worker and
the pipe that emits the batches in order."""
