"""A real, throw-away PostgreSQL server for tests: ``initdb`` + ``pg_ctl`` in a temporary folder.

The server listens on 127.0.0.1 and a free port, trusts local connections (user ``allure``), and
is stopped and deleted afterwards. PostgreSQL refuses to run as root: as root the binaries run as
the ``postgres`` user (``runuser``). A missing ``initdb`` is an error, never a skip: the tests that
need the server are meant to run (Debian: ``apt-get install postgresql``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

USER = "allure"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    for cand in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True):
        return str(cand)
    raise RuntimeError(
        f"`{name}` was not found: the PostgreSQL tests need a PostgreSQL server installed "
        "(Debian: apt-get install postgresql); they are not skipped"
    )


def _as_server_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", "postgres", "--", *cmd]


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server; yields its URL (database ``postgres``); stops it and removes its folder."""
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    root = Path(tempfile.mkdtemp(prefix="allure-pg-"))
    data, log = root / "data", root / "log"
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    port = _free_port()
    subprocess.run(
        _as_server_user([initdb, "-D", str(data), "-A", "trust", "-U", USER, "--no-sync"]),
        check=True,
        capture_output=True,
    )
    opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    started = subprocess.run(
        _as_server_user([pg_ctl, "-D", str(data), "-o", opts, "-l", str(log), "-w", "start"]),
        capture_output=True,
        text=True,
    )
    if started.returncode != 0:
        detail = log.read_text() if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"pg_ctl start failed: {started.stderr}\n{detail}")
    try:
        yield f"postgresql://{USER}@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_server_user([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"]), capture_output=True
        )
        shutil.rmtree(root, ignore_errors=True)


def fresh_database(server_url: str) -> str:
    """A new, empty database on the server at ``server_url``; returns its URL."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + f"/{name}"
