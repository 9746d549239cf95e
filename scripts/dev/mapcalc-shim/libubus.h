/*
 * A stand-in for OpenWrt's libubus.h and libubox's blobmsg, just big enough to build
 * OpenWrt's mapcalc (package/network/ipv6/map/src/mapcalc.c) off OpenWrt, so that wirerate's
 * MAP arithmetic can be compared with it (crates/wire/tests/map_mapcalc.rs).
 *
 * mapcalc asks netifd over ubus for the interfaces' delegated prefixes. Here "ubus" answers
 * with one interface, "wan", holding the one prefix in the environment variable MAPCALC_PD
 * ("2001:db8:12:3400::/56"); without it there is no ubus and mapcalc sees no prefix.
 * A blob is a plain tree (shim.c builds it); only the calls mapcalc makes exist.
 */
#ifndef WR_MAPCALC_SHIM_LIBUBUS_H
#define WR_MAPCALC_SHIM_LIBUBUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum {
	BLOBMSG_TYPE_UNSPEC,
	BLOBMSG_TYPE_ARRAY,
	BLOBMSG_TYPE_TABLE,
	BLOBMSG_TYPE_STRING,
	BLOBMSG_TYPE_INT32,
};

struct blob_attr {
	const char *name;
	int type;
	const char *str;
	uint32_t u32;
	struct blob_attr *child; /* first member of an array or a table */
	struct blob_attr *next;  /* next member of the enclosing array or table */
};

struct blobmsg_policy {
	const char *name;
	int type;
};

struct ubus_context;
struct ubus_request;
typedef void (*ubus_data_handler_t)(struct ubus_request *req, int type, struct blob_attr *msg);

struct ubus_context *ubus_connect(const char *path);
int ubus_lookup_id(struct ubus_context *ctx, const char *path, uint32_t *id);
int ubus_invoke(struct ubus_context *ctx, uint32_t obj, const char *method,
		struct blob_attr *msg, ubus_data_handler_t cb, void *priv, int timeout);
int blobmsg_parse(const struct blobmsg_policy *policy, int n, struct blob_attr **tb,
		void *data, unsigned int len);

static inline void *blob_data(struct blob_attr *a) { return a ? a->child : NULL; }
static inline unsigned int blob_len(struct blob_attr *a) { (void)a; return 0; }
static inline struct blob_attr *blob_memdup(struct blob_attr *a) { return a; }
static inline void *blobmsg_data(struct blob_attr *a) { return a->child; }
static inline unsigned int blobmsg_data_len(struct blob_attr *a) { (void)a; return 0; }
static inline int blobmsg_type(struct blob_attr *a) { return a->type; }
static inline bool blobmsg_check_attr(struct blob_attr *a, const char *name)
{
	(void)a;
	(void)name;
	return true;
}
static inline char *blobmsg_get_string(struct blob_attr *a) { return (char *)a->str; }
static inline uint32_t blobmsg_get_u32(struct blob_attr *a) { return a->u32; }

#define blobmsg_for_each_attr(pos, attr, rem) \
	for (rem = 0, pos = (attr) ? (attr)->child : NULL; pos; pos = pos->next)

#endif
