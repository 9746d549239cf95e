#!/usr/bin/env python3
"""What the XDP receiver's program costs per frame, A/B between builds (issue 37 item 1).

For each wirerate binary given, starts a `bench rx --backend xdp --source xdp` whose receiver
stays attached for the measurement (its sender paced at 1,000 frames/s), finds that process's
`wr_rx` program by the program ids in its /proc/PID/fdinfo, and runs it with BPF_PROG_TEST_RUN
(repeat 1) on consecutive, valid frames of the bench's stream 2 (sequence numbers from START,
far above what its own sender reaches; the UDP and IPv4 checksums right; sent 20 us before the
run): the kernel times each run. Every build is timed in alternating chunks on one CPU in the
same minutes, so the machine's load falls on all of them alike, and beside them a two-
instruction XDP program (`return XDP_DROP`) gives the harness's own cost (two clock reads
around each run). Per build it prints p10, p25, median and a 5 %-trimmed mean of the runs.

What it measures: the program with the frame in this CPU's cache (the kernel copies it there),
the accounting in full (every frame is new and in order, so it raises the highest sequence
number and forms an IPDV pair). What it does not: the miss on a frame another CPU wrote, the
veth's own work, refusals (`wirerate bench rx --against xdp-bench` is that measurement).
Needs root; touches only the programs of the processes it starts, and removes their
namespaces when they are gone.

    scripts/dev/xdp-rx-cost.py [--frames N] [--start S] [--cpu C] BINARY[=LABEL] ...
"""
import argparse
import ctypes
import glob
import os
import re
import signal
import statistics
import struct
import subprocess
import time

SYS_BPF = 321  # x86-64
BPF_MAP_LOOKUP_ELEM, BPF_PROG_LOAD, BPF_PROG_TEST_RUN = 1, 5, 10
BPF_PROG_GET_FD_BY_ID, BPF_MAP_GET_FD_BY_ID, BPF_OBJ_GET_INFO_BY_FD = 13, 14, 15
BPF_PROG_TYPE_XDP, XDP_DROP = 6, 1
STREAM = 2  # tester-bench's stream id (net::bench_expect)
LIBC = ctypes.CDLL(None, use_errno=True)


def bpf(cmd, attr, size=144):
    buf = ctypes.create_string_buffer(attr, size)
    r = LIBC.syscall(SYS_BPF, cmd, buf, size)
    if r < 0:
        raise OSError(ctypes.get_errno(), f"bpf({cmd})")
    return r, buf


def obj_info(fd, size, req=None):
    ib = ctypes.create_string_buffer(bytes(req) if req else b"", size)
    bpf(BPF_OBJ_GET_INFO_BY_FD, struct.pack("IIQ", fd, size, ctypes.addressof(ib)))
    return ib.raw


def prog_ids_of(pid):
    ids = set()
    for f in glob.glob(f"/proc/{pid}/fdinfo/*"):
        try:
            m = re.search(r"^prog_id:\s+(\d+)", open(f).read(), re.M)
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    return ids


def wr_rx_fd(pid):
    """A file descriptor of process `pid`'s wr_rx program, once it has attached one."""
    for _ in range(100):
        for pid_ in sorted(prog_ids_of(pid)):
            fd, _ = bpf(BPF_PROG_GET_FD_BY_ID, struct.pack("I", pid_))
            if obj_info(fd, 232)[64:80].split(b"\0")[0] == b"wr_rx":
                return pid_, fd
            os.close(fd)
        time.sleep(0.1)
    raise SystemExit(f"process {pid} attached no wr_rx program")


def expected_destination(pfd):
    """The destination address and port the program expects of stream 2, and its limit."""
    raw = obj_info(pfd, 232)
    nmaps = struct.unpack_from("I", raw, 52)[0]
    ids = ctypes.create_string_buffer(4 * nmaps)
    req = bytearray(232)
    struct.pack_into("I", req, 52, nmaps)
    struct.pack_into("Q", req, 56, ctypes.addressof(ids))
    obj_info(pfd, 232, req)
    maps = {}
    for mid in struct.unpack(f"{nmaps}I", ids.raw):
        mfd, _ = bpf(BPF_MAP_GET_FD_BY_ID, struct.pack("I", mid))
        mi = obj_info(mfd, 80)
        maps[mi[24:40].split(b"\0")[0].decode()] = (mfd, struct.unpack_from("I", mi, 12)[0])

    def lookup(name, key):
        mfd, size = maps[name]
        k = ctypes.create_string_buffer(struct.pack("I", key))
        v = ctypes.create_string_buffer(size)
        attr = struct.pack("IIQQQ", mfd, 0, ctypes.addressof(k), ctypes.addressof(v), 0)
        bpf(BPF_MAP_LOOKUP_ELEM, attr)
        return v.raw

    slot = struct.unpack("I", lookup("wr_rx_slots", STREAM))[0] - 1
    e = lookup("wr_rx_expect", slot)  # struct expect of rx.bpf.c
    return e[8:12], struct.unpack_from("H", e, 28)[0], struct.unpack_from("Q", e, 32)[0]


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def frame(dst, port, seq):
    """A 60-byte IPv4/UDP test frame of stream 2 (64 bytes with FCS), sent 20 us ago."""
    src = bytes([198, 18, 0, 1])
    tx = time.clock_gettime_ns(time.CLOCK_MONOTONIC) - 20_000
    sig = b"WR" + struct.pack("!HIQ", STREAM, seq & 0xFFFFFFFF, tx) + b"\0\0"
    udp = struct.pack("!HHHH", 1024, port, 8 + len(sig), 0) + sig
    c = (~csum(src + dst + struct.pack("!BBH", 0, 17, len(udp)) + udp)) & 0xFFFF or 0xFFFF
    udp = udp[:6] + struct.pack("!H", c) + udp[8:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), seq & 0xFFFF, 0, 64, 17, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", (~csum(ip)) & 0xFFFF) + ip[12:]
    return b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00" + ip + udp


