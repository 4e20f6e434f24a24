/* A stand-in libcuda.so.1 for testing `topo probe` on a machine without a GPU.
 *
 * Device memory is host memory, so copies and collectives move real bytes and
 * the data check means something. Time is simulated: each stream has a clock
 * that a copy advances by bytes / bandwidth, events read it, and waits join
 * clocks; so measured bandwidths are exact and tests can assert them.
 *
 * Configuration (environment):
 *   FAKE_CUDA_BUS       comma-separated bus IDs, one per GPU (default two GPUs)
 *   FAKE_CUDA_PCIE_GBPS host<->device GB/s per direction (default 26)
 *   FAKE_CUDA_SLOW_GPU  "ordinal:GB/s" for one GPU's host link
 *   FAKE_CUDA_SLOW_RANK "rank:GB/s": every host link of the process whose RANK is that
 *   FAKE_CUDA_P2P_GBPS  peer copy GB/s (default 25)
 *   FAKE_CUDA_D2D_GBPS  device-local copy GB/s (default 800)
 *   FAKE_CUDA_NO_PEER   "a-b" pairs refused peer access, comma-separated
 *   FAKE_CUDA_NO_DEVICE set: cuInit fails with CUDA_ERROR_NO_DEVICE
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
    SUCCESS = 0,
    INVALID_VALUE = 1,
    OUT_OF_MEMORY = 2,
    NO_DEVICE = 100,
    INVALID_DEVICE = 101,
    PEER_ACCESS_UNSUPPORTED = 217,
    PEER_ACCESS_ALREADY_ENABLED = 704,
};

#define MAX_GPUS 16
#define LATENCY 5e-6

struct ctx { int device; int peer[MAX_GPUS]; };
struct stream { double clock; int device; };
struct event { double time; };

static struct ctx contexts[MAX_GPUS];
static int gpu_count = -1;
static char bus_ids[MAX_GPUS][16];
static __thread struct ctx *current;
/* The host's view of time: where the latest synchronize left it. Work
 * enqueued on an idle stream starts now, not when that stream last ran. */
static double host_time;

static double env_double(const char *name, double fallback) {
    const char *v = getenv(name);
    return v && *v ? atof(v) : fallback;
}

static void setup(void) {
    if (gpu_count >= 0) return;
    const char *list = getenv("FAKE_CUDA_BUS");
    if (!list || !*list) list = "0000:17:00.0,0000:65:00.0";
    gpu_count = 0;
    while (*list && gpu_count < MAX_GPUS) {
        size_t n = strcspn(list, ",");
        snprintf(bus_ids[gpu_count], sizeof bus_ids[0], "%.*s", (int)n, list);
        contexts[gpu_count].device = gpu_count;
        gpu_count++;
        list += n;
        if (*list == ',') list++;
    }
}

/* Called by the stand-in NCCL, which shares this library's streams. */
double *fake_cuda_stream_clock(void *s) {
    struct stream *st = s;
    if (st->clock < host_time) st->clock = host_time;
    return &st->clock;
}
int fake_cuda_stream_device(void *s) { return ((struct stream *)s)->device; }

static double host_gbps(int device) {
    const char *slow = getenv("FAKE_CUDA_SLOW_GPU");
    int ordinal;
    double gbps;
    if (slow && sscanf(slow, "%d:%lf", &ordinal, &gbps) == 2 && ordinal == device) return gbps;
    const char *slow_rank = getenv("FAKE_CUDA_SLOW_RANK"), *rank = getenv("RANK");
    int r;
    if (slow_rank && rank && sscanf(slow_rank, "%d:%lf", &r, &gbps) == 2 && r == atoi(rank)) return gbps;
    return env_double("FAKE_CUDA_PCIE_GBPS", 26.0);
}

static int refused(int a, int b) {
    const char *list = getenv("FAKE_CUDA_NO_PEER");
    while (list && *list) {
        int x, y;
        if (sscanf(list, "%d-%d", &x, &y) == 2 && ((x == a && y == b) || (x == b && y == a))) return 1;
        list = strchr(list, ',');
        if (list) list++;
    }
    return 0;
}

static void advance(struct stream *s, size_t bytes, double gbps) {
    *fake_cuda_stream_clock(s) += LATENCY + (double)bytes / (gbps * 1e9);
}

