"""The rules a file must pass before perftriage follows it on a word that is
not the user's own: a path a transcript recorded (a continued
investigation's ``log.opened``, which may have been crafted by whoever sent
the file). Following a file copies its lines into the new transcript, so a
path to a credentials file, a key or a shell history would copy secrets.

Two parts: :func:`path_refusal` on the path as written (pure), and
:func:`lstat_command` / :func:`type_refusal` on what the host says the path
is (a regular file, not a link, whose real path passes the path rules too:
a link in a parent directory is seen through).
"""

from __future__ import annotations

import fnmatch
import posixpath
import shlex

# directories whose every file is a secret (any component of the path)
SECRET_DIRS = frozenset({
    ".ssh", ".aws", ".gnupg", ".kube", ".docker", ".azure", ".password-store",
    ".vault-token", "gcloud", ".config/gcloud", "secrets", ".secrets",
})
# file names (shell patterns, case-insensitive) that hold secrets or history
SECRET_NAMES = (
    "*_history", ".*history", ".histfile", ".lesshst", ".viminfo",
    ".netrc", "_netrc", ".pgpass", ".my.cnf", ".git-credentials", ".gitcookies",
    "credentials", "credentials.*", "*.credentials", "config.json",  # docker's auth file
    ".env", "*.env", ".envrc", "id_*", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks",
    "*.kdbx", "authorized_keys", "known_hosts", "*token*", "*secret*", "*password*",
    "shadow", "shadow-", "gshadow", "gshadow-", "master.passwd", "sudoers",
)
# whole paths that are never a log
SECRET_PATHS = ("/proc/*", "/sys/*", "/dev/*", "/etc/ssl/private/*")


def _secret(path: str) -> str | None:
    parts = [p for p in path.split("/") if p]
    for i, part in enumerate(parts[:-1]):
        pair = "/".join(parts[i:i + 2])
        if part.lower() in SECRET_DIRS or pair.lower() in SECRET_DIRS:
            return f"it is inside a {part!r} directory, which holds secrets"
    name = parts[-1].lower() if parts else ""
    hit = next((p for p in SECRET_NAMES if fnmatch.fnmatchcase(name, p)), None)
    if hit is not None:
        return f"its name matches {hit!r}: secrets or a history, not a log"
    hit = next((p for p in SECRET_PATHS if fnmatch.fnmatchcase(path, p)), None)
    if hit is not None:
        return f"it is under {hit.rstrip('*')}, not a log"
    return None


def path_refusal(path: str) -> str | None:
    """Why ``path`` (as a recording names it) is not followed, or None."""
    if not path or not path.startswith("/"):
        return "not an absolute path"
    if "\x00" in path or any(ord(c) < 0x20 or c == "\x7f" for c in path):
        return "it holds a control character"
    if any(p in (".", "..") for p in path.split("/")):
        return "it holds a '.' or '..' component"
    return _secret(posixpath.normpath(path))


def lstat_command(path: str) -> str:
    """What the host says ``path`` is, link not followed, then its real path
    (every link in it resolved): two lines, C locale."""
    q = shlex.quote(path)
    return f"LC_ALL=C stat -c '%F' -- {q} 2>&1; readlink -e -- {q} 2>/dev/null || echo"


def type_refusal(path: str, out: str) -> str | None:
    """Why the file :func:`lstat_command` described in ``out`` is not
    followed (not a regular file, a link, a real path under a secrets
    directory), or None."""
    lines = out.splitlines()
    kind = lines[0].strip() if lines else ""
    real = lines[1].strip() if len(lines) > 1 else ""
    if kind == "symbolic link":
        return "it is a symbolic link"
    if kind not in ("regular file", "regular empty file"):
        return f"it is not a regular file ({kind[:80] or 'no answer'})"
    if not real.startswith("/"):
        return "its real path could not be read"
    if real != posixpath.normpath(path):
        why = path_refusal(real)
        if why is not None:
            return f"its real path {real[:200]!r}: {why}"
    return None
