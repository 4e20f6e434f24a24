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
 *   FAKE_CUDA_PEER_LIMIT  peers one context may have enabled at once (default 8, as on
 *                       boxes without NVSwitch); one more is CUDA_ERROR_TOO_MANY_PEERS
 *   FAKE_CUDA_ECC       ordinals (comma-separated) whose context creation fails with
 *                       CUDA_ERROR_ECC_UNCORRECTABLE
 *   FAKE_CUDA_EXCLUSIVE ordinals in exclusive-process compute mode; FAKE_CUDA_LOCK_DIR is
 *                       where the owner of each is recorded (`<bus id>.lock`, its pid): a
 *                       second live process creating a context there gets
 *                       CUDA_ERROR_DEVICE_UNAVAILABLE
 *   FAKE_CUDA_MIG       set: every GPU is a MIG instance (name "... MIG 1g.12gb")
 *
 * NUMA and shared host links:
 *   FAKE_CUDA_GPU_NODE  NUMA node of each GPU, comma-separated (default all 0)
 *   FAKE_CUDA_NODE_CPUS CPU lists of the nodes, ';'-separated ("0;1"). Pinned memory lands
 *                       on the node whose CPUs hold the allocating thread's whole affinity
 *                       mask, else on node 0 (an unbound thread's first touch)
 *   FAKE_CUDA_FAR_FACTOR host copies to memory on another node than the GPU's run at this
 *                       share of the link (default 0.5: the socket link is in the way)
 *   FAKE_CUDA_DIR       a directory the processes of a job share: each live pinned buffer is
 *                       a file there, tagged with the GPU's node; host copies of a node share
 *   FAKE_CUDA_SOCKET_GBPS  GB/s among the processes holding pinned memory on it at that moment
 *                       (default: no budget)
 *   FAKE_CUDA_PINNED_HOLD_MS  cuMemHostAlloc and cuMemFreeHost wait this long (real copies
 *                       of a real size take that long, so processes started together overlap)
 *
 * As the real driver: copies whose host side is pinned (or that stay on devices) and memsets
 * run only when something waits for them (a stream or event synchronize, or a later
 * pageable copy, which the driver performs in stream order and returns from once done);
 * an operation on a stream whose context is not current fails with
 * CUDA_ERROR_INVALID_CONTEXT (stricter than the driver, which documents only kernel
 * launches so; `topo` binds first everywhere). Freeing a buffer that a queued copy still
 * uses is reported on stderr and makes every later synchronize fail with
 * CUDA_ERROR_ILLEGAL_ADDRESS (stricter than cuMemFree, which waits for the device).
 * cuStreamWaitValue32 holds a stream until a host-mapped word reaches a value
 * (CU_STREAM_WAIT_VALUE_GEQ); until then nothing queued behind it runs and its clock
 * stands still, so a hold lets every copy be queued before any starts, as in
 * nvbandwidth's blocking kernel. Enqueueing costs host time (FAKE_CUDA_LAUNCH_US a call,
 * default 0), so a stream that is not held times the launches of small copies too.
 *
 * Where the real contract comes from:
 * - pageable copies: CUDA driver API, "API synchronization behavior" (a pageable source
 *   is staged before cuMemcpyHtoDAsync returns; cuMemcpyDtoHAsync to pageable memory
 *   returns once the copy is done); pinned ones are asynchronous.
 * - eight peers: CUDA C++ Programming Guide, "Peer-to-Peer Memory Access" (without
 *   NVSwitch, each device supports at most eight peer connections); the error is
 *   CUDA_ERROR_TOO_MANY_PEERS (cuda.h: peer mapping resources exhausted).
 * - cuCtxDisablePeerAccess: CUDA_ERROR_PEER_ACCESS_NOT_ENABLED when not enabled,
 *   CUDA_ERROR_INVALID_CONTEXT without a current context (driver API, Peer Context
 *   Memory Access).
 * - CUDA_ERROR_DEVICE_UNAVAILABLE (cuda.h): "devices are often unavailable due to use of
 *   CU_COMPUTEMODE_EXCLUSIVE_PROCESS or CU_COMPUTEMODE_PROHIBITED".
 * - cuStreamWaitValue32: the word must be device memory or host memory mapped for the
 *   device (CU_MEMHOSTALLOC_DEVICEMAP); nvbandwidth's spinKernel on a host latch
 *   (kernels.cuh) is the same hold made with a kernel.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

