"""The report: the scenarios' figures made into the JSON document (a header of machine and
settings first, issue #19's targets last), written to RESULTS/<timestamp>.json and
RESULTS/latest.json, and printed as one table followed by the targets."""

import datetime
import json
import os
import platform
import subprocess
from pathlib import Path

from .common import ROOT
from .processes import RssSampler
from .scenarios import stream_pairs

SCHEMA = 2


def number(value, digits=0, unit=""):
    """A figure for the table: thousands separated, DIGITS decimals, "-" for None."""
    return "-" if value is None else f"{value:,.{digits}f}{unit}"


def targets(document):
    """Issues #19's and #31's targets, each from figures of this run: {name, target, value, met}, `met`
    None when the value is missing."""

    def target(name, text, value, met):
        return {"name": name, "target": text, "value": value, "met": None if value is None else bool(met(value))}

    stream = document["stream"]

    def compressed(coding):
        ratios = [stream[database][coding].get("ratio_to_plain") for database in ("postgres", "sqlite")]
        return None if None in ratios else max(ratios)

    one_stream = max(stream[database]["spout"]["peak_rss_mib"] for database in ("postgres", "sqlite"))
    ttfb = stream["postgres"]["spout"]["ttfb_seconds"]
    return [
        target("stream", "PostgreSQL stream <= 1.2 x psql COPY (median of pairs)",
               stream["postgres"]["ratio_spout_to_copy"], lambda value: value <= 1.2),
        target("ttfb", "PostgreSQL stream time to first byte < 10 ms",
               None if ttfb is None else ttfb * 1000, lambda value: value < 10),
        target("stream-rss", "peak RSS of one stream <= 48 MiB", one_stream, lambda value: value <= 48),
        target("detail", "detail req/s >= 0.8 x pgbench tps (median of pairs)",
               document["detail"]["postgres"].get("ratio_spout_to_pgbench"), lambda value: value >= 0.8),
        target("sqlite-stream", "SQLite stream <= 1.0 x sqlite3 -json (median of pairs)",
               stream["sqlite"]["ratio_spout_to_sqlite3"], lambda value: value <= 1.0),
        target("list-details", "list with details <= 2 x psql COPY of the JOIN",
               document["list"]["postgres"]["department"].get("ratio_spout_to_copy_join"), lambda value: value <= 2),
        # Issue #31: compressed streams near the plain one's time, on either database.
        target("zstd-stream", "zstd stream <= 1.3 x plain (median of pairs, either db)",
               compressed("zstd"), lambda value: value <= 1.3),
        target("gzip-stream", "gzip stream <= 1.6 x plain (median of pairs, either db)",
               compressed("gzip"), lambda value: value <= 1.6),
    ]



def portable_path(path):
    """`path` without this machine's layout: relative to the repository inside it, the file's
    name alone outside it (a results file is committed; a checkout's location means nothing)."""
    if not path:
        return path
    absolute = os.path.abspath(path)
    if absolute.startswith(str(ROOT) + os.sep):
        return os.path.relpath(absolute, ROOT)
    return os.path.basename(absolute)

