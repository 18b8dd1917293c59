/* cli_util.c: helpers the commands share. */
#include "cli.h"

#include <string.h>

carve_model *cli_load(carve_ctx *ctx, const char *path)
{
    carve_model *m = NULL;
    if (carve_model_load_file(ctx, path, NULL, &m) != CARVE_OK) {
        fprintf(stderr, "carve: %s\n", carve_errmsg(ctx));
        return NULL;
    }
    return m;
}

const char *cli_type_str(const carve_model *m, carve_value_id v, char *buf, size_t n)
{
    size_t k = 0;
#define PUT(...) (k += (size_t)snprintf(buf + (k < n ? k : n), k < n ? n - k : 0, __VA_ARGS__))
    switch (carve_value_type_kind(m, v)) {
    case CARVE_TYPE_UNKNOWN: PUT("?"); return buf;
    case CARVE_TYPE_OTHER: PUT("(non-tensor)"); return buf;
    case CARVE_TYPE_TENSOR: break;
    }
    PUT("%s", carve_dtype_name(carve_value_dtype(m, v)));
    int r = carve_value_rank(m, v);
    if (r < 0) {
        PUT("[*]");
        return buf;
    }
    PUT("[");
    for (int i = 0; i < r; i++) {
        carve_dim d = carve_value_dim(m, v, i);
        if (d.param)
            PUT("%s%s", i ? "," : "", d.param);
        else if (d.value >= 0)
            PUT("%s%lld", i ? "," : "", (long long)d.value);
        else
            PUT("%s?", i ? "," : "");
    }
    PUT("]");
#undef PUT
    return buf;
}
