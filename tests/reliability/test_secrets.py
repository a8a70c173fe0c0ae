"""No secrets on disk: secrets seeded through a probe's command
and output, a followed log, a server's arguments and output, and a
config-only pattern never appear in any file perftriage writes; the sessions
directory is 0700, transcripts and reports 0600."""

from __future__ import annotations

import stat
from types import SimpleNamespace
import sys
from pathlib import Path

from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.store import config as config_mod
from perftriage.core.store.redact import MASK, Redactor
from perftriage.services.cockpit import Cockpit
from tests.support.helpers import wait_for

SECRETS = {
    "url": "hunter2pass",
    "bearer": "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0",
    "cookie": "sessionid=cookiesecret99",
    "api_key_flag": "sk-live-abcdefghijklmnopqrstuvwx",
    "token_flag": "tokflagvalue123",
    "password_flag": "pw-flag-value-77",
    "env_token": "envtokenvalue42",
    "env_secret": "envsecretvalue43",
    "hf": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "sk": "sk-proj-ZYXWVUTSRQPONMLKJIHGFEDCBA98",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "custom": "corp-884213",
}


def leaking_text() -> str:
    s = SECRETS
    return "\n".join([
        f"pip install --index-url https://bob:{s['url']}@pypi.corp.example/simple x",
        f"Authorization: Bearer {s['bearer']}",
        f"Cookie: {s['cookie']}",
        f"serve --api-key {s['api_key_flag']} --token={s['token_flag']} --password '{s['password_flag']}'",
        f"export HF_TOKEN={s['env_token']} MY_APP_SECRET=\"{s['env_secret']}\"",
        f"login {s['hf']} then {s['sk']} and {s['aws']}",
        f"ticket {s['custom']} opened",
    ])


def assert_no_secret_in(directory: Path, inputs: Path) -> list[Path]:
    """Every file under ``directory`` but the test's own inputs."""
    files = [p for p in directory.rglob("*") if p.is_file() and inputs not in p.parents]
    for path in files:
        data = path.read_bytes()
        for name, secret in SECRETS.items():
            assert secret.encode() not in data, f"{name} secret written to {path}"
    return files


def test_redactor_rules_keep_the_name_and_hide_the_value():
    r = Redactor([r"corp-[0-9]{6}"])
    out = r.text(leaking_text())
    for secret in SECRETS.values():
        assert secret not in out
    assert "https://bob:[REDACTED]@pypi" in out
    assert f"--api-key {MASK} --token={MASK} --password {MASK}" in out
    assert f"export HF_TOKEN={MASK} MY_APP_SECRET={MASK}" in out
    # what looks alike but is no secret stays
    plain = "Decode batch, #token: 12, token usage: 0.01, max_tokens=5, ssh://user@host:22 sk-1"
    assert r.text(plain) == plain


async def test_live_session_writes_no_secret_and_private_modes(tmp_path, monkeypatch):
    sessions = tmp_path / "sessions"
    monkeypatch.setenv("PERFTRIAGE_SESSIONS_DIR", str(sessions))
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    log = inputs / "server.log"
    log.write_text(leaking_text() + "\n")
    secret_script = inputs / "leak.sh"
    secret_script.write_text(f"cat <<'EOF'\n{leaking_text()}\nEOF\n")
    cfg_path = inputs / "config.toml"
    cfg_path.write_text(
        '[security]\nredact = ["corp-[0-9]{6}"]\n\n'
        f'[[hosts]]\nname = "localhost"\nlogs = ["{log}"]\n\n'
        '[[servers]]\nname = "srv"\n'
        f'command = "{sys.executable} -c \\"import sys; print(sys.argv)\\" {{key}}"\n'
        f'args = {{ key = "--api-key={SECRETS["api_key_flag"]}" }}\n'
    )
    config = config_mod.load(cfg_path)
    cockpit = Cockpit(config, sessions_dir=sessions)
    await cockpit.start()
    try:
        pid = cockpit.probes.enqueue("localhost", "shell", [f"sh {secret_script}"])
        pid2 = cockpit.probes.enqueue(
            "localhost", "shell", [f"echo HF_TOKEN={SECRETS['env_token']} {SECRETS['hf']}"])
        await cockpit.probes.wait([pid, pid2])
        assert SECRETS["hf"] in cockpit.session.state.probes[pid].stdout  # on screen, not on disk
        cockpit.servers.start("srv")
        await wait_for(lambda: any(
            SECRETS["api_key_flag"] in line
            for src in cockpit.session.state.logs.values() for line in src.lines), timeout=15)
        await wait_for(lambda: any(
            SECRETS["custom"] in line
            for src in cockpit.session.state.logs.values() for line in src.lines), timeout=15)
    finally:
        await cockpit.stop()
    transcript = cockpit.session.path
    r = CliRunner().invoke(cli, ["--config", str(cfg_path), "report", str(transcript)])
    assert r.exit_code == 0, r.output
    report = transcript.with_suffix(".md")
    files = assert_no_secret_in(tmp_path, inputs)
    assert transcript in files and report in files
    assert MASK in transcript.read_text()
    assert stat.S_IMODE(sessions.stat().st_mode) == 0o700
    assert stat.S_IMODE(transcript.stat().st_mode) == 0o600
    assert stat.S_IMODE(report.stat().st_mode) == 0o600


