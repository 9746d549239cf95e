#!/usr/bin/env bash
# Installs the system packages wirerate needs on Debian, only those that are missing.
# Runs as root (the lab needs root anyway). Safe to run again: it does nothing when all are present.
set -euo pipefail

# package -> a command (or file) that proves it is installed
declare -A PROBE=(
  [iproute2]=/usr/sbin/ip
  [iputils-ping]=/usr/bin/ping
  [nftables]=/usr/sbin/nft
  [iptables]=/usr/sbin/iptables
  [conntrack]=/usr/sbin/conntrack
  [iperf3]=/usr/bin/iperf3
  [tshark]=/usr/bin/tshark
  [netsniff-ng]=/usr/sbin/trafgen
  [python3-scapy]=/usr/lib/python3/dist-packages/scapy/__init__.py
  [tcpdump]=/usr/bin/tcpdump
  [procps]=/usr/bin/vmstat
  [ethtool]=/usr/sbin/ethtool
  [curl]=/usr/bin/curl
  # Plans with `dut.ssh` run hooks on the DUT over ssh (and a test proves a host can't be an option).
  [openssh-client]=/usr/bin/ssh
  [ca-certificates]=/etc/ssl/certs/ca-certificates.crt
  [build-essential]=/usr/bin/cc
  [pkg-config]=/usr/bin/pkg-config
  [chromium]=/usr/bin/chromium
  # The BPF programs (the XDP backend, the lab's fast path) are C, compiled by the build
  # scripts through crates/bpf-build.
  [clang]=/usr/bin/clang
  [libbpf-dev]=/usr/include/bpf/bpf_helpers.h
  [linux-libc-dev]=/usr/include/linux/bpf.h
  # Independent IPv6 provisioning clients the AFTR's RA/DHCPv6 server is checked against:
  # dhcpcd (DHCPv6 IA_NA, IA_PD, DNS, AFTR-Name) and rdisc6 (Router Advertisements).
  [dhcpcd-base]=/usr/sbin/dhcpcd
  [ndisc6]=/usr/bin/rdisc6
  # dig, the DNS client our ISP side's DNS server is checked against (UDP and TCP).
  [dnsutils]=/usr/bin/dig
)

missing=()
for pkg in "${!PROBE[@]}"; do
  [ -e "${PROBE[$pkg]}" ] || missing+=("$pkg")
done

if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages ${missing[*]}; run this script as root (sudo $0)" >&2
    exit 2
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # wireshark-common asks whether non-root users may capture; answer once, non-interactively.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
  echo "install-deps: no Rust toolchain found. Install stable Rust with rustup (https://rustup.rs) or 'apt-get install cargo', then run again." >&2
  exit 2
fi
echo "install-deps: all system packages present"
