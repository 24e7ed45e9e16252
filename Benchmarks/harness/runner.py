"""The Harness: one run of the benchmarks from the parsed options to the written report."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .common import BENCH, ROOT, Failure, log, merge
from .context import Context
from .databases import PostgreSQL, SQLite
from .processes import run_command
from .report import Reporter
from .scenarios import (CompressedStreamScenario, DetailScenario, ListScenario, LoadScenario, MemoryScenario, PagesScenario,
                        ProfileScenario, StatementsScenario, StreamScenario, idle_rss_fragment)

PACKAGES = ["wrk", "postgresql", "curl", "xz-utils", "python3", "libpq-dev", "libsqlite3-dev", "sqlite3"]


class Harness:
    """prepare(), measure(), report(), and cleanup() whatever happened: a temporary work
    directory (cluster, logs, SQLite file) removed at the end unless --keep."""

    def __init__(self, options):
        self.options = options
        self.work = Path(tempfile.mkdtemp(prefix="spout-bench."))
        self.work.chmod(0o755)
        self.postgres = PostgreSQL(self.work)
        self.sqlite = SQLite(self.work)
        self.databases = (self.postgres, self.sqlite)
        self.context = Context(options, self.work, self.postgres)
        self.data = None
        # Kept: the report's settings record the last name it chose.
        self.lists = ListScenario(self.postgres)

    def prepare(self):
        """Packages (as root, unless --no-install), the tools, the spout executable (built
        unless --binary), the generated data (cached in Benchmarks/.cache/), the databases
        started."""
        options = self.options
        if not options.no_install:
            subprocess.run([str(ROOT / "scripts" / "install-packages"), *PACKAGES], check=False)
        for tool in ("wrk", "curl", *(tool for database in self.databases for tool in database.tools)):
            if not shutil.which(tool):
                raise Failure(f"{tool} is not installed")
        if not options.binary:
            log("building Spout (release)")
            run_command(["swift", "build", "-c", "release", "--product", "spout"], cwd=ROOT)
            bin_path = run_command(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT).stdout.strip()
            options.binary = f"{bin_path}/spout"
        if not os.access(options.binary, os.X_OK):
            raise Failure(f"no spout executable at {options.binary}")
        run_command([options.binary, "serve", "--help"])
        self.data = self._generate()
        for database in self.databases:
            database.start()

    def _generate(self):
        """The data directory for --employees and --seed, generated unless cached."""
        options = self.options
        data = BENCH / ".cache" / f"employees-{options.employees}-seed{options.seed}"
        if not (data / ".complete").exists():
            log(f"generating {options.employees} employees into {data.relative_to(ROOT)}")
            # Generated beside the cache entry and renamed into place, so a concurrent or
            # interrupted run never sees half the files.
            data.parent.mkdir(parents=True, exist_ok=True)
            partial = Path(tempfile.mkdtemp(prefix=data.name + ".partial.", dir=data.parent))
            run_command([options.binary, "generate", str(partial), "--employees", str(options.employees),
                         "--seed", str(options.seed)])
            (partial / ".complete").touch()
            shutil.rmtree(data, ignore_errors=True)
            try:
                partial.rename(data)
            except OSError:
                shutil.rmtree(partial, ignore_errors=True)
        return data

    def plan(self):
        """The scenarios in the order they run, in groups: each group's database served by a
        fresh Spout (None: the group's scenarios serve themselves, or need no server)."""
        postgres, sqlite = self.postgres, self.sqlite
        on_postgres = [StreamScenario(postgres), PagesScenario(postgres), self.lists, MemoryScenario(postgres)]
        if self.options.profile:
            on_postgres.append(ProfileScenario(postgres))
        # A fresh server for each stream scenario, so its peak RSS is the stream's own and not
        # the page caches and pooled connections the detail load left behind.
        return [
            (None, [LoadScenario(self.databases, self.data)]),
            (postgres, [DetailScenario(postgres, http_floor=True)]),
            (postgres, on_postgres),
            (None, [StatementsScenario(postgres)]),
            (sqlite, [DetailScenario(sqlite)]),
            (sqlite, [StreamScenario(sqlite), PagesScenario(sqlite)]),
            (postgres, [CompressedStreamScenario(postgres)]),
            (sqlite, [CompressedStreamScenario(sqlite)]),
        ]

    def measure(self):
        """Runs the plan, merging every fragment into context.document."""
        context = self.context
        for database, scenarios in self.plan():
            if database is not None:
                merge(context.document, idle_rss_fragment(context.serve(database.name, database.url)))
            for scenario in scenarios:
                merge(context.document, scenario.run(context))
            context.stop_serving()

    def report(self):
        """The JSON written, the table printed."""
        reporter = Reporter(self.options, self.databases)
        document = reporter.document(self.context.document, self.tool_versions(), self.lists.last_name)
        path = reporter.write(document)
        print(reporter.table(document))
        print(f"\nwritten: {path}")

    def tool_versions(self):
        """The machine section's versions, in its order: PostgreSQL, wrk, sqlite3."""
        wrk = subprocess.run(["wrk", "-v"], capture_output=True, text=True)
        return {**self.postgres.versions(), "wrk_version": (wrk.stdout + wrk.stderr).split()[1],
                **self.sqlite.versions()}

    def cleanup(self):
        self.context.stop_serving()
        for database in self.databases:
            database.stop(keep=self.options.keep)
        if self.options.keep:
            log(f"kept {self.work}")
        else:
            shutil.rmtree(self.work, ignore_errors=True)
