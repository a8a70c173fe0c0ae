"""``perftriage metrics LOGFILE... [--json | --csv]``: throughput records from
SGLang / vLLM logs, one per metric line, in file order (headless, no Textual)."""

from __future__ import annotations

import csv
import sys

import click

from perftriage.cli.json_out import json_text
from perftriage.core.sanitize import visible
from perftriage.core.parse.logparse import iter_metrics, token_latency

FIELDS = (
    "source",
    "line",
    "ts",
    "engine",
    "kind",
    "gen_tps",
    "input_tps",
    "running",
    "queued",
    "token_usage",
    "spec_accept_len",
    "cache_hit_rate",
    "preemptions",
    "engine_index",
    "engine_read_gbs",
    "new_tokens",
    "cached_tokens",
)


def records(path: str):
    with open(path, encoding="utf-8", errors="replace") as fh:
        for metric in iter_metrics(fh):
            yield metric.record(path)


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


@click.command(name="metrics")
@click.argument("logfiles", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True,
              help="JSON Lines: one JSON object per metric line (streams; `jq -s` makes a list).")
@click.option("--csv", "as_csv", is_flag=True, help="CSV with a header row.")
def command(logfiles: tuple[str, ...], as_json: bool, as_csv: bool) -> None:
    """Extract throughput metrics from SGLang/vLLM server logs.

    One record per metric line (SGLang "Decode batch" / "Prefill batch",
    vLLM "Avg prompt throughput ..."), in order, with the fields
    source, line, ts (as logged), engine (sglang|vllm), kind
    (decode|prefill|stats|spec|mfu), gen_tps, input_tps, running, queued,
    token_usage (a fraction 0..1; vLLM's percent is divided by 100),
    spec_accept_len (tokens per step with speculative decoding),
    cache_hit_rate (0..1), preemptions, engine_index (vLLM "Engine NNN",
    SGLang's DP rank: data-parallel engines, one record each),
    engine_read_gbs (the engine's own estimate of read GB/s per GPU; vLLM's
    "MFU:" line gives read + write), new_tokens and cached_tokens (prefill).
    Missing values are null (JSON), empty (CSV) or "-" (table).

    --json writes JSON Lines (one object per line), friendly to streaming
    and to `jq`; --csv writes CSV; the default is a readable table.
    Lines that are not metrics are skipped, never an error.
    """
    if as_json and as_csv:
        raise click.UsageError("choose one of --json and --csv")
    out = sys.stdout
    if as_csv:
        writer = csv.DictWriter(out, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        for path in logfiles:
            for rec in records(path):
                writer.writerow({k: ("" if v is None else v) for k, v in rec.items()})
        return
    if as_json:
        for path in logfiles:
            for rec in records(path):
                out.write(json_text(rec) + "\n")
        return
    header = ("source", "line", "ts", "engine", "kind", "gen tok/s", "in tok/s",
              "run", "queue", "usage", "ms/tok per request")
    rows = [header]
    for path in logfiles:
        for rec in records(path):
            gen = rec["gen_tps"]
            # 1000 / gen_tps is a token of the whole batch: each of ``running`` requests
            # waits ``running`` times that for its next token (at 509 running, 64 ms, never
            # "0.13 ms/tok@bs1"); with speculative decoding a step yields accept_len tokens:
            # ms per step, said so
            ms, label = token_latency(gen, rec["running"], rec["spec_accept_len"])
            rows.append((rec["source"], _fmt(rec["line"]), rec["ts"], rec["engine"], rec["kind"],
                         _fmt(gen), _fmt(rec["input_tps"]), _fmt(rec["running"]),
                         _fmt(rec["queued"]), _fmt(rec["token_usage"]),
                         "-" if ms is None else f"{ms:.2f}" + (" /step" if "step" in label else "")
                         + " @bs" + label.rsplit("@bs", 1)[-1]))
    if len(rows) == 1:
        click.echo("no metric lines found", err=True)
        return
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(header))]
    for r in rows:
        click.echo(visible("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()))
