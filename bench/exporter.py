"""What metrics cost.

- exporter_scrape_ms (goal <= 50 ms): a scrape's wall time on the
  trn2.48xlarge topology (64 cores) with 256 sessions open, per-session
  series and neuron-monitor's names on (the largest exposition); and
  without them (exporter_default_scrape_ms).
- metrics_on_vs_off_command_rate (goal >= 0.98): the command path's rate
  with the core queue's counters against without them: the daemon's time
  per small command (64-byte fills, the cheapest command, so the counters'
  largest share), measured here, less what counting one command costs
  (neuron_bench_core_counters), measured in the same run.
- exporter_10hz_command_rate_vs_unscraped: the small-command rate while the
  exporter is scraped ten times a second (150 times Prometheus's default
  rate) against the rate without scrapes, alternating: on this 2-core host,
  the exporter's and the scraper's CPU time taken from the daemon and its
  client."""
import pathlib
import statistics
import subprocess
import sys
import time
import urllib.request

import daemon

SESSIONS = 256
SCRAPES = 40
RATE_ROUNDS = 4
RATE_MS = 1500
SCRAPE_INTERVAL_S = 0.1


def start_exporter(build_dir, address, flags):
    exporter = subprocess.Popen(
        [str(build_dir / "bin" / "neuron-rtd-exporter"), "--address", address, "--listen",
         "127.0.0.1:0", *flags], stdout=subprocess.PIPE, text=True)
    line = exporter.stdout.readline()
    if "/metrics" not in line:
        exporter.kill()
        raise RuntimeError(f"neuron-rtd-exporter did not start: {line!r}")
    return exporter, line.split("serving ")[1].strip()


def scrape(url):
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read()


def scrape_times(url):
    scrape(url)
    times = []
    for _ in range(SCRAPES):
        started = time.perf_counter()
        body = scrape(url)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3, len(body.splitlines())


def command_rate(build_dir, address):
    out = subprocess.run([str(build_dir / "bin" / "neuron_bench_data_plane"), address, "--worker",
                          str(RATE_MS)], check=True, capture_output=True, text=True).stdout
    return float(out.strip())


def rate_while_scraped(build_dir, address, url):
    """The command rate with a scraper polling `url` every SCRAPE_INTERVAL_S."""
    poller = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time, urllib.request\n"
         "while True:\n"
         "    urllib.request.urlopen(sys.argv[1], timeout=30).read()\n"
         f"    time.sleep({SCRAPE_INTERVAL_S})\n", url])
    try:
        return command_rate(build_dir, address)
    finally:
        poller.kill()
        poller.wait()


def run(build_dir: pathlib.Path) -> dict:
    process, sock_path, workdir, _ = daemon.start(str(build_dir / "bin" / "neuron-rtd"),
                                                 preset="trn2.48xlarge")
    address = f"unix:{sock_path}"
    figures = {}
    exporter, url = start_exporter(build_dir, address, [])
    try:
        off, on = [], []
        for _ in range(RATE_ROUNDS):
            off.append(command_rate(build_dir, address))
            on.append(rate_while_scraped(build_dir, address, url))
        figures["exporter_10hz_command_rate_vs_unscraped"] = round(
            statistics.median(on) / statistics.median(off), 3)
        command_ns = 1e9 / statistics.median(off)
        counting_ns = float(subprocess.run(
            [str(build_dir / "bin" / "neuron_bench_core_counters")], check=True,
            capture_output=True, text=True).stdout)
        figures["metrics_daemon_ns_per_command"] = round(command_ns, 1)
        figures["metrics_counter_ns_per_command"] = round(counting_ns, 2)
        figures["metrics_on_vs_off_command_rate"] = round(1 - counting_ns / command_ns, 4)
    finally:
        exporter.kill()
        exporter.wait()
    holder = subprocess.Popen(
        [str(build_dir / "bin" / "neuron_bench_data_plane"), address, "--hold-sessions",
         str(SESSIONS), "64"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        if holder.stdout.readline().strip() != "ready":
            raise RuntimeError("the session holder did not start")
        exporter, url = start_exporter(build_dir, address,
                                       ["--per-session-metrics", "--neuron-monitor-compat"])
        try:
            ms, lines = scrape_times(url)
        finally:
            exporter.kill()
            exporter.wait()
        exporter, url = start_exporter(build_dir, address, [])
        try:
            default_ms, default_lines = scrape_times(url)
        finally:
            exporter.kill()
            exporter.wait()
    finally:
        holder.stdin.close()
        holder.wait(timeout=120)
        daemon.stop(process, workdir)
    figures.update({"exporter_scrape_ms": round(ms, 2), "exporter_scrape_lines": lines,
                    "exporter_default_scrape_ms": round(default_ms, 2),
                    "exporter_default_scrape_lines": default_lines,
                    "exporter_sessions": SESSIONS})
    return figures


if __name__ == "__main__":
    print(run(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build").resolve()))
