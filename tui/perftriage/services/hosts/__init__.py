"""The hosts a cockpit reaches (registry) and a Fleet host joining over SSH (dig_in)."""
