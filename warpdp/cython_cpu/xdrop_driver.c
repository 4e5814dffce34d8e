/* Runs X-drop seed extension over packed pairs: picks the SIMD variant, spreads pairs over
   OpenMP threads, and prepares each direction's sequences so a kernel reads them forwards. */
#include <stdint.h>
#include <string.h>
#include <omp.h>
#include "cpu_common.h"
#include "xdrop_kernel.h"

typedef int (*extend2_kernel)(const uint8_t *, int64_t, const uint8_t *, int64_t, const uint8_t *, int64_t,
                              const uint8_t *, int64_t, const xdrop_params *, xdrop_result *, xdrop_result *,
                              warpdp_workspace *);

/* Clearing bit 5 upper-cases the only letters allowed (ACGTN), so case never matters. */
#define UPPER(b) ((uint8_t)((b) & 0xDF))

/* 1 when every byte of s (already upper-cased) is A, C, G, T or N. Written as an OR of byte
   flags so the compiler vectorizes it. */
static int all_bases(const uint8_t *s, int64_t len)
{
    uint8_t bad = 0;
    for (int64_t i = 0; i < len; i++) {
        const uint8_t u = s[i];
        bad |= (uint8_t)((u != 'A') & (u != 'C') & (u != 'G') & (u != 'T') & (u != 'N'));
    }
    return bad == 0;
}

/* dst[i] = UPPER(src[len-1-i]), eight bytes at a time (byte-swapped words). */
static void copy_reversed_upper(uint8_t *dst, const uint8_t *src, int64_t len)
{
    int64_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t word;
        memcpy(&word, src + len - 8 - i, 8);
        word = __builtin_bswap64(word) & 0xDFDFDFDFDFDFDFDFull;
        memcpy(dst + i, &word, 8);
    }
    for (; i < len; i++)
        dst[i] = UPPER(src[len - 1 - i]);
}

static void copy_upper(uint8_t *restrict dst, const uint8_t *restrict src, int64_t len)
{
    for (int64_t i = 0; i < len; i++)
        dst[i] = UPPER(src[i]);
}

/* Copies one direction's flanks into `codes`: q (V, walking away from the seed) and t_rev (H,
   walking away from the seed, stored reversed), each with XDROP_PAD zero bytes on both sides.
   For the left extension both walk towards the sequence starts: q = V[pos_v-1], V[pos_v-2], ...
   and t_rev = H[0 .. pos_h) as it is. For the right one q = V[pos_v+k ..) as it is and
   t_rev = H[len_h-1], H[len_h-2], ...  Returns 0 when a byte is not a base (ACGTN). */
static int prepare_direction(uint8_t *codes, int left, const uint8_t *v, int64_t v_from, int64_t m,
                              const uint8_t *h, int64_t h_from, int64_t n)
{
    uint8_t *q = codes + XDROP_PAD, *t_rev = q + m + XDROP_PAD;
    if (left) {
        copy_reversed_upper(q, v + v_from - m, m);
        copy_upper(t_rev, h + h_from, n);
    } else {
        copy_upper(q, v + v_from, m);
        copy_reversed_upper(t_rev, h + h_from, n);
    }
    memset(codes, 0, XDROP_PAD);
    memset(q + m, 0, XDROP_PAD);
    memset(t_rev + n, 0, XDROP_PAD);
    return all_bases(q, m) & all_bases(t_rev, n);
}

/* The seed is not compared, only checked. */
static int seed_bases(const uint8_t *s, int64_t k)
{
    for (int64_t i = 0; i < k; i++) {
        const uint8_t u = UPPER(s[i]);
        if (u != 'A' && u != 'C' && u != 'G' && u != 'T' && u != 'N')
            return 0;
    }
    return 1;
}

/* Both directions of one seed: prepares the four flanks in one buffer, then extends both. */
static int extend_seed(extend2_kernel kernel, const uint8_t *v, int64_t len_v, int64_t pos_v, const uint8_t *h,
                       int64_t len_h, int64_t pos_h, int64_t k, const xdrop_params *p, xdrop_result *left,
                       xdrop_result *right, warpdp_workspace *ws_codes, warpdp_workspace *ws_dp)
{
    const int64_t m_left = pos_v, n_left = pos_h;
    const int64_t m_right = len_v - pos_v - k, n_right = len_h - pos_h - k;
    const size_t left_bytes = (size_t)(m_left + n_left + 3 * XDROP_PAD);
    uint8_t *codes = warpdp_workspace_reserve(ws_codes, left_bytes + (size_t)(m_right + n_right + 3 * XDROP_PAD));
    if (codes == NULL)
        return -1;
    uint8_t *codes_right = codes + left_bytes;
    if (!prepare_direction(codes, 1, v, pos_v, m_left, h, 0, n_left) ||
        !prepare_direction(codes_right, 0, v, pos_v + k, m_right, h, pos_h + k, n_right))
        return -3;
    const uint8_t *q_left = codes + XDROP_PAD, *q_right = codes_right + XDROP_PAD;
    return kernel(q_left, m_left, q_left + m_left + XDROP_PAD, n_left, q_right, m_right,
                  q_right + m_right + XDROP_PAD, n_right, p, left, right, ws_dp);
}

