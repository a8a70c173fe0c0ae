"""What a probe kind is, and the helpers the kinds share.

A :class:`ProbeKind` is everything about a kind in one value: how it builds
a remote command from its arguments and turns the result into a
:class:`Verdict`, its cockpit key and label, its usage and help (the form,
the palette, ``perftriage probe --help``), and how its answer reads
(``answer``: the lines under the summary in the output view and the CLI;
``report``: what the Markdown report adds). The kinds (the sibling modules)
import only this module; :mod:`perftriage.core.probes` collects them (one
way: nothing here knows the registry).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

# Marks the one result line a probe script prints (after anything the
# imported code itself printed on stdout).
RESULT_MARK = "@@perftriage-result@@"


class ProbeUsageError(ValueError):
    """Bad probe arguments (unknown kind, missing argument, bad URL)."""


# how a finished probe came out (a subset of the events' ProbeStatus)
VerdictStatus = Literal["ok", "failed", "error", "no-match"]


@dataclass
class Verdict:
    status: VerdictStatus
    summary: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    # text files the session keeps next to its transcript
    # (``<transcript>.probes/<probe id>/NAME``), never in the event: what the
    # bounded detail summarises (stacks: py-spy's folded stacks)
    files: dict[str, str] = field(default_factory=dict)


@dataclass
class HostContext:
    """What a probe needs to know about the host it runs on."""

    python: str = "python3"
    # the probe's limit, seconds (None: none given): a kind that runs long on
    # the host (ncu) holds its own deadline there, so nothing outlives it
    deadline_s: float | None = None
    # the host is this machine (the local transport): stacks offers perftriage's own py-spy
    local: bool = False
    # (path on the host, sha256) of a file the runner carried there for this probe
    # (ProbeKind.carries): the script checks it and runs that file
    carried: tuple[str, str] | None = None


Interpret = Callable[[list[str], int | None, str, str], Verdict]


class ProbeResult(Protocol):
    """What a kind's renderers read of a probe (the session state's
    ``ProbeState`` has it; the kinds sit below the model and never import it)."""

    @property
    def kind(self) -> str: ...
    @property
    def args(self) -> list[str]: ...
    @property
    def status(self) -> str: ...
    @property
    def detail(self) -> dict[str, Any]: ...
    @property
    def stdout(self) -> str: ...
    @property
    def stderr(self) -> str: ...


# a probe -> lines of text (no trailing newlines)
Render = Callable[[ProbeResult], list[str]]


def _split(value: str) -> list[str]:
    """Split a one-line answer like a shell would (quotes group words)."""
    try:
        return shlex.split(value)
    except ValueError as exc:
        raise ProbeUsageError(f"cannot split arguments: {exc}") from None


@dataclass
class ProbeKind:
    name: str
    usage: str
    help: str
    min_args: int
    max_args: int | None
    build: Callable[[list[str], HostContext], str]
    interpret: Interpret
    # extra validation of the arguments (raise ProbeUsageError)
    check: Callable[[list[str]], None] | None = None
    # how a one-line form answer becomes arguments (shell: the whole line)
    parse_line: Callable[[str], list[str]] = _split
    # what must be equal for two hosts' results to count as "the same"
    compare: Callable[[str, str, dict[str, Any]], Any] | None = None
    # prints a marked result line (SCRIPT_PRELUDE): framing, cut from the shown output
    result_line: bool = True
    # (args, stdout) -> stdout without the kind's own answer protocol (which:
    # a count and one +DIR/- line per name), for what users see and reports print
    framing: Callable[[list[str], str], str] | None = None
    # the cockpit's key for it (a Textual key name; None: palette only) and its
    # footer label; the binding's id is ``probe.<name>``
    key: str | None = None
    label: str = ""
    # said in the form's title after ``probe: <name>`` (shell: runs AS SHELL)
    form_note: str = ""
    # the form's first answer (stacks: ``--seconds 3``, a short record) and
    # the help said under it in place of ``help`` (empty: ``help``)
    form_value: str = ""
    form_help: str = ""
    # (the pid of a [[servers]] run on the host, the port of its engine URL) -> the
    # form's first answer on that server's own processes, and the line that says so
    # (stacks: ``--seconds 3 --port 30000``); None: the plain ``form_value``
    server_form: Callable[[int | None, int | None], tuple[str, str] | None] | None = None
    # args -> a file of this machine to carry to a remote host for the probe (stacks
    # --carry: perftriage's own py-spy), or None; the runner uploads it into a private
    # temp dir, builds the command again with HostContext.carried, removes it after
    carries: Callable[[list[str]], str | None] | None = None
    # the newest probe of this kind on the form's host -> (words the form adds, the line
    # that says why) (stacks: py-spy was not found there -> ``--carry``); None: nothing
    form_retry: Callable[[ProbeResult], tuple[str, str] | None] | None = None
    # it reads the running engine (stacks, ncu): its form offers the host a
    # ``[[servers]]`` profile runs on first, not the selected host
    engine: bool = False
    # what backs the verdict, under the summary: the output view and the CLI
    # (empty when the summary says it all)
    answer: Render | None = None
    # stdout itself is the answer (shell): the CLI prints it under the result
    # line (the output view shows every stdout anyway)
    stdout_answers: bool = False
    # what the Markdown report adds for a probe (fenced, headed
    # "**id** label on host — <report_heading>:"); empty adds nothing
    report: Render | None = None
    report_heading: str = "answer"
    # what ``perftriage probe --json`` adds beside host, kind, args, verdict, ...
    # (a kind whose issue names a JSON shape: stacks' processes and top)
    json_fields: Callable[[ProbeResult], dict[str, Any]] | None = None
    # the run slows the host's work down (ncu replays every kernel): the
    # Probes pane marks its rows, the form and the palette say so
    heavy: bool = False
    # its limit when the caller gives none (seconds; None: the runner's default)
    timeout_s: float | None = None
    # its host script reads a per-run nonce from stdin and marks its result
    # line ``RESULT_MARK + nonce`` (:func:`authentic`): what the script runs
    # (ncu's profiled command) shares its stdout and cannot forge the result
    nonce: bool = False

    def validate(self, args: list[str]) -> None:
        if len(args) < self.min_args:
            raise ProbeUsageError(f"usage: {self.usage}")
        if self.max_args is not None and len(args) > self.max_args:
            raise ProbeUsageError(f"usage: {self.usage} (too many arguments)")
        if any(not a.strip() for a in args):
            raise ProbeUsageError(f"usage: {self.usage} (empty argument)")
        for i, a in enumerate(args, 1):
            if "\0" in a:
                raise ProbeUsageError(f"argument {i} holds a NUL byte (0x00), which no "
                                      "command line can carry; remove it")
        if self.check is not None:
            self.check(args)


def python_command(ctx: HostContext, script: str, args: Sequence[str]) -> str:
    """``python -c SCRIPT ARG...`` with every word quoted. The script is a
    constant; arguments reach it only as ``sys.argv[1:]``."""
    return " ".join(
        [shlex.quote(ctx.python), "-c", shlex.quote(script), *(shlex.quote(a) for a in args)]
    )


# Prepended to every probe script: ``_emit`` prints the one marked result line
# and leaves at once: ``os._exit`` skips the interpreter teardown (atexit hooks,
# freeing every module), which after a heavy import costs more than the probe.
SCRIPT_PRELUDE = (
    "import sys, json, os\n"
    "def _emit(d, code=0):\n"
    "    d['argv'] = sys.argv[1:]\n"
    f"    sys.stdout.write('\\n{RESULT_MARK}' + json.dumps(d, default=str) + '\\n')\n"
    "    sys.stdout.flush()\n"
    "    sys.stderr.flush()\n"
    "    os._exit(code)\n"
)


def script_result(out: str) -> dict[str, Any] | None:
    """The JSON object of the marked result line, or None."""
    for line in reversed(out.splitlines()):
        if line.startswith(RESULT_MARK):
            try:
                data = json.loads(line[len(RESULT_MARK):])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


FORGED_MARK = "(not the probe's result line) "


def authentic(out: str, nonce: str) -> str:
    """``out`` as a :attr:`ProbeKind.nonce` kind reads it: the line marked
    ``RESULT_MARK + nonce`` (the host script read the nonce from stdin, where
    nothing it ran could) keeps the bare marker; any other line that starts
    with the marker (printed by the command the script ran) starts with
    :data:`FORGED_MARK` instead, so it is never taken for the result. Lines
    are split as :func:`script_result` splits them."""
    if RESULT_MARK not in out:
        return out
    mark = RESULT_MARK + nonce
    lines = out.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith(RESULT_MARK):
            lines[i] = (RESULT_MARK + line[len(mark):] if nonce and line.startswith(mark)
                        else FORGED_MARK + line[len(RESULT_MARK):])
    return "".join(lines)


def without_result(out: str) -> str:
    """``out`` without the marked result line (and the newline ``_emit`` put
    before it): the marker is framing, never output a person reads."""
    at = out.rfind("\n" + RESULT_MARK)
    if at < 0:
        if not out.startswith(RESULT_MARK):
            return out
        at = -1
    end = out.find("\n", at + 1)
    rest = out[end + 1:] if end >= 0 else ""
    return out[:max(at, 0)] + ("\n" if at > 0 and rest else "") + rest


def shown_stdout(kind: ProbeKind | None, args: list[str], out: str) -> str:
    """What of a probe's stdout a person sees: without the marked result
    line, or the kind's own answer protocol (``framing``)."""
    if kind is None or kind.result_line:
        return without_result(out)
    return kind.framing(args, out) if kind.framing is not None else out


