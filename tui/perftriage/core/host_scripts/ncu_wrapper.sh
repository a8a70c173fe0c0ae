#!/bin/sh
# The ncu probe's host script (perftriage/core/probe_kinds/ncu_kind.py sends
# it as text: sh -c SCRIPT perftriage-ncu PYTHON DEADLINE FOLD_SOURCE MARK NCU-ARGS...).
# POSIX sh; every argument is data (quoted by the sender), never evaluated.
#
# ncu stays in the probe's process group (timeout --foreground), so the
# transport's kill of that group reaches it and the command; the temporary
# directory goes on exit, INT, TERM and HUP, and a kill -9 leaves it to the
# next run's sweep of this probe's own directories older than a day.
# The run's nonce comes first on stdin (never in an argv or environment the
# profiled command could read); the command gets /dev/null. The result line is
# marked with the nonce (ProbeKind.nonce): whatever the command prints, it
# cannot print the result.
set -f
py=$1 deadline=$2 src=$3 mark=$4; shift 4
IFS= read -r nonce || nonce=
exec </dev/null
case $nonce in ''|*[!0-9a-f]*) echo 'perftriage ncu: no run nonce on stdin' >&2; exit 2;; esac
mark=$mark$nonce
ncu=$(command -v ncu 2>/dev/null)
if [ -z "$ncu" ] && [ -x /usr/local/cuda/bin/ncu ]; then ncu=/usr/local/cuda/bin/ncu; fi
if [ -z "$ncu" ]; then printf '\n%s{"missing": "ncu"}\n' "$mark"; exit 127; fi
tmp=${TMPDIR:-/tmp}
if command -v find >/dev/null 2>&1; then
  find "$tmp" -maxdepth 1 -type d -name 'perftriage-ncu.*' -user "$(id -u)" -mmin +1440 \
    -exec rm -rf -- {} + 2>/dev/null
fi
# the traps before the dir: a signal right after mktemp finds them set
d=
trap '[ -z "$d" ] || rm -rf "$d"' EXIT
trap 'exit 143' INT TERM HUP
d=$(mktemp -d "$tmp/perftriage-ncu.XXXXXX") || exit 1
if [ "$deadline" -gt 0 ] && command -v timeout >/dev/null 2>&1; then
  fg=--foreground
  timeout --foreground 1 true 2>/dev/null || fg=
  timeout $fg -k 10 "$deadline" "$ncu" --log-file "$d/ncu.csv" "$@"
else
  "$ncu" --log-file "$d/ncu.csv" "$@"
fi
rc=$?
gpus=$(nvidia-smi --query-gpu=index,name --format=csv,noheader 2>/dev/null)
printf '%s\n' "$mark" | "$py" -c "$src" --fold-json "$d/ncu.csv" - "$gpus"
exit $rc