OUT = ctypes.create_string_buffer(256)


def run_once(pfd, data):
    din = ctypes.create_string_buffer(data, len(data))
    attr = struct.pack("IIIIQQII", pfd, 0, len(data), 256, ctypes.addressof(din),
                       ctypes.addressof(OUT), 1, 0)
    _, b = bpf(BPF_PROG_TEST_RUN, attr, 80)
    ret, ns = struct.unpack_from("I", b.raw, 4)[0], struct.unpack_from("I", b.raw, 36)[0]
    return ret, ns


def trivial_prog():
    insns = struct.pack("<BBhi", 0xB7, 0, 0, XDP_DROP) + struct.pack("<BBhi", 0x95, 0, 0, 0)
    ib, lic = ctypes.create_string_buffer(insns), ctypes.create_string_buffer(b"GPL")
    fd, _ = bpf(BPF_PROG_LOAD, struct.pack("IIQQIIQII", BPF_PROG_TYPE_XDP, 2,
                                           ctypes.addressof(ib), ctypes.addressof(lic),
                                           0, 0, 0, 0, 0))
    return fd


def load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def summary(ns):
    ns = sorted(ns)
    n = len(ns)
    trimmed = statistics.mean(ns[n // 20:n - n // 20])
    return f"p10 {ns[n // 10]} p25 {ns[n // 4]} median {ns[n // 2]} trimmed mean {trimmed:.1f} ns"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--frames", type=int, default=60_000, help="frames per build")
    ap.add_argument("--start", type=int, default=50_000_000, help="first sequence number")
    ap.add_argument("--chunk", type=int, default=5_000, help="frames per turn")
    ap.add_argument("--cpu", type=int, default=1, help="CPU the runs are made on")
    ap.add_argument("builds", nargs="+", help="wirerate binaries, BINARY[=LABEL]")
    a = ap.parse_args()
    procs = []
    try:
        for b in a.builds:
            binary, _, label = b.partition("=")
            p = subprocess.Popen([binary, "bench", "rx", "--backend", "xdp", "--source", "xdp",
                                  "--rx-cpu", str(a.cpu), "--rate", "1000pps",
                                  "-n", "80000000"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(p)
            pid_, fd = wr_rx_fd(p.pid)
            dst, port, limit = expected_destination(fd)
            if a.start + a.frames > limit:
                raise SystemExit(f"sequence numbers up to {a.start + a.frames} exceed {limit}")
            procs[-1].timed = (label or binary, pid_, fd, dst, port, [])
        os.sched_setaffinity(0, {a.cpu})
        harness = (trivial_prog(), [])
        print(f"{time.strftime('%F %T')} load {load()}; CPU {a.cpu}; "
              f"{a.frames} frames per build from sequence number {a.start}")
        for k in range(0, a.frames, a.chunk):
            for p in procs:
                _, _, fd, dst, port, ns = p.timed
                for seq in range(a.start + k, a.start + min(k + a.chunk, a.frames)):
                    ret, t = run_once(fd, frame(dst, port, seq))
                    if ret != XDP_DROP:
                        raise SystemExit(f"frame {seq} not counted (XDP action {ret})")
                    ns.append(t)
            hfd, hns = harness
            for _ in range(a.chunk):
                hns.append(run_once(hfd, bytes(60))[1])
        for p in procs:
            label, pid_, _, _, _, ns = p.timed
            print(f"  {label} (program {pid_}): {summary(ns)}")
        print(f"  harness (2-instruction program): {summary(harness[1])}")
        print(f"  load {load()}")
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait()
            for side in ("va", "vb"):
                ns = f"wr-bench-{p.pid}-{side}"
                if os.path.exists(f"/run/netns/{ns}"):
                    subprocess.run(["ip", "netns", "del", ns], check=False)


if __name__ == "__main__":
    main()
