/* ocr_page.c: see ocr_page.h. */
#include "ocr_page.h"

#include <stdbool.h>

#define H OCR_PAGE_SIDE
#define W OCR_PAGE_SIDE

void ocr_page(uint32_t seed, float *x)
{
    static float img[H][W];
    uint64_t s = seed * 7919u + 3;
#define RND() ((s = s * 6364136223846793005ull + 1442695040888963407ull), (double)(s >> 11) / 9007199254740992.0)
    for (int i = 0; i < H; i++)
        for (int j = 0; j < W; j++)
            img[i][j] = (float)(0.85 + 0.1 * RND());
    int lines = 2 + (int)(RND() * 3);
    for (int l = 0; l < lines; l++) {
        int top = (int)(RND() * (H - 10)), height = 4 + (int)(RND() * 5), left = (int)(RND() * W / 3);
        int right = left + W / 3 + (int)(RND() * (W - left - W / 3));
        for (int j = left; j < right; j++) {
            bool ink = RND() < 0.6; /* strokes and gaps along the line */
            for (int i = top; i < top + height && i < H; i++)
                if (ink && RND() < 0.8)
                    img[i][j] = (float)(0.1 * RND());
        }
    }
#undef RND
    static const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < H; i++)
            for (int j = 0; j < W; j++)
                x[(c * H + i) * W + j] = (img[i][j] - mean[c]) / sd[c];
}
