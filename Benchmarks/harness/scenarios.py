"""The scenarios, one class each. A scenario measures Spout against one database and, where
the database has one, against that database's own tool (its baseline) in alternating runs, so
that machine noise hits both sides. `run(context)` returns the scenario's fragment of the JSON
document, which the Harness merges into it (harness.common.merge)."""

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from .clients import curl, wrk_detail, wrk_health
from .common import MIB, ROOT, Failure, log, median, ratio, sql_text
from .processes import RssSampler, proc_kb, run_command

# The list-with-details baseline: the department scenario's rows as one JOIN.
DEPARTMENT_JOIN = """SELECT e.emp_no, e.first_name, e.last_name, e.hire_date, t.title, t.from_date, t.to_date
FROM dept_emp de
JOIN employees e ON e.emp_no = de.emp_no
LEFT JOIN titles t ON t.emp_no = e.emp_no
WHERE de.dept_no = 'd005' AND de.to_date = '9999-01-01'
ORDER BY e.emp_no, t.from_date, t.title"""
DEPARTMENT_PATH = "/departments/d005/employees?details=titles"
PAGE_SIZE = 100


def stream_pairs(options):
    """How many Spout/baseline pairs the stream scenario measures: at least 5 outside --quick."""
    return options.repeat if options.quick else max(5, options.repeat)


def idle_rss_fragment(server):
    """A freshly started server's resident memory, the document's idle_rss_mib.NAME."""
    return {"idle_rss_mib": {server.name: server.idle_rss_kb * 1024 / MIB}}


def summarize_transfers(transfers):
    """The medians of curl transfers (the largest peak RSS), with every run."""
    seconds = median(transfer.seconds for transfer in transfers)
    size = median(transfer.bytes for transfer in transfers)
    return {
        "seconds": seconds,
        "bytes": size,
        "mb_per_second": ratio(size / 1e6, seconds),
        "ttfb_seconds": median(transfer.ttfb_seconds for transfer in transfers),
        "peak_rss_mib": max(transfer.peak_rss_kb for transfer in transfers) * 1024 / MIB,
        "peak_anonymous_mib": max(transfer.peak_anon_kb for transfer in transfers) * 1024 / MIB,
        "statuses": sorted({transfer.status for transfer in transfers}),
        "runs": [dataclasses.asdict(transfer) for transfer in transfers],
    }


class Scenario:
    """One measurement. `run(context)` measures against context.server, which the Harness
    started for it (see Harness.plan: some scenarios need none, or start their own), and
    returns its fragment of the document."""

    def run(self, context):
        raise NotImplementedError


class LoadScenario(Scenario):
    """`spout load` of the generated data into each database (timed), and after it, where the
    database has one, its load baseline (timed). Needs no server."""

    def __init__(self, databases, data):
        self.databases = databases
        self.data = data

    def run(self, context):
        loads = {}
        for database in self.databases:
            log(f"loading {database.label} with spout load")
            seconds, rows = self._spout_load(context, database)
            entry = {"rows": rows, "spout_seconds": seconds}
            baseline = database.load_baseline
            if baseline is not None:
                baseline_rows, baseline_seconds = baseline.run(context)
                entry[f"{baseline.key}_rows"] = baseline_rows
                entry[f"{baseline.key}_seconds"] = baseline_seconds
                entry[f"ratio_spout_to_{baseline.key}"] = ratio(seconds, baseline_seconds)
            loads[database.name] = entry
        log("loads: " + "; ".join(self._summary(database, loads[database.name]) for database in self.databases))
        return {"load": loads}

    def _spout_load(self, context, database):
        """(seconds, rows loaded), the output kept as load-NAME.log in the work directory."""
        started = time.monotonic()
        output = run_command([context.options.binary, "load", str(self.data), "--database", database.url,
                              "--sql-directory", str(ROOT / "sql")])
        seconds = time.monotonic() - started
        # The shipped endpoints include the pets, whose SQL Spout prepares at start.
        pets = run_command([context.options.binary, "load-pets", "--database", database.url,
                            "--sql-directory", str(ROOT / "sql")])
        (context.work / f"load-{database.name}.log").write_text(output.stdout + output.stderr + pets.stdout + pets.stderr)
        match = re.search(r"^loaded ([0-9]+) rows", output.stdout + output.stderr, re.MULTILINE)
        return seconds, int(match.group(1)) if match else 0

    @staticmethod
    def _summary(database, entry):
        text = f"{database.label} spout {entry['spout_seconds']:.1f} s"
        baseline = database.load_baseline
        if baseline is not None:
            text += f", {baseline.label} {entry[f'{baseline.key}_seconds']:.1f} s"
        return text + f" ({entry['rows']:,} rows)"


