#!/usr/bin/env python3
"""Turns the raw measurements of Benchmarks/run into one JSON document and one table.

    python3 Benchmarks/report.py RAW.jsonl RESULTS_DIR

RAW.jsonl holds one JSON object per measurement, as Benchmarks/run records them (each with a
"scenario" key). Writes RESULTS_DIR/<timestamp>.json and RESULTS_DIR/latest.json (the same
document) and prints the table to standard output. Figures of repeated runs are medians;
peak memory is the largest peak of any run; every ratio compares figures measured in the
same run of the harness. The document's keys are the contract Benchmarks' test checks.
"""

import datetime
import json
import math
import os
import statistics
import sys

MIB = 1024 * 1024


def median(values):
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None


def ratio(numerator, denominator):
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def load_raw(path):
    with open(path) as raw:
        return [json.loads(line) for line in raw if line.strip()]


def select(rows, **criteria):
    return [row for row in rows if all(row.get(key) == value for key, value in criteria.items())]


def summarize_wrk(runs):
    results = [run["result"] for run in runs]
    return {
        "requests_per_second": median(result["requests_per_second"] for result in results),
        "latency_p50_ms": median(result["latency_us"]["p50"] / 1000 for result in results),
        "latency_p99_ms": median(result["latency_us"]["p99"] / 1000 for result in results),
        "errors": sum(result["errors"]["total"] for result in results),
        "requests": sum(result["requests"] for result in results),
        "runs": results,
    }


def summarize_pgbench(runs):
    results = [run["result"] for run in runs]
    return {
        "tps": median(result["tps"] for result in results),
        "latency_p50_ms": median(result["latency_us"]["p50"] / 1000 for result in results),
        "latency_p99_ms": median(result["latency_us"]["p99"] / 1000 for result in results),
        "failed": sum(result["failed"] for result in results),
        "runs": results,
    }


def summarize_curl(runs):
    results = [dict(run["result"], peak_rss_kb=run.get("peak_rss_kb"), peak_anon_kb=run.get("peak_anon_kb"))
               for run in runs]
    seconds = median(result["seconds"] for result in results)
    size = median(result["bytes"] for result in results)
    peaks = [result["peak_rss_kb"] for result in results if result.get("peak_rss_kb") is not None]
    anonymous = [result["peak_anon_kb"] for result in results if result.get("peak_anon_kb") is not None]
    return {
        "seconds": seconds,
        "bytes": size,
        "mb_per_second": ratio(size / 1e6 if size is not None else None, seconds),
        "ttfb_seconds": median(result["ttfb_seconds"] for result in results),
        "peak_rss_mib": max(peaks) * 1024 / MIB if peaks else None,
        "peak_anonymous_mib": max(anonymous) * 1024 / MIB if anonymous else None,
        "statuses": sorted({result["status"] for result in results}),
        "runs": results,
    }


def summarize_copy(runs):
    seconds = median(run["seconds"] for run in runs)
    size = runs[0]["bytes"] if runs else None
    return {
        "seconds": seconds,
        "bytes": size,
        "mb_per_second": ratio(size / 1e6 if size is not None else None, seconds),
        "runs": [run["seconds"] for run in runs],
    }