class Reporter:
    """Reports one run. DATABASES (harness.databases objects, in the table's order) name the
    database-specific figures and label them in the table."""

    def __init__(self, options, databases):
        self.options = options
        self.databases = databases

    def document(self, figures, versions, last_name):
        """The whole JSON document: the header, FIGURES (the merged fragments of the
        scenarios), the targets. VERSIONS: the machine's tool versions ({"wrk_version": ...}),
        LAST_NAME: the list scenario's."""
        options = self.options
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        cpu_model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                          if line.startswith("model name")), platform.processor())
        memory_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                         if line.startswith("MemTotal:"))
        memory = figures["memory"]["postgres"]
        header = {
            "schema": SCHEMA,
            "timestamp": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "quick": options.quick,
            "machine": dict({
                "cpu_model": cpu_model,
                "cpus": os.cpu_count(),
                "memory_gib": round(memory_kb / 1024 / 1024, 1),
                "kernel": platform.release(),
                "load_average_at_end": list(os.getloadavg()),
            }, **versions),
            "settings": {
                "employees": options.employees,
                "seed": options.seed,
                "duration_seconds": options.duration,
                "warmup_seconds": options.warmup,
                "repeat": options.repeat,
                "stream_pairs": stream_pairs(options),
                "connections": options.connections,
                "pool_size": options.pool_size,
                "slow_streams": memory["slow_streams"],
                "slow_max_seconds": memory["slow_max_seconds"],
                "last_name": last_name,
                "binary": portable_path(options.binary),
                "git_commit": commit.stdout.strip() or "unknown",
                "hwm_resets": RssSampler.hwm_resets,
            },
        }
        document = dict(header, **figures)
        document["targets"] = targets(document)
        return document

    def write(self, document):
        """Writes the document to RESULTS/<timestamp>.json and RESULTS/latest.json (RESULTS is
        --results), each through a .tmp file renamed into place; returns the first's path."""
        results = Path(self.options.results)
        results.mkdir(parents=True, exist_ok=True)
        stamp = document["timestamp"].replace(":", "").replace("-", "")
        text = json.dumps(document, indent=2) + "\n"
        for name in (f"{stamp}.json", "latest.json"):
            temporary = results / (name + ".tmp")
            temporary.write_text(text)
            temporary.replace(results / name)
        return results / f"{stamp}.json"

    def table(self, document):
        """The printed table: a title line, one row per figure with its baseline and ratio,
        then the targets, met or MISSED."""
        settings, detail, stream, load, cpu = (document[key] for key in ("settings", "detail", "stream", "load", "cpu"))
        rows = []

        def row(scenario, database, spout, baseline="", ratio_text=""):
            rows.append((scenario, database, spout, baseline, ratio_text))

        def pairs(values):
            return " (pairs " + ", ".join(number(value, 2) for value in values) + ")" if len(values) > 1 else ""

        for database in self.databases:
            entry, tool = load[database.name], database.load_baseline
            if tool is None:
                row("load", database.name, number(entry["spout_seconds"], 1, " s"))
            else:
                row("load", database.name, f"{number(entry['spout_seconds'], 1, ' s')} ({number(entry['rows'])} rows)",
                    f"{tool.label} " + number(entry[f"{tool.key}_seconds"], 1, " s"),
                    number(entry[f"ratio_spout_to_{tool.key}"], 2))
        for database in self.databases:
            name, server = database.name, database.server_name
            entry, used = detail[name], cpu["detail"][name]
            spout = entry["spout"]
            text = (f"{number(spout['requests_per_second'])} req/s, p50 {number(spout['latency_p50_ms'], 2)} ms, "
                    f"p99 {number(spout['latency_p99_ms'], 2)} ms, {spout['errors']} errors")
            baseline = ""
            if "pgbench" in entry:
                pgbench = entry["pgbench"]
                baseline = (f"pgbench {number(pgbench['tps'])} tps, p50 {number(pgbench['latency_p50_ms'], 2)} ms, "
                            f"p99 {number(pgbench['latency_p99_ms'], 2)} ms")
            row("detail", name, text, baseline,
                number(entry.get("ratio_spout_to_pgbench"), 2) + pairs(entry.get("pair_ratios", [])))
            row("  CPU/request", name,
                f"spout {number(used['spout_ms_per_request'], 3)} ms"
                + (f", {database.label} {number(used[f'{server}_ms_per_request'], 3)} ms" if server else "")
                + f", wrk {number(used.get('wrk_ms_per_request'), 3)} ms",
                f"PostgreSQL {number(used['pgbench_postgres_ms_per_transaction'], 3)} ms/transaction, "
                f"pgbench {number(used.get('pgbench_client_ms_per_transaction'), 3)} ms"
                if "pgbench_postgres_ms_per_transaction" in used else "")
            if "http_floor" in entry:
                row("  HTTP floor", name,
                    f"GET /health {number(entry['http_floor']['requests_per_second'])} req/s, "
                    f"spout {number(used.get('http_floor_spout_ms_per_request'), 3)} ms/request")
            after = document["rss_after_detail_mib"][name]
            row("  RSS after", name, f"{number(after['rss'], 1)} MiB (anon {number(after['anonymous'], 1)})")
        for database in self.databases:
            name, server, tool = database.name, database.server_name, database.query_baseline
            entry, used = stream[name], cpu["stream"][name]
            spout = entry["spout"]
            ttfb = spout["ttfb_seconds"]
            row("stream /salaries", name,
                f"{number(spout['seconds'], 2)} s, {number(spout['rows_per_second'])} rows/s, "
                f"TTFB {number(None if ttfb is None else ttfb * 1000, 1)} ms, "
                f"peak RSS {number(spout['peak_rss_mib'], 1)} MiB (anon {number(spout['peak_anonymous_mib'], 1)})",
                f"{tool.label} {number(entry[tool.key]['seconds'], 2)} s",
                number(entry[f"ratio_spout_to_{tool.key}"], 2) + pairs(entry["pair_ratios"]))
            row("  CPU/row", name,
                f"spout {number(used['spout_us_per_row'], 2)} us"
                + (f", {database.label} {number(used[f'{server}_us_per_row'], 2)} us" if server else ""),
                f"{tool.cpu_label} {number(used.get(f'{tool.cpu_key}_us_per_row'), 2)} us")
            for coding in ("zstd", "gzip"):
                encoded = entry[coding]
                row(f"stream {coding}", name,
                    f"{number(encoded['seconds'], 2)} s, {number(encoded['bytes'] / 1e6, 1)} MB "
                    f"({encoded['content_encoding']}), peak RSS {number(encoded['peak_rss_mib'], 1)} MiB",
                    f"plain {number(encoded['plain_seconds'], 2)} s, same rounds",
                    number(encoded["ratio_to_plain"], 2) + pairs(encoded["pair_ratios"]))
        for name, lists in document["list"].items():
            for case, entry in lists.items():
                baseline, ratio_text = "", ""
                if "copy_join" in entry:
                    baseline = (f"COPY JOIN {number(entry['copy_join']['seconds'], 3)} s, "
                                f"{number(entry['copy_join']['rows_per_second'])} rows/s")
                    ratio_text = number(entry["ratio_spout_to_copy_join"], 2) + pairs(entry["pair_ratios"])
                row(f"list ({case})", name,
                    f"{number(entry['parents'])} parents, {number(entry['rows'])} rows, {number(entry['seconds'], 3)} s, "
                    f"{number(entry['rows_per_second'])} rows/s, {number(entry['statements'])} statements "
                    f"(+{number(entry['cursor_fetches'])} FETCH/CLOSE)", baseline, ratio_text)
                row("  CPU/row", name, f"spout {number(entry['cpu']['spout_us_per_row'], 2)} us, "
                                       f"PostgreSQL {number(entry['cpu']['postgres_us_per_row'], 2)} us")
        for name, entry in document.get("pages", {}).items():
            row("pages", name,
                f"page 1 {number(entry['first_seconds'] * 1000, 2)} ms, page {number(entry['deep_page'])} "
                f"{number(entry['deep_seconds'] * 1000, 2)} ms (pageSize={entry['page_size']})",
                "page 1", number(entry["ratio_deep_to_first"], 2) + pairs(entry["pair_ratios"]))
        # Counted in PostgreSQL's statement log.
        row("statements/request", "postgres", f"detail: {number(document['statements']['detail']['statements'])}")
        for name, memory in document["memory"].items():
            row(f"{memory['streams']} streams", name,
                f"peak RSS {number(memory['peak_rss_mib'], 1)} MiB (anon {number(memory['peak_anonymous_mib'], 1)}), "
                f"{memory['fast_completed']} fast done, {memory['slow_streams']} slow, {number(memory['seconds'], 1)} s")

        header = ("scenario", "database", "spout", "baseline (same run)", "ratio")
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(5)]
        lines = [
            f"Spout benchmarks: {settings['employees']:,} employees, median of {settings['repeat']} run(s) "
            f"({settings['stream_pairs']} stream pairs), {settings['connections']} connections, "
            f"{settings['duration_seconds']} s per wrk/pgbench run, commit {settings['git_commit']}, {document['timestamp']}"
            + (" [QUICK: not representative]" if document["quick"] else ""),
            "  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip(),
            "  ".join("-" * w for w in widths),
        ]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        lines += ["", "targets:"]
        for item in document["targets"]:
            mark = "n/a" if item["met"] is None else ("met" if item["met"] else "MISSED")
            lines.append(f"  {item['target']:<58} {number(item['value'], 2):>10}  {mark}")
        return "\n".join(lines)