/* Codes from cuda.h (CUDA 12). */
enum {
    SUCCESS = 0,
    INVALID_VALUE = 1,
    OUT_OF_MEMORY = 2,
    DEVICE_UNAVAILABLE = 46,
    NO_DEVICE = 100,
    INVALID_DEVICE = 101,
    INVALID_CONTEXT = 201,
    ECC_UNCORRECTABLE = 214,
    PEER_ACCESS_UNSUPPORTED = 217,
    INVALID_HANDLE = 400,
    ILLEGAL_ADDRESS = 700,
    PEER_ACCESS_ALREADY_ENABLED = 704,
    PEER_ACCESS_NOT_ENABLED = 705,
    TOO_MANY_PEERS = 711,
    NOT_READY = 600,
    LAUNCH_TIMEOUT = 702,
};

#define MAX_GPUS 16
#define LATENCY 5e-6

struct ctx { int device; int peer[MAX_GPUS]; int retained; };
/* A stream held by cuStreamWaitValue32 keeps its clock relative to the
 * moment it is released, as do the events recorded behind the hold. */
struct stream { double clock; int device; volatile unsigned *hold; unsigned hold_value; struct stream *next; };
struct event { double time; int device; struct stream *behind; struct event *next; };
static struct stream *streams;
static struct event *events;

static struct ctx contexts[MAX_GPUS];
static int gpu_count = -1;
static char bus_ids[MAX_GPUS][16];
static __thread struct ctx *current;
/* The host's view of time: where the latest synchronize left it. Work
 * enqueued on an idle stream starts now, not when that stream last ran. */
static double host_time;
/* Set when a buffer was freed under a queued copy: every synchronize fails after. */
static CUresult sticky;

static double env_double(const char *name, double fallback) {
    const char *v = getenv(name);
    return v && *v ? atof(v) : fallback;
}

/* Whether `n` is in the comma-separated list in variable `name`. */
static int listed(const char *name, int n) {
    const char *list = getenv(name);
    while (list && *list) {
        if (atoi(list) == n) return 1;
        list = strchr(list, ',');
        if (list) list++;
    }
    return 0;
}

/* The n-th comma-separated number of variable `name`, or `fallback`. */
static int nth(const char *name, int n, int fallback) {
    const char *list = getenv(name);
    for (int i = 0; list && *list; i++) {
        if (i == n) return atoi(list);
        list = strchr(list, ',');
        if (list) list++;
    }
    return fallback;
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

static void nap_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) && errno == EINTR) {}
}

/* ---- memory: what is pinned, device or neither, and where it lies ---- */

struct allocation { char *base; size_t bytes; int pinned; int node; char marker[512]; };
static struct allocation *allocations;
static int allocation_count;

static struct allocation *allocation_of(const void *p) {
    for (int i = 0; i < allocation_count; i++) {
        struct allocation *a = &allocations[i];
        if ((const char *)p >= a->base && (const char *)p < a->base + (a->bytes ? a->bytes : 1)) return a;
    }
    return NULL;
}

static int remember(void *base, size_t bytes, int pinned, int node) {
    struct allocation *grown = realloc(allocations, (size_t)(allocation_count + 1) * sizeof *grown);
    if (!grown) return OUT_OF_MEMORY;
    allocations = grown;
    allocations[allocation_count++] = (struct allocation){base, bytes, pinned, node, ""};
    return SUCCESS;
}

/* ---- queued work, run in enqueue order when something waits ---- */

enum { COPY, SET };
struct work { int kind; char *dst; const char *src; size_t bytes; unsigned char value; int owned; };
static struct work *queue;
static int queued;

