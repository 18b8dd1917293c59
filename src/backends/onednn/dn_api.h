/* dn_api.h: the oneDNN functions the backend calls, reached through a
 * table filled when the backend is first used (dn_api.c), not through the
 * dynamic linker at process start. Linked normally, libdnnl (40 MB, C++,
 * 35,000 relocations) and libstdc++ were loaded and initialized by every
 * carve process: about 2 ms of CPU before main, a quarter of lowering OCR
 * cls, for a backend most commands never use.
 *
 * Each name below becomes a call through the table (the macros after the
 * list); the table's types are the functions' own (__typeof__ of dnnl.h's
 * declarations), so nothing is restated. A dnnl_ function missing from
 * the list still builds and works: it is linked as before (as-needed),
 * and libdnnl is then loaded at start again (perf.start_loads_no_backend_library
 * checks it is not). Include only after <oneapi/dnnl/dnnl.h>. */
#ifndef CARVE_DN_API_H
#define CARVE_DN_API_H

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdbool.h>
#include <stddef.h>

#define DN_API(X) \
    X(dnnl_batch_normalization_forward_desc_init) \
    X(dnnl_binary_desc_init) \
    X(dnnl_concat_primitive_desc_create) \
    X(dnnl_dilated_convolution_forward_desc_init) \
    X(dnnl_dilated_deconvolution_forward_desc_init) \
    X(dnnl_eltwise_forward_desc_init) \
    X(dnnl_engine_create) \
    X(dnnl_get_effective_cpu_isa) \
    X(dnnl_layer_normalization_forward_desc_init) \
    X(dnnl_matmul_desc_init) \
    X(dnnl_memory_create) \
    X(dnnl_memory_desc_equal) \
    X(dnnl_memory_desc_get_size) \
    X(dnnl_memory_desc_init_by_strides) \
    X(dnnl_memory_desc_init_by_tag) \
    X(dnnl_memory_desc_init_submemory) \
    X(dnnl_memory_destroy) \
    X(dnnl_memory_get_data_handle) \
    X(dnnl_memory_get_memory_desc) \
    X(dnnl_memory_set_data_handle) \
    X(dnnl_pooling_v2_forward_desc_init) \
    X(dnnl_post_ops_append_binary) \
    X(dnnl_post_ops_append_eltwise) \
    X(dnnl_post_ops_append_sum) \
    X(dnnl_post_ops_create) \
    X(dnnl_post_ops_destroy) \
    X(dnnl_prelu_forward_desc_init) \
    X(dnnl_primitive_attr_create) \
    X(dnnl_primitive_attr_destroy) \
    X(dnnl_primitive_attr_set_output_scales) \
    X(dnnl_primitive_attr_set_post_ops) \
    X(dnnl_primitive_attr_set_zero_points) \
    X(dnnl_primitive_create) \
    X(dnnl_primitive_desc_create) \
    X(dnnl_primitive_desc_destroy) \
    X(dnnl_primitive_desc_query) \
    X(dnnl_primitive_desc_query_md) \
    X(dnnl_primitive_destroy) \
    X(dnnl_primitive_execute) \
    X(dnnl_reduction_desc_init) \
    X(dnnl_reorder_primitive_desc_create) \
    X(dnnl_resampling_forward_desc_init) \
    X(dnnl_softmax_v2_forward_desc_init) \
    X(dnnl_status2str) \
    X(dnnl_stream_create) \
    X(dnnl_stream_destroy) \
    X(dnnl_stream_wait) \
    X(dnnl_version)

#define DN_API_PTR(f) __typeof__(f) *p_##f;
typedef struct dn_api {
    DN_API(DN_API_PTR)
} dn_api;
#undef DN_API_PTR
extern dn_api dn_fn;

/* Loads libdnnl and fills dn_fn, once (thread-safe). false: not loaded or
 * a function missing, with the reason in why. */
bool dn_api_load(char *why, size_t why_size);

