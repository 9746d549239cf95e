#!/usr/bin/python3
"""What this kernel does when an AF_PACKET sender transmits into a veth whose peer's receive
ring is full (docs/engine.md, "When the DUT's port refuses a frame").

Builds its own two namespaces (wr-vrefusal-t, wr-vrefusal-d) and one veth (wr-t <-> wr-d), makes the
peer's receive slow on purpose — threaded NAPI pinned to the last CPU at SCHED_FIFO 50, as the
lab does, and a netdev ingress chain of RULES non-matching rules that every frame walks inside
that poll, then a counted drop — and sends FRAMES 64-byte frames as fast as Python can, once
per combination of:

  tester port  : noqueue (the veth default, TSO on) | noqueue-tso-off (TSO/GSO off) |
                 tbf (the lab's shaped tester port: a root tbf, TSO/GSO off)
  sender       : send() per frame | PACKET_TX_RING (TPACKET_V2) flushed every BATCH slots
  bypass       : PACKET_QDISC_BYPASS off | on
  ring-skip    : (TX ring, bypass on) a refused slot is skipped: its tp_len set to 0 with
                 PACKET_LOSS on, which the kernel drops as malformed without sending

and prints, per run, what send() returned (errno counts), the ring slot statuses seen, and
every counter that could hold the refused frames: the tester veth's tx_packets/tx_dropped,
`ethtool -S` of both ends, the qdisc's drops, and the frames the peer's ingress chain saw.

Run as root: /usr/bin/python3 scripts/dev/veth-refusal.py [FRAMES] [RULES]
Cleans up its namespaces on exit and on Ctrl-C.
"""
import ctypes
import errno
import json
import mmap
import os
import signal
import socket
import struct
import subprocess
import sys
import time

NS_T, NS_D = "wr-vrefusal-t", "wr-vrefusal-d"
FRAMES = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
RULES = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
BATCH = 64
SOL_PACKET = 263
PACKET_LOSS = 14
PACKET_VERSION = 10
PACKET_TX_RING = 13
PACKET_QDISC_BYPASS = 20
TPACKET_V2 = 1
TP_STATUS = {0: "AVAILABLE", 1: "SEND_REQUEST", 2: "SENDING", 4: "WRONG_FORMAT"}


def sh(*argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True).stdout


def nsx(ns, *argv, check=True):
    return sh("ip", "netns", "exec", ns, *argv, check=check)


def cleanup():
    for ns in (NS_T, NS_D):
        sh("ip", "netns", "del", ns, check=False)


def setup(qdisc):
    cleanup()
    sh("ip", "netns", "add", NS_T)
    sh("ip", "netns", "add", NS_D)
    sh("ip", "link", "add", "wr-t", "netns", NS_T, "type", "veth", "peer", "name", "wr-d",
       "netns", NS_D)
    for ns, i in ((NS_T, "wr-t"), (NS_D, "wr-d")):
        sh("ip", "-n", ns, "link", "set", i, "up")
        nsx(ns, "ethtool", "-K", i, "gro", "on")
    if qdisc != "noqueue":
        nsx(NS_T, "ethtool", "-K", "wr-t", "tso", "off", "gso", "off")
    if qdisc == "tbf":
        nsx(NS_T, "tc", "qdisc", "replace", "dev", "wr-t", "root", "handle", "1:", "tbf",
            "rate", "1gbit", "burst", "32kb", "latency", "5ms")
    rules = "\n".join(
        f"add rule netdev vrefusal in ip saddr 192.0.2.{i % 250 + 1} udp dport {i + 1} accept"
        for i in range(RULES))
    script = ("add table netdev vrefusal\n"
              "add chain netdev vrefusal in { type filter hook ingress device wr-d priority 0; }\n"
              "add rule netdev vrefusal in counter name seen\n" + rules +
              "\nadd rule netdev vrefusal in drop\n")
    script = script.replace("add rule netdev vrefusal in counter name seen\n",
                            "add counter netdev vrefusal seen\nadd rule netdev vrefusal in counter name seen\n")
    subprocess.run(["ip", "netns", "exec", NS_D, "nft", "-f", "-"], input=script, text=True,
                   check=True)
    nsx(NS_D, "sh", "-c", "echo 1 > /sys/class/net/wr-d/threaded")
    cpu = os.cpu_count() - 1
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            comm = open(f"/proc/{pid}/comm").read().strip()
        except OSError:
            continue
        if comm.startswith("napi/wr-d-"):
            sh("taskset", "-p", "-c", str(cpu), pid)
            sh("chrt", "-f", "-p", "50", pid)


def counters():
    link = json.loads(nsx(NS_T, "ip", "-s", "-j", "link", "show", "wr-t"))[0]["stats64"]
    et = nsx(NS_T, "ethtool", "-S", "wr-t")
    ed = nsx(NS_D, "ethtool", "-S", "wr-d")
    def kv(text):
        out = {}
        for line in text.splitlines()[1:]:
            k, _, v = line.strip().partition(":")
            if v.strip().isdigit() and int(v) != 0:
                out[k] = int(v)
        return out
    seen = json.loads(nsx(NS_D, "nft", "-j", "list", "counter", "netdev", "vrefusal", "seen"))
    seen = [x["counter"]["packets"] for x in seen["nftables"] if "counter" in x][0]
    q = nsx(NS_T, "tc", "-s", "-j", "qdisc", "show", "dev", "wr-t")
    qdrops = sum(x.get("drops", 0) for x in json.loads(q)) if q.strip() else 0
    return {"tx_packets": link["tx"]["packets"], "tx_dropped": link["tx"]["dropped"],
            "ethtool_t": kv(et), "ethtool_d": kv(ed), "peer_saw": seen, "qdisc_drops": qdrops}


