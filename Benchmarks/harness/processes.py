"""Process plumbing: running a command, CPU time and resident memory read from /proc, and the
`spout serve` process being measured."""

import dataclasses
import glob
import os
import re
import resource
import subprocess
import threading
import time
import urllib.request

from .common import ROOT, Failure, log

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# --- Commands --------------------------------------------------------------------------------

def run_command(command, *, stdout=subprocess.PIPE, check=True, timeout=None, **keywords):
    """Runs a command to its end, standard error captured, output as text. Raises Failure, with
    its standard error, when it exits non-zero and `check`; TimeoutExpired after `timeout`."""
    result = subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=timeout, **keywords)
    if check and result.returncode != 0:
        raise Failure(f"{' '.join(map(str, command))} failed ({result.returncode}):\n{result.stderr}")
    return result


def timed(command, **keywords):
    """run_command's wall-clock seconds."""
    started = time.monotonic()
    run_command(command, **keywords)
    return time.monotonic() - started


# --- Memory and CPU from /proc ---------------------------------------------------------------

def proc_kb(pid, key):
    """One field (VmRSS, VmHWM, RssAnon) of /proc/PID/status in kB; 0 when unreadable."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def stat_fields(pid):
    """The fields of /proc/PID/stat after the command name (field 3 is index 0), or None."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            text = stat.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def cpu_seconds(pid):
    """User + system time of a process, all its threads."""
    fields = stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS if fields else 0.0


def postgres_cpu_seconds(postmaster):
    """User + system time of the postmaster, of its children that have exited (reaped into
    its cutime/cstime) and of the living ones (backends, background workers)."""
    fields = stat_fields(postmaster)
    if not fields:
        return 0.0
    ticks = sum(int(value) for value in fields[11:15])
    for path in glob.glob("/proc/[0-9]*/stat"):
        child = stat_fields(path.split("/")[2])
        if child and int(child[1]) == postmaster:
            ticks += int(child[11]) + int(child[12])
    return ticks / CLOCK_TICKS


def children_cpu_seconds():
    """User + system time of the programs started from here and waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclasses.dataclass
class CpuUsage:
    """CPU seconds spent during one measured run."""
    spout: float = 0.0
    postgres: float = 0.0
    client: float = 0.0  # programs started from here and waited for (sqlite3, psql)


class CpuMeter:
    """Reads the CPU time of Spout and of PostgreSQL before and after a measured run: `with
    meter as usage:` gives a CpuUsage, filled in when the block ends. A pid of None reads 0."""

    def __init__(self, spout_pid, postmaster):
        self.spout_pid = spout_pid
        self.postmaster = postmaster

    def __enter__(self):
        self.start = self._read()
        self.usage = CpuUsage()
        return self.usage

    def __exit__(self, *exception):
        time.sleep(0.1)  # exited backends reaped by the postmaster
        end = self._read()
        self.usage.spout, self.usage.postgres, self.usage.client = (b - a for a, b in zip(self.start, end))
        return False

    def _read(self):
        return (cpu_seconds(self.spout_pid) if self.spout_pid else 0.0,
                postgres_cpu_seconds(self.postmaster) if self.postmaster else 0.0,
                children_cpu_seconds())


class RssSampler:
    """Peak memory of Spout during a scenario: the kernel's high-water mark, reset before the
    scenario (clear_refs 5), and, as a cross-check that does not depend on the reset, VmRSS
    sampled every 20 ms; the larger is the peak. RssAnon (heap and stacks, without mapped files
    such as the executable) is sampled too. `hwm_resets` turns False, for the whole run, the
    first time the reset is refused."""

    hwm_resets = True

    def __init__(self, pid):
        self.pid = pid
        self.peak_kb = 0
        self.peak_anon_kb = 0
        self.stopping = threading.Event()

    def _sample(self):
        while not self.stopping.is_set():
            self.peak_kb = max(self.peak_kb, proc_kb(self.pid, "VmRSS"))
            self.peak_anon_kb = max(self.peak_anon_kb, proc_kb(self.pid, "RssAnon"))
            self.stopping.wait(0.02)

    def __enter__(self):
        try:
            with open(f"/proc/{self.pid}/clear_refs", "w") as clear_refs:
                clear_refs.write("5")
        except OSError:
            RssSampler.hwm_resets = False
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exception):
        self.stopping.set()
        self.thread.join()
        if RssSampler.hwm_resets:
            self.peak_kb = max(self.peak_kb, proc_kb(self.pid, "VmHWM"))
        return False


# --- The server measured ---------------------------------------------------------------------

class SpoutServer:
    """`spout serve` against one database URL, on a port the kernel picks (port 0, read back
    from its "listening on" line, so no other process can take it in between). `start()`
    returns once /ready answers 200; then `base` is its URL and `pid` its process."""

    def __init__(self, binary, name, url, pool_size, log_path):
        self.binary = binary
        self.name = name
        self.url = url
        self.pool_size = pool_size
        self.log_path = log_path
        self.process = None
        self.base = None
        self.idle_rss_kb = 0

    @property
    def pid(self):
        return self.process.pid

    def start(self):
        # One cursor key for every server started here, so a page URL found on one opens on the next.
        environment = dict(os.environ, SPOUT_DATABASE_POOL_SIZE=str(self.pool_size),
                           SPOUT_DATABASE_STATEMENT_TIMEOUT_MS="0", SPOUT_CURSOR_SECRET="Benchmarks/run")
        with open(self.log_path, "w") as output:
            self.process = subprocess.Popen(
                [self.binary, "serve", "--config", str(ROOT / "config" / "spout.yaml"), "--host", "127.0.0.1",
                 "--port", "0", "--database", self.url, "--no-seed"],
                stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=environment)
        deadline = time.monotonic() + 60
        port = None
        while port is None:
            match = re.search(r"listening on http://[^ \n]*:([0-9]+)", self.log_path.read_text())
            if match:
                port = match.group(1)
            elif self.process.poll() is not None or time.monotonic() > deadline:
                raise Failure(f"spout serve ({self.name}) did not start:\n{self.log_path.read_text()}")
            else:
                time.sleep(0.1)
        self.base = f"http://127.0.0.1:{port}"
        while True:
            try:
                with urllib.request.urlopen(f"{self.base}/ready", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise Failure(f"spout serve ({self.name}) is not ready:\n{self.log_path.read_text()}")
            time.sleep(0.1)
        self.idle_rss_kb = proc_kb(self.pid, "VmRSS")
        log(f"spout serve ({self.name}) pid {self.pid} at {self.base}, idle RSS {self.idle_rss_kb} kB")
        return self

    def stop(self):
        """SIGTERM, then SIGKILL after 30 s; waits for the process. Idempotent."""
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
