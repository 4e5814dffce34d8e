/* The CUDA warp machinery the GPU kernels use, emulated on the host, for tests that compile a
   kernel source (.cu) as plain C++ with g++ and check its logic against the CPU backend.

   Every lane is a fiber (ucontext) on one OS thread, resumed round-robin, and runs until its
   next warp collective; every lane of a group makes the same collectives. A collective posts
   the lane's value in its group's slot bank and returns the bank once all lanes have posted.
   Collective k of a group uses bank k % 2, so a lane that has read collective k can post for
   k + 1 while slower lanes still read bank k. emu_group is the lanes per group: 32 (a warp),
   or the subwarp width of a launch that shuffles within subwarps. */
#include <ucontext.h>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(x)
struct EmuDim { unsigned x = 0, y = 0, z = 0; };
static EmuDim threadIdx, blockIdx, blockDim, gridDim;  /* threadIdx is switched with the running lane */
static void *emu_shared = nullptr;                      /* the block's dynamic shared memory */
#define WARPDP_DYNAMIC_SHARED(type, name) type *name = (type *)emu_shared
static int emu_group = 32;

struct Fiber { ucontext_t ctx; std::vector<char> stack; unsigned tid = 0; long long count = 0; bool done = false; };
static std::vector<Fiber> emu_fibers;
static std::vector<long long> emu_slots;  /* [group][bank][lane] */
static ucontext_t emu_scheduler;
static int emu_current = 0;

/* Post v, wait until every lane of the group has posted, return the bank to read. */
static long long *collective(long long v) {
    Fiber &me = emu_fibers[emu_current];
    const size_t group = threadIdx.x / (unsigned)emu_group;
    long long *slots = &emu_slots[(group * 2 + (size_t)(me.count++ & 1)) * 32];
    slots[threadIdx.x % (unsigned)emu_group] = v;
    swapcontext(&me.ctx, &emu_scheduler);
    return slots;
}
template <class T> T __shfl_sync(unsigned, T v, int src, int width = 32) {
    return (T)collective((long long)v)[src % width];
}
template <class T> T __shfl_up_sync(unsigned, T v, unsigned d, int width = 32) {
    const int t = (int)(threadIdx.x % (unsigned)emu_group) % width;
    return (T)collective((long long)v)[t >= (int)d ? t - (int)d : t];
}
void __syncwarp(unsigned = 0xffffffffu) { collective(0); }
int atomicAdd(int *p, int v) { const int old = *p; *p += v; return old; }

/* The last call of a fiber's entry function: the fiber is done. */
static void fiber_exit() {
    emu_fibers[emu_current].done = true;
    swapcontext(&emu_fibers[emu_current].ctx, &emu_scheduler);
}

/* Run `count` lanes (threadIdx.x first_tid .. first_tid + count - 1) as fibers, each from
   `entry` (which ends with fiber_exit), until all are done. */
static void run_fibers(int count, void (*entry)(), size_t stack_bytes, unsigned first_tid = 0) {
    emu_slots.assign(((first_tid + (size_t)count) / (size_t)emu_group + 1) * 2 * 32, 0);
    emu_fibers = std::vector<Fiber>(count);
    for (int k = 0; k < count; k++) {
        Fiber &f = emu_fibers[k];
        f.tid = first_tid + (unsigned)k;
        f.stack.resize(stack_bytes);
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = f.stack.data();
        f.ctx.uc_stack.ss_size = f.stack.size();
        f.ctx.uc_link = nullptr;
        makecontext(&f.ctx, entry, 0);
    }
    for (bool running = true; running;) {
        running = false;
        for (int k = 0; k < count; k++) {
            if (emu_fibers[k].done) continue;
            emu_current = k;
            threadIdx.x = emu_fibers[k].tid;
            swapcontext(&emu_scheduler, &emu_fibers[k].ctx);
            running = true;
        }
    }
}

/* An array the test wrote: its int64 length, then its elements. */
template <class T> static std::vector<T> read_array(FILE *f) {
    long long n;
    if (fread(&n, 8, 1, f) != 1) exit(3);
    std::vector<T> v(n > 0 ? n : 1);
    if (n > 0 && fread(v.data(), sizeof(T), n, f) != (size_t)n) exit(3);
    return v;
}