def frame(seq):
    dst, src = b"\x02\x00\x00\x00\x00\x02", b"\x02\x00\x00\x00\x00\x01"
    payload = struct.pack("!I", seq) + bytes(14)
    udp = struct.pack("!HHHH", 1024, 9, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     bytes([198, 51, 100, 2]), bytes([203, 0, 113, 2]))
    return dst + src + b"\x08\x00" + ip + udp  # 60 bytes + FCS = 64


def in_ns(ns):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    if libc.setns(fd, 0) != 0:
        raise OSError(ctypes.get_errno(), "setns")
    os.close(fd)


def run_send(bypass):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.setsockopt(SOL_PACKET, PACKET_QDISC_BYPASS, int(bypass))
    s.bind(("wr-t", 0))
    errs, ok = {}, 0
    for i in range(FRAMES):
        try:
            s.send(frame(i), socket.MSG_DONTWAIT)
            ok += 1
        except OSError as e:
            errs[errno.errorcode[e.errno]] = errs.get(errno.errorcode[e.errno], 0) + 1
    s.close()
    return {"accepted": ok, "errors": errs}


def run_ring(bypass, skip):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
    s.setsockopt(SOL_PACKET, PACKET_QDISC_BYPASS, int(bypass))
    if skip:
        s.setsockopt(SOL_PACKET, PACKET_LOSS, 1)
    fsize, nframes = 256, 1024
    s.setsockopt(SOL_PACKET, PACKET_TX_RING,
                 struct.pack("IIII", 4096, nframes * fsize // 4096, fsize, nframes))
    s.bind(("wr-t", 0))
    ring = mmap.mmap(s.fileno(), nframes * fsize)
    status = lambda i: struct.unpack_from("I", ring, i * fsize)[0]
    head = tail = 0
    skipped_slots = set()
    errs, after_err, accepted, skipped, written = {}, {}, 0, 0, 0
    deadline = time.monotonic() + 30
    while (written < FRAMES or tail != head) and time.monotonic() < deadline:
        while written < FRAMES and (head - tail) % nframes < BATCH and status(head) == 0:
            f = frame(written)
            ring[head * fsize + 32:head * fsize + 32 + len(f)] = f
            struct.pack_into("I", ring, head * fsize + 4, len(f))  # tp_len
            struct.pack_into("I", ring, head * fsize, 1)  # SEND_REQUEST
            head, written = (head + 1) % nframes, written + 1
        refused = False
        try:
            s.send(b"", socket.MSG_DONTWAIT)
        except OSError as e:
            name = errno.errorcode[e.errno]
            errs[name] = errs.get(name, 0) + 1
            refused = e.errno == errno.ENOBUFS
        while tail != head:
            st = status(tail)
            if st & 1:
                if refused:
                    # The slot the kernel stopped at after the error: its status now.
                    k = TP_STATUS.get(st, st)
                    after_err[k] = after_err.get(k, 0) + 1
                break
            if tail in skipped_slots:
                skipped_slots.discard(tail)
            else:
                accepted += 1
            tail = (tail + 1) % nframes
        if refused and skip and tail != head and status(tail) & 1 and tail not in skipped_slots:
            # The refused frame: malformed (tp_len 0) with PACKET_LOSS on, so the next send
            # skips it without sending; it is the DUT's loss, never retried.
            struct.pack_into("I", ring, tail * fsize + 4, 0)
            skipped_slots.add(tail)
            skipped += 1
    s.close()
    return {"written": written, "accepted": accepted, "skipped_as_refused": skipped,
            "errors": errs, "slot_after_ENOBUFS": after_err}


def one(qdisc, mode, bypass):
    setup(qdisc)
    before = counters()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        in_ns(NS_T)
        os.sched_setaffinity(0, {0})
        res = run_send(bypass) if mode == "send" else run_ring(bypass, mode == "ring-skip")
        os.write(w, json.dumps(res).encode())
        os._exit(0)
    os.close(w)
    out = b""
    while chunk := os.read(r, 65536):
        out += chunk
    os.waitpid(pid, 0)
    time.sleep(0.5)  # let the slow peer drain its ring
    after = counters()
    diff = {k: after[k] - before[k] for k in ("tx_packets", "tx_dropped", "peer_saw",
                                              "qdisc_drops")}
    diff["ethtool_t"] = after["ethtool_t"]
    diff["ethtool_d"] = after["ethtool_d"]
    return json.loads(out), diff


def main():
    if os.geteuid() != 0:
        sys.exit("run as root")
    signal.signal(signal.SIGINT, lambda *_: (cleanup(), sys.exit(130)))
    print(f"kernel {os.uname().release}; {FRAMES} frames per run; {RULES} rules in the peer's "
          f"ingress; loadavg {open('/proc/loadavg').read().split()[:3]}")
    try:
        for qdisc in ("noqueue", "noqueue-tso-off", "tbf"):
            for mode, bypass in (("send", False), ("send", True), ("ring", False),
                                 ("ring", True), ("ring-skip", True)):
                res, cnt = one(qdisc, mode, bypass)
                print(f"\n== qdisc {qdisc}, {mode}, bypass {'on' if bypass else 'off'}")
                print("   sender:", json.dumps(res))
                print("   counters:", json.dumps(cnt))
    finally:
        cleanup()


if __name__ == "__main__":
    main()
