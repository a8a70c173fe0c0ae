"""The followed logs (follower) and the inference servers whose logs they are."""
