/* The generic modes' traceback, shared by every variant, so each gives the same CIGAR from the
   same traceback bits (format and tie rule: align_body.h). */
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
