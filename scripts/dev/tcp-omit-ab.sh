#!/usr/bin/env bash
# The demo's 42 TCP cases with and without iperf3's omitted second, alternated (the figures in
# docs/measurements.md, "the demo's TCP runs with and without the omitted second"). Builds two
# plans from plans/lab-demo.toml — its TCP matrices only, `omit` set to "1s" and "0s" — runs them
# ROUNDS times each (default 2) into OUT (default a new /tmp dir) and prints each run's seconds
# and, per case, the share of line rate counted on the wire (tcp.l1_bps). Root; ~6 min a round.
set -euo pipefail
cd "$(dirname "$0")/../.."
W=${W:-./target/release/wirerate}
rounds=${ROUNDS:-2}
out=${OUT:-$(mktemp -d /tmp/tcp-omit-ab.XXXXXX)}
mkdir -p "$out"
python3 - "$out" <<'PY'
import sys
src = open('plans/lab-demo.toml').read()
head, rest = src.split('[[matrix]]', 1)
tcp = ['[[matrix]]' + m for m in rest.split('[[matrix]]') if 'protocol = ["tcp"]' in m]
for omit in ('1s', '0s'):
    h = head.replace('name = "lab-demo"', f'name = "tcp-omit-{omit}"')
    h = h.replace('name = "demo"', 'name = "tcpab"')
    h = h.replace('omit = "0s"', f'omit = "{omit}"').replace('omit = "1s"', f'omit = "{omit}"')
    open(f'{sys.argv[1]}/tcp-omit-{omit}.toml', 'w').write(h + ''.join(tcp))
PY
for r in $(seq "$rounds"); do
  for omit in 1s 0s; do
    start=$SECONDS
    $W run "$out/tcp-omit-$omit.toml" --out "$out/run-$omit-$r" > "$out/log-$omit-$r" 2>&1
    echo "omit $omit round $r: $((SECONDS - start)) s"
  done
done
python3 - "$out" <<'PY'
import glob, json, sys, collections, statistics
by = collections.defaultdict(lambda: collections.defaultdict(list))
for run in sorted(glob.glob(f'{sys.argv[1]}/run-*')):
    omit = run.rsplit('/', 1)[1].split('-')[1]
    for line in open(f'{run}/trials.jsonl'):
        t = json.loads(line)
        if t.get('record') == 'trial' and t.get('tcp'):
            by[t['case_id']][omit].append(t['tcp']['l1_bps'] / 1e6)
diffs = []
for case, v in by.items():
    if v['1s'] and v['0s']:
        diffs.append(statistics.mean(v['0s']) - statistics.mean(v['1s']))
    print(f"{case:42s} L1 Mb/s omit 1s {v['1s']}  omit 0s {v['0s']}")
if diffs:
    print(f"mean L1 difference (0s - 1s): {statistics.mean(diffs):+.2f} Mb/s, per case {min(diffs):+.1f} .. {max(diffs):+.1f}")
PY
