"""Checks and packs are bounded when they are read: a check's nesting depth
and length, a pack's size, its number of hypotheses and its dotted keys all
have a limit checked before the expensive part, every refusal is one line
that names the file and line (exit 2 from the CLI), and an error quotes at
most ~80 characters of the check around the position, never the whole text."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.checks import expr, pack
from perftriage.core.checks.expr import CheckError, compile_check
from perftriage.core.store.config import ConfigError, parse
from tests.support.helpers import EXAMPLE_SESSION

REPO = Path(__file__).resolve().parents[2]


def one_pack(check: str, extra: str = "") -> str:
    return f'description = "x"\n[[hypotheses]]\ntitle = "t"\ncheck = "{check}"\n{extra}'


def check_cli(pack_path: Path):
    return CliRunner().invoke(cli, ["check", str(EXAMPLE_SESSION), "--pack", str(pack_path)])


def assert_one_line_exit_2(res, path: Path, *words: str) -> None:
    assert res.exit_code == 2, res.output
    assert not isinstance(res.exception, (RecursionError, ValueError)), res.exception
    out = res.output.strip()
    assert "Traceback" not in out and len(out.splitlines()) == 1, out[:500]
    assert len(out) < 400, out[:500]
    assert str(path) in out, out
    for w in words:
        assert w in out, out


# --- a check's depth and length ------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "- " * 900 + "1 > 0",  # before: RecursionError from the closure builder
    "not " * 450 + "true",
    "1" + " + 1" * 490 + " > 0",  # a left-nested sum under 2,000 characters
    "abs(" * 150 + "1" + ")" * 150 + " > 0",
    "1 if true else " * 120 + "1 > 0",
], ids=["minus", "not", "sum", "abs", "ifexp"])
def test_deep_checks_are_refused_at_parse_time(text: str) -> None:
    assert len(text) <= expr.MAX_TEXT
    with pytest.raises(CheckError, match="nested") as err:
        compile_check(text)
    assert 0 <= err.value.pos <= len(text)


def test_a_check_at_the_depth_limit_still_compiles_and_evaluates() -> None:
    depth = expr.MAX_DEPTH - 3
    check = compile_check("- " * depth + "1 < 0")
    assert check.evaluate({}) is (depth % 2 == 1)
    assert check.fast({}) is (depth % 2 == 1)


def test_a_deep_check_in_a_pack_exits_2_naming_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "deep.toml"
    p.write_text(one_pack("- " * 900 + "1 > 0"))
    res = check_cli(p)
    assert_one_line_exit_2(res, p, f"{p}:4:", "nested")


def test_an_error_quotes_80_characters_around_its_position_not_the_check() -> None:
    text = "gap.idle_pct > 1 and " + "x" * 1500 + " > 2"
    with pytest.raises(ConfigError) as err:
        pack.parse(one_pack(text), "p.toml")
    msg = str(err.value)
    assert "p.toml:4:" in msg and "unknown name" in msg and "xxxx" in msg
    assert len(msg) < 300, msg  # the name itself is cut in the message too


def test_a_50mb_check_is_refused_in_one_short_line(tmp_path: Path) -> None:
    p = tmp_path / "huge.toml"
    with open(p, "w") as fh:  # before: the error echoed all 50 MB (10.9 s)
        fh.write('[[hypotheses]]\ntitle = "t"\ncheck = "gap.idle_pct > ')
        fh.write("1" * (50 << 20))
        fh.write('"\n')
    t0 = time.monotonic()
    res = check_cli(p)
    assert_one_line_exit_2(res, p, f"{pack.MAX_PACK_BYTES >> 10} KiB")
    assert time.monotonic() - t0 < 60  # generous: a hang is what this catches


def test_an_over_long_check_quotes_only_its_start() -> None:
    text = "gap.idle_pct > " + "1" * 3000
    with pytest.raises(ConfigError) as err:
        pack.parse(one_pack(text), "p.toml")
    msg = str(err.value)
    assert f"longer than {expr.MAX_TEXT}" in msg and len(msg) < 300, msg


# --- TOML numbers ----------------------------------------------------------------------------


@pytest.mark.parametrize("key,value", [("for", "1" + "0" * 5000), ("for", "-" + "9" * 4400)],
                         ids=["5000-zeros", "minus-4400-nines"])
def test_a_number_past_pythons_digit_limit_is_a_config_error(key: str, value: str) -> None:
    text = one_pack("gap.idle_pct > 1", f"{key} = {value}\n")
    with pytest.raises(ConfigError) as err:  # before: the TOML parser's ValueError
        pack.parse(text, "p.toml")
    assert err.value.line == 5 and "digits" in str(err.value)
    assert len(str(err.value)) < 300
    with pytest.raises(ConfigError) as err:  # the config reads TOML the same way
        parse(f"[ui]\nlog_ring_lines = {value}\n", "c.toml")
    assert err.value.line == 2


# --- a pack's size -------------------------------------------------------------------------------


def test_a_pack_over_the_hypotheses_cap_is_refused_saying_the_cap(tmp_path: Path) -> None:
    n = pack.MAX_HYPOTHESES + 1
    p = tmp_path / "many.toml"
    p.write_text("".join(f'[[hypotheses]]\ntitle = "h{i}"\ncheck = "gap.idle_pct > {i}"\n'
                         for i in range(n)))
    res = check_cli(p)  # before: 2,000 checks took 29 s, 20,000 never finished
    assert_one_line_exit_2(res, p, f"more than {pack.MAX_HYPOTHESES} hypotheses")
    text = p.read_text()
    with pytest.raises(ConfigError, match=f"more than {pack.MAX_HYPOTHESES}"):
        # the config's [[hypotheses]] are vetted by the same function
        pack.entries(parse(text, "c.toml").hypotheses, text, "c.toml")
    ok = tmp_path / "ok.toml"
    ok.write_text("".join(f'[[hypotheses]]\ntitle = "h{i}"\ncheck = "gap.idle_pct > {i}"\n'
                          for i in range(pack.MAX_HYPOTHESES)))
    assert len(pack.load(str(ok))) == pack.MAX_HYPOTHESES


@pytest.mark.parametrize("text", [
    "a" + ".a" * 100_000 + " = 1\n",  # before: 33.5 s in the TOML parser
    "[" + ".".join(["t"] * 50_000) + "]\nx = 1\n",
    '[[hypotheses]]\ntitle = "t"\nnote = {' + ".".join(['"q"'] * 40_000) + " = 1}\n",
], ids=["bare", "table", "quoted-inline"])
def test_long_dotted_keys_are_refused_before_the_toml_parser(text: str) -> None:
    assert len(text) < 250_000
    t0 = time.monotonic()
    with pytest.raises(ConfigError, match="dotted") as err:
        pack.parse(text, "p.toml")
    assert err.value.line is not None
    assert time.monotonic() - t0 < 10  # generous: the quadratic parse took minutes


def test_a_pack_that_is_a_fifo_or_a_device_is_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "p.toml"
    os.mkfifo(fifo)
    env = {**os.environ, "PYTHONPATH": str(REPO / "tui")}
    r = subprocess.run([sys.executable, "-m", "perftriage", "check", str(EXAMPLE_SESSION),
                        "--pack", str(fifo)], capture_output=True, text=True, timeout=30,
                       env=env, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert str(fifo) in r.stderr


def test_the_bundled_pack_and_plain_packs_still_load(tmp_path: Path) -> None:
    assert len(pack.load("seed")) == 14
    p = tmp_path / "fine.toml"
    p.write_text(one_pack("gap.idle_pct >= 30 and gap.traffic_ratio < 1.5", 'for = "10s"\n'))
    res = check_cli(p)
    assert res.exit_code == 0, res.output
