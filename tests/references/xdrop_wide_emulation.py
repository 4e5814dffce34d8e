"""The GPU wide-window X-drop kernel's algorithm, restated in NumPy lane for lane (no GPU needed).

``extend_wide_kernel<W, T, B>`` in ``warpdp/kernels/xdrop.cu`` gives one work item (one
direction of one seed) to a block of W warps; lane l owns the columns [l*T, l*T + T) of a fixed
frame and keeps their last three anti-diagonals in registers. This module runs the same steps on
arrays shaped (lanes, T): the rotation of the three anti-diagonals, the previous lane's column
passed by shuffle (by shared memory across warps), the H bases shifted one column per
anti-diagonal (loaded afresh when the window reaches a warp), the lanes holding an end of the
window, the skipped warps (not reached, passed, past column m + 1), the warp and block
reductions, thread 0's record of the windows, the scratch the result is read from. Registers the
kernel leaves stale stay stale here, the H bases start as garbage and so does the scratch, so a
read outside a window would show up as a wrong answer.

Keep it in step with the kernel: tests/test_xdrop_wide_emulation.py checks it against the CPU
backend, which is what the kernel must reproduce.
"""
from __future__ import annotations

import numpy as np

U = -(1 << 30)          # Undefined<int> in xdrop.cu
NONE = 0x7FFFFFFF       # WIDE_NONE: no column
GARBAGE = 123_456_789   # what the scratch holds before a block writes it


def _upper(codes: np.ndarray) -> np.ndarray:
    return (codes & 0xDF).astype(np.int64)