#define dnnl_batch_normalization_forward_desc_init (*dn_fn.p_dnnl_batch_normalization_forward_desc_init)
#define dnnl_binary_desc_init (*dn_fn.p_dnnl_binary_desc_init)
#define dnnl_concat_primitive_desc_create (*dn_fn.p_dnnl_concat_primitive_desc_create)
#define dnnl_dilated_convolution_forward_desc_init (*dn_fn.p_dnnl_dilated_convolution_forward_desc_init)
#define dnnl_dilated_deconvolution_forward_desc_init (*dn_fn.p_dnnl_dilated_deconvolution_forward_desc_init)
#define dnnl_eltwise_forward_desc_init (*dn_fn.p_dnnl_eltwise_forward_desc_init)
#define dnnl_engine_create (*dn_fn.p_dnnl_engine_create)
#define dnnl_get_effective_cpu_isa (*dn_fn.p_dnnl_get_effective_cpu_isa)
#define dnnl_layer_normalization_forward_desc_init (*dn_fn.p_dnnl_layer_normalization_forward_desc_init)
#define dnnl_matmul_desc_init (*dn_fn.p_dnnl_matmul_desc_init)
#define dnnl_memory_create (*dn_fn.p_dnnl_memory_create)
#define dnnl_memory_desc_equal (*dn_fn.p_dnnl_memory_desc_equal)
#define dnnl_memory_desc_get_size (*dn_fn.p_dnnl_memory_desc_get_size)
#define dnnl_memory_desc_init_by_strides (*dn_fn.p_dnnl_memory_desc_init_by_strides)
#define dnnl_memory_desc_init_by_tag (*dn_fn.p_dnnl_memory_desc_init_by_tag)
#define dnnl_memory_desc_init_submemory (*dn_fn.p_dnnl_memory_desc_init_submemory)
#define dnnl_memory_destroy (*dn_fn.p_dnnl_memory_destroy)
#define dnnl_memory_get_data_handle (*dn_fn.p_dnnl_memory_get_data_handle)
#define dnnl_memory_get_memory_desc (*dn_fn.p_dnnl_memory_get_memory_desc)
#define dnnl_memory_set_data_handle (*dn_fn.p_dnnl_memory_set_data_handle)
#define dnnl_pooling_v2_forward_desc_init (*dn_fn.p_dnnl_pooling_v2_forward_desc_init)
#define dnnl_post_ops_append_binary (*dn_fn.p_dnnl_post_ops_append_binary)
#define dnnl_post_ops_append_eltwise (*dn_fn.p_dnnl_post_ops_append_eltwise)
#define dnnl_post_ops_append_sum (*dn_fn.p_dnnl_post_ops_append_sum)
#define dnnl_post_ops_create (*dn_fn.p_dnnl_post_ops_create)
#define dnnl_post_ops_destroy (*dn_fn.p_dnnl_post_ops_destroy)
#define dnnl_prelu_forward_desc_init (*dn_fn.p_dnnl_prelu_forward_desc_init)
#define dnnl_primitive_attr_create (*dn_fn.p_dnnl_primitive_attr_create)
#define dnnl_primitive_attr_destroy (*dn_fn.p_dnnl_primitive_attr_destroy)
#define dnnl_primitive_attr_set_output_scales (*dn_fn.p_dnnl_primitive_attr_set_output_scales)
#define dnnl_primitive_attr_set_post_ops (*dn_fn.p_dnnl_primitive_attr_set_post_ops)
#define dnnl_primitive_attr_set_zero_points (*dn_fn.p_dnnl_primitive_attr_set_zero_points)
#define dnnl_primitive_create (*dn_fn.p_dnnl_primitive_create)
#define dnnl_primitive_desc_create (*dn_fn.p_dnnl_primitive_desc_create)
#define dnnl_primitive_desc_destroy (*dn_fn.p_dnnl_primitive_desc_destroy)
#define dnnl_primitive_desc_query (*dn_fn.p_dnnl_primitive_desc_query)
#define dnnl_primitive_desc_query_md (*dn_fn.p_dnnl_primitive_desc_query_md)
#define dnnl_primitive_destroy (*dn_fn.p_dnnl_primitive_destroy)
#define dnnl_primitive_execute (*dn_fn.p_dnnl_primitive_execute)
#define dnnl_reduction_desc_init (*dn_fn.p_dnnl_reduction_desc_init)
#define dnnl_reorder_primitive_desc_create (*dn_fn.p_dnnl_reorder_primitive_desc_create)
#define dnnl_resampling_forward_desc_init (*dn_fn.p_dnnl_resampling_forward_desc_init)
#define dnnl_softmax_v2_forward_desc_init (*dn_fn.p_dnnl_softmax_v2_forward_desc_init)
#define dnnl_status2str (*dn_fn.p_dnnl_status2str)
#define dnnl_stream_create (*dn_fn.p_dnnl_stream_create)
#define dnnl_stream_destroy (*dn_fn.p_dnnl_stream_destroy)
#define dnnl_stream_wait (*dn_fn.p_dnnl_stream_wait)
#define dnnl_version (*dn_fn.p_dnnl_version)

#endif
