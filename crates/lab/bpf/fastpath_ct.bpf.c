// SPDX-License-Identifier: MIT OR Apache-2.0
// The fast path for a stateful DUT: conntrack-confirmed, established flows only (see fastpath.h).
#define FP_CT 1
#define FP_NAME wr_fp_ct
#include "fastpath.h"
