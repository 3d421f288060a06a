// Small Node-API helpers shared by the batched socket (udp.c) and the socket groups (groups.c).
#ifndef QUICPOOL_NAPI_UTIL_H
#define QUICPOOL_NAPI_UTIL_H
#include <node_api.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/** Throws an Error "what: strerror(err)" with `errno` = -err; returns NULL for the caller to return. */
static inline napi_value throw_errno(napi_env env, const char* what, int err) {
  char msg[160];
  snprintf(msg, sizeof msg, "%s: %s", what, strerror(err));
  napi_value e, code, message;
  napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &message);
  napi_create_error(env, NULL, message, &e);
  napi_create_int32(env, -err, &code);
  napi_set_named_property(env, e, "errno", code);
  napi_throw(env, e);
  return NULL;
}

/** `obj[name]` when it is present and neither undefined nor null. */
static inline int get_prop(napi_env env, napi_value obj, const char* name, napi_value* out) {
  bool has = false;
  if (napi_has_named_property(env, obj, name, &has) != napi_ok || !has) return 0;
  if (napi_get_named_property(env, obj, name, out) != napi_ok) return 0;
  napi_valuetype t;
  napi_typeof(env, *out, &t);
  return t != napi_undefined && t != napi_null;
}

#endif
