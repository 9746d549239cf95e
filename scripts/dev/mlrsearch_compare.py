#!/usr/bin/env python3
"""Runs FD.io's MLRsearch (PyPI `mlrsearch` 1.2.1) on a port of wirerate's simulated DUTs
(`crates/bench-model/src/search/sim.rs`) and prints trials and trial-seconds per DUT, for the table
that `cargo test -p bench-model --release multi_goal_spends -- --nocapture` prints for wirerate.

A development tool, not a dependency:

    python3 -m venv /tmp/mlrvenv && /tmp/mlrvenv/bin/pip install mlrsearch==1.2.1
    /tmp/mlrvenv/bin/python scripts/dev/mlrsearch_compare.py

Goals as in the Rust test: NDR (loss 0) and PDR (0.5 %), exceed ratio 0, width 0.5 %, trials
from 1 s to 30 s, duration sum 30 s, no warm-up; two configurations: 5 preceding targets (the
phase plan wirerate used before issue #17) and MLRsearch's default of 2.
"""

import math

from MLRsearch import AbstractMeasurer, Config, MeasurementResult
from MLRsearch import MultipleLossRatioSearch, SearchGoal

LINE_PPS = 1_488_095.0  # sim::GIGABIT_64B_PPS
MASK = (1 << 64) - 1


class XorShift:
    """sim::XorShift (xorshift64*)."""

    def __init__(self, seed):
        self.x = seed if seed else 0x9E3779B97F4A7C15

    def next_u64(self):
        x = self.x
        x ^= x >> 12
        x ^= (x << 25) & MASK
        x ^= x >> 27
        self.x = x
        return (x * 0x2545F4914F6CDD1D) & MASK

    def symmetric(self):
        return (self.next_u64() >> 11) / float(1 << 53) * 2.0 - 1.0


def round_half_away(x):
    return math.floor(x + 0.5)


class SimDut(AbstractMeasurer):
    """sim::SimDut::trial for timed trials (no bursts, no tester ceiling)."""

    def __init__(self, capacity, noise=0.0, seed=1, buffer_frames=0, loss_slope=0.0):
        self.capacity = capacity
        self.noise = noise
        self.rng = XorShift(seed)
        self.buffer_frames = buffer_frames
        self.loss_slope = loss_slope
        self.trials = 0
        self.seconds = 0.0

    def measure(self, intended_duration, intended_load):
        self.trials += 1
        self.seconds += intended_duration
        offered = intended_load / LINE_PPS
        capacity = self.capacity * (1.0 + self.noise * self.rng.symmetric())
        sent = int(round_half_away(offered * LINE_PPS * intended_duration))
        if self.loss_slope > 0.0:
            ratio = min(max(self.loss_slope * (offered - capacity), 0.0), 1.0)
            cap = sent - int(round_half_away(sent * ratio))
        else:
            cap = int(math.floor(capacity * LINE_PPS * intended_duration)) + self.buffer_frames
        received = min(sent, cap)
        return MeasurementResult(
            intended_duration=intended_duration,
            intended_load=intended_load,
            offered_count=sent,
            forwarding_count=received,
        )


def run(make, preceding):
    goals = [
        SearchGoal(
            loss_ratio=ratio,
            exceed_ratio=0.0,
            relative_width=0.005,
            initial_trial_duration=1.0,
            final_trial_duration=30.0,
            duration_sum=30.0,
            preceding_targets=preceding,
            expansion_coefficient=2,
        )
        for ratio in (0.0, 0.005)
    ]
    config = Config()
    config.goals = goals
    config.min_load = 0.001 * LINE_PPS
    config.max_load = LINE_PPS
    config.search_duration_max = 1e9
    config.warmup_duration = None
    dut = make()
    result = MultipleLossRatioSearch(config=config).search(measurer=dut, debug=lambda _: None)
    brackets = []
    for goal in goals:
        r = result[goal]
        lo = r.relevant_lower_bound
        hi = r.relevant_upper_bound
        brackets.append(
            (round(float(lo) / LINE_PPS, 6) if lo else None, round(float(hi) / LINE_PPS, 6) if hi else None)
        )
    return dut.trials, dut.seconds, brackets


DUTS = [
    ("sharp 62 %", lambda: SimDut(0.62)),
    ("sharp 31.27 %", lambda: SimDut(0.3127)),
    ("sharp 4 %", lambda: SimDut(0.04)),
    ("40 % with a 0.2 s buffer", lambda: SimDut(0.4, buffer_frames=300_000)),
    ("gradual 50 % +0.5 % loss per 1 %", lambda: SimDut(0.5, loss_slope=0.5)),
]


def main():
    print(f"{'simulated DUT':<34} {'5 preceding targets':>22} {'2 preceding (default)':>22}")
    for name, make in DUTS:
        cells = []
        for preceding in (5, 2):
            trials, secs, brackets = run(make, preceding)
            cells.append(f"{trials:>5} {secs:>10.1f} s")
        print(f"{name:<34} {cells[0]:>22} {cells[1]:>22}   brackets (2): {brackets}")
    for preceding in (5, 2):
        ts, ss = [], []
        for seed in range(1, 21):
            trials, secs, _ = run(lambda: SimDut(0.55, noise=0.01, seed=seed), preceding)
            ts.append(trials)
            ss.append(secs)
        print(
            f"noisy 55 % ±1 %, seeds 1–20, {preceding} preceding: "
            f"mean {sum(ts) / 20:.1f} trials, {sum(ss) / 20:.1f} s ({min(ss):.1f}–{max(ss):.1f})"
        )


if __name__ == "__main__":
    main()
