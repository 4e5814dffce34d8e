/* Prints the seed-extension GPU launcher's host plan (src/gpu/seedext_plan.cu) of the pairs in DIR
   (raw arrays as warpdp_harness reads them), for compare_seedext_plan.py, which compares it with
   warpdp/kernels/seedext.py's plan of the same pairs. The occupancy is a fixed number (no GPU):
     warpdp_seedext_plan_check DIR A W CHUNK_PAIRS CHUNK_BYTES BLOCKS_PER_SM SM_COUNT */
#include <stdio.h>
#include <stdlib.h>
#include "seedext_plan.h"

static int fixed_blocks_per_sm = 1;

static int fixed_occupancy(int, size_t, int *blocks)
{
    *blocks = fixed_blocks_per_sm;
    return WARPDP_OK;
}

static void *load(const char *dir, const char *name, size_t item, int64_t *count)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", dir, name);
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    const long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *data = malloc((size_t)bytes + 1);
    if (data == NULL || fread(data, 1, (size_t)bytes, f) != (size_t)bytes)
        exit(2);
    fclose(f);
    *count = bytes / (long)item;
    return data;
}

static void print_plan(const seedext_gpu::ChunkPlan &plan)
{
    for (const seedext_gpu::Launch &l : plan.launches)
        printf("launch %d %lld %lld %d %zu %d %d %zu %lld\n", l.config, (long long)l.first, (long long)l.count, l.qmax,
               l.shared_bytes, l.grid, l.index, l.scratch, (long long)l.state());
    const seedext_gpu::Layout &a = plan.at;
    printf("layout %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu\n", a.params, a.counters, a.query, a.target,
           a.query_offsets, a.target_offsets, a.h0, a.order, a.blob_bytes, a.out, a.scratch, a.device_bytes);
    printf("order");
    for (int32_t k : plan.order)
        printf(" %d", k);
    printf("\n");
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: warpdp_seedext_plan_check DIR A W CHUNK_PAIRS CHUNK_BYTES BLOCKS_PER_SM SM_COUNT\n");
        return 2;
    }
    warpdp_seedext_pairs pairs;
    int64_t n_offsets, unused;
    pairs.query = (const uint8_t *)load(argv[1], "query", 1, &pairs.query_total);
    pairs.target = (const uint8_t *)load(argv[1], "target", 1, &pairs.target_total);
    pairs.query_offsets = (const int64_t *)load(argv[1], "query_offsets", 8, &n_offsets);
    pairs.target_offsets = (const int64_t *)load(argv[1], "target_offsets", 8, &unused);
    pairs.h0 = (const int32_t *)load(argv[1], "h0", 4, &unused);
    pairs.n_pairs = n_offsets - 1;
    warpdp_seedext_params params = {1, 4, 6, 1, 6, 1, 100, 5, 100};
    params.a = atoi(argv[2]);
    params.w = atoi(argv[3]);
    fixed_blocks_per_sm = atoi(argv[6]);
    const seedext_gpu::PlanDevice device = {fixed_occupancy, atoi(argv[7]), (size_t)1 << 50};
    for (const auto &chunk : seedext_gpu::split_chunks(&pairs, atoll(argv[4]), atoll(argv[5]))) {
        printf("chunk %lld %lld\n", (long long)chunk.first, (long long)chunk.second);
        seedext_gpu::ChunkPlan plan;
        if (seedext_gpu::plan_chunk(&pairs, &params, chunk.first, chunk.second, device, &plan) != WARPDP_OK)
            return 1;
        print_plan(plan);
    }
    free((void *)pairs.query);
    free((void *)pairs.target);
    free((void *)pairs.query_offsets);
    free((void *)pairs.target_offsets);
    free((void *)pairs.h0);
    return 0;
}