def no_result(status: int | None, err: str) -> Verdict:
    """The script did not report: python missing, killed, or a broken preamble."""
    tail = err.strip().splitlines()[-1][:200] if err.strip() else ""
    if status == 127:
        return Verdict("error", f"python not found (exit 127){': ' + tail if tail else ''}",
                       {"exit_status": status})
    return Verdict("error", f"no result (exit {status}){': ' + tail if tail else ''}",
                   {"exit_status": status})


def exit_verdict(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    if status == 0:
        return Verdict("ok", (out.strip().splitlines() or ["exit 0"])[-1][:200],
                       {"exit_status": 0})
    last = (err.strip() or out.strip()).splitlines()
    return Verdict("failed", f"exit {status}" + (f": {last[-1][:200]}" if last else ""),
                   {"exit_status": status})


def lookup_script(script: str, key: str, extra: tuple[str, ...] = ()) -> str:
    """A lookup's Python script (``version``): ``script`` runs after
    :data:`SCRIPT_PRELUDE` and binds ``found`` (name -> value or None); the
    result line holds it under ``key`` with the missing names, and the
    script's variables named in ``extra`` under their names."""
    more = "".join(f"{name!r}: {name}, " for name in extra)
    return SCRIPT_PRELUDE + script + (
        "\nmissing = [n for n, v in found.items() if v is None]\n"
        f"_emit({{{more}{key!r}: found, 'missing': missing}}, 1 if missing else 0)\n"
    )


def lookup_verdict(data: dict[str, Any], key: str, found: str, missing: str) -> Verdict:
    """The verdict of a lookup: ``data[key]`` maps name -> value or None."""
    values: dict[str, str | None] = data.get(key, {})
    parts = [(found if v else missing).format(name=k, value=v) for k, v in values.items()]
    return Verdict("failed" if data.get("missing") else "ok", ", ".join(parts), data)
