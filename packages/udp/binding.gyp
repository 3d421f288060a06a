{
  "targets": [
    {
      "target_name": "udp",
      "sources": ["src/native/udp.c", "src/native/groups.c"],
      "defines": ["NAPI_VERSION=8"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-fvisibility=hidden"],
      "conditions": [["OS!='linux'", { "type": "none" }]]
    }
  ]
}
