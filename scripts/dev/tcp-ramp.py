#!/usr/bin/env python3
"""How soon a TCP run on the lab reaches its steady rate (docs/methodology.md, "iperf3"): the
sending tester port's tx counters sampled every 10 ms from the iperf3 client's start, printed
as Mb/s per sample for the first 0.6 s. The runner counts a run on the wire from 0.3 s after the
omitted seconds; this shows what the first 0.3 s hold. Needs a lab that is up (`wirerate lab up
--name NAME`, default "ramp") and root.

    scripts/dev/tcp-ramp.py [--lab NAME] [--mss M] [--sessions P]
"""
import argparse
import subprocess
import time

ap = argparse.ArgumentParser()
ap.add_argument("--lab", default="ramp")
ap.add_argument("--mss", default=None)
ap.add_argument("--sessions", type=int, default=1)
args = ap.parse_args()
ns_a, ns_b = f"wr-{args.lab}-a", f"wr-{args.lab}-b"
server = subprocess.Popen(["ip", "netns", "exec", ns_b, "iperf3", "-s", "-1", "-p", "5299"],
                          stdout=subprocess.DEVNULL)
time.sleep(0.3)
counter = "/sys/class/net/wr-a/statistics/tx_bytes"
# One long-lived shell in port A's namespace reads the counter on request, with bash's clock:
# no process start per sample.
reader = subprocess.Popen(
    ["ip", "netns", "exec", ns_a, "bash", "-c",
     f"while read _; do read b < {counter}; echo $EPOCHREALTIME $b; done"],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)


def sample():
    reader.stdin.write("x\n")
    reader.stdin.flush()
    t, b = reader.stdout.readline().split()
    return float(t), int(b)


argv = ["ip", "netns", "exec", ns_a, "iperf3", "-c", "203.0.113.2", "-p", "5299", "-t", "1",
        "-J", "-P", str(args.sessions)]
if args.mss:
    argv += ["-M", args.mss]
t0 = time.time()
client = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
samples = []
while client.poll() is None:
    samples.append(sample())
    time.sleep(0.01)
server.wait()
reader.terminate()
rates = [(t - t0, (b - pb) * 8 / (t - pt) / 1e6)
         for (pt, pb), (t, b) in zip(samples, samples[1:])]
print(" ".join(f"{at:.2f}s:{mbps:.0f}" for at, mbps in rates if at < 0.6))
