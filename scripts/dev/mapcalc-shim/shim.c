/* The "ubus" of libubus.h: one interface "wan" with the prefix in MAPCALC_PD. */
#include <stdio.h>
#include <stdlib.h>

#include "libubus.h"

/* mapcalc's own global: the "interface" array of netifd's dump. */
extern struct blob_attr *dump;

static struct blob_attr pd_address = { .name = "address", .type = BLOBMSG_TYPE_STRING };
static struct blob_attr pd_mask = { .name = "mask", .type = BLOBMSG_TYPE_INT32 };
static struct blob_attr pd_table = { .type = BLOBMSG_TYPE_TABLE };
static struct blob_attr iface_prefixes = { .name = "ipv6-prefix", .type = BLOBMSG_TYPE_ARRAY };
static struct blob_attr iface_name = { .name = "interface", .type = BLOBMSG_TYPE_STRING, .str = "wan" };
static struct blob_attr iface_table = { .type = BLOBMSG_TYPE_TABLE };
static struct blob_attr interfaces = { .name = "interface", .type = BLOBMSG_TYPE_ARRAY };
static char pd_text[64];
static int connected;

struct ubus_context *ubus_connect(const char *path)
{
	(void)path;
	const char *pd = getenv("MAPCALC_PD");
	if (!pd)
		return NULL;
	unsigned mask;
	if (sscanf(pd, "%63[0-9a-fA-F:]/%u", pd_text, &mask) != 2) {
		fprintf(stderr, "MAPCALC_PD is not ADDRESS/LENGTH: %s\n", pd);
		exit(2);
	}
	pd_mask.u32 = mask;
	connected = 1;
	return (struct ubus_context *)&connected;
}

int ubus_lookup_id(struct ubus_context *ctx, const char *path, uint32_t *id)
{
	(void)ctx;
	(void)path;
	*id = 1;
	return 0;
}

/*
 * Sets mapcalc's `dump` itself instead of calling its handler: handle_dump declares its
 * table as `tb[DUMP_ATTR_INTERFACE]`, an array of zero elements, and a parse would write
 * past it.
 */
int ubus_invoke(struct ubus_context *ctx, uint32_t obj, const char *method,
		struct blob_attr *msg, ubus_data_handler_t cb, void *priv, int timeout)
{
	(void)ctx; (void)obj; (void)method; (void)msg; (void)cb; (void)priv; (void)timeout;
	pd_address.str = pd_text;
	pd_address.next = &pd_mask;
	pd_table.child = &pd_address;
	iface_prefixes.child = &pd_table;
	iface_name.next = &iface_prefixes;
	iface_table.child = &iface_name;
	interfaces.child = &iface_table;
	dump = &interfaces;
	return 0;
}

int blobmsg_parse(const struct blobmsg_policy *policy, int n, struct blob_attr **tb,
		void *data, unsigned int len)
{
	(void)len;
	for (int i = 0; i < n; ++i) {
		tb[i] = NULL;
		for (struct blob_attr *a = data; a; a = a->next)
			if (a->name && !strcmp(a->name, policy[i].name) && a->type == policy[i].type) {
				tb[i] = a;
				break;
			}
	}
	return 0;
}
