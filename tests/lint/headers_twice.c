/* headers_twice.c: every header of include/ and src/ (but k_rnn_core.h, a
 * template included on purpose once per element type) included twice; it
 * compiles only when each include guard covers its whole header (the guard
 * of partition.h once closed at line 68, leaving most of it unguarded). */
#include "backends/backends.h"
#include "carve.h"
#include "carve_backend.h"
#include "ir/ir.h"
#include "onnx/onnx_io.h"
#include "ops/k_elementwise.h"
#include "ops/k_nn.h"
#include "ops/k_reduce.h"
#include "ops/k_shape.h"
#include "ops/ops.h"
#include "partition/partition.h"
#include "passes/passes.h"
#include "runtime/runtime.h"

#include "backends/backends.h"
#include "carve.h"
#include "carve_backend.h"
#include "ir/ir.h"
#include "onnx/onnx_io.h"
#include "ops/k_elementwise.h"
#include "ops/k_nn.h"
#include "ops/k_reduce.h"
#include "ops/k_shape.h"
#include "ops/ops.h"
#include "partition/partition.h"
#include "passes/passes.h"
#include "runtime/runtime.h"

int main(void)
{
    return 0;
}
