"""A decode stand-in that idles the GPU between small kernels (run on a real GPU).

    python3 idle_decode_standin.py WEIGHTS_GB SECONDS LOG

Every token reads all weights once, one layer (an 8192x8192 bf16 GEMV, tens
of microseconds) at a time. Phase 'busy' (the first 40 %) launches the layers
back to back; phase 'idle' sleeps on the host after every layer (like a
launch-bound or host-stalled decode loop), so the GPU idles between kernels
while each kernel still reads only the bytes a token needs: the traffic per
token stays ~1x, the memory's idle share rises. Logs SGLang-style decode
lines once a second; prints its own figures (phase, tokens/s, the share of
wall time the kernels ran) on stdout.
"""
import datetime
import sys
import time

import torch

weights_gb, seconds, log_path = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
SLEEP_S = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0003
log = open(log_path, "a", buffering=1)


def say(msg):
    log.write(f"[{datetime.datetime.now():%Y-%m-%d %H:%M:%S} TP0] {msg}\n")


n = 8192
layers = max(1, int(weights_gb * 1e9 // (n * n * 2)))
say(f"Load weight begin. avail mem={torch.cuda.mem_get_info()[0] / 2**30:.2f} GB")
W = [torch.randn(n, n, device="cuda", dtype=torch.bfloat16) for _ in range(layers)]
x = torch.randn(n, device="cuda", dtype=torch.bfloat16)
nbytes = layers * n * n * 2
say(f"Load weight end. type=StandInForCausalLM, dtype=torch.bfloat16, weights={nbytes / 1e9:.2f} GB")
say("The server is fired up and ready to roll!")
t_end = time.time() + seconds
switch = time.time() + seconds * 0.4
toks, t0, gpu_ms = 0, time.time(), 0.0
start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
while time.time() < t_end:
    idle = time.time() >= switch
    start.record()
    for w in W:
        y = torch.mv(w, x)
        if idle:
            torch.cuda.synchronize()  # the host waits for the kernel, then stalls
            time.sleep(SLEEP_S)
    stop.record()
    torch.cuda.synchronize()
    toks += 1
    if not idle:
        gpu_ms += start.elapsed_time(stop)
    if time.time() - t0 >= 1.0:
        dt = time.time() - t0
        tps = toks / dt
        say(f"Decode batch, #running-req: 1, #token: {toks}, token usage: 0.01, cuda graph: False, "
            f"gen throughput (token/s): {tps:.2f}, #queue-req: 0")
        print(f"phase={'idle' if idle else 'busy'} tps={tps:.2f} ms_per_token={1000 / tps:.3f} "
              f"useful_TBps={nbytes * tps / 1e12:.3f}"
              + ("" if idle else f" kernel_share={gpu_ms / 1000 / dt:.3f}"), flush=True)
        toks, t0, gpu_ms = 0, time.time(), 0.0
say("Shutting down.")
