"""Benchmarks/run's modules (standard library only). Benchmarks/run parses the options and hands
them to runner.Harness, which prepares the machine, runs the scenarios in order and reports.

  common     paths, the Failure error, the log, median and ratio, merging JSON fragments
  processes  commands, CPU and memory read from /proc, the `spout serve` process
  clients    the HTTP clients measuring Spout: wrk and curl
  baselines  each database's own tools, run the same way: pgbench, psql COPY and \\copy, sqlite3
  databases  one class per database (PostgreSQL, SQLite): its URL, start and stop, its baselines
  scenarios  one class per scenario, each returning its fragment of the JSON document
  report     the JSON document's header and targets, the files it is written to, the table
  runner     the Harness: packages, executable, data, databases, the scenarios in order
"""