def build(rows):
    meta = select(rows, scenario="meta")[0]
    document = {
        "schema": 1,
        "timestamp": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "quick": bool(meta["quick"]),
        "machine": {
            "cpu_model": meta["cpu_model"],
            "cpus": meta["cpus"],
            "memory_gib": round(meta["memory_kb"] / 1024 / 1024, 1),
            "kernel": meta["kernel"],
            "postgres_version": str(meta["postgres_version"]),
            "wrk_version": str(meta["wrk_version"]),
        },
        "settings": {
            key: meta[key]
            for key in (
                "employees", "seed", "duration_seconds", "warmup_seconds", "repeat", "connections",
                "pool_size", "slow_streams", "slow_max_seconds", "last_name", "binary", "git_commit",
                "hwm_resets",
            )
        },
    }

    # Loads.
    spout_load = select(rows, scenario="load", database="postgres", tool="spout")[0]
    copy_load = select(rows, scenario="load", database="postgres", tool="psql-copy")[0]
    sqlite_load = select(rows, scenario="load", database="sqlite", tool="spout")[0]
    document["load"] = {
        "postgres": {
            "rows": spout_load["rows"],
            "spout_seconds": spout_load["seconds"],
            "copy_rows": copy_load["rows"],
            "copy_seconds": copy_load["seconds"],
            "ratio_spout_to_copy": ratio(spout_load["seconds"], copy_load["seconds"]),
        },
        "sqlite": {"rows": sqlite_load["rows"], "spout_seconds": sqlite_load["seconds"]},
    }

    document["idle_rss_mib"] = {
        row["database"]: row["rss_kb"] * 1024 / MIB for row in select(rows, scenario="idle")
    }
    document["rss_after_detail_mib"] = {
        row["database"]: {"rss": row["rss_kb"] * 1024 / MIB, "anonymous": row["anon_kb"] * 1024 / MIB}
        for row in select(rows, scenario="rss-after-detail")
    }

    # Detail.
    detail = {}
    for database in ("postgres", "sqlite"):
        entry = {"spout": summarize_wrk(select(rows, scenario="detail", database=database, tool="wrk"))}
        pgbench = select(rows, scenario="detail", database=database, tool="pgbench")
        if pgbench:
            entry["pgbench"] = summarize_pgbench(pgbench)
            entry["ratio_spout_to_pgbench"] = ratio(entry["spout"]["requests_per_second"], entry["pgbench"]["tps"])
        detail[database] = entry
    document["detail"] = detail

    # Stream.
    stream = {}
    for database in ("postgres", "sqlite"):
        entry = {"spout": summarize_curl(select(rows, scenario="stream", database=database, tool="curl"))}
        copy = select(rows, scenario="stream", database=database, tool="psql-copy")
        if copy:
            entry["copy"] = summarize_copy(copy)
            entry["ratio_spout_to_copy"] = ratio(entry["spout"]["seconds"], entry["copy"]["seconds"])
        gzip_runs = select(rows, scenario="stream-gzip", database=database)
        entry["gzip"] = summarize_curl(gzip_runs)
        entry["gzip"]["content_encoding"] = gzip_runs[0]["content_encoding"] if gzip_runs else None
        entry["gzip"]["compression_ratio"] = ratio(entry["spout"]["bytes"], entry["gzip"]["bytes"])
        stream[database] = entry
    document["stream"] = stream

    # Statements per request and list with details.
    statements = {row["case"]: dict(row["result"], path=row["path"]) for row in select(rows, scenario="statements")}
    document["statements"] = statements
    lists = {}
    for case in ("last-name", "department"):
        runs = select(rows, scenario="list", case=case)
        parents = runs[0]["parents"] if runs else None
        counted = statements.get(case, {})
        windows = max(1, math.ceil((parents or 0) / 500))
        lists[case] = {
            "path": runs[0]["path"] if runs else None,
            "parents": parents,
            "seconds": median(run["result"]["seconds"] for run in runs),
            "ttfb_seconds": median(run["result"]["ttfb_seconds"] for run in runs),
            "bytes": median(run["result"]["bytes"] for run in runs),
            "statuses": sorted({run["result"]["status"] for run in runs}),
            "statements": counted.get("statements"),
            "cursor_fetches": counted.get("cursor_fetches"),
            "statements_per_500_parents": ratio(counted.get("statements"), windows),
            "runs": [run["result"]["seconds"] for run in runs],
        }
    document["list"] = {"postgres": lists}

    # Memory under load.
    memory = select(rows, scenario="memory", database="postgres")[0]
    streams = memory["results"]
    document["memory"] = {
        "postgres": {
            "streams": memory["streams"],
            "slow_streams": memory["slow_streams"],
            "seconds": memory["seconds"],
            "peak_rss_mib": memory["peak_rss_kb"] * 1024 / MIB,
            "peak_anonymous_mib": memory.get("peak_anon_kb", 0) * 1024 / MIB,
            "fast_completed": sum(1 for s in streams if not s["slow"] and s["status"] == 200),
            "slow_bytes": sum(s["bytes"] for s in streams if s["slow"]),
            "statuses": sorted({s["status"] for s in streams}),
            "runs": streams,
        }
    }

    document["targets"] = targets(document)
    return document


def targets(document):
    def target(name, text, value, met):
        return {"name": name, "target": text, "value": value, "met": None if value is None else bool(met)}

    detail_ratio = document["detail"]["postgres"].get("ratio_spout_to_pgbench")
    stream_ratio = document["stream"]["postgres"].get("ratio_spout_to_copy")
    one_stream = max(
        value for value in (
            document["stream"]["postgres"]["spout"]["peak_rss_mib"],
            document["stream"]["sqlite"]["spout"]["peak_rss_mib"],
        ) if value is not None
    )
    many_streams = document["memory"]["postgres"]["peak_rss_mib"]
    per_500 = [entry["statements_per_500_parents"] for entry in document["list"]["postgres"].values()]
    worst_per_500 = max(per_500) if all(value is not None for value in per_500) else None
    load_ratio = document["load"]["postgres"]["ratio_spout_to_copy"]
    return [
        target("detail", "PostgreSQL req/s >= 0.5 x pgbench tps", detail_ratio,
               detail_ratio is not None and detail_ratio >= 0.5),
        target("stream", "seconds <= 2 x COPY", stream_ratio, stream_ratio is not None and stream_ratio <= 2),
        target("stream-rss", "peak RSS of one stream < 64 MiB", one_stream, one_stream < 64),
        target("memory-rss", "peak RSS of 16 streams < 128 MiB", many_streams, many_streams < 128),
        target("list-statements", "statements per 500 parents < 10", worst_per_500,
               worst_per_500 is not None and worst_per_500 < 10),
        target("load", "spout load <= 2 x \\copy", load_ratio, load_ratio is not None and load_ratio <= 2),
    ]


def number(value, digits=0, unit=""):
    if value is None:
        return "-"
    return f"{value:,.{digits}f}{unit}"


