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
from dataclasses import dataclass
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


@dataclass
class PgServer:
    """A running throw-away server: its URL (database ``postgres``), and the faults a test makes."""

    url: str
    data: Path
    log: Path
    opts: str

    def _ctl(self, *args: str) -> None:
        done = subprocess.run(
            _as_server_user([_binary("pg_ctl"), "-D", str(self.data), "-l", str(self.log), *args]),
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, f"pg_ctl {' '.join(args)} failed: {done.stderr}\n{self.log.read_text()}"

    def stop(self) -> None:
        """``pg_ctl stop -m fast``: every session is ended; returns once the server is down."""
        self._ctl("-m", "fast", "-w", "stop")

    def start(self) -> None:
        """Start the stopped server again; returns once it accepts connections."""
        self._ctl("-o", self.opts, "-w", "start")

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every session is ended; returns once the server accepts again."""
        self._ctl("-m", "fast", "-w", "restart")

    def terminate_backends(self, database: str, application: str | None = None) -> int:
        """``pg_terminate_backend`` of every session on ``database`` (only those whose
        ``application_name`` is ``application``, when given) but the caller's; returns how many."""
        import psycopg

        sql = (
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()"
        )
        args: list[str] = [database]
        if application is not None:
            sql += " AND application_name = %s"
            args.append(application)
        with psycopg.connect(self.url, autocommit=True) as conn:
            row = conn.execute(sql, args).fetchone()
        return int(row[0]) if row else 0


@contextmanager
def postgres_instance(**settings: object) -> Iterator[PgServer]:
    """Start a server with ``settings`` (``-c name=value``, e.g. ``max_connections=8``) over the
    defaults; yields it; stops it and removes its folder."""
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
    conf = {"listen_addresses": "127.0.0.1", "fsync": "off", "max_connections": 200, **settings}
    opts = f"-p {port} -k {root} " + " ".join(f"-c {k}={v}" for k, v in conf.items())
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
        yield PgServer(f"postgresql://{USER}@127.0.0.1:{port}/postgres", data, log, opts)
    finally:
        subprocess.run(
            _as_server_user([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"]), capture_output=True
        )
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server; yields its URL (database ``postgres``); stops it and removes its folder."""
    with postgres_instance() as server:
        yield server.url


def fresh_database(server_url: str) -> str:
    """A new, empty database on the server at ``server_url``; returns its URL."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + f"/{name}"