def test_report_of_an_old_transcript_is_redacted_and_private(tmp_path):
    from perftriage.core.model import events as ev
    from perftriage.core.store import transcript

    path = tmp_path / "old.jsonl"
    # an unredacted transcript from an older version
    path.write_text(
        '{"format":"perftriage-session","version":1,"started_at":"x","hosts":["a"]}\n'
        + ev.encode(ev.NoteAdded(text=leaking_text(), t=1.0)).decode() + "\n")
    out = tmp_path / "old.md"
    out.write_text("")
    out.chmod(0o644)
    cfg = tmp_path / "c.toml"
    cfg.write_text('[security]\nredact = ["corp-[0-9]{6}"]\n')
    r = CliRunner().invoke(cli, ["--config", str(cfg), "report", str(path), "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    for name, secret in SECRETS.items():
        assert secret not in text, name
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert transcript.read(path).events  # the source is only read


def test_default_sessions_dir_made_by_an_older_version_is_tightened(tmp_path, monkeypatch):
    from perftriage.core.store import paths
    from perftriage.services.investigation.session import Session

    sessions = tmp_path / "sessions"
    sessions.mkdir(mode=0o755)
    sessions.chmod(0o755)
    monkeypatch.setenv("PERFTRIAGE_SESSIONS_DIR", str(sessions))
    s = Session("x", sessions_dir=paths.default_sessions_dir())
    s.close()
    assert stat.S_IMODE(sessions.stat().st_mode) == 0o700
    chosen = tmp_path / "shared"
    chosen.mkdir()
    chosen.chmod(0o755)
    s = Session("y", sessions_dir=chosen)  # a directory the user chose: left alone
    s.close()
    assert stat.S_IMODE(chosen.stat().st_mode) == 0o755
    assert stat.S_IMODE(s.path.stat().st_mode) == 0o600


def test_a_clean_log_batch_is_written_as_is_and_config_patterns_apply():
    from perftriage.core.model import events as ev

    decode = ("[2026-11-28 09:16:06 TP0] Decode batch, #running-req: 1, #token: 852, token usage: "
              "0.00, cuda graph: True, gen throughput (token/s): 10.31, #queue-req: 0")
    data = ev.encode(ev.LogLines(source_id="l1", lines=[decode] * 100))
    assert Redactor([r"corp-[0-9]{6}"]).json_line(data) is data  # not decoded, not copied
    r = Redactor([r"corp-[0-9]{6}", r"\N{SNOWMAN}[0-9]+"])  # the second: str-only syntax
    leaked = ev.encode(ev.NoteAdded(text="corp-123456 and ☃42 and ok"))
    assert b"[REDACTED] and [REDACTED] and ok" in r.json_line(leaked)


def test_the_one_pass_trigger_prefilter_never_changes_a_redaction():
    """Redactor's RE2 pass over all triggers decides only *whether* the
    per-rule tests run: with it and without it every text, str or encoded
    JSON, comes out the same."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    import msgspec

    from perftriage.core.store import redact

    fast = Redactor(extra=[r"internal-[0-9]+"])
    slow = Redactor(extra=[r"internal-[0-9]+"])
    no_prefilter = SimpleNamespace(absent_from=lambda text: False,  # the exact tests alone
                                   spans=lambda text: None)
    slow._any = (no_prefilter, no_prefilter)
    assert fast._any[0].absent_from("nothing secret here")  # RE2 does prefilter
    pieces = [t for rule in redact.BUILTIN for t in rule.triggers]
    pieces += [p.upper() for p in pieces] + [p.title() for p in pieces]
    pieces += ["=", ": ", "https://u:", "@h", " ", "abcdefghijklmnopqrstuvwxyz0123",
               "\u212a", "internal-42", "é", "\udcff", '"', "\\"]
    text = st.lists(st.one_of(st.sampled_from(pieces), st.text(max_size=4)),
                    max_size=8).map("".join)

    @settings(max_examples=400, deadline=None)
    @given(text)
    def check(s: str) -> None:
        assert fast.text(s) == slow.text(s)
        try:
            data = msgspec.json.encode({"lines": [s]})
        except UnicodeEncodeError:  # a lone surrogate is no JSON; transcripts never hold one
            return
        assert fast.json_line(data) == slow.json_line(data)

    check()
