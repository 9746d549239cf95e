// SPDX-License-Identifier: MIT OR Apache-2.0
// The fast path for a DUT without connection tracking (see fastpath.h).
#define FP_CT 0
#define FP_NAME wr_fp_fwd
#include "fastpath.h"