class DetailScenario(Scenario):
    """wrk on GET /employees/{n}?details=titles&details=salaries, each measured run followed
    by a run of the database's detail baseline (pgbench on PostgreSQL; none on SQLite). With
    `http_floor`, then wrk on GET /health too. Then Spout's resident memory."""

    def __init__(self, database, http_floor=False):
        self.database = database
        self.http_floor = http_floor

    def run(self, context):
        options = context.options
        database, name = self.database, self.database.name
        baseline = database.detail_baseline
        log(f"detail ({name}): warm-up {options.warmup}s")
        wrk_detail(context, options.warmup)
        if baseline is not None:
            baseline.run(context, options.warmup)
        spout_runs, baseline_runs = [], []
        for number in range(1, options.repeat + 1):
            spout = wrk_detail(context, options.duration)
            spout_runs.append(spout)
            log(f"detail ({name}) run {number}: spout {spout.requests_per_second:,.0f} req/s, "
                f"p99 {spout.latency_us['p99'] / 1000:.1f} ms, errors {spout.errors['total']}, "
                f"CPU/request spout {1000 * ratio(spout.cpu.spout, spout.requests):.3f} ms"
                + (f", {database.label} {1000 * ratio(database.server_seconds(spout.cpu), spout.requests):.3f} ms"
                   if database.server_name else ""))
            if baseline is not None:
                baseline_run = baseline.run(context, options.duration)
                baseline_runs.append(baseline_run)
                log(f"detail ({name}) run {number}: {baseline.describe(baseline_run)}")
        entry = {"spout": {
            "requests_per_second": median(run.requests_per_second for run in spout_runs),
            "latency_p50_ms": median(run.latency_us["p50"] / 1000 for run in spout_runs),
            "latency_p99_ms": median(run.latency_us["p99"] / 1000 for run in spout_runs),
            "errors": sum(run.errors["total"] for run in spout_runs),
            "requests": sum(run.requests for run in spout_runs),
            "runs": [dataclasses.asdict(run) for run in spout_runs],
        }}
        cpu = {"spout_ms_per_request": median(1000 * ratio(run.cpu.spout, run.requests) for run in spout_runs),
               "wrk_ms_per_request": median(1000 * ratio(run.cpu.client, run.requests) for run in spout_runs)}
        if database.server_name:
            cpu[f"{database.server_name}_ms_per_request"] = median(
                1000 * ratio(database.server_seconds(run.cpu), run.requests) for run in spout_runs)
        if self.http_floor:
            # The same machine answering /health: how much of a detail request is HTTP alone.
            requests, per_second, floor_cpu = wrk_health(context, options.duration)
            entry["http_floor"] = {"requests_per_second": per_second, "requests": requests}
            cpu["http_floor_spout_ms_per_request"] = 1000 * ratio(floor_cpu.spout, requests)
            log(f"HTTP floor: GET /health {per_second:,.0f} req/s, "
                f"CPU/request spout {cpu['http_floor_spout_ms_per_request']:.3f} ms")
        if baseline_runs:
            entry[baseline.key] = baseline.summary(baseline_runs)
            pair_ratios = [ratio(spout.requests_per_second, baseline.rate(baseline_run))
                           for spout, baseline_run in zip(spout_runs, baseline_runs)]
            entry["pair_ratios"] = pair_ratios
            entry[f"ratio_spout_to_{baseline.key}"] = median(pair_ratios)
            cpu.update(baseline.cpu_figures(baseline_runs))
        # Spout's resident memory once the detail load is over: the pool's connections and,
        # on SQLite, each connection's page cache.
        rss, anon = proc_kb(context.server.pid, "VmRSS"), proc_kb(context.server.pid, "RssAnon")
        log(f"after the detail load ({name}): RSS {rss} kB (anonymous {anon} kB)")
        return {
            "detail": {name: entry},
            "cpu": {"detail": {name: cpu}},
            "rss_after_detail_mib": {name: {"rss": rss * 1024 / MIB, "anonymous": anon * 1024 / MIB}},
        }


