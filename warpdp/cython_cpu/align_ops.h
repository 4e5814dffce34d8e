/* CIGAR runs built backwards from an alignment's end cell (shared by every align variant): merged
   on the fly, reversed at the end. */
#ifndef WARPDP_ALIGN_OPS_H
#define WARPDP_ALIGN_OPS_H

#include <stdint.h>

typedef struct {
    uint32_t *ops;
    int64_t n;
} op_runs;

/* ops == NULL: nothing recorded (a traceback run for its begin cell only). */
static inline void push_op(op_runs *r, int op, int64_t length)
{
    if (length <= 0 || r->ops == NULL)
        return;
    if (r->n > 0 && (int)(r->ops[r->n - 1] & 0xF) == op) {
        r->ops[r->n - 1] += (uint32_t)(length << 4);
        return;
    }
    r->ops[r->n++] = (uint32_t)(length << 4) | (uint32_t)op;
}

static inline void reverse_ops(op_runs *r)
{
    for (int64_t a = 0, b = r->n - 1; a < b; a++, b--) {
        const uint32_t x = r->ops[a];
        r->ops[a] = r->ops[b];
        r->ops[b] = x;
    }
}

#endif
