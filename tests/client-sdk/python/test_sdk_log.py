"""libmdcast's log lines reach Python's `logging` (logger "mdcast") with their
levels mapped, handed over by the "mdcast-log" thread, not printed to stderr."""
import logging
import threading

import harness
import mdcast


class Records(logging.Handler):
    """Keeps every record the "mdcast" logger passes on."""

    def __init__(self):
        super().__init__(level=1)
        self.records = []
        self.guard = threading.Lock()  # not self.lock: logging.Handler's own

    def emit(self, record):
        with self.guard:
            self.records.append(record)

    def find(self, level, text):
        with self.guard:
            return [r for r in self.records if r.levelno == level and text in r.getMessage()]


def test_sdk_lines_go_to_the_mdcast_logger(stack, capfd):
    stack.distributor()
    stack.server(1)
    server = f"127.0.0.1:{stack.client_ports[1]}"
    logger = logging.getLogger("mdcast")
    records = Records()
    logger.addHandler(records)
    logger.setLevel(1)
    try:
        with mdcast.Consumer(server, log_level="debug") as consumer:
            consumer.wait_connected(5)
            harness.wait_until(lambda: records.find(logging.INFO, f"logged in to {server}"),
                               10, "the SDK's 'logged in' line as INFO")
            harness.wait_until(lambda: records.find(logging.DEBUG, f"connecting to {server}"),
                               10, "the SDK's 'connecting to' line as DEBUG")
    finally:
        logger.removeHandler(records)
        logger.setLevel(logging.NOTSET)
    line = records.find(logging.INFO, "logged in to")[0]
    assert line.name == "mdcast" and line.threadName == "mdcast-log"
    assert line.getMessage().startswith("sdk.consumer: ")
    assert "logged in to" not in capfd.readouterr().err  # not on stderr as well
