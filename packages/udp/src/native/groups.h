// Socket groups (groups.c): reuseportGroup, dupFd and closeFd on the module's exports.
#ifndef QUICPOOL_GROUPS_H
#define QUICPOOL_GROUPS_H
#include <node_api.h>

/** Adds the group functions to `exports`; 0 when a Node-API call failed. */
int groups_init(napi_env env, napi_value exports);

#endif
