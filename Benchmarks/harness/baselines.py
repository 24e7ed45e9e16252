"""The databases' own tools, each measured the way Spout is measured beside it: a baseline is
asked for by a scenario through its database (database.detail_baseline, query_baseline,
load_baseline) and knows its name in the JSON (`key`) and in the table (`label`)."""

import dataclasses
import glob
import os
import re
import shutil
import subprocess
import time

from .common import ROOT, Failure, log, median, ratio, sql_text
from .processes import CpuUsage, run_command, timed


@dataclasses.dataclass
class PgbenchRun:
    transactions: int
    tps: float
    latency_us: dict
    failed: int
    cpu: CpuUsage


@dataclasses.dataclass
class ToolRun:
    """One run of a database's own client (psql COPY, the sqlite3 shell) to /dev/null."""
    seconds: float
    cpu: CpuUsage


# --- The detail scenario's baseline ----------------------------------------------------------

class Pgbench:
    """pgbench running the detail endpoint's three statements, from the same SQL files Spout
    serves (the `:employeeNumber` parameter is a pgbench variable too), as many connections as
    wrk's. `rate(run)` is what a Spout request rate is compared with."""

    key = "pgbench"

    def __init__(self, postgres):
        self.postgres = postgres

    def run(self, context, seconds):
        """One run of `seconds`, latencies from pgbench's per-transaction log."""
        options = context.options
        script = context.work / "detail.pgbench"
        if not script.exists():
            statements = [sql_text(name) for name in ("employee.sql", "titles.sql", "salaries.sql")]
            script.write_text("\\set employeeNumber random(10001, :last_employee)\n"
                              + "".join(f"{statement}\n;\n" for statement in statements))
        prefix = context.work / f"pgbench.{time.monotonic_ns()}"
        last_employee = 10000 + options.employees
        command = [f"{self.postgres.bindir}/pgbench", "-n", "-M", "prepared", "-c", str(options.connections),
                   "-j", "2", "-T", str(seconds), "-D", f"last_employee={last_employee}", "-f", str(script),
                   "-l", f"--log-prefix={prefix}", self.postgres.url]
        with context.meter() as cpu:
            # A watchdog, in case pgbench's own timer never fires: stopped after twice its time.
            output = run_command(command, cwd=context.work, timeout=2 * seconds + 30).stdout
        latencies = []
        for path in glob.glob(f"{prefix}.[0-9]*"):
            with open(path) as transactions:
                latencies.extend(int(line.split()[2]) for line in transactions if line.strip())
            os.remove(path)
        latencies.sort()

        def percentile(p):
            return latencies[min(len(latencies) - 1, int(len(latencies) * p / 100))] if latencies else 0

        failed = re.search(r"number of failed transactions: ([0-9]+)", output)
        tps = re.search(r"tps = ([0-9.]+)", output)
        if tps is None:
            # pgbench stops its report before the rates when no transaction completed: on a
            # loaded machine a short warm-up can end while its clients are still connecting.
            log(f"pgbench reported no rate ({len(latencies)} transactions logged): "
                + " / ".join(output.strip().splitlines()[-3:]))
        return PgbenchRun(len(latencies), float(tps.group(1)) if tps else len(latencies) / seconds,
                          {"p50": percentile(50), "p90": percentile(90), "p99": percentile(99),
                           "max": latencies[-1] if latencies else 0},
                          int(failed.group(1)) if failed else 0, cpu)

    @staticmethod
    def rate(run):
        return run.tps

    @staticmethod
    def describe(run):
        """One run in a log line."""
        return (f"pgbench {run.tps:,.0f} tps, p99 {run.latency_us['p99'] / 1000:.1f} ms, "
                f"CPU/transaction PostgreSQL {1000 * ratio(run.cpu.postgres, run.transactions or 1):.3f} ms")

    @staticmethod
    def summary(runs):
        """The runs' medians, the document's detail.postgres.pgbench."""
        return {
            "tps": median(run.tps for run in runs),
            "latency_p50_ms": median(run.latency_us["p50"] / 1000 for run in runs),
            "latency_p99_ms": median(run.latency_us["p99"] / 1000 for run in runs),
            "failed": sum(run.failed for run in runs),
            "runs": [dataclasses.asdict(run) for run in runs],
        }

    @staticmethod
    def cpu_figures(runs):
        """CPU per transaction, PostgreSQL's and pgbench's own, for cpu.detail.postgres."""
        return {
            "pgbench_postgres_ms_per_transaction": median(
                1000 * ratio(run.cpu.postgres, run.transactions) for run in runs if run.transactions),
            "pgbench_client_ms_per_transaction": median(
                1000 * ratio(run.cpu.client, run.transactions) for run in runs if run.transactions),
        }


# --- The stream and list scenarios' baselines: one query's rows to /dev/null ------------------

