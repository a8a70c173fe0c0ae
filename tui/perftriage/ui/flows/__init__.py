"""Controllers for multi-step actions (launch a probe, start a server,
hypothesis edits): they push the dialogs and act on the answers; they are
not screens themselves."""