class StreamScenario(Scenario):
    """GET /salaries with curl (TTFB, peak RSS), alternating with the database's query baseline
    printing the same query to /dev/null: psql COPY on PostgreSQL, the sqlite3 shell's -json
    mode on SQLite. The compressed variants are CompressedStreamScenario's, on a server of
    their own (what the compressors leave to malloc would count in this one's peak RSS)."""

    def __init__(self, database):
        self.database = database

    def run(self, context):
        database, name = self.database, self.database.name
        baseline = database.query_baseline
        query = sql_text("all-salaries.sql")
        rows = database.count_rows(query)
        pairs = stream_pairs(context.options)
        log(f"stream ({name}): warm-up, then {pairs} pair(s)")
        curl(context, "/salaries")
        baseline.run(context, query)
        transfers, tool_runs = [], []
        for number in range(1, pairs + 1):
            transfer = curl(context, "/salaries", sample_rss=True)
            tool = baseline.run(context, query)
            transfers.append(transfer)
            tool_runs.append(tool)
            log(f"stream ({name}) pair {number}: spout {transfer.seconds:.3f} s "
                f"(TTFB {1000 * transfer.ttfb_seconds:.1f} ms, "
                f"peak RSS {transfer.peak_rss_kb} kB, anonymous {transfer.peak_anon_kb} kB), "
                f"{baseline.key} {tool.seconds:.3f} s: {transfer.seconds / tool.seconds:.2f}")
        spout = summarize_transfers(transfers)
        spout["rows"] = rows
        spout["rows_per_second"] = ratio(rows, spout["seconds"])
        pair_ratios = [ratio(transfer.seconds, tool.seconds) for transfer, tool in zip(transfers, tool_runs)]
        tool_seconds = median(tool.seconds for tool in tool_runs)
        entry = {
            "spout": spout,
            baseline.key: {"seconds": tool_seconds, "rows_per_second": ratio(rows, tool_seconds),
                           "runs": [tool.seconds for tool in tool_runs]},
            "pair_ratios": pair_ratios,
            f"ratio_spout_to_{baseline.key}": median(pair_ratios),
        }
        entry[baseline.key].update(baseline.output_figures(context, query, tool_seconds))
        cpu = {"rows": rows,
               "spout_us_per_row": median(1e6 * ratio(transfer.cpu.spout, rows) for transfer in transfers)}
        if database.server_name:
            cpu[f"{database.server_name}_us_per_row"] = median(
                1e6 * ratio(database.server_seconds(transfer.cpu), rows) for transfer in transfers)
        cpu[f"{baseline.cpu_key}_us_per_row"] = median(
            1e6 * ratio(baseline.cpu_seconds(tool.cpu), rows) for tool in tool_runs)
        return {"stream": {name: entry}, "cpu": {"stream": {name: cpu}}}


