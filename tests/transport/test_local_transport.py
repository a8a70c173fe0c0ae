import asyncio

from perftriage.transport.local import LocalTransport

from tests.support.helpers import alive


async def test_run_captures_status_and_streams():
    r = await LocalTransport().run("echo out; echo err >&2; exit 3")
    assert (r.exit_status, r.stdout, r.stderr, r.timed_out) == (3, "out\n", "err\n", False)
    assert r.duration_s >= 0


async def test_run_timeout_kills_the_child(tmp_path):
    pidfile = tmp_path / "pid"
    r = await LocalTransport().run(f"sleep 30 & echo $! > {pidfile}; wait", timeout=0.3)
    assert r.timed_out and r.exit_status is None
    pid = int(pidfile.read_text())
    await asyncio.sleep(0.1)
    assert not alive(pid)


async def test_stream_batches_and_lines():
    n = 0
    batches = 0
    async for batch in LocalTransport().stream_batches("seq 1 50000"):
        n += len(batch)
        batches += 1
    assert n == 50000 and batches < 50000 / 10  # read in chunks, not per line
    lines = [line async for line in LocalTransport().stream("printf 'a\\nb\\nno-newline'")]
    assert lines == ["a", "b", "no-newline"]


async def test_cancelling_a_stream_kills_the_process(tmp_path):
    pidfile = tmp_path / "pid"
    t = LocalTransport()

    async def follow():
        async for _ in t.stream(f"echo $$ > {pidfile}; exec tail -f /dev/null"):
            pass

    task = asyncio.create_task(follow())
    for _ in range(100):
        if pidfile.exists() and pidfile.read_text().strip():
            break
        await asyncio.sleep(0.02)
    pid = int(pidfile.read_text())
    assert alive(pid)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await asyncio.sleep(0.1)
    assert not alive(pid)


async def test_preamble_wraps_commands():
    r = await LocalTransport(preamble="export PT_X=42").run("echo $PT_X")
    assert r.stdout == "42\n"