static void run_queue(void) {
    for (int i = 0; i < queued; i++) {
        struct work *w = &queue[i];
        if (w->kind == COPY) memmove(w->dst, w->src, w->bytes);
        else memset(w->dst, w->value, w->bytes);
        if (w->owned) free((void *)w->src);
    }
    queued = 0;
}

static CUresult put_in_queue(struct work w) {
    struct work *grown = realloc(queue, (size_t)(queued + 1) * sizeof *grown);
    if (!grown) return OUT_OF_MEMORY;
    queue = grown;
    queue[queued++] = w;
    return SUCCESS;
}

/* Called by the stand-in NCCL with a collective's result (`owned`, freed
 * once copied): like a kernel's output, it lands only when waited for. */
int fake_cuda_queue_result(void *dst, void *owned, size_t bytes) {
    return put_in_queue((struct work){COPY, dst, owned, bytes, 0, 1});
}

/* Called by the stand-in NCCL before it touches buffers: the work queued
 * before a collective on its stream is done by the time the collective runs. */
void fake_cuda_run_queue(void) { run_queue(); }

/* Freeing `a` while queued work still reads or writes it. */
static void check_free(struct allocation *a) {
    for (int i = 0; i < queued; i++) {
        struct work *w = &queue[i];
        int hits = (w->dst >= a->base && w->dst < a->base + a->bytes) ||
                   (w->src && w->src >= a->base && w->src < a->base + a->bytes);
        if (hits) {
            fprintf(stderr, "fake libcuda: a buffer was freed while a queued copy still used it\n");
            sticky = ILLEGAL_ADDRESS;
            queued = 0;
            return;
        }
    }
}

static void forget(struct allocation *a) {
    check_free(a);
    if (a->marker[0]) unlink(a->marker);
    *a = allocations[--allocation_count];
}

/* ---- streams, time, links ---- */

/* Releases the streams whose flag the host has set: they start now. */
static void check_holds(void) {
    for (struct stream *st = streams; st; st = st->next) {
        if (!st->hold || *st->hold < st->hold_value) continue;
        double release = host_time;
        for (struct event *ev = events; ev; ev = ev->next)
            if (ev->behind == st) { ev->time += release; ev->behind = NULL; }
        st->clock += release;
        st->hold = NULL;
    }
}

/* Called by the stand-in NCCL, which shares this library's streams. */
double *fake_cuda_stream_clock(void *s) {
    struct stream *st = s;
    check_holds();
    if (!st->hold && st->clock < host_time) st->clock = host_time;
    return &st->clock;
}

/* Waiting on work behind a hold nothing will release: the real call never
 * returns; this one says so and fails. */
static CUresult wait_for_release(struct stream *st) {
    check_holds();
    if (!st || !st->hold) return SUCCESS;
    fprintf(stderr, "fake libcuda: synchronize on a stream held by cuStreamWaitValue32 that was never released\n");
    return LAUNCH_TIMEOUT;
}
int fake_cuda_stream_device(void *s) { return ((struct stream *)s)->device; }

static CUresult on_stream(void *s) {
    struct stream *st = s;
    if (!st) return INVALID_HANDLE;
    if (!current || current->device != st->device) return INVALID_CONTEXT;
    return SUCCESS;
}

static double link_gbps(int device) {
    const char *slow = getenv("FAKE_CUDA_SLOW_GPU");
    int ordinal;
    double gbps;
    if (slow && sscanf(slow, "%d:%lf", &ordinal, &gbps) == 2 && ordinal == device) return gbps;
    const char *slow_rank = getenv("FAKE_CUDA_SLOW_RANK"), *rank = getenv("RANK");
    int r;
    if (slow_rank && rank && sscanf(slow_rank, "%d:%lf", &r, &gbps) == 2 && r == atoi(rank)) return gbps;
    return env_double("FAKE_CUDA_PCIE_GBPS", 26.0);
}

static int gpu_node(int device) { return nth("FAKE_CUDA_GPU_NODE", device, 0); }

