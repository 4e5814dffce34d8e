/* The tracebacks, shared by every variant, so each gives the same CIGAR from the same traceback
   bits (format and tie rules: align_body.h): the generic modes' and GATK mode's. */
#include "align_kernel.h"
#include "align_ops.h"

/* Cell (i, j)'s bits, for a matrix of `row` cells per row whose cells lie `stride` bytes apart. */
static inline uint8_t cell(const align_trace *tr, int64_t i, int64_t j)
{
    if (tr->fetch != NULL)
        return tr->fetch(tr->context, i, j);
    return tr->bits[((size_t)i * tr->row + (size_t)j) * tr->stride];
}

static inline uint8_t code(const uint8_t *s, int64_t k, ptrdiff_t stride)
{
    return s[k * stride];
}

void align_trace_back(const align_trace *tr, int mode, int64_t bi, int64_t bj, uint32_t *ops, align_result *res)
{
    const int local = mode == ALIGN_LOCAL, free_row0 = mode == ALIGN_SEMIGLOBAL || local;
    op_runs r = {ops, 0};
    int64_t i = bi, j = bj;
    int state = 0; /* 0 H, 1 E, 2 F */
    for (;;) {
        if (state == 0) {
            if (i == 0) {
                if (!free_row0) { /* global, extension: the rest of row 0 is one gap */
                    push_op(&r, OP_D, j);
                    j = 0;
                }
                break;
            }
            if (j == 0) {
                if (!local) {
                    push_op(&r, OP_I, i);
                    i = 0;
                }
                break;
            }
            const int source = cell(tr, i, j) & 3;
            if (source == 3)
                break;
            if (source == 0) {
                const uint8_t a = code(tr->q, i - 1, tr->seq_stride), b = code(tr->t, j - 1, tr->seq_stride);
                push_op(&r, a == b && a < 4 ? OP_EQ : OP_X, 1);
                i--;
                j--;
            } else {
                state = source;
            }
        } else if (state == 1) {
            const int opened = (cell(tr, i, j) >> 2) & 1;
            push_op(&r, OP_D, 1);
            j--;
            if (opened)
                state = 0;
        } else {
            const int opened = (cell(tr, i, j) >> 3) & 1;
            push_op(&r, OP_I, 1);
            i--;
            if (opened)
                state = 0;
        }
    }
    reverse_ops(&r);
    res->q_begin = i;
    res->t_begin = j;
    res->n_ops = r.n;
}

void align_gatk_end(const int32_t *bottom, int64_t n_ref, int64_t n_alt, int overhang, int32_t *best, int64_t *p1,
                    int64_t *p2)
{
    *p2 = n_alt;
    if (overhang == GATK_INDEL) {
        *p1 = n_ref;
        *best = bottom[n_alt];
    } else if (overhang != GATK_LEADING_INDEL) {
        for (int64_t j = 1; j <= n_alt; j++) {
            const int64_t d_new = n_ref - j < 0 ? j - n_ref : n_ref - j;
            const int64_t d_old = *p1 - *p2 < 0 ? *p2 - *p1 : *p1 - *p2;
            if (bottom[j] > *best || (bottom[j] == *best && d_new < d_old)) {
                *best = bottom[j];
                *p1 = n_ref;
                *p2 = j;
            }
        }
    }
}

/* GATK cell (i, j) as the byte format's bits, from either layout (gatk_trace). */
static inline unsigned gatk_cell(const gatk_trace *tr, int64_t i, int64_t j)
{
    const size_t c = (size_t)i * tr->row + (size_t)j;
    if (tr->plane_bytes == 0)
        return tr->bits[c];
    const uint8_t *p = tr->bits + c * 4 * (size_t)tr->plane_bytes + tr->bit / 8;
    const int shift = tr->bit % 8, step = tr->plane_bytes;
    const unsigned diagonal = (p[0] >> shift) & 1, horizontal = (p[step] >> shift) & 1;
    const unsigned move = diagonal ? 0 : horizontal ? 1 : 2;
    return move | (((p[2 * step] >> shift) & 1) << 2) | (((p[3 * step] >> shift) & 1) << 3);
}

void align_gatk_trace_back(const gatk_trace *tr, int overhang, int64_t p1, int64_t p2, int64_t n_alt,
                           uint32_t *ops, align_result *res)
{
    res->t_end = p1;
    res->q_end = p2;
    op_runs r = {ops, 0};
    push_op(&r, OP_S, n_alt - p2);
    int last = OP_M;
    while (p1 > 0 && p2 > 0) {
        const int move = gatk_cell(tr, p1, p2) & 3;
        if (move == 0) {
            push_op(&r, OP_M, 1);
            last = OP_M;
            p1--;
            p2--;
        } else if (move == 1) { /* horizontal: alt bases against a gap, length back to where it opened */
            int64_t k = p2;
            while (!((gatk_cell(tr, p1, k) >> 2) & 1))
                k--;
            push_op(&r, OP_I, p2 - k + 1);
            last = OP_I;
            p2 = k - 1;
        } else { /* vertical: ref bases against a gap */
            int64_t k = p1;
            while (!((gatk_cell(tr, k, p2) >> 3) & 1))
                k--;
            push_op(&r, OP_D, p1 - k + 1);
            last = OP_D;
            p1 = k - 1;
        }
    }
    if (overhang == GATK_SOFTCLIP) {
        push_op(&r, OP_S, p2);
        res->t_begin = p1;
        res->q_begin = p2;
    } else if (overhang == GATK_IGNORE) {
        push_op(&r, last, p2); /* the alt prefix joins the traceback's last element, whatever its op */
        res->t_begin = p1 - p2;
        res->q_begin = 0;
    } else {
        if (p1 > 0)
            push_op(&r, OP_D, p1);
        else if (p2 > 0)
            push_op(&r, OP_I, p2);
        res->t_begin = 0;
        res->q_begin = 0;
    }
    reverse_ops(&r);
    res->n_ops = r.n;
}
