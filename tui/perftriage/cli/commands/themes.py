"""`perftriage themes`: every theme the cockpit can use, the current one
marked, and theme files that are broken (file and reason)."""

from __future__ import annotations

import click


@click.command("themes")
@click.pass_obj
def command(g) -> None:
    """List themes (bundled, user, Textual's builtin); '*' marks the current
    one. Broken theme files are reported on stderr (exit status 1)."""
    from perftriage.cli import EXIT_FAILED, UsageFailure
    from perftriage.core.store import paths
    from perftriage.ui.theming import load_catalog, resolve, unknown_theme_message

    catalog = load_catalog()
    names = catalog.names()
    if g.theme and g.theme not in names:
        raise UsageFailure(unknown_theme_message(g.theme, names))
    configured = g.load_config().ui.theme
    current, warning = resolve(set(names), g.theme, configured)

    order = {"bundled": 0, "user": 1, "textual": 2}
    entries = sorted(catalog.entries.values(), key=lambda e: (order.get(e.source, 3), e.name))
    width = max(len(e.name) for e in entries)
    for entry in entries:
        mark = "*" if entry.name == current else " "
        mode = "dark " if entry.theme.dark else "light"
        where = f"  {entry.path}" if entry.source == "user" and entry.path else ""
        about = f"  {entry.description}" if entry.description else ""
        click.echo(f"{mark} {entry.name:<{width}}  {entry.source:<7}  {mode}{about}{where}".rstrip())
    click.echo(f"\nuser themes: {paths.user_themes_dir()}/*.toml")
    if warning:
        click.echo(f"warning: {warning}", err=True)
    for error in catalog.errors:
        click.echo(f"broken theme file: {error}", err=True)
    if catalog.errors:
        raise SystemExit(EXIT_FAILED)
