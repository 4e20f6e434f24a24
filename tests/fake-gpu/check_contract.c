/* Holds the stand-in libcuda/libnccl to the parts of the real contract that
 * `topo` relies on, so a green probe test means something on a GPU. Built and
 * run by tests/probe_live.rs (`the_stand_ins_keep_the_real_contract`) with
 * FAKE_CUDA_BUS naming ten GPUs, FAKE_CUDA_EXCLUSIVE=1 and FAKE_CUDA_LOCK_DIR
 * set, FAKE_NCCL_WAIT_S=0.3. Prints "ok" and exits 0, or names the first broken promise. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
CUresult cuInit(unsigned);
CUresult cuDevicePrimaryCtxRetain(void **, int);
CUresult cuDevicePrimaryCtxRelease_v2(int);
CUresult cuCtxSetCurrent(void *);
CUresult cuCtxEnablePeerAccess(void *, unsigned);
CUresult cuCtxDisablePeerAccess(void *);
CUresult cuStreamCreate(void **, unsigned);
CUresult cuStreamSynchronize(void *);
CUresult cuEventCreate(void **, unsigned);
CUresult cuEventRecord(void *, void *);
CUresult cuEventElapsedTime(float *, void *, void *);
CUresult cuEventSynchronize(void *);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemHostAlloc(void **, size_t, unsigned);
CUresult cuMemFreeHost(void *);
CUresult cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, void *);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, void *);
CUresult cuStreamWaitValue32_v2(void *, CUdeviceptr, unsigned, unsigned);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *, void *, unsigned);
typedef struct { char internal[128]; } ncclUniqueId;
int ncclGetUniqueId(ncclUniqueId *);
int ncclCommInitRank(void **, int, ncclUniqueId, int);
int ncclGroupStart(void);
int ncclGroupEnd(void);
int ncclAllReduce(const void *, void *, size_t, int, int, void *, void *);

#define EXPECT(what, cond)                                                   \
    do {                                                                     \
        if (!(cond)) {                                                       \
            printf("broken: %s (line %d)\n", what, __LINE__);                \
            return 1;                                                        \
        }                                                                    \
    } while (0)

int main(int argc, char **argv) {
    (void)argv;
    if (argc > 1) {
        /* The second process: GPU 1 is held by the first, GPU 2 is free. */
        void *c;
        cuInit(0);
        return cuDevicePrimaryCtxRetain(&c, 1) == 46 && cuDevicePrimaryCtxRetain(&c, 2) == 0 ? 0 : 1;
    }
    void *ctx[10], *s0, *s1;
    EXPECT("cuInit", cuInit(0) == 0);
    for (int d = 0; d < 10; d++) EXPECT("retain", cuDevicePrimaryCtxRetain(&ctx[d], d) == 0);
    EXPECT("no context, no stream", cuStreamCreate(&s0, 0) == 201);
    cuCtxSetCurrent(ctx[0]);
    EXPECT("stream", cuStreamCreate(&s0, 0) == 0);
    cuCtxSetCurrent(ctx[1]);
    EXPECT("stream", cuStreamCreate(&s1, 0) == 0);

    /* A copy from pinned memory lands only once waited for. */
    CUdeviceptr dev;
    char *pinned;
    cuCtxSetCurrent(ctx[0]);
    EXPECT("alloc", cuMemAlloc_v2(&dev, 4096) == 0 && cuMemHostAlloc((void **)&pinned, 4096, 0) == 0);
    memset((void *)(uintptr_t)dev, 0, 4096);
    memset(pinned, 7, 4096);
    EXPECT("copy", cuMemcpyHtoDAsync_v2(dev, pinned, 4096, s0) == 0);
    EXPECT("copy not done before a sync", ((char *)(uintptr_t)dev)[0] == 0);
    EXPECT("sync", cuStreamSynchronize(s0) == 0);
    EXPECT("copy done after a sync", ((char *)(uintptr_t)dev)[4095] == 7);

    /* A stream's work needs its context current. */
    cuCtxSetCurrent(ctx[1]);
    EXPECT("memset under another context", cuMemsetD8Async(dev, 1, 16, s0) == 201);

    /* Eight peers at most; giving one back makes room. */
    cuCtxSetCurrent(ctx[0]);
    for (int d = 1; d <= 8; d++) EXPECT("peer", cuCtxEnablePeerAccess(ctx[d], 0) == 0);
    EXPECT("ninth peer refused", cuCtxEnablePeerAccess(ctx[9], 0) == 711);
    EXPECT("disable", cuCtxDisablePeerAccess(ctx[8]) == 0);
    EXPECT("disable twice", cuCtxDisablePeerAccess(ctx[8]) == 705);
    EXPECT("room again", cuCtxEnablePeerAccess(ctx[9], 0) == 0);

    /* A held stream runs nothing until the host sets the word. */
    unsigned *word;
    CUdeviceptr word_dev;
    void *start, *end;
    float ms;
    EXPECT("word", cuMemHostAlloc((void **)&word, 4, 3) == 0 && cuMemHostGetDevicePointer_v2(&word_dev, word, 0) == 0);
    *word = 0;
    EXPECT("events", cuEventCreate(&start, 0) == 0 && cuEventCreate(&end, 0) == 0);
    EXPECT("hold", cuStreamWaitValue32_v2(s0, word_dev, 1, 0) == 0);
    cuEventRecord(start, s0);
    cuMemcpyHtoDAsync_v2(dev, pinned, 4096, s0);
    cuEventRecord(end, s0);
    EXPECT("not ready while held", cuEventElapsedTime(&ms, start, end) == 600);
    *(volatile unsigned *)word = 1;
    EXPECT("released", cuEventSynchronize(end) == 0 && cuEventElapsedTime(&ms, start, end) == 0 && ms > 0);

    /* Reductions in the element type: int8 sums wrap, max is max, avg divides. */
    ncclUniqueId id;
    void *comm[2];
    ncclGetUniqueId(&id);
    ncclGroupStart();
    for (int r = 0; r < 2; r++) {
        cuCtxSetCurrent(ctx[r]);
        ncclCommInitRank(&comm[r], 2, id, r);
    }
    EXPECT("init", ncclGroupEnd() == 0);
    int8_t a8[2][1] = {{100}, {100}}, o8[2][1] = {{0}, {0}};
    float af[2][2] = {{1, 5}, {3, 2}}, of[2][2];
    int32_t ai[2][1] = {{7}, {2}}, oi[2][1];
    void *streams[2] = {s0, s1};
    for (int pass = 0; pass < 3; pass++) {
        ncclGroupStart();
        for (int r = 0; r < 2; r++) {
            cuCtxSetCurrent(ctx[r]);
            if (pass == 0) ncclAllReduce(a8[r], o8[r], 1, 0 /* int8 */, 0 /* sum */, comm[r], streams[r]);
            if (pass == 1) ncclAllReduce(af[r], of[r], 2, 7 /* float32 */, 2 /* max */, comm[r], streams[r]);
            if (pass == 2) ncclAllReduce(ai[r], oi[r], 1, 2 /* int32 */, 4 /* avg */, comm[r], streams[r]);
        }
        EXPECT("all_reduce", ncclGroupEnd() == 0);
        if (pass == 0) EXPECT("a collective's result lands only after a sync", o8[0][0] == 0 && o8[1][0] == 0);
        EXPECT("sync", cuStreamSynchronize(s0) == 0 && cuStreamSynchronize(s1) == 0);
    }
    EXPECT("int8 sum wraps", o8[0][0] == -56 && o8[1][0] == -56);
    EXPECT("float max", of[0][0] == 3 && of[0][1] == 5 && of[1][1] == 5);
    EXPECT("int32 avg", oi[0][0] == 4);
    EXPECT("bad type", ncclAllReduce(ai[0], oi[0], 1, 99, 0, comm[0], s0) == 4);

    /* Init is collective: a rank whose peer never comes waits (here for
     * FAKE_NCCL_WAIT_S) instead of failing at once. */
    ncclUniqueId lone;
    void *lone_comm;
    struct timespec t0, t1;
    ncclGetUniqueId(&lone);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int init = ncclCommInitRank(&lone_comm, 2, lone, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    EXPECT("a missing peer hangs the init", init == 2 && waited >= 0.25);

    /* Exclusive-process mode: GPU 1 is this process's; another gets
     * CUDA_ERROR_DEVICE_UNAVAILABLE while this one lives. */
    pid_t child = fork();
    if (child == 0) {
        execl("/proc/self/exe", "check_contract", "second", (char *)NULL);
        _exit(2);
    }
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT("exclusive GPU refused to a second process", WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* Freeing memory a queued copy still reads is caught at the next sync. */
    cuCtxSetCurrent(ctx[0]);
    cuMemcpyHtoDAsync_v2(dev, pinned, 4096, s0);
    cuMemFreeHost(pinned);
    EXPECT("freed under a queued copy", cuStreamSynchronize(s0) == 700);
    printf("ok\n");
    return 0;
}