class WideBlock:
    """One block of W warps x 32 lanes x T columns working through one item."""

    def __init__(self, w: int, t: int) -> None:
        self.W, self.T = w, t
        self.reloads = 0
        self.lanes = 32 * w
        self.frame = 32 * w * t
        tid = np.arange(self.lanes)
        self.lane = tid % 32
        self.warp = tid // 32
        self.c0 = tid * t
        self.warp_c0 = self.warp * 32 * t
        self.cols = self.c0[:, None] + np.arange(t)[None, :]

    # -- the item -------------------------------------------------------------------------
    def base(self, i: np.ndarray | int) -> np.ndarray:
        """flank_base: H flank base i, upper-cased; 0 outside [0, n)."""
        i = np.asarray(i, dtype=np.int64)
        ok = (i >= 0) & (i < self.n)
        out = np.zeros(i.shape, dtype=np.int64)
        out[ok] = _upper(self.tf[i[ok]])
        return out

    def start(self, qf: np.ndarray, tf: np.ndarray, *, match: int, mismatch: int, gap: int, x: int,
              best_mode: bool) -> None:
        self.qf, self.tf = qf, tf
        self.m, self.n = len(qf), len(tf)
        assert self.m + 2 <= self.frame, "the launcher only sends items whose V flank fits the frame"
        self.match, self.mismatch, self.gap, self.x, self.best_mode = match, mismatch, gap, x, best_mode
        m, T = self.m, self.T
        self.q = np.zeros((self.lanes, T), dtype=np.int64)
        fits = (self.cols >= 1) & (self.cols <= m) & (self.warp_c0 <= m + 1)[:, None]
        self.q[fits] = _upper(qf[self.cols[fits] - 1])
        # H bases are loaded when the window first reaches a warp; until then they are garbage.
        self.t = np.full((self.lanes, T), 0x55, dtype=np.int64)
        self.in_base = np.full(self.lanes, 0x55, dtype=np.int64)
        self.ahead_base = np.full(self.lanes, 0x55, dtype=np.int64)
        self.bases_current = np.zeros(self.lanes, dtype=bool)
        self.was_live = np.zeros(self.lanes, dtype=bool)
        self.a = np.full((3, self.lanes, T), U, dtype=np.int64)
        self.a[0, 0, 0] = 0
        self.a[1, 0, 0] = self.a[1, 0, 1] = U if -gap > x else gap
        self.left1 = np.full(self.lanes, U, dtype=np.int64)
        self.left2 = self.left1.copy()
        self.d = 1
        self.lo3, self.hi3 = 0, 1
        self.min_col, self.max_col = 1, 2
        self.best = 0
        # Thread 0's record in shared memory: windows at d % 3, cells, the best cell.
        self.window = [(0, 0), (0, 1), None]
        self.cells = 0
        self.best_col = self.best_row = 0

    # -- one anti-diagonal ----------------------------------------------------------------
    def _live_ends(self, rows: np.ndarray, a2: np.ndarray, a3: np.ndarray,
                   first: np.ndarray, last: np.ndarray) -> None:
        """live_ends for the lanes `rows`: first c in (lo3, hi3] with a3[c] or a2[c-1] defined,
        last c in [lo3, hi3) with a3[c] or a2[c] defined."""
        cols = self.cols[rows]
        here = a3[rows] != U
        left = np.concatenate([self.left2[rows, None], a2[rows, :-1]], axis=1) != U
        f_ok = (cols > self.lo3) & (cols <= self.hi3) & (here | left)
        l_ok = (cols >= self.lo3) & (cols < self.hi3) & (here | (a2[rows] != U))
        first[rows] = np.where(f_ok, cols, NONE).min(axis=1)
        last[rows] = np.where(l_ok, cols, -1).max(axis=1)

    def advance(self, p1: int, p2: int, p3: int) -> bool:
        a1, a2, a3 = self.a[p1], self.a[p2], self.a[p3]
        T = self.T
        self.d += 1
        d = self.d
        self.lo3, self.hi3 = self.min_col - 1, self.max_col
        lo3, hi3 = self.lo3, self.hi3
        assert p3 == d % 3
        self.window[p3] = (lo3, hi3)
        self.cells += self.max_col - self.min_col
        thr = self.best - self.x
        edge = d * self.gap
        edge_kept = edge > thr
        lo_edge = edge if edge_kept and lo3 == 0 else U
        hi_edge = edge if edge_kept and hi3 == d else U

        lane_max = np.full(self.lanes, U, dtype=np.int64)
        lane_first = np.full(self.lanes, NONE, dtype=np.int64)
        lane_last = np.full(self.lanes, -1, dtype=np.int64)
        lane_col = np.full(self.lanes, NONE, dtype=np.int64)
        # Warps the window has not reached, has passed or never reaches only exchange.
        live = (self.warp_c0 <= hi3) & (self.warp_c0 + 32 * T > lo3)

        # H bases move one column right; column c0's comes from the previous lane. A warp the
        # window reaches again loads them: column c meets H[d - c - 1].
        shift = live & self.bases_current
        self.t[shift, 1:] = self.t[shift, :-1].copy()
        self.t[shift, 0] = self.in_base[shift]
        load = live & ~self.bases_current
        self.t[load] = self.base(d - self.cols[load] - 1)
        self.reloads += int((load & self.was_live).sum()) // 32  # for the tests: warps the window left and came back to
        self.bases_current = live.copy()
        self.was_live |= live
        first_lanes = live & (self.lane == 0)
        self.ahead_base[first_lanes] = self.base(d - self.warp_c0[first_lanes])

        c_last = self.c0 + T - 1
        overlap = live & (c_last >= lo3) & (self.c0 <= hi3)
        # The recurrence on every column of the lanes the window overlaps.
        rows = np.flatnonzero(overlap)
        s = np.where(self.q[rows] == self.t[rows], self.match, self.mismatch)
        up_left = np.concatenate([self.left2[rows, None], a2[rows, :-1]], axis=1)
        diag = np.concatenate([self.left1[rows, None], a1[rows, :-1]], axis=1)
        v = np.maximum(np.maximum(up_left, a2[rows]) + self.gap, diag + s)
        assert np.all(np.abs(v) < 1 << 31), "int32 cells would overflow"
        a3[rows] = np.where(v < thr, U, v)
        lane_max[rows] = a3[rows].max(axis=1)
        all_kept = (v >= thr).all(axis=1)
        inner_lane = overlap & (self.c0 > lo3) & (c_last < hi3)
        full = inner_lane & np.isin(np.arange(self.lanes), rows[all_kept])  # all columns live
        lane_first[full] = self.c0[full]
        lane_last[full] = c_last[full]
        if (inner_lane & ~full).any():
            self._live_ends(np.flatnonzero(inner_lane & ~full), a2, a3, lane_first, lane_last)
        end_lane = overlap & ~inner_lane
        if end_lane.any():
            # The window's edge cells, nothing outside it, the maximum of its inner cells.
            rows = np.flatnonzero(end_lane)
            cols = self.cols[rows]
            inner = (cols > lo3) & (cols < hi3)
            a3[rows] = np.where(cols == lo3, lo_edge, np.where(cols == hi3, hi_edge, np.where(inner, a3[rows], U)))
            lane_max[rows] = np.where(inner, a3[rows], U).max(axis=1)
            self._live_ends(rows, a2, a3, lane_first, lane_last)
        if self.best_mode:
            rows = np.flatnonzero(overlap & (lane_max > self.best))
            if len(rows):
                cols = self.cols[rows]
                hit = (cols > lo3) & (cols < hi3) & (a3[rows] == lane_max[rows, None])
                lane_col[rows] = np.where(hit, cols, NONE).min(axis=1)

        # Exchange: shuffles inside live warps (column c0 - 1 moves from left2 to left1), then
        # warp reductions into the shared slots.
        out_value = a3[:, T - 1].copy()
        out_base = self.t[:, T - 1].copy()
        self.left1 = np.where(live, self.left2, self.left1)
        shuffled = live & (self.lane > 0)
        self.left2[shuffled] = out_value[np.flatnonzero(shuffled) - 1]
        self.in_base[shuffled] = out_base[np.flatnonzero(shuffled) - 1]
        self.in_base[first_lanes] = self.ahead_base[first_lanes]
        W = self.W
        slot_max = np.full(W, U, dtype=np.int64)
        slot_first = np.full(W, NONE, dtype=np.int64)
        slot_last = np.full(W, -1, dtype=np.int64)
        slot_col = np.full(W, NONE, dtype=np.int64)
        slot_edge = np.full(W, U, dtype=np.int64)
        for w in range(W):
            if not live[32 * w]:
                continue
            ls = slice(32 * w, 32 * w + 32)
            slot_max[w] = lane_max[ls].max()
            slot_first[w] = lane_first[ls].min()
            slot_last[w] = lane_last[ls].max()
            if self.best_mode:
                slot_col[w] = np.where(lane_max[ls] == slot_max[w], lane_col[ls], NONE).min()
            slot_edge[w] = out_value[32 * w + 31]

        # After the barrier: every warp reduces the slots alike.
        firsts = self.lane == 0
        self.left2[firsts] = np.where(self.warp[firsts] > 0, slot_edge[np.maximum(self.warp[firsts] - 1, 0)], U)
        dmax = int(slot_max.max())
        first_live = int(slot_first.min())
        last_live = int(slot_last.max())
        if self.best_mode and dmax > self.best:
            self.best_col = int(np.where(slot_max == dmax, slot_col, NONE).min())
            self.best_row = d - self.best_col
        self.best = max(self.best, dmax)
        next_min = first_live if first_live <= hi3 else hi3 + 1
        next_max = last_live + 2 if last_live >= lo3 else lo3 + 1
        self.min_col = max(next_min, d + 1 - self.n)
        self.max_col = min(next_max, self.m + 1)
        return self.min_col < self.max_col

    # -- the result -----------------------------------------------------------------------
    def save(self, p1: int, p2: int, p3: int, frames: np.ndarray) -> None:
        for lane in np.flatnonzero(self.warp_c0 <= self.m + 1):
            c0 = self.c0[lane]
            for r, p in enumerate((p1, p2, p3)):
                frames[r, c0:c0 + self.T] = self.a[p, lane]

    def result(self, frames: np.ndarray) -> tuple[int, int, int, int]:
        """write_result: (score, ext_v, ext_h, cells)."""
        if self.best_mode:
            return self.best, self.best_col, self.best_row, self.cells
        a1, a2, a3 = frames
        d = self.d
        (lo1, hi1), (lo2, hi2) = self.window[(d + 1) % 3], self.window[(d + 2) % 3]
        col = self.hi3 - 1
        row = d - col
        score = int(a3[col])
        if score == U:
            if a2[hi2 - 1] != U:
                col = hi2 - 1
                row = d - 1 - col
                score = int(a2[col])
            elif hi2 - lo2 + 1 > 2 and a2[hi2 - 2] != U:
                col = hi2 - 2
                row = d - 1 - col
                score = int(a2[col])
        if score == U:
            for c in range(lo1, hi1 + 1):
                if a1[c] > score:
                    score = int(a1[c])
                    col = c
                    row = d - 2 - c
        if score == U:
            score, col, row = 0, 0, 0
        return score, col, row, self.cells

    def run(self, qf: np.ndarray, tf: np.ndarray, **scores) -> tuple[int, int, int, int]:
        if len(qf) == 0 or len(tf) == 0:
            return 0, 0, 0, 0
        self.start(qf, tf, **scores)
        frames = np.full((3, self.frame), GARBAGE, dtype=np.int64)
        roles = ((0, 1, 2), (1, 2, 0), (2, 0, 1))
        turn = 0
        while True:
            p = roles[turn % 3]
            turn += 1
            if not self.advance(*p):
                self.save(*p, frames)
                break
        return self.result(frames)


