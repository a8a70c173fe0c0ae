import json
import subprocess
import sys

from click.testing import CliRunner

from perftriage import __version__
from perftriage.cli import cli


def test_version_is_fast_and_does_not_import_textual():
    code = (
        "import sys; sys.argv=['perftriage','--version']\n"
        "from perftriage.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "assert 'textual' not in sys.modules, 'textual imported'\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert __version__ in r.stdout


def test_python_dash_m_tui():
    r = subprocess.run([sys.executable, "-m", "perftriage", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and __version__ in r.stdout


def test_help_lists_commands():
    r = CliRunner().invoke(cli, ["--help"])
    assert r.exit_code == 0
    for name in ("sessions", "replay"):
        assert name in r.output


def test_sessions_table(tmp_path):
    from perftriage.core.model import events as ev
    from perftriage.services.investigation.session import Session

    s = Session("demo", hosts=["localhost"], sessions_dir=tmp_path)
    s.emit(ev.NoteAdded(text="hi"))
    s.close()
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "sessions"],
                           env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert s.path.name in r.output and "localhost" in r.output
    assert "2" in r.output  # events: note + session.ended


def test_bad_config_is_exit_2_with_file_and_line(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[[hosts]]\nname = "a"\nbogus = 1\n')
    r = CliRunner().invoke(cli, ["--config", str(cfg), "sessions"])
    # `sessions` does not read the config; the cockpit and host commands do
    from perftriage.cli import Globals, UsageFailure

    g = Globals(config_path=cfg, config_explicit=True)
    try:
        g.load_config()
    except UsageFailure as exc:
        assert exc.exit_code == 2
        assert f"{cfg}:3:" in exc.message
    else:
        raise AssertionError("no error")
    assert r.exit_code == 0


def test_header_json_shape(tmp_path):
    from perftriage.services.investigation.session import Session

    s = Session("x", hosts=["localhost"], sessions_dir=tmp_path)
    s.close()
    header = json.loads(s.path.read_text().splitlines()[0])
    assert set(header) >= {"format", "version", "started_at", "hosts", "perftriage"}
