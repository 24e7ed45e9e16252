"""What every module of the harness shares: the repository's paths, the error that ends a run,
the log, the two statistics every figure goes through, and how figures join the document."""

import importlib.machinery
import importlib.util
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
BENCH = ROOT / "Benchmarks"
MIB = 1024 * 1024


class Failure(Exception):
    """A step of the run failed: main logs the message and exits 1."""


def log(message):
    """A progress line on standard error (standard output is the table's)."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def load_helper(name):
    """scripts/NAME (a Python file without the .py) as a module."""
    sys.dont_write_bytecode = True  # no __pycache__ in the repository
    loader = importlib.machinery.SourceFileLoader(name.replace("-", "_"), str(ROOT / "scripts" / name))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def median(values):
    """The median of the values that are not None; None when there are none."""
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None


def ratio(numerator, denominator):
    """numerator / denominator; None when the numerator is None or the denominator 0 or None."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def sql_text(name):
    """An endpoint's SQL file (PostgreSQL's version when there is one), without comments."""
    path = ROOT / "sql" / "postgres" / "employees" / name
    if not path.exists():
        path = ROOT / "sql" / "employees" / name
    return "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("--")).strip()


def merge(document, fragment):
    """Adds a scenario's fragment to the document: objects present in both are merged key by
    key, anything else is set. A key new to an object goes last, as the JSON shows it."""
    for key, value in fragment.items():
        if isinstance(value, dict) and isinstance(document.get(key), dict):
            merge(document[key], value)
        else:
            document[key] = value
    return document