CUresult cuInit(unsigned flags) {
    (void)flags;
    setup();
    return getenv("FAKE_CUDA_NO_DEVICE") ? NO_DEVICE : SUCCESS;
}
CUresult cuDriverGetVersion(int *v) { *v = 12040; return SUCCESS; }
CUresult cuDeviceGetCount(int *n) { setup(); *n = gpu_count; return SUCCESS; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    setup();
    if (ordinal < 0 || ordinal >= gpu_count) return INVALID_DEVICE;
    *d = ordinal;
    return SUCCESS;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    snprintf(name, (size_t)len, "Fake RTX 6000 Ada %d", d);
    return SUCCESS;
}
CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice d) {
    unsigned domain, bus, dev, fn;
    if (d < 0 || d >= gpu_count) return INVALID_DEVICE;
    if (sscanf(bus_ids[d], "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return INVALID_VALUE;
    switch (attribute) {
    case 33: *value = (int)bus; return SUCCESS;
    case 34: *value = (int)dev; return SUCCESS;
    case 50: *value = (int)domain; return SUCCESS;
    default: *value = 0; return SUCCESS;
    }
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d) {
    if (d < 0 || d >= gpu_count) return INVALID_DEVICE;
    *ctx = &contexts[d];
    return SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { (void)d; return SUCCESS; }
CUresult cuCtxSetCurrent(void *ctx) { current = ctx; return SUCCESS; }
CUresult cuDeviceCanAccessPeer(int *can, CUdevice a, CUdevice b) {
    *can = a != b && !refused(a, b);
    return SUCCESS;
}
CUresult cuCtxEnablePeerAccess(void *peer, unsigned flags) {
    (void)flags;
    struct ctx *p = peer;
    if (!current || refused(current->device, p->device)) return PEER_ACCESS_UNSUPPORTED;
    if (current->peer[p->device]) return PEER_ACCESS_ALREADY_ENABLED;
    current->peer[p->device] = 1;
    return SUCCESS;
}

CUresult cuStreamCreate(void **s, unsigned flags) {
    (void)flags;
    struct stream *st = calloc(1, sizeof *st);
    st->device = current ? current->device : 0;
    *s = st;
    return SUCCESS;
}
CUresult cuStreamDestroy_v2(void *s) { free(s); return SUCCESS; }
CUresult cuStreamSynchronize(void *s) {
    double t = *fake_cuda_stream_clock(s);
    if (t > host_time) host_time = t;
    return SUCCESS;
}
CUresult cuEventCreate(void **e, unsigned flags) { (void)flags; *e = calloc(1, sizeof(struct event)); return SUCCESS; }
CUresult cuEventDestroy_v2(void *e) { free(e); return SUCCESS; }
CUresult cuEventRecord(void *e, void *s) { ((struct event *)e)->time = *fake_cuda_stream_clock(s); return SUCCESS; }
CUresult cuEventSynchronize(void *e) {
    double t = ((struct event *)e)->time;
    if (t > host_time) host_time = t;
    return SUCCESS;
}
CUresult cuEventElapsedTime(float *ms, void *start, void *end) {
    *ms = (float)((((struct event *)end)->time - ((struct event *)start)->time) * 1e3);
    return SUCCESS;
}
CUresult cuStreamWaitEvent(void *s, void *e, unsigned flags) {
    (void)flags;
    double *clock = fake_cuda_stream_clock(s);
    double t = ((struct event *)e)->time;
    if (t > *clock) *clock = t;
    return SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
    void *m = malloc(bytes);
    if (!m) return OUT_OF_MEMORY;
    *p = (CUdeviceptr)(uintptr_t)m;
    return SUCCESS;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); return SUCCESS; }
CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned flags) {
    (void)flags;
    *p = malloc(bytes);
    return *p ? SUCCESS : OUT_OF_MEMORY;
}
CUresult cuMemFreeHost(void *p) { free(p); return SUCCESS; }
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, void *s) {
    memset((void *)(uintptr_t)p, v, n);
    advance(s, n, env_double("FAKE_CUDA_D2D_GBPS", 800.0));
    return SUCCESS;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *s) {
    memcpy((void *)(uintptr_t)dst, src, n);
    advance(s, n, host_gbps(((struct stream *)s)->device));
    return SUCCESS;
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *s) {
    memcpy(dst, (const void *)(uintptr_t)src, n);
    advance(s, n, host_gbps(((struct stream *)s)->device));
    return SUCCESS;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void *s) {
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    advance(s, n, env_double("FAKE_CUDA_D2D_GBPS", 800.0));
    return SUCCESS;
}
CUresult cuMemcpyPeerAsync(CUdeviceptr dst, void *dst_ctx, CUdeviceptr src, void *src_ctx, size_t n, void *s) {
    (void)dst_ctx;
    (void)src_ctx;
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    advance(s, n, env_double("FAKE_CUDA_P2P_GBPS", 25.0));
    return SUCCESS;
}

CUresult cuGetErrorName(CUresult e, const char **s) {
    switch (e) {
    case NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; break;
    case OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case PEER_ACCESS_UNSUPPORTED: *s = "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"; break;
    default: *s = "CUDA_ERROR_UNKNOWN"; break;
    }
    return SUCCESS;
}
CUresult cuGetErrorString(CUresult e, const char **s) {
    switch (e) {
    case NO_DEVICE: *s = "no CUDA-capable device is detected"; break;
    case OUT_OF_MEMORY: *s = "out of memory"; break;
    default: *s = "unknown error"; break;
    }
    return SUCCESS;
}
