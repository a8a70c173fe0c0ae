"""Before/after in the cockpit: the baseline (``b``) and the live state against it."""