static const char *shared_dir(void) {
    const char *d = getenv("FAKE_CUDA_DIR");
    return d && *d ? d : NULL;
}

/* Processes (this one included) holding pinned memory for GPUs of `node`. */
static int copiers_on(int node) {
    char pattern[64];
    int pids[64], count = 0;
    const char *dir = shared_dir();
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d) return 1;
    snprintf(pattern, sizeof pattern, "pinned.%d.", node);
    for (struct dirent *entry; (entry = readdir(d));) {
        if (strncmp(entry->d_name, pattern, strlen(pattern))) continue;
        int pid = atoi(entry->d_name + strlen(pattern)), known = 0;
        if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) continue;
        for (int i = 0; i < count; i++) known |= pids[i] == pid;
        if (!known && count < 64) pids[count++] = pid;
    }
    closedir(d);
    return count ? count : 1;
}

/* A host copy of GPU `device` touching host memory `host`: the link, the
 * node's budget shared among its copiers, and the socket link if far. */
static double host_gbps(int device, const void *host) {
    double gbps = link_gbps(device);
    int node = gpu_node(device);
    double budget = env_double("FAKE_CUDA_SOCKET_GBPS", 0);
    if (budget > 0) {
        double share = budget / copiers_on(node);
        if (share < gbps) gbps = share;
    }
    struct allocation *a = allocation_of(host);
    if (a && a->pinned && a->node != node) gbps *= env_double("FAKE_CUDA_FAR_FACTOR", 0.5);
    return gbps;
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

/* Enqueueing costs the host FAKE_CUDA_LAUNCH_US (default 0); the work then
 * starts no earlier than the host got it there, unless its stream is held. */
static void advance(struct stream *s, size_t bytes, double gbps) {
    host_time += env_double("FAKE_CUDA_LAUNCH_US", 0) * 1e-6;
    *fake_cuda_stream_clock(s) += LATENCY + (double)bytes / (gbps * 1e9);
}

/* The NUMA node the calling thread's pinned memory lands on. */
static int node_of_thread(void) {
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof mask, &mask)) return 0;
    const char *lists = getenv("FAKE_CUDA_NODE_CPUS");
    for (int node = 0; lists && *lists; node++) {
        size_t n = strcspn(lists, ";");
        cpu_set_t cpus;
        CPU_ZERO(&cpus);
        char one[256];
        snprintf(one, sizeof one, "%.*s", (int)n, lists);
        for (char *part = strtok(one, ","); part; part = strtok(NULL, ",")) {
            int lo, hi;
            if (sscanf(part, "%d-%d", &lo, &hi) != 2) hi = lo = atoi(part);
            for (int c = lo; c <= hi && c < CPU_SETSIZE; c++) CPU_SET(c, &cpus);
        }
        cpu_set_t both;
        CPU_AND(&both, &mask, &cpus);
        if (CPU_EQUAL(&both, &mask)) return node;
        lists += n;
        if (*lists == ';') lists++;
    }
    return 0;
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
    if (getenv("FAKE_CUDA_MIG")) snprintf(name, (size_t)len, "Fake RTX 6000 Ada %d MIG 1g.12gb", d);
    else snprintf(name, (size_t)len, "Fake RTX 6000 Ada %d", d);
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