class CompressedStreamScenario(Scenario):
    """GET /salaries plain, then with `Accept-Encoding: zstd`, then with `gzip`, in rounds on a
    server of its own (#31): each coding's time is the median of its ratios to the plain
    download of the same round; curl keeps the body compressed, so its size is the wire's."""

    CODINGS = ("zstd", "gzip")

    def __init__(self, database):
        self.database = database

    def run(self, context):
        name = self.database.name
        pairs = stream_pairs(context.options)
        log(f"compressed streams ({name}): warm-up, then {pairs} round(s)")
        curl(context, "/salaries")
        plains, compressed = [], {coding: [] for coding in self.CODINGS}
        for number in range(1, pairs + 1):
            plain = curl(context, "/salaries")
            plains.append(plain)
            for coding in self.CODINGS:
                encoded = curl(context, "/salaries", "-H", f"Accept-Encoding: {coding}", sample_rss=True)
                compressed[coding].append(encoded)
                log(f"stream-{coding} ({name}) round {number}: {encoded.seconds:.3f} s, {encoded.bytes} bytes "
                    f"({encoded.content_encoding}), peak RSS {encoded.peak_rss_kb} kB; plain {plain.seconds:.3f} s: "
                    f"{encoded.seconds / plain.seconds:.2f} x plain")
        entry = {}
        plain_bytes = median(plain.bytes for plain in plains)
        for coding, encoded in compressed.items():
            pair_ratios = [ratio(e.seconds, p.seconds) for e, p in zip(encoded, plains)]
            entry[coding] = dict(summarize_transfers(encoded), content_encoding=encoded[0].content_encoding,
                                 compression_ratio=ratio(plain_bytes, median(e.bytes for e in encoded)),
                                 plain_seconds=median(plain.seconds for plain in plains),
                                 pair_ratios=pair_ratios, ratio_to_plain=median(pair_ratios))
        return {"stream": {name: entry}}


