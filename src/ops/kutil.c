/* kutil.c: small helpers every kernel family uses (declared in ops.h). */
#include "ops.h"

#include <stdio.h>

const char *cv_shape_str(char *buf, size_t n, int rank, const int64_t *dims)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, i ? ",%lld" : "%lld", (long long)dims[i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
    return buf;
}