/* Exclusive-process mode: the lock file names the owning process. */
static char lock_path[MAX_GPUS][1024];
static CUresult take_exclusive(CUdevice d) {
    const char *dir = getenv("FAKE_CUDA_LOCK_DIR");
    if (!listed("FAKE_CUDA_EXCLUSIVE", d) || !dir || !*dir || lock_path[d][0]) return SUCCESS;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.lock", dir, bus_ids[d]);
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd >= 0) {
            char pid[32];
            int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
            if (write(fd, pid, (size_t)n) != n) { close(fd); unlink(path); return DEVICE_UNAVAILABLE; }
            close(fd);
            snprintf(lock_path[d], sizeof lock_path[d], "%s", path);
            return SUCCESS;
        }
        FILE *f = fopen(path, "r");
        int owner = 0;
        if (f) { if (fscanf(f, "%d", &owner) != 1) owner = 0; fclose(f); }
        if (owner > 0 && owner != (int)getpid() && !(kill(owner, 0) != 0 && errno == ESRCH)) return DEVICE_UNAVAILABLE;
        unlink(path); /* its owner is gone */
    }
    return DEVICE_UNAVAILABLE;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d) {
    if (d < 0 || d >= gpu_count) return INVALID_DEVICE;
    if (listed("FAKE_CUDA_ECC", d)) return ECC_UNCORRECTABLE;
    CUresult taken = take_exclusive(d);
    if (taken) return taken;
    contexts[d].retained++;
    *ctx = &contexts[d];
    return SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
    if (d < 0 || d >= gpu_count) return INVALID_DEVICE;
    if (contexts[d].retained > 0 && --contexts[d].retained == 0 && lock_path[d][0]) {
        unlink(lock_path[d]);
        lock_path[d][0] = 0;
    }
    return SUCCESS;
}
CUresult cuCtxSetCurrent(void *ctx) { current = ctx; return SUCCESS; }
CUresult cuDeviceCanAccessPeer(int *can, CUdevice a, CUdevice b) {
    *can = a != b && !refused(a, b) && !getenv("FAKE_CUDA_MIG");
    return SUCCESS;
}
CUresult cuCtxEnablePeerAccess(void *peer, unsigned flags) {
    (void)flags;
    struct ctx *p = peer;
    if (!current) return INVALID_CONTEXT;
    if (refused(current->device, p->device)) return PEER_ACCESS_UNSUPPORTED;
    if (current->peer[p->device]) return PEER_ACCESS_ALREADY_ENABLED;
    int enabled = 0;
    for (int i = 0; i < MAX_GPUS; i++) enabled += current->peer[i];
    if (enabled >= (int)env_double("FAKE_CUDA_PEER_LIMIT", 8)) return TOO_MANY_PEERS;
    current->peer[p->device] = 1;
    return SUCCESS;
}
CUresult cuCtxDisablePeerAccess(void *peer) {
    struct ctx *p = peer;
    if (!current) return INVALID_CONTEXT;
    if (!current->peer[p->device]) return PEER_ACCESS_NOT_ENABLED;
    current->peer[p->device] = 0;
    return SUCCESS;
}

CUresult cuStreamCreate(void **s, unsigned flags) {
    (void)flags;
    if (!current) return INVALID_CONTEXT;
    struct stream *st = calloc(1, sizeof *st);
    if (!st) return OUT_OF_MEMORY;
    st->device = current->device;
    st->next = streams;
    streams = st;
    *s = st;
    return SUCCESS;
}
CUresult cuStreamDestroy_v2(void *s) {
    for (struct stream **at = &streams; *at; at = &(*at)->next)
        if (*at == s) { *at = ((struct stream *)s)->next; break; }
    free(s);
    return SUCCESS;
}
CUresult cuStreamSynchronize(void *s) {
    CUresult held = wait_for_release(s);
    if (held) return held;
    run_queue();
    double t = *fake_cuda_stream_clock(s);
    if (t > host_time) host_time = t;
    return sticky;
}
CUresult cuEventCreate(void **e, unsigned flags) {
    (void)flags;
    if (!current) return INVALID_CONTEXT;
    struct event *ev = calloc(1, sizeof *ev);
    if (!ev) return OUT_OF_MEMORY;
    ev->device = current->device;
    ev->next = events;
    events = ev;
    *e = ev;
    return SUCCESS;
}
CUresult cuEventDestroy_v2(void *e) {
    for (struct event **at = &events; *at; at = &(*at)->next)
        if (*at == e) { *at = ((struct event *)e)->next; break; }
    free(e);
    return SUCCESS;
}
CUresult cuEventRecord(void *e, void *s) {
    struct event *ev = e;
    CUresult bound = on_stream(s);
    if (bound) return bound;
    if (ev->device != ((struct stream *)s)->device) return INVALID_HANDLE;
    ev->time = *fake_cuda_stream_clock(s);
    ev->behind = ((struct stream *)s)->hold ? s : NULL;
    return SUCCESS;
}
CUresult cuEventSynchronize(void *e) {
    CUresult held = wait_for_release(((struct event *)e)->behind);
    if (held) return held;
    run_queue();
    double t = ((struct event *)e)->time;
    if (t > host_time) host_time = t;
    return sticky;
}
CUresult cuEventElapsedTime(float *ms, void *start, void *end) {
    check_holds();
    if (((struct event *)start)->behind || ((struct event *)end)->behind) return NOT_READY;
    *ms = (float)((((struct event *)end)->time - ((struct event *)start)->time) * 1e3);
    return SUCCESS;
}
CUresult cuStreamWaitEvent(void *s, void *e, unsigned flags) {
    (void)flags;
    struct stream *st = s;
    struct event *ev = e;
    double *clock = fake_cuda_stream_clock(s);
    /* Behind a hold: this stream now waits for the same release. */
    if (ev->behind && !st->hold) {
        st->hold = ev->behind->hold;
        st->hold_value = ev->behind->hold_value;
        *clock = 0;
    }
    if (ev->time > *clock) *clock = ev->time;
    return SUCCESS;
}

