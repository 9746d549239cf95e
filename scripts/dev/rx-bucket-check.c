// The XDP receiver's branch-free histogram bucket (crates/engine/bpf/rx.bpf.c, bucket_of) against
// the branching form it replaced, natively: every value below 2^22, both sides of every power of
// two, and [1 ns, 10 s] in steps of 0.01 %. Prints the mismatches (0 expected).
//     gcc -O2 -o /tmp/rx-bucket-check scripts/dev/rx-bucket-check.c && /tmp/rx-bucket-check
#include <stdio.h>
#include <stdint.h>
typedef uint64_t __u64; typedef uint32_t __u32;
#define SUB_BITS 7
#define SUB (1u<<SUB_BITS)
#define MAX_EXP 33
#define NBUCKETS ((MAX_EXP - SUB_BITS + 2) * SUB)
static __u32 log2_u64(__u64 v){__u32 r=0; if(v>>32){v>>=32;r+=32;} if(v>>16){v>>=16;r+=16;} if(v>>8){v>>=8;r+=8;} if(v>>4){v>>=4;r+=4;} if(v>>2){v>>=2;r+=2;} if(v>>1)r+=1; return r;}
static __u32 old_b(__u64 v){ if(v<SUB) return v; __u32 e=log2_u64(v); __u32 b=((e-SUB_BITS+1)<<SUB_BITS)+((v>>(e-SUB_BITS))&(SUB-1)); return b<NBUCKETS?b:NBUCKETS-1;}
static __u64 above(__u64 v,__u64 l){return (l-v)>>63;}
static __u32 log2_flat(__u64 v){__u64 r=0; for(int k=5;k>=1;k--){__u64 s=above(v,(1ULL<<(1<<k))-1)<<k; v>>=s; r|=s;} return (__u32)(r|(v>>1));}
static __u32 new_b(__u64 v){__u32 sh=log2_flat(v|SUB)-SUB_BITS; __u32 b=(sh<<SUB_BITS)+(__u32)(v>>sh); return b<NBUCKETS?b:NBUCKETS-1;}
int main(){ long bad=0; for(__u64 v=1; v< (1ull<<22); v++) if(old_b(v)!=new_b(v)){ if(bad<5) printf("v=%llu old %u new %u\n",(unsigned long long)v,old_b(v),new_b(v)); bad++;}
 for(int k=1;k<63;k++) for(long d=-3; d<=3; d++){ __u64 v=(1ull<<k)+d; if(v<1) continue; if (v>10000000000ULL) v=10000000000ULL; if(old_b(v)!=new_b(v)){bad++; if(bad<10) printf("v=%llu old %u new %u\n",(unsigned long long)v,old_b(v),new_b(v));}}
 for(__u64 v=1; v<=10000000000ULL; v=v*1.0001+1) if(old_b(v)!=new_b(v)) bad++;
 for(__u64 k=0;k<64;k++){__u64 v=1ull<<k; if(v<(1ull<<62) && log2_flat(v)!=k) {printf("log2 %llu\n",(unsigned long long)k); bad++;}}
 printf("mismatches %ld\n",bad); return bad != 0; }
