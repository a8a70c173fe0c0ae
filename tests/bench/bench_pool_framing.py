"""What the #12 pool changes cost per command: ``python -m tests.bench.bench_pool_framing [-n 300]``.

Each pooled command now also forks a watchdog subshell (it reads the
shell's stdin and kills the command's group at EOF: no orphan when the
connection drops) and is reaped before the end of the frame. Baseline: the
pool script before #12, on a second transport to the same loopback sshd,
sampled in turn with the current one so both share the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from tests.bench.table import print_table
from tests.support.sshd import SshServer
from perftriage.transport import ssh as ssh_module
from perftriage.transport.ssh import SSHTransport

# the pool before #12: no watchdog, framing variables visible to the command
POOL_SCRIPT_BEFORE = r"""set -m
exec 3>&2 2>/dev/null
__pt_r=$2
{ eval "$1"; } </dev/null 2>&3 3>&-
printf '%s R %s\n' "$__pt_r" "$?"; printf '%s R\n' "$__pt_r" >&3
while IFS= read -r -d '' __pt_m && IFS= read -r -d '' __pt_c; do
  { eval "$__pt_c"; } </dev/null 2>&3 3>&- & __pt_p=$!
  printf '%s P %s\n' "$__pt_m" "$__pt_p"
  wait "$__pt_p"; __pt_s=$?
  kill -KILL -- "-$__pt_p"
  printf '%s X %s\n' "$__pt_m" "$__pt_s"; printf '%s E\n' "$__pt_m" >&3
done
"""


async def warm(t: SSHTransport) -> None:
    for _ in range(5):
        r = await t.run("true")
        assert r.exit_status == 0, r


async def bench(n: int) -> list[tuple[str, str, str]]:
    root = Path(tempfile.mkdtemp(prefix="bench_pool_"))
    home = root / "home"
    home.mkdir()
    server = SshServer(root / "sshd", env={"HOME": str(home)}).start()  # no pyenv init per login
    now = SSHTransport("now", server.alias, ssh_config=server.ssh_config, pool_size=1)
    before = SSHTransport("before", server.alias, ssh_config=server.ssh_config, pool_size=1)
    try:
        await warm(now)
        current = ssh_module.POOL_SCRIPT
        ssh_module.POOL_SCRIPT = POOL_SCRIPT_BEFORE  # only while `before` opens its shell
        try:
            await warm(before)
        finally:
            ssh_module.POOL_SCRIPT = current
        samples: dict[str, list[float]] = {"before": [], "now": []}
        for _ in range(n):
            for name, t in (("before", before), ("now", now)):
                t0 = time.perf_counter()
                await t.run("true")
                samples[name].append((time.perf_counter() - t0) * 1000)
        b, c = (statistics.median(samples[k]) for k in ("before", "now"))
        return [
            ("pool before #12 (baseline), `run(\"true\")`", f"{b:.2f}", ""),
            ("pool with watchdog + unset framing vars", f"{c:.2f}", f"+{c - b:.2f} ms per command"),
        ]
    finally:
        await now.close()
        await before.close()
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=300)
    args = ap.parse_args()
    rows = asyncio.run(bench(args.n))
    print_table(f"shell pool, one warm loopback host, medians of {args.n} (interleaved)",
                "median ms", rows)


if __name__ == "__main__":
    main()