/* CU_STREAM_WAIT_VALUE_GEQ (0) on a host-mapped word: the stream runs nothing
 * after this until the host makes the word at least `value`. */
CUresult cuStreamWaitValue32_v2(void *s, CUdeviceptr addr, unsigned value, unsigned flags) {
    CUresult bound = on_stream(s);
    if (bound) return bound;
    struct allocation *a = allocation_of((void *)(uintptr_t)addr);
    if (flags != 0 || !a || !a->pinned) return INVALID_VALUE;
    struct stream *st = s;
    volatile unsigned *word = (volatile unsigned *)(uintptr_t)addr;
    if (*word >= value || st->hold) return SUCCESS;
    (void)fake_cuda_stream_clock(s);
    st->hold = word;
    st->hold_value = value;
    st->clock = 0;
    return SUCCESS;
}
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned flags) {
    struct allocation *a = allocation_of(p);
    if (flags != 0 || !a || !a->pinned) return INVALID_VALUE;
    *d = (CUdeviceptr)(uintptr_t)p;
    return SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
    if (!current) return INVALID_CONTEXT;
    void *m = malloc(bytes);
    if (!m) return OUT_OF_MEMORY;
    if (remember(m, bytes, 0, -1)) { free(m); return OUT_OF_MEMORY; }
    *p = (CUdeviceptr)(uintptr_t)m;
    return SUCCESS;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
    struct allocation *a = allocation_of((void *)(uintptr_t)p);
    if (!a || a->pinned) return INVALID_VALUE;
    forget(a);
    free((void *)(uintptr_t)p);
    return SUCCESS;
}
CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned flags) {
    (void)flags;
    if (!current) return INVALID_CONTEXT;
    *p = malloc(bytes);
    if (!*p) return OUT_OF_MEMORY;
    int node = node_of_thread();
    if (remember(*p, bytes, 1, node)) { free(*p); return OUT_OF_MEMORY; }
    const char *dir = shared_dir();
    /* Copy buffers count as a copier; a flag word does not. */
    if (dir && bytes >= 65536) {
        struct allocation *a = &allocations[allocation_count - 1];
        static unsigned serial;
        snprintf(a->marker, sizeof a->marker, "%s/pinned.%d.%d.%u", dir, gpu_node(current->device), (int)getpid(), serial++);
        FILE *f = fopen(a->marker, "w");
        if (f) fclose(f);
        nap_ms((int)env_double("FAKE_CUDA_PINNED_HOLD_MS", 0));
    }
    return SUCCESS;
}
CUresult cuMemFreeHost(void *p) {
    struct allocation *a = allocation_of(p);
    if (!a || !a->pinned) return INVALID_VALUE;
    if (a->marker[0]) nap_ms((int)env_double("FAKE_CUDA_PINNED_HOLD_MS", 0));
    forget(a);
    free(p);
    return SUCCESS;
}
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, void *s) {
    CUresult bound = on_stream(s);
    if (bound) return bound;
    CUresult q = put_in_queue((struct work){SET, (char *)(uintptr_t)p, NULL, n, v, 0});
    if (q) return q;
    advance(s, n, env_double("FAKE_CUDA_D2D_GBPS", 800.0));
    return SUCCESS;
}
/* A pinned host side is read or written when the copy runs; a pageable one
 * is staged by the driver in stream order before the call returns. */
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *s) {
    CUresult bound = on_stream(s);
    if (bound) return bound;
    struct allocation *a = allocation_of(src);
    advance(s, n, host_gbps(((struct stream *)s)->device, src));
    if (a && a->pinned) return put_in_queue((struct work){COPY, (char *)(uintptr_t)dst, src, n, 0, 0});
    run_queue();
    memcpy((void *)(uintptr_t)dst, src, n);
    return SUCCESS;
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *s) {
    CUresult bound = on_stream(s);
    if (bound) return bound;
    struct allocation *a = allocation_of(dst);
    advance(s, n, host_gbps(((struct stream *)s)->device, dst));
    if (a && a->pinned) return put_in_queue((struct work){COPY, dst, (const char *)(uintptr_t)src, n, 0, 0});
    run_queue();
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return SUCCESS;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void *s) {
    CUresult bound = on_stream(s);
    if (bound) return bound;
    advance(s, n, env_double("FAKE_CUDA_D2D_GBPS", 800.0));
    return put_in_queue((struct work){COPY, (char *)(uintptr_t)dst, (const char *)(uintptr_t)src, n, 0, 0});
}
CUresult cuMemcpyPeerAsync(CUdeviceptr dst, void *dst_ctx, CUdeviceptr src, void *src_ctx, size_t n, void *s) {
    CUresult bound = on_stream(s);
    if (bound) return bound;
    (void)dst_ctx;
    (void)src_ctx;
    advance(s, n, env_double("FAKE_CUDA_P2P_GBPS", 25.0));
    return put_in_queue((struct work){COPY, (char *)(uintptr_t)dst, (const char *)(uintptr_t)src, n, 0, 0});
}

