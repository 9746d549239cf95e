#!/usr/bin/env bash
# TCP through wirerate's emulated uplink, by hand (docs/emulate.md, "A kernel behind the
# emulated uplink"): a LAN namespace (iperf3 client) — a Linux gateway namespace (forwarding,
# nft NAPT, MSS clamp to the route's MTU) whose WAN is our PPPoE client's TUN (or our B4's) —
# our AC (or AFTR) handing its sessions to a TUN — an Internet namespace (iperf3 server on
# 203.0.113.1). Prints iperf3's figure and the SYN MSS the ISP side saw, per MSS, with the
# machine's load. Needs root, iperf3 and nft. Removes everything it made on exit.
#   sudo scripts/dev/tun-uplink.sh [pppoe|dslite] [seconds]
set -euo pipefail
cd "$(dirname "$0")/../.."
W=$PWD/target/release/wirerate
[ -x "$W" ] || cargo build --release --quiet
KIND=${1:-pppoe}
SECS=${2:-5}
P=wr-tunup
LOG=$(mktemp -d)
cleanup() {
  for n in lan gw isp inet; do
    ip netns pids $P-$n 2>/dev/null | xargs -r kill 2>/dev/null || true
  done
  sleep 0.5
  for n in lan gw isp inet; do ip netns del $P-$n 2>/dev/null || true; done
  rm -rf "$LOG"
}
trap cleanup EXIT INT TERM
for n in lan gw isp inet; do ip netns add $P-$n; ip -n $P-$n link set lo up; done
ip link add tunup-l0 netns $P-lan type veth peer name tunup-l1 netns $P-gw
ip link add tunup-w0 netns $P-gw type veth peer name tunup-w1 netns $P-isp
ip -n $P-lan addr add 192.0.2.2/24 dev tunup-l0
ip -n $P-lan link set tunup-l0 up
ip -n $P-lan route add default via 192.0.2.1
ip netns exec $P-gw sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv4.ip_forward=1
ip netns exec $P-isp sysctl -qw net.ipv6.conf.all.disable_ipv6=1
ip -n $P-gw addr add 192.0.2.1/24 dev tunup-l1
ip -n $P-gw link set tunup-l1 up
ip -n $P-gw link set tunup-w0 up
ip -n $P-isp link set tunup-w1 up
ip netns exec $P-gw nft -f - <<'NFT'
table ip tunup {
  chain clamp {
    type filter hook forward priority 0; policy accept;
    tcp flags syn tcp option maxseg size set rt mtu
  }
  chain napt {
    type nat hook postrouting priority 100;
    oifname "tunup-wan" masquerade
  }
}
NFT
case $KIND in
  pppoe) ISP="pppoe server"; CPE="pppoe client" ;;
  dslite) ISP="dslite aftr"; CPE="dslite b4" ;;
  *) echo "usage: $0 [pppoe|dslite] [seconds]" >&2; exit 2 ;;
esac
$W $ISP --netns $P-isp --dev tunup-w1 --tun tunup-inet --tun-netns $P-inet >"$LOG/isp" 2>&1 &
sleep 1
$W $CPE --netns $P-gw --dev tunup-w0 --tun tunup-wan >"$LOG/cpe" 2>&1 &
for _ in $(seq 100); do
  ip -n $P-gw -4 addr show tunup-wan 2>/dev/null | grep -q peer && break
  sleep 0.1
done
echo "gateway WAN: $(ip -n $P-gw -4 -br addr show tunup-wan)  mtu $(ip netns exec $P-gw cat /sys/class/net/tunup-wan/mtu)"
for mss in "" 1200 800 400; do
  ip netns exec $P-inet iperf3 -s -1 -B 203.0.113.1 >/dev/null 2>&1 &
  sleep 0.5
  before=$(grep -c '^syn   up' "$LOG/isp" || true)
  out=$(ip netns exec $P-lan iperf3 -c 203.0.113.1 -t "$SECS" ${mss:+-M $mss} -J)
  sleep 0.3
  seen=$(grep '^syn   up' "$LOG/isp" | tail -n +$((before + 1)) | sed 's/.*mss //' | paste -sd, -)
  echo "$out" | python3 -c "
import json, sys
e = json.load(sys.stdin)['end']
print('-M %-5s sent %d B, received %d B, %.0f Mb/s; SYN MSS at the ISP side: [%s]; load %s' % (
    '$mss' or '-', e['sum_sent']['bytes'], e['sum_received']['bytes'],
    e['sum_received']['bits_per_second'] / 1e6, '$seen', open('/proc/loadavg').read().split()[0]))"
done
