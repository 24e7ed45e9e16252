"""One class per database Spout is measured on. Scenarios never ask which database they run
on: they ask it for its URL, its baselines and its figures' names."""

import subprocess

from .baselines import CopyLoad, Pgbench, PsqlCopy, Sqlite3Json
from .common import load_helper, log
from .processes import run_command


class Database:
    """A database Spout serves, with its own tools.

    name           its key in the JSON document and its column in the table
    label          its name in prose (log lines, the table's CPU figures)
    tools          the client programs the run needs installed for it
    server_name    the JSON prefix of its server processes' CPU (`<server_name>_us_per_row`),
                   None when it has no server apart from Spout's process
    detail_baseline   what the detail scenario compares Spout with (Pgbench), or None
    query_baseline    its client printing a query's rows to /dev/null (PsqlCopy, Sqlite3Json)
    load_baseline     what `spout load` is compared with (CopyLoad), or None
    """

    name = None
    label = None
    tools = ()
    server_name = None
    detail_baseline = None
    query_baseline = None
    load_baseline = None

    @property
    def url(self):
        """Spout's --database URL."""
        raise NotImplementedError

    def start(self):
        """Makes the database ready to be loaded (its server started, if it has one)."""

    def stop(self, keep=False):
        """Stops what start started; removes its files unless `keep`. Safe when never started."""

    def query_value(self, sql):
        """The text a one-row, one-column query prints with the database's own client."""
        raise NotImplementedError

    def count_rows(self, query):
        """How many rows `query` returns."""
        raise NotImplementedError

    def server_seconds(self, usage):
        """Its server's CPU seconds in a CpuUsage; None when it has no server."""
        return None

    def versions(self):
        """Its version for the JSON's machine section: {"<program>_version": text}."""
        return {}


class PostgreSQL(Database):
    """A throwaway cluster (scripts/throwaway-postgres: durability off, statements logged with
    their connection's application name) holding two databases: spout_bench, which Spout
    serves, and spout_copy, which the \\copy load baseline fills."""

    name = "postgres"
    label = "PostgreSQL"
    tools = ("psql",)
    server_name = "postgres"

    def __init__(self, work):
        self.work = work
        self.cluster = None
        self.version = None
        self.detail_baseline = Pgbench(self)
        self.query_baseline = PsqlCopy(self)
        self.load_baseline = CopyLoad(self)

    def start(self):
        throwaway = load_helper("throwaway-postgres")
        # Durability off (the helper's default: a throwaway cluster, the same for every
        # contender); statements of the counting connections logged with their application name.
        self.cluster = throwaway.ThrowawayPostgres(
            self.work / "pg",
            {"max_connections": 200, "shared_buffers": "256MB", "log_line_prefix": "[%a] "},
            ports=(25600, 25999),
        )
        self.cluster.start()
        self.version = self.cluster.version
        log(f"PostgreSQL {self.version} on port {self.cluster.port}")
        self.psql("-c", "CREATE DATABASE spout_bench", "-c", "CREATE DATABASE spout_copy",
                  url=f"{self.cluster.url}/postgres")

    def stop(self, keep=False):
        if self.cluster is not None:
            self.cluster.stop(keep=keep)

    @property
    def url(self):
        return f"{self.cluster.url}/spout_bench"

    @property
    def copy_url(self):
        """The load baseline's database."""
        return f"{self.cluster.url}/spout_copy"

    def statement_logging_url(self, application_name):
        """The URL of a Spout whose connections log every statement under APPLICATION_NAME
        in `log_path`."""
        return f"{self.url}?application_name={application_name}&options=-c%20log_statement%3Dall"

    @property
    def log_path(self):
        """The server's log."""
        return self.cluster.log_path

    @property
    def bindir(self):
        """The server's programs (pgbench among them)."""
        return self.cluster.bindir

    @property
    def postmaster_pid(self):
        return self.cluster.postmaster_pid

    def psql(self, *arguments, url=None, stdout=subprocess.PIPE):
        """psql with ARGUMENTS against URL (else spout_bench), stopping at the first error."""
        return run_command(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url or self.url, *arguments],
                           stdout=stdout)

    def query_value(self, sql):
        return self.psql("-At", "-c", sql).stdout.strip()

    def count_rows(self, query):
        return int(self.query_value(f"SELECT count(*) FROM ({query}) AS counted"))

    def server_seconds(self, usage):
        return usage.postgres

    def versions(self):
        return {"postgres_version": self.version}


class SQLite(Database):
    """A file in the work directory, which `spout load` creates; nothing to start."""

    name = "sqlite"
    label = "SQLite"
    tools = ("sqlite3",)

    def __init__(self, work):
        self.file = work / "spout-bench.sqlite"
        self.query_baseline = Sqlite3Json(self)

    @property
    def url(self):
        return f"sqlite:{self.file}"

    def query_value(self, sql):
        return run_command(["sqlite3", str(self.file), sql]).stdout.strip()

    def count_rows(self, query):
        return int(self.query_value(f"SELECT count(*) FROM ({query})"))

    def versions(self):
        words = run_command(["sqlite3", "-version"]).stdout.split()
        return {"sqlite3_version": words[0] if words else "unknown"}
