import pytest

from perftriage.core.store.config import ConfigError, load, parse
from tests.support.helpers import REPO

GOOD = """
[ui]
theme = "perftriage-dark"

[[hosts]]
name = "gpu-a"
ssh = "root@10.0.0.5:22"
preamble = "source /root/ml-env/bin/activate"
python = "python3"
logs = ["/var/log/sglang/server.log"]
tags = ["rtx6000"]
"""


def test_good_config():
    cfg = parse(GOOD, "c.toml")
    h = cfg.host("gpu-a")
    assert h.ssh == "root@10.0.0.5:22" and h.logs == ["/var/log/sglang/server.log"]
    assert cfg.ui.theme == "perftriage-dark"


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ('[[hosts]]\nname = "a"\n\n[[hosts]]\nname = "b"\nnmae = "c"\n', 6, "unknown key 'nmae'"),
        ('[[hosts]]\nname = 3\n', 2, "Expected `str`"),
        ('[ui]\nsample_interval = "fast"\n', 2, "Expected `float`"),
        ('\n\nbogus = 1\n', 3, "unknown key 'bogus'"),
        ('[[hosts]]\nssh = "x"\n', 1, "missing required field `name`"),
        ('[ui]\ntheme = \n', 2, "invalid TOML"),
        ('[ui]\ntheme = "x"\n\n[triage]\nauto = "yes"\n', 5, "Expected `bool`"),
        ('[triage]\nauto = true\nauot = true\n', 3, "unknown key 'auot' in triage"),
    ],
)
def test_errors_name_file_and_line(text, line, fragment):
    with pytest.raises(ConfigError) as info:
        parse(text, "/etc/pt.toml")
    assert info.value.line == line
    assert str(info.value).startswith(f"/etc/pt.toml:{line}: ")
    assert fragment in str(info.value)


def test_triage_auto_is_off_unless_asked():
    assert parse("", "c.toml").triage.auto is False
    assert parse("[triage]\nauto = true\n", "c.toml").triage.auto is True


def test_missing_file(tmp_path):
    assert load(tmp_path / "nope.toml").hosts == []
    with pytest.raises(ConfigError, match="not found"):
        load(tmp_path / "nope.toml", must_exist=True)


def test_readme_config_example_is_valid():
    import re
    from pathlib import Path

    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", readme, flags=re.S)
    example = next(b for b in blocks if "[[hosts]]" in b)
    cfg = parse(example, "README.md")
    assert cfg.host("gpu-a").logs == ["/var/log/sglang/server.log"]
    assert cfg.probes[0].name == "cutedsl-import"
    assert cfg.servers[0].args["tp"] == "8"