int xdrop_check_arguments(const xdrop_pairs *pairs, int64_t k, const xdrop_params *p, int threads,
                          warpdp_bad_argument *bad)
{
    const int64_t max_length = INT32_MAX; /* the plugin's MAX_SEQUENCE_LENGTH */
    if (threads < 0 || threads > WARPDP_MAX_THREADS)
        return warpdp_bad(bad, XDROP_BAD_THREADS, -1);
    if (k < 1 || k > max_length)
        return warpdp_bad(bad, XDROP_BAD_K, -1);
    if (p->match < 1 || p->match > INT32_MAX)
        return warpdp_bad(bad, XDROP_BAD_MATCH, -1);
    if (p->mismatch > -1 || p->mismatch < -(int64_t)INT32_MAX)
        return warpdp_bad(bad, XDROP_BAD_MISMATCH, -1);
    if (p->gap > -1 || p->gap < -(int64_t)INT32_MAX)
        return warpdp_bad(bad, XDROP_BAD_GAP, -1);
    if (p->x < 0 || p->x > ((int64_t)1 << 62))
        return warpdp_bad(bad, XDROP_BAD_X, -1);
    const int64_t n = pairs->n_pairs;
    int64_t at;
    if (n < 0 || !warpdp_offsets_ok(pairs->h_offsets, n, pairs->h_total, 0, max_length, &at))
        return warpdp_bad(bad, XDROP_BAD_H_OFFSETS, n < 0 ? -1 : at);
    if (!warpdp_offsets_ok(pairs->v_offsets, n, pairs->v_total, 0, max_length, &at))
        return warpdp_bad(bad, XDROP_BAD_V_OFFSETS, at);
    /* pos <= len - k, not pos + k <= len: pos may be anything (len and k are below 2^31). */
    for (int64_t i = 0; i < n; i++) {
        if (pairs->h_pos[i] < 0 || pairs->h_pos[i] > pairs->h_offsets[i + 1] - pairs->h_offsets[i] - k)
            return warpdp_bad(bad, XDROP_BAD_H_POS, i);
        if (pairs->v_pos[i] < 0 || pairs->v_pos[i] > pairs->v_offsets[i + 1] - pairs->v_offsets[i] - k)
            return warpdp_bad(bad, XDROP_BAD_V_POS, i);
    }
    return 0;
}

int xdrop_run(const xdrop_pairs *pairs, int64_t k, const xdrop_params *p, xdrop_outputs *out,
              int threads, int isa, int64_t *bad_pair, warpdp_bad_argument *bad)
{
    extend2_kernel kernel;
    switch (isa) {
    case WARPDP_ISA_SCALAR:
        kernel = xdrop_extend2_scalar;
        break;
#if WARPDP_X86_SIMD
    case WARPDP_ISA_AVX2:
        kernel = xdrop_extend2_avx2;
        break;
    case WARPDP_ISA_AVX512:
        kernel = xdrop_extend2_avx512;
        break;
#endif
    default:
        return -2;
    }
    if (!warpdp_cpu_supports(isa))
        return -2;
    *bad_pair = -1;
    if (xdrop_check_arguments(pairs, k, p, threads, bad) != 0)
        return WARPDP_BAD_ARGUMENT;
    if (pairs->n_pairs == 0)
        return 0;

    int failed = 0;
    int64_t first_bad = INT64_MAX;
    if (threads < 1)
        threads = omp_get_max_threads();
    #pragma omp parallel num_threads(threads) reduction(| : failed) reduction(min : first_bad)
    {
        warpdp_workspace ws_codes = {NULL, 0}, ws_dp = {NULL, 0};
        /* Pairs differ a lot in cost (X-drop stops early on unrelated ones): hand them out singly. */
        #pragma omp for schedule(dynamic, 1)
        for (int64_t i = 0; i < pairs->n_pairs; i++) {
            const uint8_t *h = pairs->h_bases + pairs->h_offsets[i];
            const uint8_t *v = pairs->v_bases + pairs->v_offsets[i];
            const int64_t len_h = pairs->h_offsets[i + 1] - pairs->h_offsets[i];
            const int64_t len_v = pairs->v_offsets[i + 1] - pairs->v_offsets[i];
            const int64_t pos_h = pairs->h_pos[i], pos_v = pairs->v_pos[i];
            xdrop_result left, right;
            int status = seed_bases(h + pos_h, k) && seed_bases(v + pos_v, k) ? 0 : -3;
            if (status == 0)
                status = extend_seed(kernel, v, len_v, pos_v, h, len_h, pos_h, k, p, &left, &right, &ws_codes,
                                     &ws_dp);
            if (status == -3) {
                if (i < first_bad)
                    first_bad = i;
                continue;
            }
            if (status != 0) {
                failed = 1;
                continue;
            }
            out->score[i] = left.score + right.score + k * p->match;
            out->begin_h[i] = pos_h - left.ext_h;
            out->end_h[i] = pos_h + k + right.ext_h;
            out->begin_v[i] = pos_v - left.ext_v;
            out->end_v[i] = pos_v + k + right.ext_v;
            if (out->cells != NULL)
                out->cells[i] = left.cells + right.cells;
        }
        warpdp_workspace_free(&ws_codes);
        warpdp_workspace_free(&ws_dp);
    }
    if (failed)
        return -1;
    if (first_bad != INT64_MAX) {
        *bad_pair = first_bad;
        return -3;
    }
    return 0;
}