def table(document):
    settings = document["settings"]
    detail = document["detail"]
    stream = document["stream"]
    load = document["load"]
    lines = []
    rows = []

    def row(scenario, database, spout, baseline, ratio_text):
        rows.append((scenario, database, spout, baseline, ratio_text))

    row("load", "postgres", number(load["postgres"]["spout_seconds"], 1, " s"),
        "\\copy " + number(load["postgres"]["copy_seconds"], 1, " s"),
        number(load["postgres"]["ratio_spout_to_copy"], 2))
    row("load", "sqlite", number(load["sqlite"]["spout_seconds"], 1, " s"), "", "")
    for database in ("postgres", "sqlite"):
        spout = detail[database]["spout"]
        text = (f"{number(spout['requests_per_second'])} req/s, p50 {number(spout['latency_p50_ms'], 2)} ms, "
                f"p99 {number(spout['latency_p99_ms'], 2)} ms, {spout['errors']} errors")
        baseline = ""
        if "pgbench" in detail[database]:
            pgbench = detail[database]["pgbench"]
            baseline = (f"pgbench {number(pgbench['tps'])} tps, p50 {number(pgbench['latency_p50_ms'], 2)} ms, "
                        f"p99 {number(pgbench['latency_p99_ms'], 2)} ms")
        row("detail", database, text, baseline, number(detail[database].get("ratio_spout_to_pgbench"), 2))
        after = document.get("rss_after_detail_mib", {}).get(database)
        if after:
            row("  RSS after", database, f"{number(after['rss'], 1)} MiB (anon {number(after['anonymous'], 1)})", "", "")
    for database in ("postgres", "sqlite"):
        spout = stream[database]["spout"]
        text = (f"{number(spout['seconds'], 2)} s, {number(spout['mb_per_second'])} MB/s, "
                f"TTFB {number(spout['ttfb_seconds'] * 1000 if spout['ttfb_seconds'] is not None else None, 1)} ms, "
                f"peak RSS {number(spout['peak_rss_mib'], 1)} MiB (anon {number(spout['peak_anonymous_mib'], 1)})")
        baseline = ""
        if "copy" in stream[database]:
            copy = stream[database]["copy"]
            baseline = f"COPY {number(copy['seconds'], 2)} s, {number(copy['mb_per_second'])} MB/s"
        row("stream /salaries", database, text, baseline, number(stream[database].get("ratio_spout_to_copy"), 2))
        gzip = stream[database]["gzip"]
        row("stream gzip", database,
            f"{number(gzip['seconds'], 2)} s, {number(gzip['bytes'] / 1e6 if gzip['bytes'] else None, 1)} MB "
            f"({gzip['content_encoding']}), peak RSS {number(gzip['peak_rss_mib'], 1)} MiB", "", "")
    for case, entry in document["list"]["postgres"].items():
        row(f"list ({case})", "postgres",
            f"{number(entry['parents'])} parents, {number(entry['seconds'], 3)} s, "
            f"{number(entry['statements'])} statements (+{number(entry['cursor_fetches'])} FETCH/CLOSE)", "", "")
    statements = document["statements"].get("detail", {})
    row("statements/request", "postgres", f"detail: {number(statements.get('statements'))}", "", "")
    memory = document["memory"]["postgres"]
    row(f"{memory['streams']} streams", "postgres",
        f"peak RSS {number(memory['peak_rss_mib'], 1)} MiB (anon {number(memory['peak_anonymous_mib'], 1)}), "
        f"{memory['fast_completed']} fast done, "
        f"{memory['slow_streams']} slow, {number(memory['seconds'], 1)} s", "", "")

    widths = [max(len(r[i]) for r in rows + [("scenario", "database", "spout", "baseline (same run)", "ratio")])
              for i in range(5)]
    header = ("scenario", "database", "spout", "baseline (same run)", "ratio")
    lines.append(
        f"Spout benchmarks: {settings['employees']:,} employees, median of {settings['repeat']} run(s), "
        f"{settings['connections']} connections, {settings['duration_seconds']} s per wrk/pgbench run, "
        f"commit {settings['git_commit']}, {document['timestamp']}"
        + (" [QUICK: not representative]" if document["quick"] else "")
    )
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    lines.append("")
    lines.append("targets:")
    for item in document["targets"]:
        mark = "n/a" if item["met"] is None else ("met" if item["met"] else "MISSED")
        lines.append(f"  {item['target']:<44} {number(item['value'], 2):>10}  {mark}")
    return "\n".join(lines)


def main():
    raw, results = sys.argv[1], sys.argv[2]
    document = build(load_raw(raw))
    os.makedirs(results, exist_ok=True)
    stamp = document["timestamp"].replace(":", "").replace("-", "")
    text = json.dumps(document, indent=2) + "\n"
    for name in (f"{stamp}.json", "latest.json"):
        temporary = os.path.join(results, name + ".tmp")
        with open(temporary, "w") as output:
            output.write(text)
        os.replace(temporary, os.path.join(results, name))
    print(table(document))
    print(f"\nwritten: {os.path.join(results, stamp + '.json')}")


if __name__ == "__main__":
    main()