CUresult cuGetErrorName(CUresult e, const char **s) {
    switch (e) {
    case NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; break;
    case OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case PEER_ACCESS_UNSUPPORTED: *s = "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"; break;
    case DEVICE_UNAVAILABLE: *s = "CUDA_ERROR_DEVICE_UNAVAILABLE"; break;
    case ECC_UNCORRECTABLE: *s = "CUDA_ERROR_ECC_UNCORRECTABLE"; break;
    case INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case INVALID_HANDLE: *s = "CUDA_ERROR_INVALID_HANDLE"; break;
    case ILLEGAL_ADDRESS: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
    case TOO_MANY_PEERS: *s = "CUDA_ERROR_TOO_MANY_PEERS"; break;
    case PEER_ACCESS_NOT_ENABLED: *s = "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED"; break;
    default: *s = "CUDA_ERROR_UNKNOWN"; break;
    }
    return SUCCESS;
}
CUresult cuGetErrorString(CUresult e, const char **s) {
    switch (e) {
    case NO_DEVICE: *s = "no CUDA-capable device is detected"; break;
    case OUT_OF_MEMORY: *s = "out of memory"; break;
    case DEVICE_UNAVAILABLE: *s = "CUDA-capable device(s) is/are busy or unavailable"; break;
    case ECC_UNCORRECTABLE: *s = "uncorrectable ECC error encountered"; break;
    case INVALID_CONTEXT: *s = "invalid device context"; break;
    case TOO_MANY_PEERS: *s = "peer mapping resources exhausted"; break;
    default: *s = "unknown error"; break;
    }
    return SUCCESS;
}