class QueryBaseline:
    """A database's own client printing one query's rows to /dev/null; a subclass names the
    command (`_command`) and whose CPU does the work (`cpu_seconds`)."""

    def _command(self, query):
        raise NotImplementedError

    def run(self, context, query):
        """One run, timed, its CPU metered."""
        with context.meter() as cpu:
            seconds = timed(self._command(query), stdout=subprocess.DEVNULL)
        return ToolRun(seconds, cpu)


class PsqlCopy(QueryBaseline):
    """`psql -c "COPY (query) TO STDOUT" > /dev/null`: PostgreSQL's fastest way to print a
    query. Its work is done by the server: `cpu_seconds` is PostgreSQL's CPU."""

    key = "copy"
    label = "COPY"
    cpu_key = "copy_postgres"
    cpu_label = "COPY: PostgreSQL"

    def __init__(self, postgres):
        self.postgres = postgres

    def _command(self, query):
        return ["psql", "-X", "-q", "-d", self.postgres.url, "-c", f"COPY ({query}) TO STDOUT"]

    @staticmethod
    def cpu_seconds(usage):
        return usage.postgres

    def output_figures(self, context, query, seconds):
        """The size of COPY's text for the query, counted as it arrives (another run, not
        timed), and the rate at which a run of `seconds` printed it."""
        copy = subprocess.Popen(self._command(query), stdout=subprocess.PIPE)
        size = sum(len(chunk) for chunk in iter(lambda: copy.stdout.read(1 << 20), b""))
        if copy.wait() != 0:
            raise Failure("psql COPY failed")
        return {"bytes": size, "mb_per_second": ratio(size / 1e6, seconds)}


class Sqlite3Json(QueryBaseline):
    """`sqlite3 -json FILE "query" > /dev/null`: the sqlite3 shell printing a query as JSON,
    as Spout does. Its work is done by the shell itself: `cpu_seconds` is the client's CPU."""

    key = "sqlite3"
    label = "sqlite3 -json"
    cpu_key = "sqlite3"
    cpu_label = "sqlite3"

    def __init__(self, sqlite):
        self.sqlite = sqlite

    def _command(self, query):
        return ["sqlite3", "-json", str(self.sqlite.file), query]

    @staticmethod
    def cpu_seconds(usage):
        return usage.client

    def output_figures(self, context, query, seconds):
        """Nothing more is measured of the shell's output."""
        return {}


# --- The load's baseline ---------------------------------------------------------------------

class CopyLoad:
    """The rows `spout load` put in PostgreSQL, exported as COPY text, then loaded with psql
    \\copy into a second database doing the same work as `spout load` the same fast way: in
    one transaction, the schema, its foreign keys dropped, the rows, the foreign keys added back
    (validated in one pass each), the indexes and ANALYZE. `run` returns (rows, seconds)."""

    key = "copy"
    label = "\\copy"
    tables = ["departments", "employees", "dept_manager", "dept_emp", "titles", "salaries"]

    def __init__(self, postgres):
        self.postgres = postgres

    def run(self, context):
        copy_dir = context.work / "copy"
        copy_dir.mkdir()
        copy_rows = 0
        for table in self.tables:
            with open(copy_dir / f"{table}.tsv", "w") as output:
                self.postgres.psql("-c", f"COPY {table} TO STDOUT", stdout=output)
            with open(copy_dir / f"{table}.tsv", "rb") as exported:
                copy_rows += sum(1 for _ in exported)
        schema = ROOT / "sql" / "schema" / "postgres"
        script = [
            "\\set ON_ERROR_STOP on",
            "BEGIN;",
            f"\\i {schema / 'employees.sql'}",
            "CREATE TEMPORARY TABLE foreign_keys AS SELECT conrelid::regclass AS tbl, conname, "
            "pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE contype = 'f' "
            "AND connamespace = 'public'::regnamespace;",
            "SELECT format('ALTER TABLE %s DROP CONSTRAINT %I', tbl, conname) FROM foreign_keys \\gexec",
            *(f"\\copy {table} FROM '{copy_dir / (table + '.tsv')}'" for table in self.tables),
            "SELECT format('ALTER TABLE %s ADD CONSTRAINT %I %s', tbl, conname, def) FROM foreign_keys \\gexec",
            f"\\i {schema / 'employees-indexes.sql'}",
            "ANALYZE;",
            "COMMIT;",
        ]
        (context.work / "copy-load.sql").write_text("\n".join(script) + "\n")
        log("loading the same rows with psql \\copy")
        copy_seconds = timed(["psql", "-X", "-q", "-d", self.postgres.copy_url,
                              "-f", str(context.work / "copy-load.sql")], stdout=subprocess.DEVNULL)
        shutil.rmtree(copy_dir)
        return copy_rows, copy_seconds
