/* wd_copy_parallel (host_copy.h): host code only. */
#include "host_copy.h"

#include <string.h>
#include <algorithm>
#include <thread>

namespace {

const size_t PARALLEL_FROM_BYTES = 16 << 20; // below this one thread copies: starting threads costs more
const size_t SHARE_BYTES = 1 << 20;          // no thread gets less than this
const unsigned MAX_THREADS = 8;              // more hardly add bandwidth (BENCHMARKS.md)

/* Copies bytes [from, to) of the concatenation of `copies`. */
void copy_range(const std::vector<wd_copy> &copies, size_t from, size_t to)
{
    size_t at = 0;
    for (const wd_copy &c : copies) {
        const size_t begin = std::max(from, at), end = std::min(to, at + c.bytes);
        if (begin < end)
            memcpy(static_cast<char *>(c.dst) + (begin - at), static_cast<const char *>(c.src) + (begin - at),
                   end - begin);
        at += c.bytes;
        if (at >= to)
            return;
    }
}

} // namespace

void wd_copy_parallel(const std::vector<wd_copy> &copies)
{
    size_t total = 0;
    for (const wd_copy &c : copies)
        total += c.bytes;
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const size_t threads =
        total < PARALLEL_FROM_BYTES ? 1 : std::min<size_t>({MAX_THREADS, cores, total / SHARE_BYTES});
    const size_t share = (total + threads - 1) / std::max<size_t>(threads, 1);
    std::vector<std::thread> helpers;
    helpers.reserve(threads); // no reallocation while threads run: only a thread's start can fail
    size_t done_here = threads; // shares whose thread could not start are copied by this thread
    for (size_t i = 1; i < threads; i++) {
        try {
            helpers.emplace_back(copy_range, std::cref(copies), i * share, std::min(total, (i + 1) * share));
        } catch (...) {
            done_here = i;
            break;
        }
    }
    copy_range(copies, 0, std::min(total, share));
    if (done_here < threads)
        copy_range(copies, done_here * share, total);
    for (std::thread &t : helpers)
        t.join();
}
