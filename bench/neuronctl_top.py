"""What `neuronctl top` costs the daemon: the daemon's CPU time per refresh
(Health, ListDevices, GetStats and ListSessions) on the trn2.48xlarge
topology (64 cores) with 200 sessions open, less the daemon's CPU time over
the same wall time without it (the baseline, measured in the same run)."""
import os
import pathlib
import subprocess
import sys
import time

import daemon

SESSIONS = 200
REFRESHES = 50
INTERVAL_S = 0.05


def cpu_seconds(pid):
    """User and system CPU time of process `pid` so far."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(build_dir: pathlib.Path) -> dict:
    process, sock_path, workdir, _ = daemon.start(str(build_dir / "bin" / "neuron-rtd"),
                                                 preset="trn2.48xlarge")
    address = f"unix:{sock_path}"
    holder = subprocess.Popen(
        [str(build_dir / "bin" / "neuron_bench_data_plane"), address, "--hold-sessions",
         str(SESSIONS), "64"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        if holder.stdout.readline().strip() != "ready":
            raise RuntimeError("the session holder did not start")
        command = [str(build_dir / "bin" / "neuronctl"), "--address", address, "top", "--json",
                   "-n", str(REFRESHES + 1), "-d", str(INTERVAL_S)]
        before = cpu_seconds(process.pid)
        started = time.perf_counter()
        frames = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        elapsed = time.perf_counter() - started
        during = cpu_seconds(process.pid) - before
        if len(frames.splitlines()) != REFRESHES + 1:
            raise RuntimeError("neuronctl top drew the wrong number of frames")
        before = cpu_seconds(process.pid)
        time.sleep(elapsed)
        idle = cpu_seconds(process.pid) - before
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
        daemon.stop(process, workdir)
    cost = max(0.0, during - idle) / (REFRESHES + 1)
    return {"top_refresh_cost_us": round(cost * 1e6), "top_sessions": SESSIONS,
            "top_daemon_idle_cpu_share": round(idle / elapsed, 3)}


if __name__ == "__main__":
    print(run(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build").resolve()))
