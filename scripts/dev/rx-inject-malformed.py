# Sends 30 malformed frames with stream 1's signature out of wr-dut-b, 2 s after it starts (argv[1]),
# all within a few ms (scapy builds them first; one raw socket sends them). Used by rx-inject-check.sh.
import sys, time, struct
from scapy.all import Ether, IP, UDP, Dot1Q, Raw, conf
import socket
conf.verb = 0
time.sleep(float(sys.argv[1]))
pad = bytes(range(0x10, 0x10 + 66))
def sig(seq, ts): return b'WR' + struct.pack('!HIQ', 1, seq & 0xffffffff, ts)
def base(seq, ts, dst='203.0.113.2', dport=9, flags=0):
    return Ether(dst='02:77:72:00:00:0b', src='02:77:72:00:01:0b') / IP(src='198.51.100.2', dst=dst, ttl=63, flags=flags) / UDP(sport=1024, dport=dport) / Raw(sig(seq, ts) + pad)
frames = []
now = time.monotonic_ns()
for k in range(3):
    s = 100 + k
    b = bytearray(bytes(base(s, now))); b[-1] ^= 0x5a; frames.append(bytes(b))
    b = bytearray(bytes(base(s, now))); b[24] ^= 0x01; frames.append(bytes(b))
    p = base(s, now); p[UDP].len = 86; frames.append(bytes(p))
    p = base(s, now); frames.append(bytes(Ether(dst=p.dst, src=p.src) / Dot1Q(vlan=42) / p[IP]))
    frames.append(bytes(base(s, now, flags='MF')))
    frames.append(bytes(base(s, now, dst='203.0.113.9')))
    frames.append(bytes(base(s, now, dport=53)))
    frames.append(bytes(base(s, 1)))
    frames.append(bytes(base(s, now + 12084 * 10**9)))
    frames.append(bytes(base(5001 + 0x10000 * (k + 1), now)))
sk = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
sk.bind(('wr-dut-b', 0))
t0 = time.monotonic()
for f in frames:
    sk.send(f)
print('injected', len(frames), 'frames in %.1f ms' % ((time.monotonic() - t0) * 1e3))
