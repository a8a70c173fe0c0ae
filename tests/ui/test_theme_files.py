"""Theme files: bundled ones are complete, broken ones are reported with
file and reason (perftriage.core.store.theme_files, no Textual), and they become Textual
themes (perftriage.ui.theming)."""

from pathlib import Path

import pytest

from perftriage.core.store import paths
from perftriage.core.store import theme_files
from perftriage.core.store.theme_files import THEME_VARIABLES, ThemeFileError
from tests.support.helpers import REPO

BUNDLED = sorted(paths.bundled_themes_dir().glob("*.toml"))


def test_at_least_three_bundled_themes():
    names = {theme_files.load(p, "bundled").name for p in BUNDLED}
    assert {"perftriage-dark", "perftriage-light", "perftriage-contrast"} <= names


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_each_bundled_theme_loads_with_every_status_variable(path):
    from textual.color import Color

    from perftriage.ui.theming import to_theme

    spec = theme_files.load(path, "bundled")
    assert spec.missing_variables == []
    theme = to_theme(spec)
    assert theme.name == spec.name == path.stem
    for var in THEME_VARIABLES:
        Color.parse(theme.variables[var])  # a real colour, usable by Rich too


def test_contrast_theme_avoids_red_green_for_ok_failed():
    from textual.color import Color

    spec = theme_files.load(paths.bundled_themes_dir() / "perftriage-contrast.toml", "bundled")
    ok, failed = (Color.parse(spec.variables[v]) for v in ("status-ok", "status-failed"))
    assert ok.b > ok.g > ok.r  # blue, not green
    assert failed.r > failed.g > failed.b  # orange
    assert failed.g > 100  # not pure red


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ('name = "x"\nprimary = \n', 2, "invalid TOML"),
        ('name = "x"\nprimary = "#fff"\nprimray = "#000"\n', 3, "unknown key 'primray'"),
        ('name = "x"\n', None, "missing required key 'primary'"),
        ('name = "x"\nprimary = "#fff"\naccent = "not a colour!"\n', 3, "accent"),
        ('name = "x"\nprimary = "#fff"\ndark = "yes"\n', 3, "Expected `bool`"),
        ('name = "a b"\nprimary = "#fff"\n', 1, "bad theme name"),
        ('name = "x"\nprimary = "#fff"\n[variables]\nstatus-ok = "12 px"\n', 4, "status-ok"),
    ],
)
def test_broken_theme_file_names_file_line_and_reason(tmp_path, text, line, reason):
    path = tmp_path / "broken.toml"
    path.write_text(text)
    with pytest.raises(ThemeFileError) as info:
        theme_files.load(path)
    err = info.value
    assert err.path == str(path) and err.line == line
    assert reason in err.reason
    assert str(err).startswith(f"{path}:{line}:" if line else f"{path}:")


def test_colour_textual_rejects_is_reported_by_the_ui_layer(tmp_path):
    from perftriage.ui.theming import load_catalog

    (tmp_path / "odd.toml").write_text('name = "odd"\nprimary = "notacolour"\n')
    catalog = load_catalog([(tmp_path, "user")])
    assert "odd" not in catalog.entries
    assert [e.path for e in catalog.errors] == [str(tmp_path / "odd.toml")]
    assert "primary" in catalog.errors[0].reason


def test_user_theme_overrides_bundled_and_duplicates_are_errors(tmp_path):
    bundled, user = tmp_path / "b", tmp_path / "u"
    bundled.mkdir(), user.mkdir()
    (bundled / "t.toml").write_text('name = "t"\nprimary = "#111111"\n')
    (user / "a.toml").write_text('name = "t"\nprimary = "#222222"\n')
    (user / "b.toml").write_text('name = "t"\nprimary = "#333333"\n')
    found = theme_files.discover([(bundled, "bundled"), (user, "user"), (tmp_path / "none", "user")])
    [spec] = found.themes
    assert (spec.source, spec.colours["primary"], spec.path.name) == ("user", "#222222", "a.toml")
    [err] = found.errors
    assert err.path.endswith("b.toml") and "already defined" in err.reason


def test_builtin_textual_themes_get_every_variable_as_a_rich_colour():
    from textual.theme import BUILTIN_THEMES

    from perftriage.ui.theming import fallback_variables
    from perftriage.ui.widgets.status_style import rich_colour

    for theme in BUILTIN_THEMES.values():
        variables = fallback_variables(theme)
        assert set(variables) == set(THEME_VARIABLES), theme.name
        for var in variables:
            assert rich_colour(variables, var) is not None, (theme.name, var)


def test_status_mapping_uses_theme_variables_only():
    from perftriage.ui.widgets.status_style import LOG_LEVEL_VAR, STATUS_VAR, threshold

    used = {*STATUS_VAR.values(), *LOG_LEVEL_VAR.values(), threshold(None, 1, 2),
            threshold(0, 1, 2), threshold(1, 1, 2), threshold(2, 1, 2)}
    assert {v.lstrip("$") for v in used} <= set(THEME_VARIABLES)


def test_theme_files_module_has_no_textual():
    import subprocess
    import sys

    code = "import sys, perftriage.core.store.theme_files, perftriage.core.store.config_edit; assert 'textual' not in sys.modules"
    repo = REPO
    r = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