def flanks(h: np.ndarray, v: np.ndarray, pos_h: int, pos_v: int, k: int, right: bool) -> tuple[np.ndarray, np.ndarray]:
    """The V and H flanks of one direction, walking away from the seed (what qs/ts step through)."""
    if right:
        return v[pos_v + k:], h[pos_h + k:]
    return v[:pos_v][::-1], h[:pos_h][::-1]


def xdrop_wide(pairs, *, k: int, x: int, match: int = 1, mismatch: int = -1, gap: int = -1,
               report: str = "longest", w: int = 2, t: int = 4,
               block: WideBlock | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of `pairs` (XdropPairs) through the emulated wide kernel (one block, item after
    item, as a block of the kernel works); returns the rows (score, begin_h, end_h, begin_v,
    end_v) and the cells, combined as xdrop.py's store does."""
    block = WideBlock(w, t) if block is None else block
    n = pairs.n_pairs
    rows = np.zeros((n, 5), dtype=np.int64)
    cells = np.zeros(n, dtype=np.int64)
    for i in range(n):
        h = pairs.h_bases[pairs.h_offsets[i]:pairs.h_offsets[i + 1]]
        v = pairs.v_bases[pairs.v_offsets[i]:pairs.v_offsets[i + 1]]
        ph, pv = int(pairs.h_pos[i]), int(pairs.v_pos[i])
        out = [block.run(*flanks(h, v, ph, pv, k, right), match=match, mismatch=mismatch, gap=gap, x=x,
                         best_mode=report == "best") for right in (False, True)]
        (ls, lv, lh, lc), (rs, rv, rh, rc) = out
        rows[i] = (ls + rs + k * match, ph - lh, ph + k + rh, pv - lv, pv + k + rv)
        cells[i] = lc + rc
    return rows, cells
