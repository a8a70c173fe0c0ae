"""UI preferences in the config file: validated strictly, and written back
by a minimal edit that keeps the user's comments (perftriage.core.store.config_edit)."""

import pytest

from perftriage.core.store.config import ConfigError, load, parse
from perftriage.core.store.config_edit import set_ui_string, set_ui_value

USER_FILE = """\
# perftriage config — hand-written
[[hosts]]
name = "gpu-a"   # the H200 box
ssh = "gpu-a"

[ui]
# slow link: sample less often
sample_interval = 2.0
keymap = { "probe.import" = "I" }

[[probes]]
name = "fi"
kind = "import"
args = ["flashinfer"]
"""


def test_setting_theme_keeps_comments_and_everything_else(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(USER_FILE)
    set_ui_value(path, "theme", "perftriage-light")
    text = path.read_text()
    assert text.replace('theme = "perftriage-light"\n', "", 1) == USER_FILE
    config = load(path)
    assert config.ui.theme == "perftriage-light"
    assert config.ui.keymap == {"probe.import": "I"} and config.hosts[0].name == "gpu-a"

    set_ui_value(path, "theme", "perftriage-contrast")  # replaced in place, not added twice
    text2 = path.read_text()
    assert text2.count("theme =") == 1 and load(path).ui.theme == "perftriage-contrast"
    assert text2.replace('theme = "perftriage-contrast"\n', "", 1) == USER_FILE


def test_existing_theme_line_keeps_its_comment():
    out = set_ui_string('[ui]\n  theme = "old"   # mine\n', "theme", "new")
    assert out == '[ui]\n  theme = "new"   # mine\n'


def test_missing_file_is_created_with_a_ui_table(tmp_path):
    path = tmp_path / "sub" / "config.toml"
    set_ui_value(path, "theme", "perftriage-dark")
    assert path.read_text() == '[ui]\ntheme = "perftriage-dark"\n'
    assert load(path).ui.theme == "perftriage-dark"


def test_file_without_ui_table_gets_one_appended(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('# hosts only\n[ui.keymap]\n"app.quit" = "Q"\n')
    set_ui_value(path, "theme", 'odd "name"')
    config = load(path)
    assert config.ui.theme == 'odd "name"' and config.ui.keymap == {"app.quit": "Q"}
    assert path.read_text().startswith('# hosts only\n[ui.keymap]\n"app.quit" = "Q"\n')


def test_a_broken_config_is_never_overwritten(tmp_path):
    path = tmp_path / "config.toml"
    broken = "[ui]\nthemee = 1\n"
    path.write_text(broken)
    with pytest.raises(ConfigError) as info:
        set_ui_value(path, "theme", "perftriage-dark")
    assert info.value.line == 2 and "themee" in info.value.message
    assert path.read_text() == broken


def test_inline_ui_table_is_refused_not_mangled(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("ui = { sample_interval = 2.0 }\n")
    with pytest.raises(ConfigError, match="by hand"):
        set_ui_value(path, "theme", "perftriage-dark")
    assert path.read_text() == "ui = { sample_interval = 2.0 }\n"


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ('[ui]\ntheme = "x"\nkeymapp = {}\n', 3, "unknown key 'keymapp'"),
        ('[ui]\nkeymap = { "probe.import" = 1 }\n', 2, "Expected `str`"),
        ('[ui]\ntheme = 3\n', 2, "got `int` at ui.theme"),
    ],
)
def test_ui_preferences_are_validated_with_file_and_line(text, line, needle):
    with pytest.raises(ConfigError) as info:
        parse(text, "config.toml")
    assert info.value.line == line and needle in info.value.message
    assert str(info.value).startswith(f"config.toml:{line}:")
