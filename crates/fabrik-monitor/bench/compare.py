#!/usr/bin/env python3
"""Side-by-side scrape benchmark: `fabrik exporter` vs prometheus-node-exporter's infiniband
(+ netclass) collectors, both reading the same synthetic 16-port sysfs tree over HTTP on
loopback. Reports median/p90 latency per scrape and server CPU time per scrape (from
/proc/PID/stat), alternating the two servers request by request so that machine noise hits both
alike. Also checks fabrik's RSS before and after the run.

usage: compare.py FABRIK_BIN TREE [N]
"""
import http.client
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def get(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    t0 = time.perf_counter()
    c.request("GET", "/metrics")
    r = c.getresponse()
    body = r.read()
    dt = time.perf_counter() - t0
    c.close()
    if r.status != 200:
        raise SystemExit(f"port {port}: HTTP {r.status}")
    return dt * 1e3, len(body)


def wait_up(port):
    for _ in range(100):
        try:
            get(port)
            return
        except (ConnectionError, OSError):
            time.sleep(0.1)
    raise SystemExit(f"server on {port} did not start")


def main():
    fabrik, tree = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    hz = os.sysconf("SC_CLK_TCK")
    servers = {}
    fp = free_port()
    servers["fabrik exporter"] = (subprocess.Popen(
        [fabrik, "exporter", "--listen", f"127.0.0.1:{fp}", "--root", tree, "--doctor-every", "0s"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), fp)
    ne = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    if ne:
        np_ = free_port()
        servers["node_exporter infiniband+netclass"] = (subprocess.Popen(
            [ne, f"--web.listen-address=127.0.0.1:{np_}", f"--path.sysfs={tree}/sys",
             "--collector.disable-defaults", "--collector.infiniband", "--collector.netclass"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), np_)
    try:
        for name, (proc, port) in servers.items():
            wait_up(port)
            for _ in range(20):  # warm-up
                get(port)
        rss0 = rss_kib(servers["fabrik exporter"][0].pid)
        lat = {k: [] for k in servers}
        size = {}
        cpu0 = {k: cpu_ticks(p.pid) for k, (p, _) in servers.items()}
        for _ in range(n):
            for name, (proc, port) in servers.items():
                ms, b = get(port)
                lat[name].append(ms)
                size[name] = b
        cpu1 = {k: cpu_ticks(p.pid) for k, (p, _) in servers.items()}
        rss1 = rss_kib(servers["fabrik exporter"][0].pid)
        for name in servers:
            xs = sorted(lat[name])
            cpu_ms = (cpu1[name] - cpu0[name]) * 1000.0 / hz / n
            print(f"{name}: {n} scrapes, body {size[name]} bytes, median {statistics.median(xs):.2f} ms, "
                  f"p90 {xs[int(0.9 * (len(xs) - 1))]:.2f} ms, server CPU {cpu_ms:.2f} ms/scrape")
        print(f"fabrik exporter RSS: {rss0} KiB after warm-up, {rss1} KiB after {n} more scrapes")
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
