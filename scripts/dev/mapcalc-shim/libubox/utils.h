/* The byte-order helpers of libubox's utils.h that mapcalc uses (see ../libubus.h). */
#ifndef WR_MAPCALC_SHIM_UTILS_H
#define WR_MAPCALC_SHIM_UTILS_H

#include <endian.h>

#define cpu_to_be64(x) htobe64(x)
#define be64_to_cpu(x) be64toh(x)
#define cpu_to_be16(x) htobe16(x)
#define be16_to_cpu(x) be16toh(x)

#endif
