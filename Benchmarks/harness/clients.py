"""The HTTP clients measuring the current Spout server (context.server): wrk for request rates,
curl for one transfer. Each measured call reads CPU around it with context.meter()."""

import dataclasses
import json
import re

from .common import BENCH, Failure
from .processes import CpuUsage, RssSampler, run_command


@dataclasses.dataclass
class WrkRun:
    requests: int
    seconds: float
    requests_per_second: float
    latency_us: dict
    errors: dict
    cpu: CpuUsage


@dataclasses.dataclass
class Transfer:
    """One HTTP GET with curl."""
    status: int
    seconds: float
    ttfb_seconds: float
    bytes: int
    content_encoding: str = "identity"
    peak_rss_kb: int = 0
    peak_anon_kb: int = 0
    cpu: CpuUsage = dataclasses.field(default_factory=CpuUsage)


def wrk_detail(context, seconds):
    """wrk for `seconds` on GET /employees/{n}?details=titles&details=salaries, n random
    (Benchmarks/detail.lua, which prints the figures as one WRK_JSON line)."""
    options = context.options
    command = ["wrk", "-t2", f"-c{options.connections}", f"-d{seconds}s", "--latency",
               "-s", str(BENCH / "detail.lua"), context.server.base, "--", str(options.employees)]
    with context.meter() as cpu:
        output = run_command(command, timeout=seconds + 60).stdout
    line = next((line for line in output.splitlines() if line.startswith("WRK_JSON ")), None)
    if line is None:
        raise Failure(f"wrk printed no WRK_JSON line:\n{output}")
    figures = json.loads(line[len("WRK_JSON "):])
    return WrkRun(figures["requests"], figures["seconds"], figures["requests_per_second"],
                  figures["latency_us"], figures["errors"], cpu)


def wrk_health(context, seconds):
    """wrk on GET /health: Spout's HTTP path alone (parse, route, answer, log, metrics), no
    database. What it costs per request is the floor under every endpoint. Returns (requests,
    requests per second, CpuUsage)."""
    command = ["wrk", "-t2", f"-c{context.options.connections}", f"-d{seconds}s", context.server.base + "/health"]
    with context.meter() as cpu:
        output = run_command(command, timeout=seconds + 60).stdout
    requests = re.search(r"([0-9]+) requests in", output)
    per_second = re.search(r"Requests/sec:\s+([0-9.]+)", output)
    if requests is None or per_second is None:
        raise Failure(f"wrk printed no request count:\n{output}")
    return int(requests.group(1)), float(per_second.group(1)), cpu


def curl(context, path, *extra, output="/dev/null", sample_rss=False):
    """One GET of PATH with curl (EXTRA: more curl arguments; the body written to OUTPUT), its
    CPU, and with `sample_rss` the server's peak RSS, measured around it."""
    headers = context.work / "headers"
    command = ["curl", "-sS", "-o", output, "-D", str(headers), *extra, "-w",
               '{"status": %{http_code}, "ttfb_seconds": %{time_starttransfer}, '
               '"seconds": %{time_total}, "bytes": %{size_download}}', context.server.base + path]
    sampler = RssSampler(context.server.pid)
    with context.meter() as cpu:
        if sample_rss:
            with sampler:
                figures = json.loads(run_command(command).stdout)
        else:
            figures = json.loads(run_command(command).stdout)
    encoding = "identity"
    for line in headers.read_text(errors="replace").splitlines():
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-encoding":
            encoding = value.strip()
    return Transfer(figures["status"], figures["seconds"], figures["ttfb_seconds"], figures["bytes"], encoding,
                    sampler.peak_kb, sampler.peak_anon_kb, cpu)
