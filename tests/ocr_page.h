/* ocr_page.h: the seeded synthetic text page the PP-OCRv4 det tests feed
 * (tests/partition/real_qdq_ocr.c calibrates and compares on it,
 * tests/onednn/dn_qdq_ocr.c runs oneDNN on it), in one place so that both
 * see the same pages. Plain C and libc, apart from testlib.c (which holds
 * the runner's main) like testfiles.c.
 *
 * Random noise would not do: on it the model finds no text and its output is
 * ~1e-8 everywhere. A page is a light, slightly noisy background with 2 to 4
 * lines of dark strokes, pixels in [0, 1], normalized with ImageNet's mean
 * and standard deviation as PP-OCR's preprocessing does. */
#ifndef CARVE_OCR_PAGE_H
#define CARVE_OCR_PAGE_H

#include <stdint.h>

/* Side of the pages (the tests fix the det's input to 1 x 3 x 64 x 64). */
#define OCR_PAGE_SIDE 64

/* Page `seed` as 3 x OCR_PAGE_SIDE x OCR_PAGE_SIDE floats into x. */
void ocr_page(uint32_t seed, float *x);

#endif
