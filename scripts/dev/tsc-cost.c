// What reading the TSC costs on this machine (docs/measurements.md, "The receive clock"): the XDP
// receiver's clock, bpf_ktime_get_ns(), is an ordered TSC read in the kernel. Times 20 million
// calls each of rdtsc, rdtscp, lfence + rdtsc and clock_gettime(CLOCK_MONOTONIC).
//     gcc -O2 -o /tmp/tsc-cost scripts/dev/tsc-cost.c && taskset -c 1 /tmp/tsc-cost
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void)
{
	const int n = 20000000;
	volatile uint64_t sink = 0;
	unsigned aux;
	double t0 = now();
	for (int i = 0; i < n; i++)
		sink += __rdtsc();
	double t1 = now();
	for (int i = 0; i < n; i++)
		sink += __rdtscp(&aux);
	double t2 = now();
	for (int i = 0; i < n; i++) {
		_mm_lfence();
		sink += __rdtsc();
	}
	double t3 = now();
	for (int i = 0; i < n; i++) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		sink += t.tv_nsec;
	}
	double t4 = now();
	printf("rdtsc %.1f ns, rdtscp %.1f ns, lfence+rdtsc %.1f ns, clock_gettime %.1f ns\n",
	       (t1 - t0) / n * 1e9, (t2 - t1) / n * 1e9, (t3 - t2) / n * 1e9, (t4 - t3) / n * 1e9);
	return 0;
}
