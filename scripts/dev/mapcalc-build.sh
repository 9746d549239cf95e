#!/bin/sh
# Builds OpenWrt's mapcalc (package/network/ipv6/map/src/mapcalc.c, not part of wirerate and
# never committed here) against the small libubus/libubox stand-in in mapcalc-shim/, so that
# crates/wire/tests/map_mapcalc.rs can compare wirerate's MAP arithmetic with it.
#
#   scripts/dev/mapcalc-build.sh MAPCALC_C OUT_DIR   → prints OUT_DIR/mapcalc
#
# Run it as: MAPCALC_PD=2001:db8:12:3400::/56 OUT_DIR/mapcalc '*' 'ipv6prefix=...,...'
set -eu
src=$1
out=$2
shim=$(dirname "$0")/mapcalc-shim
[ -f "$src" ] || { echo "no mapcalc source at $src" >&2; exit 1; }
mkdir -p "$out"
${CC:-cc} -std=gnu99 -D_GNU_SOURCE -O1 -w -I "$shim" -o "$out/mapcalc" "$src" "$shim/shim.c"
echo "$out/mapcalc"