class PagesScenario(Scenario):
    """Keyset pages of /employees?pageSize=100: the first page and a deep one (page 1,000 at
    full scale) fetched in alternation, the deep page's URL found by following Link. Its
    `deep_path` is the page StatementsScenario counts and plans."""

    def __init__(self, database):
        self.database = database

    def run(self, context):
        size = PAGE_SIZE
        deep = max(1, min(1000, context.options.employees // size))
        first_path = f"/employees?pageSize={size}"
        path, number = first_path, 1
        while number < deep:
            # Walked in process (a curl per page would take minutes at full scale).
            with urllib.request.urlopen(context.server.base + path) as response:
                response.read()
                link = re.match(r'\s*<([^>]*)>;\s*rel="next"', response.headers.get("Link", ""))
            if link is None:
                break
            path, number = link.group(1), number + 1
        firsts, deeps = [], []
        for _ in range(max(5, context.options.repeat)):
            firsts.append(curl(context, first_path))
            deeps.append(curl(context, path))
        entry = {
            "page_size": size,
            "deep_page": number,
            "first_seconds": median(transfer.seconds for transfer in firsts),
            "deep_seconds": median(transfer.seconds for transfer in deeps),
            "pair_ratios": [ratio(d.seconds, f.seconds) for f, d in zip(firsts, deeps)],
            "statuses": sorted({transfer.status for transfer in firsts + deeps}),
        }
        entry["ratio_deep_to_first"] = median(entry["pair_ratios"])
        entry["deep_path"] = path
        log(f"pages on {self.database.name}: page 1 {entry['first_seconds'] * 1000:.2f} ms, page {number} "
            f"{entry['deep_seconds'] * 1000:.2f} ms ({entry['ratio_deep_to_first']:.2f})")
        return {"pages": {self.database.name: entry}}


class ListScenario(Scenario):
    """Lists with details: a last name shared by about 400 employees at full scale (40
    quick), and a large department (~61k current members at full scale) compared with the
    database's query baseline printing the equivalent JOIN, in alternating pairs. `last_name`
    is the name chosen, once run."""

    def __init__(self, database):
        self.database = database
        self.last_name = None

    def run(self, context):
        options = context.options
        database, baseline = self.database, self.database.query_baseline
        target = 400 if options.employees > 30000 else 40
        self.last_name = database.query_value("SELECT last_name FROM employees GROUP BY last_name "
                                              f"ORDER BY abs(count(*) - {target}), last_name LIMIT 1")
        # Each case's path, and the query its baseline prints (None: no baseline).
        cases = {"last-name": (f"/employees?lastName={self.last_name}&details=titles", None),
                 "department": (DEPARTMENT_PATH, DEPARTMENT_JOIN)}
        lists = {}
        for case, (path, join) in cases.items():
            body = context.work / "list.json"
            curl(context, path)
            if join:
                baseline.run(context, join)
            transfers, joins = [], []
            for _ in range(options.repeat):
                transfers.append(curl(context, path, output=str(body)))
                if join:
                    joins.append(baseline.run(context, join))
            parents = json.loads(body.read_text())
            children = sum(len(parent.get("titles", [])) for parent in parents)
            rows = len(parents) + children
            seconds = median(transfer.seconds for transfer in transfers)
            entry = {
                "path": path,
                "parents": len(parents),
                "children": children,
                "rows": rows,  # objects written: parents and their children
                "seconds": seconds,
                "rows_per_second": ratio(rows, seconds),
                "ttfb_seconds": median(transfer.ttfb_seconds for transfer in transfers),
                "bytes": median(transfer.bytes for transfer in transfers),
                "statuses": sorted({transfer.status for transfer in transfers}),
                "runs": [transfer.seconds for transfer in transfers],
                "cpu": dict({"spout_us_per_row": median(1e6 * ratio(t.cpu.spout, rows) for t in transfers)},
                            **self._server_cpu(transfers, rows)),
            }
            join_text = ""
            if joins:
                key = f"{baseline.key}_join"
                join_rows = database.count_rows(join)
                join_seconds = median(run.seconds for run in joins)
                pair_ratios = [ratio(transfer.seconds, run.seconds) for transfer, run in zip(transfers, joins)]
                entry[key] = dict({"rows": join_rows, "seconds": join_seconds,
                                   "rows_per_second": ratio(join_rows, join_seconds),
                                   "runs": [run.seconds for run in joins]},
                                  **self._server_cpu(joins, join_rows))
                entry["pair_ratios"] = pair_ratios
                entry[f"ratio_spout_to_{key}"] = median(pair_ratios)
                join_text = f", {baseline.label} JOIN {join_seconds:.3f} s: {entry[f'ratio_spout_to_{key}']:.2f}"
            lists[case] = entry
            log(f"list {path}: {len(parents):,} parents, {rows:,} rows in {seconds:.3f} s{join_text}")
        return {"list": {database.name: lists},
                "cpu": {"list": {database.name: {case: entry["cpu"] for case, entry in lists.items()}}}}

    def _server_cpu(self, runs, rows):
        """The database server's CPU per row over runs ({} when it has no server)."""
        server = self.database.server_name
        if not server:
            return {}
        return {f"{server}_us_per_row": median(1e6 * ratio(self.database.server_seconds(run.cpu), rows)
                                               for run in runs)}


class MemoryScenario(Scenario):
    """CONNECTIONS concurrent /salaries streams, a quarter of them reading at 2 MB/s and
    giving up after a while: slow clients must not grow memory."""

    def __init__(self, database):
        self.database = database

    def run(self, context):
        options = context.options
        streams = options.connections
        slow = streams // 4
        slow_max = 10 if options.quick else 30
        log(f"memory under load: {streams} concurrent /salaries streams, {slow} at 2 MB/s (max {slow_max}s)")
        write_out = '{"status": %{http_code}, "seconds": %{time_total}, "bytes": %{size_download}}'
        started = time.monotonic()
        with RssSampler(context.server.pid) as sampler:
            clients = []
            for index in range(streams):
                limits = ["--limit-rate", "2M", "--max-time", str(slow_max)] if index < slow else []
                clients.append((index < slow, subprocess.Popen(
                    ["curl", "-sS", "-o", "/dev/null", *limits, "-w", write_out, context.server.base + "/salaries"],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)))
            results = []
            for is_slow, client in clients:
                output, _ = client.communicate()
                results.append(dict(json.loads(output), slow=is_slow))
        seconds = time.monotonic() - started
        log(f"memory under load: peak RSS {sampler.peak_kb} kB (anonymous {sampler.peak_anon_kb} kB)")
        return {"memory": {self.database.name: {
            "streams": streams,
            "slow_streams": slow,
            "slow_max_seconds": slow_max,
            "seconds": seconds,
            "peak_rss_mib": sampler.peak_kb * 1024 / MIB,
            "peak_anonymous_mib": sampler.peak_anon_kb * 1024 / MIB,
            "fast_completed": sum(1 for result in results if not result["slow"] and result["status"] == 200),
            "slow_bytes": sum(result["bytes"] for result in results if result["slow"]),
            "statuses": sorted({result["status"] for result in results}),
            "runs": results,
        }}}


class ProfileScenario(Scenario):
    """--profile: perf records Spout's threads (call graphs, 999 Hz) during one more detail
    run and one more stream, outside the measured runs; reports go next to the JSON, in
    profiles/. Adds nothing to the document."""

    def __init__(self, database):
        self.database = database

    def run(self, context):
        if not shutil.which("perf"):
            log("perf is not installed: no profiles")
            return {}
        directory = Path(context.options.results) / "profiles"
        directory.mkdir(parents=True, exist_ok=True)
        name = self.database.name
        for profile, action in ((f"detail-{name}", lambda: wrk_detail(context, context.options.duration)),
                                (f"stream-{name}", lambda: curl(context, "/salaries"))):
            data = context.work / f"perf-{profile}.data"
            perf = subprocess.Popen(["perf", "record", "-F", "999", "-g", "-p", str(context.server.pid),
                                     "-o", str(data)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
            action()
            perf.send_signal(signal.SIGINT)
            perf.wait()
            # Self time per function, then time including callees.
            for suffix, mode in (("", ["--no-children", "--sort", "dso,symbol"]),
                                 ("-children", ["--children", "--sort", "symbol"])):
                report = run_command(["perf", "report", "-i", str(data), *mode, "--stdio", "-g", "none"],
                                     check=False).stdout
                lines = [line.rstrip() for line in report.splitlines() if line.strip()][:150]
                (directory / f"{profile}{suffix}.txt").write_text("\n".join(lines) + "\n")
            log(f"profile written to {directory / profile}.txt")
        return {}


class StatementsScenario(Scenario):
    """Statements per request, from a Spout whose connections log their statements
    (log_statement=all, application_name spout_count), with a pool of one connection opened by
    a warm-up request before anything is counted; and the plans of the deep page's statement.
    Needs a database with a statement log (PostgreSQL), and the list and pages scenarios'
    figures in the document. Serves its own Spout ("count") and stops it."""

    application_name = "spout_count"
    control_words = {"BEGIN", "COMMIT", "ROLLBACK", "END", "START", "SET", "RESET", "SHOW", "DISCARD",
                     "DEALLOCATE", "SAVEPOINT", "RELEASE"}

    def __init__(self, database):
        self.database = database

    def run(self, context):
        database, name = self.database, self.database.name
        server = context.serve("count", database.statement_logging_url(self.application_name), 1)
        lists = context.document["list"][name]
        paths = {"detail": "/employees/10001?details=titles&details=salaries",
                 "last-name": lists["last-name"]["path"],
                 "department": DEPARTMENT_PATH,
                 "page": context.document["pages"][name]["deep_path"]}
        fragment = idle_rss_fragment(server)
        statements = {}
        for case, path in paths.items():
            curl(context, path)
            time.sleep(0.2)
            offset = os.path.getsize(database.log_path)
            status = curl(context, path).status
            if status != 200:
                raise Failure(f"{path} answered {status} to the statement-logging Spout")
            time.sleep(0.5)
            with open(database.log_path, errors="replace") as server_log:
                server_log.seek(offset)
                lines = server_log.read().splitlines()
            statements[case] = dict(self._count(lines), path=path)
            if case == "page":
                fragment["pages"] = {name: {"plan": self._page_plan(path, lines)}}
            log(f"statements for {path}: {statements[case]['statements']} statements, "
                f"{statements[case]['cursor_fetches']} FETCH/CLOSE, {statements[case]['control']} BEGIN/COMMIT/SET")
        context.stop_serving()
        fragment["statements"] = statements
        per_list = {}
        for case in ("last-name", "department"):
            counted = statements[case]["statements"]
            per_list[case] = {"statements": counted,
                              "cursor_fetches": statements[case]["cursor_fetches"],
                              "statements_per_500_parents": ratio(counted, max(1, -(-lists[case]["parents"] // 500)))}
        fragment["list"] = {name: per_list}
        return fragment

    def _count(self, lines):
        """The statements logged by the counting connections in LINES: {statements,
        cursor_fetches, control, texts: [{text (its first 120 characters), count}]}."""
        counts = {"statements": 0, "cursor_fetches": 0, "control": 0}
        texts = {}
        for line in lines:
            match = re.match(rf"\[{self.application_name}\] LOG:  (?:statement|execute [^:]*): (.*)", line)
            if not match:
                continue
            text = match.group(1).strip()
            word = text.split(None, 1)[0].upper() if text else ""
            if word in ("FETCH", "CLOSE", "MOVE"):
                counts["cursor_fetches"] += 1
            elif word in self.control_words:
                counts["control"] += 1
            else:
                counts["statements"] += 1
                texts[text[:120]] = texts.get(text[:120], 0) + 1
        counts["texts"] = [{"text": text, "count": number} for text, number in texts.items()]
        return counts

    def _page_plan(self, path, lines):
        """The plans of the statement Spout sent for the page at `path`, as PostgreSQL logged
        it in `lines` (the endpoint's SQL wrapped by KeysetQuery, every argument a parameter;
        not rebuilt here), with the custom plan of a first execution and the generic plan
        PostgreSQL may switch to after five: {"custom": [lines], "generic": [lines]}."""
        prefix = f"[{self.application_name}] "
        text, values = None, None
        for index, line in enumerate(lines):
            match = re.match(re.escape(prefix) + r"LOG:  execute [^:]*: (?:DECLARE \S+ NO SCROLL CURSOR FOR )?"
                             r"(SELECT \* FROM \(.*)", line)
            if not match:
                continue
            statement = [match.group(1)]
            for following in lines[index + 1:]:
                if following.startswith(prefix):
                    parameters = re.match(re.escape(prefix) + r"DETAIL:  parameters: (.*)", following)
                    values = re.findall(r"\$[0-9]+ = (NULL|'(?:[^']|'')*')", parameters.group(1)) if parameters else []
                    break
                # The log indents a statement's later lines with a tab.
                statement.append(following[1:] if following.startswith("\t") else following)
            text = "\n".join(statement)
            break
        if text is None or "spout_page" not in text:
            raise Failure(f"no page statement for {path} in PostgreSQL's log")
        plans = {}
        for mode in ("force_custom_plan", "force_generic_plan"):
            script = (f"SET plan_cache_mode = {mode};\nPREPARE spout_page AS {text};\n"
                      f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE spout_page({', '.join(values)});\n")
            output = self.database.psql("-At", "-c", script).stdout
            plans[mode.split("_")[1]] = [line for line in output.splitlines() if line and line not in ("SET", "PREPARE")]
        return plans
