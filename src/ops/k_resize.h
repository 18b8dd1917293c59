/* k_resize.h: the plan of a Resize/Upsample node (k_resize_plan.c) shared
 * by its kernel and inference (k_resize.c). */
#ifndef CARVE_K_RESIZE_H
#define CARVE_K_RESIZE_H

#include "ops.h"

typedef enum { RM_NEAREST, RM_LINEAR, RM_CUBIC } rmode;
typedef enum {
    CT_HALF_PIXEL,
    CT_HALF_PIXEL_SYMMETRIC,
    CT_PYTORCH_HALF_PIXEL,
    CT_ALIGN_CORNERS,
    CT_ASYMMETRIC,
    CT_TF_HALF_PIXEL_FOR_NN,
    CT_TF_CROP_AND_RESIZE
} ctmode;
/* NM_SIMPLE: Upsample and Resize-10 had no nearest_mode; onnxruntime floors
 * when upsampling an axis and takes the ceiling when downsampling it. */
typedef enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE } nmode;
typedef enum { KAR_STRETCH, KAR_NOT_LARGER, KAR_NOT_SMALLER } karpolicy;

typedef struct {
    rmode mode;
    ctmode ct;
    nmode nm;
    double cubic_a;
    bool exclude_outside;
    double extrapolation;
    bool antialias;
    karpolicy policy;
    int naxes; /* the resized axes (opset 18 axes; all axes before) */
    int axes[CARVE_MAX_RANK];
} rattrs;

typedef struct {
    int rank;
    int64_t in[CARVE_MAX_RANK], out[CARVE_MAX_RANK]; /* -1: unknown (inference) */
    double scale[CARVE_MAX_RANK];
    float fscale[CARVE_MAX_RANK]; /* the scale in float32 as onnxruntime holds it: the scales value, or
                                   * float(out) / float(in) for sizes */
    double len[CARVE_MAX_RANK];   /* length_resized as a real: in * scale */
    double roi0[CARVE_MAX_RANK], roi1[CARVE_MAX_RANK];
    bool same[CARVE_MAX_RANK]; /* the output dim is the input dim (symbols kept) */
} rshape;

enum { PLAN_OK, PLAN_ERR, PLAN_UNKNOWN };

/* Node input positions of roi, scales and sizes (-1: the op has none). */
void rs_input_slots(const carve_model *m, carve_node_id n, int64_t opset, int *roi, int *scales, int *sizes);
/* Reads and checks the attributes; rank is the input's rank (-1 unknown:
 * axes are then left unnormalized and unchecked). PLAN_OK or PLAN_ERR
 * with the reason in err. */
int rs_read_attrs(const carve_model *m, carve_node_id n, int64_t opset, int rank, rattrs *a, char *err, size_t esz);
/* Output shape, scales and roi from the inputs. present[i]: node input i is
 * given; val[i]: its value (NULL when not known: inference). in[] may hold
 * -1 for unknown dims (inference); their outputs are then -1. */
int rs_plan_shape(const carve_model *m, carve_node_id n, int64_t opset, const rattrs *a, int rank,
                  const int64_t *in, const bool *present, const cv_val *const *val, rshape *rs, char *err,
                  size_t esz);

/* ---------------------------------------------------------------- per-axis tables */

typedef struct {
    int64_t in, out;
    int ntap;
    int64_t *idx;  /* out * ntap, clamped into [0, in) */
    double *w;     /* out * ntap */
    uint8_t *ext;  /* out: the coordinate is outside the crop (tf_crop_and_resize) */
    bool any_ext;
    bool identity; /* output x reads input x with weight 1 */
} amap;

void rs_amap_free(amap *a);
/* The input coordinate of output coordinate xo on axis d, in double. */
double rs_orig_coord(const rattrs *a, const rshape *rs, int d, int64_t xo);
/* Builds the taps of axis d. false on NOMEM. */
bool rs_amap_build(const rattrs *a, const rshape *rs, int d, amap *m);

/* ---------------------------------------------------------------- float32 bilinear taps */

/* The bilinear path's taps of one axis, as onnxruntime rounds in float32
 * (k_resize.c, bilinear_f32; the oneDNN backend's linear Resize host step
 * uses them too, to the bit): the source coordinate clamped into
 * [0, in - 1], the neighbours its floor and the next pixel (at the last
 * pixel both are it, weighted 1/2 each). */
typedef struct {
    size_t i1, i2; /* the two neighbours */
    float w1, w2;  /* their weights */
} rs_bltap;

/* The source coordinate of output xo in float32 with onnxruntime's
 * expressions: s the scale as onnxruntime holds it (rshape.fscale), in and
 * out the axis' lengths, len the spec's length_resized (in * scale as a
 * real). onnxruntime skips the transform of an axis of scale 1: for every
 * mode but tf_half_pixel_for_nn the formula gives x there anyway (up to
 * rounding), that one shifts by half a pixel in the spec. */
float rs_coord_f32(ctmode ct, float s, int64_t in, int64_t out, double len, int64_t xo);
/* Fills t[0 .. out) with the taps of an axis. */
void rs_bilinear_taps(ctmode ct, float s, int64_t in, int64_t out, double len, rs_bltap *t);

#endif /* CARVE_K_RESIZE_H */
