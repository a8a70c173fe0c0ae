"""Hypothesis packs and the config's [[hypotheses]]: vetted when read (a bad
check: file:line and the position in the expression), the seed pack bundled,
and the cockpit starting with them (``perftriage --hypotheses``)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.cli.globals import Globals, UsageFailure
from perftriage.core.checks import pack
from perftriage.core.store.config import ConfigError
from perftriage.cli.launch import starting_hypotheses


def test_seed_pack_is_bundled_and_every_check_compiles():
    assert "seed" in pack.bundled_names()
    hyps = pack.load("seed")
    assert len(hyps) == 14
    checks = {h.title: h.check for h in hyps if h.check}
    assert len(checks) == 8
    assert "gap.traffic_ratio >= 1.5" in checks.values()
    assert "triage.launch_bound_pct >= 15" in checks.values()  # not DRAM idle (issue 40)
    assert 'not probe["import flashinfer.cute"].ok' in checks.values()
    assert "spread(gpu.dram_busy_pct) >= 20" in checks.values()
    assert {h.for_s for h in hyps if h.check} == {0.0, 10.0, 30.0}


@pytest.mark.parametrize(("body", "where", "words"), [
    ('title = "a"\ncheck = "gap.gap >"', 3, "check: column 10: syntax error"),
    ('title = "a"\ncheck = "gap.gap > 1"\nfor = "soon"', 4, "for: 'soon' is not a duration"),
    ('title = "a"\ncheck = "gpu.util_pct > 1"\nscope = "host"', 4,
     "scope: column 1: gpu.util_pct is per gpu"),
    ('title = "a"\nchek = "gap.gap > 1"', 3, "unknown key 'chek'"),
    ('title = "a"\ncheck = "gap.gap > 1"\nfor = "nan"', 4, "for: for must be a duration of 0 s"),
    ('title = "a"\ncheck = "gap.gap > 1"\nfor = -3', 4, "for: for must be a duration of 0 s"),
    ('title = "a"\nscope = "gpu"', 3, "for/scope without a check"),
    ('title = ""\ncheck = "gap.gap > 1"', 2, "needs a title"),
])
def test_bad_pack_names_file_and_line(body, where, words):
    text = f'description = "x"\n[[hypotheses]]\n{body}\n'
    text = text.replace("[[hypotheses]]\n", "[[hypotheses]]\n", 1)
    with pytest.raises(ConfigError) as info:
        pack.parse(text, "p.toml")
    assert f"p.toml:{where + 1}: " in str(info.value), str(info.value)
    assert words in str(info.value)


def test_config_hypotheses_are_vetted_with_the_configs_line(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[[hypotheses]]\ntitle = "idle"\ncheck = "gap.idle_pct >= 30"\nfor = "10s"\n'
                   '\n[[hypotheses]]\ntitle = "bad"\ncheck = "gap.idle >= 30"\n')
    g = Globals(config_path=cfg, config_explicit=True)
    with pytest.raises(UsageFailure) as info:
        starting_hypotheses(g, g.load_config())
    assert f"{cfg}:8: check: column 1: unknown signal gap.idle" in str(info.value)
    cfg.write_text('[[hypotheses]]\ntitle = "idle"\ncheck = "gap.idle_pct >= 30"\nfor = "10s"\n')
    g.hypotheses = ["seed"]
    hyps = starting_hypotheses(g, g.load_config())
    assert hyps[0].title == "idle" and hyps[0].for_s == 10.0 and len(hyps) == 15


def test_cockpit_refuses_a_bad_pack_with_exit_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[hypotheses]]\ntitle = "t"\ncheck = "gap.traffic_ratio >= = 1.5"\n')
    cfg = tmp_path / "config.toml"
    cfg.write_text("")
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "--config", str(cfg),
                                 "--hypotheses", str(bad)])
    assert r.exit_code == 2
    assert f"{bad}:3: check: column 22: syntax error" in r.output
