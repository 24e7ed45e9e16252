"""What a scenario runs against."""

from .processes import CpuMeter, SpoutServer


class Context:
    """The run's options and work directory, the Spout server being measured (`server`, None
    between scenarios), the document as the earlier scenarios left it (read-only here: the
    Harness merges each scenario's fragment), and the CPU meter around every measured run."""

    def __init__(self, options, work, postgres):
        self.options = options
        self.work = work
        # Its processes' CPU is read around every measured run, whichever database is served.
        self.postgres = postgres
        self.server = None
        self.document = {}

    def meter(self):
        """A CpuMeter of the current server and of PostgreSQL's processes."""
        return CpuMeter(self.server.pid if self.server else None, self.postgres.postmaster_pid)

    def serve(self, name, url, pool=None):
        """Stops the current server and starts `spout serve` against URL (a pool of `pool`
        connections, else --pool-size), its log in the work directory as spout-NAME.log."""
        self.stop_serving()
        self.server = SpoutServer(self.options.binary, name, url, pool or self.options.pool_size,
                                  self.work / f"spout-{name}.log")
        return self.server.start()

    def stop_serving(self):
        if self.server is not None:
            self.server.stop()
            self.server = None
