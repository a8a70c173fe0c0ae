"""`perftriage themes` and `--theme NAME` on the command line."""

import click
import pytest
from click.testing import CliRunner

from perftriage.cli import Globals, cli
from perftriage.core.store import paths


def _run(*args):
    return CliRunner().invoke(cli, list(args))


def _lines(output: str) -> dict[str, str]:
    return {line[2:].split()[0]: line for line in output.splitlines() if line[:2] in ("* ", "  ")}


def test_themes_lists_bundled_user_and_builtin_and_marks_the_default():
    themes = paths.user_themes_dir()
    themes.mkdir(parents=True)
    (themes / "mine.toml").write_text('name = "mine"\ndark = false\nprimary = "#aa00aa"\n')
    r = _run("themes")
    assert r.exit_code == 0, r.output
    rows = _lines(r.output)
    assert rows["perftriage-dark"].startswith("* ") and "bundled" in rows["perftriage-dark"]
    assert "bundled" in rows["perftriage-contrast"] and "bundled" in rows["perftriage-light"]
    assert "user" in rows["mine"] and "light" in rows["mine"] and str(themes / "mine.toml") in rows["mine"]
    assert "textual" in rows["textual-dark"] and "textual" in rows["nord"]
    assert sum(line.startswith("* ") for line in r.output.splitlines()) == 1


def test_themes_marks_the_configured_theme_and_the_theme_option_wins(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('[ui]\ntheme = "perftriage-light"\n')
    r = _run("--config", str(config), "themes")
    assert r.exit_code == 0 and _lines(r.output)["perftriage-light"].startswith("* ")
    r = _run("--config", str(config), "--theme", "nord", "themes")
    assert r.exit_code == 0 and _lines(r.output)["nord"].startswith("* ")


def test_themes_reports_broken_files_with_reason_and_exit_1():
    themes = paths.user_themes_dir()
    themes.mkdir(parents=True)
    (themes / "bad.toml").write_text('name = "bad"\nprimary = "#fff"\ncolour = "x"\n')
    r = _run("themes")
    assert r.exit_code == 1
    assert f"broken theme file: {themes / 'bad.toml'}:3: unknown key 'colour'" in r.output
    assert "perftriage-dark" in r.output  # the good ones are still listed


@pytest.mark.parametrize("args", [["--theme", "no-such-theme"], ["--theme", "no-such-theme", "themes"]])
def test_unknown_theme_exits_2_listing_known_names(args, tmp_path):
    r = _run("--sessions-dir", str(tmp_path / "s"), *args)
    assert r.exit_code == 2
    assert "unknown theme 'no-such-theme'" in r.output
    assert "perftriage-dark" in r.output and "textual-dark" in r.output
    assert not (tmp_path / "s").exists()  # nothing was started, no transcript


def test_app_options_pass_theme_and_config_path(tmp_path):
    from perftriage.cli.launch import app_options

    g = Globals(theme="perftriage-contrast", config_path=tmp_path / "c.toml")
    assert app_options(g) == {"theme": "perftriage-contrast", "config_path": tmp_path / "c.toml"}
    with pytest.raises(click.ClickException) as info:
        app_options(Globals(theme="nope"))
    assert info.value.exit_code == 2
