/* A stand-in libnccl.so.2 for testing `topo probe` without a GPU: one process
 * owning every rank (ncclCommInitRank in a group, as `topo` does for the GPUs
 * of a node). Operations queue inside a group and run at ncclGroupEnd on the
 * stand-in CUDA's host memory, so results are real; time advances the
 * stand-in CUDA's stream clocks by bytes x bus factor / bandwidth.
 *
 * Configuration (environment):
 *   FAKE_NCCL_BUSBW_GBPS  bus bandwidth of collectives (default 20)
 *   FAKE_NCCL_P2P_GBPS    send/recv GB/s (default 22)
 *   FAKE_NCCL_SLOW_HOP    "a-b:GB/s" for the send/recv from rank a to rank b
 *   FAKE_NCCL_CORRUPT     a collective (all_gather, ...) whose rank-0 output gets one wrong element
 *
 * Results land like a kernel's output: only once the stream is waited for
 * (a synchronize, an event, a later copy from it to pageable memory).
 *
 * Element types and reduction ops are honoured (ncclInt8 ... ncclBfloat16;
 * ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg as in nccl.h): a sum over
 * int8 wraps, a max is a max; an unknown type or op is ncclInvalidArgument.
 *   FAKE_NCCL_INIT_FAIL   set: ncclCommInitRank fails with ncclSystemError
 * In one process, as across processes, init is collective: a communicator
 * whose ranks are not all made (in the group, or in the call outside one)
 * hangs for FAKE_NCCL_WAIT_S, then fails with ncclSystemError.
 *
 * Several processes (ranks of one communicator each, standing in for nodes):
 * set FAKE_NCCL_DIR to a directory they share. Every operation then goes
 * through files there (a rank writes its data, waits up to FAKE_NCCL_WAIT_S
 * seconds for its peers'); all_reduce, all_gather, send/recv and
 * ncclCommSplit are supported. Time: bytes / the slowest member's rate,
 *   FAKE_NCCL_RANK_GBPS   "rank:GB/s,..." per world rank (default FAKE_NCCL_P2P_GBPS)
 * A collective across processes starts when the last rank's stream reaches it,
 * and a send/recv when both sides' have (each rank's stream clock is shared
 * through the directory), so a rank that arrives early times its wait, as on
 * real GPUs.
 *
 * As the real library does across processes: ncclCommInitRank is collective
 * (it returns only when every rank has arrived, and a peer that never comes
 * makes it hang, not fail); a peer process that dies afterwards is noticed
 * (as NCCL notices a closed socket): the operation fails with ncclRemoteError,
 * ncclCommGetAsyncError reports it, ncclGetLastError says which peer, and
 * ncclCommDestroy of that communicator hangs (it waits for work that will
 * never finish) while ncclCommAbort returns. "Hang" is bounded by
 * FAKE_NCCL_WAIT_S (default 3600 s) so a broken test cannot leave a process
 * behind for ever.
 *   FAKE_NCCL_EXIT_AT     "rank:n": that world rank kills itself (SIGKILL) at its n-th collective
 *   FAKE_NCCL_EXIT_AT_INIT  a world rank that kills itself in ncclCommInitRank, before its peers hear of it
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>
#include <errno.h>
#include <stdarg.h>

double *fake_cuda_stream_clock(void *s);
void fake_cuda_run_queue(void);
int fake_cuda_queue_result(void *dst, void *owned, size_t bytes);

typedef struct { char internal[128]; } ncclUniqueId;

enum { OK = 0, SYSTEM_ERROR = 2, INVALID_ARGUMENT = 4, INVALID_USAGE = 5, REMOTE_ERROR = 6 };
enum { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, REDUCE, SEND, RECV };
static const char *names[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "send", "recv"};

#define MAX_RANKS 64
#define MAX_OPS 4096
#define LATENCY 10e-6

struct comm {
    int rank, nranks;
    ncclUniqueId id;
    /* Across processes: the world rank of each member, and sequence numbers. */
    int world[MAX_RANKS];
    unsigned seq, splits, sent[MAX_RANKS], received[MAX_RANKS];
    /* Process ids of the members (across processes), and the async error. */
    int pid[MAX_RANKS];
    int async_error;
};
struct op {
    int kind;
    const char *send;
    char *recv;
    size_t count;
    int other;
    struct comm *comm;
    void *stream;
    int done;
    int type, redop;
    unsigned seq; /* across processes: this op's number between its two ranks */
    char *before; /* the output buffer as it was before the group ran */
};

/* ncclDataType_t and ncclRedOp_t (nccl.h): elements are reduced as their
 * type, so a wrong type or op gives a wrong result here as on a GPU. */
enum { INT8, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, FLOAT32, FLOAT64, BFLOAT16 };
enum { SUM, PROD, MAX, MIN, AVG };

static size_t type_size(int type) {
    switch (type) {
    case INT8: case UINT8: return 1;
    case FLOAT16: case BFLOAT16: return 2;
    case INT32: case UINT32: case FLOAT32: return 4;
    case INT64: case UINT64: case FLOAT64: return 8;
    default: return 0;
    }
}

/* Half and bfloat16 as float, by their bits. */
static float from_half(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023, bits;
    if (exp == 0) { float f = (float)man / 1024.0f / 16384.0f; return sign ? -f : f; }
    bits = exp == 31 ? sign | 0x7f800000u | (man << 13) : sign | ((exp + 112) << 23) | (man << 13);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}
static uint16_t to_half(float f) {
    uint32_t bits;
    memcpy(&bits, &f, 4);
    uint32_t sign = (bits >> 16) & 0x8000;
    int exp = (int)((bits >> 23) & 255) - 112;
    uint32_t man = (bits >> 13) & 1023;
    if (((bits >> 23) & 255) == 255) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    if (exp <= 0) return (uint16_t)sign;
    if (exp >= 31) return (uint16_t)(sign | 0x7c00);
    return (uint16_t)(sign | ((uint32_t)exp << 10) | man);
}

/* Element e of `p` as a double, and back (exact for every integer NCCL's
 * 8- and 32-bit types hold; 64-bit integers are reduced as integers). */
static double get(const char *p, int type, size_t e) {
    switch (type) {
    case INT8: return ((const int8_t *)p)[e];
    case UINT8: return ((const uint8_t *)p)[e];
    case INT32: return ((const int32_t *)p)[e];
    case UINT32: return ((const uint32_t *)p)[e];
    case FLOAT16: return from_half(((const uint16_t *)p)[e]);
    case BFLOAT16: { uint32_t b = (uint32_t)((const uint16_t *)p)[e] << 16; float f; memcpy(&f, &b, 4); return f; }
    case FLOAT32: return ((const float *)p)[e];
    case FLOAT64: return ((const double *)p)[e];
    default: return 0;
    }
}
static void set(char *p, int type, size_t e, double v) {
    switch (type) {
    /* Through int64, so a sum past the type's range wraps as on the GPU. */
    case INT8: ((int8_t *)p)[e] = (int8_t)(int64_t)v; break;
    case UINT8: ((uint8_t *)p)[e] = (uint8_t)(int64_t)v; break;
    case INT32: ((int32_t *)p)[e] = (int32_t)(int64_t)v; break;
    case UINT32: ((uint32_t *)p)[e] = (uint32_t)(int64_t)v; break;
    case FLOAT16: ((uint16_t *)p)[e] = to_half((float)v); break;
    case BFLOAT16: { float f = (float)v; uint32_t b; memcpy(&b, &f, 4); ((uint16_t *)p)[e] = (uint16_t)(b >> 16); break; }
    case FLOAT32: ((float *)p)[e] = (float)v; break;
    case FLOAT64: ((double *)p)[e] = v; break;
    default: break;
    }
}

/* acc[e] = acc[e] op x[e] for `count` elements of `type`. */
static void reduce_into(char *acc, const char *x, size_t count, int type, int redop) {
    for (size_t e = 0; e < count; e++) {
        if (type == INT64 || type == UINT64) {
            int64_t a, b;
            memcpy(&a, acc + e * 8, 8);
            memcpy(&b, x + e * 8, 8);
            int64_t r = redop == PROD ? a * b : redop == MAX ? (a > b ? a : b) : redop == MIN ? (a < b ? a : b) : a + b;
            if (type == UINT64 && (redop == MAX || redop == MIN)) {
                uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
                r = (int64_t)(redop == MAX ? (ua > ub ? ua : ub) : (ua < ub ? ua : ub));
            }
            memcpy(acc + e * 8, &r, 8);
            continue;
        }
        double a = get(acc, type, e), b = get(x, type, e);
        double r = redop == PROD ? a * b : redop == MAX ? (a > b ? a : b) : redop == MIN ? (a < b ? a : b) : a + b;
        set(acc, type, e, r);
    }
}
/* ncclAvg: the sum divided by the ranks, in the element type. */
static void finish(char *acc, size_t count, int type, int redop, int n) {
    if (redop != AVG) return;
    for (size_t e = 0; e < count; e++) {
        if (type == INT64 || type == UINT64) {
            int64_t a;
            memcpy(&a, acc + e * 8, 8);
            a /= n;
            memcpy(acc + e * 8, &a, 8);
        } else {
            set(acc, type, e, get(acc, type, e) / n);
        }
    }
}

static struct op ops[MAX_OPS];
static int op_count, depth;
static unsigned id_counter;

static double env_double(const char *name, double fallback) {
    const char *v = getenv(name);
    return v && *v ? atof(v) : fallback;
}

static char last_error[512];
static void set_last_error(const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(last_error, sizeof last_error, format, args);
    va_end(args);
}
const char *ncclGetLastError(struct comm *c) { (void)c; return last_error; }
int ncclCommGetAsyncError(struct comm *c, int *error) { *error = c->async_error; return OK; }

static void nap_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

int ncclGetVersion(int *v) { *v = 22105; return OK; }
const char *ncclGetErrorString(int code) {
    switch (code) {
    case SYSTEM_ERROR: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case INVALID_USAGE: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case REMOTE_ERROR: return "remote process exited or there was a network error";
    default: return "unknown result code";
    }
}
int ncclGetUniqueId(ncclUniqueId *id) {
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "fake-nccl-%u", ++id_counter);
    return OK;
}
static const char *shared_dir_early(void) {
    const char *d = getenv("FAKE_NCCL_DIR");
    return d && *d ? d : NULL;
}
static int init_across(struct comm *c);

/* Communicators made in this process whose init has not completed. Real
 * NCCL's init blocks until every rank of the id has joined; with no other
 * process to bring the missing ones, that is a hang (bounded by
 * FAKE_NCCL_WAIT_S, then ncclSystemError), never an immediate error. */
static struct comm *pending[MAX_RANKS];
static int pending_count;
static int await_ranks(void) {
    for (int i = 0; i < pending_count; i++) {
        int have = 0;
        for (int j = 0; j < pending_count; j++) have += !memcmp(&pending[j]->id, &pending[i]->id, sizeof pending[i]->id);
        if (have < pending[i]->nranks) {
            double wait = env_double("FAKE_NCCL_WAIT_S", 3600.0);
            for (double waited = 0; waited < wait; waited += 0.01) nap_ms(10);
            pending_count = 0;
            return SYSTEM_ERROR;
        }
    }
    pending_count = 0;
    return OK;
}

int ncclCommInitRank(struct comm **comm, int nranks, ncclUniqueId id, int rank) {
    if (getenv("FAKE_NCCL_INIT_FAIL")) return SYSTEM_ERROR;
    if (rank < 0 || rank >= nranks || nranks > MAX_RANKS) return INVALID_ARGUMENT;
    struct comm *c = calloc(1, sizeof *c);
    c->rank = rank;
    c->nranks = nranks;
    c->id = id;
    for (int r = 0; r < nranks; r++) c->world[r] = r;
    const char *die = getenv("FAKE_NCCL_EXIT_AT_INIT");
    if (die && *die && atoi(die) == rank) raise(SIGKILL);
    if (shared_dir_early() && init_across(c)) { free(c); return SYSTEM_ERROR; }
    *comm = c;
    if (!shared_dir_early()) {
        /* One process: the ranks of this id so far; init completes (at the
         * group's end, or now outside a group) only when all have come. */
        if (pending_count < MAX_RANKS) pending[pending_count++] = c;
        if (!depth) return await_ranks();
    }
    return OK;
}
int ncclCommCount(struct comm *c, int *n) { *n = c->nranks; return OK; }
int ncclCommUserRank(struct comm *c, int *r) { *r = c->rank; return OK; }
/* Destroying waits for the communicator's work; work stuck on a dead peer
 * never finishes, so this hangs (bounded by FAKE_NCCL_WAIT_S). */
int ncclCommDestroy(struct comm *c) {
    if (c->async_error != OK) {
        double wait = env_double("FAKE_NCCL_WAIT_S", 3600.0);
        for (double waited = 0; waited < wait; waited += 0.01) nap_ms(10);
    }
    free(c);
    return OK;
}
int ncclCommAbort(struct comm *c) { free(c); return OK; }

/* One process's group runs at once, as NCCL launches a group's work together:
 * every operation starts when the group does (the latest of its streams), and
 * each stream is busy for the sum of what it sends or of what it receives,
 * whichever is longer (a GPU's link is shared by its own transfers). */
#define MAX_STREAMS 64
static struct { void *stream; double send, recv; } busy[MAX_STREAMS];
static int busy_count;
static double group_start;

static void begin_group_time(void) {
    group_start = 0;
    busy_count = 0;
    for (int i = 0; i < op_count; i++) {
        double t = *fake_cuda_stream_clock(ops[i].stream);
        if (t > group_start) group_start = t;
    }
}
static void add_busy(void *stream, double send, double recv) {
    int i = 0;
    while (i < busy_count && busy[i].stream != stream) i++;
    if (i == busy_count) {
        if (busy_count == MAX_STREAMS) return;
        busy[busy_count++] = (typeof(busy[0])){stream, 0, 0};
    }
    busy[i].send += send;
    busy[i].recv += recv;
}
static void end_group_time(void) {
    for (int i = 0; i < busy_count; i++) {
        double longest = busy[i].send > busy[i].recv ? busy[i].send : busy[i].recv;
        double *clock = fake_cuda_stream_clock(busy[i].stream);
        if (group_start + LATENCY + longest > *clock) *clock = group_start + LATENCY + longest;
    }
    busy_count = 0;
}
static void sync_clocks(struct op **members, int n, double seconds) {
    for (int i = 0; i < n; i++) add_busy(members[i]->stream, seconds, seconds);
}

static int run_collective(struct op *first) {
    int n = first->comm->nranks;
    struct op *by_rank[MAX_RANKS] = {0};
    int found = 0;
    for (int i = 0; i < op_count; i++) {
        struct op *o = &ops[i];
        if (!o->done && o->kind == first->kind && !memcmp(&o->comm->id, &first->comm->id, sizeof o->comm->id) && !by_rank[o->comm->rank]) {
            by_rank[o->comm->rank] = o;
            found++;
        }
    }
    if (found != n) return INVALID_USAGE; /* every rank must be in this process's group */
    size_t count = first->count, size = type_size(first->type), bytes = count * size;
    size_t total = count;
    int type = first->type, redop = first->redop;
    double factor = 1.0;
    char *acc = malloc(bytes ? bytes : 1);
    if (!acc) return SYSTEM_ERROR;
    switch (first->kind) {
    case ALL_REDUCE:
    case REDUCE:
        factor = first->kind == ALL_REDUCE ? 2.0 * (n - 1) / n : 1.0;
        memcpy(acc, by_rank[0]->send, bytes);
        for (int r = 1; r < n; r++) reduce_into(acc, by_rank[r]->send, count, type, redop);
        finish(acc, count, type, redop, n);
        if (first->kind == ALL_REDUCE)
            for (int r = 0; r < n; r++) memcpy(by_rank[r]->recv, acc, bytes);
        else
            memcpy(by_rank[first->other]->recv, acc, bytes);
        break;
    case BROADCAST:
        for (int r = 0; r < n; r++) memmove(by_rank[r]->recv, by_rank[first->other]->send, bytes);
        break;
    case ALL_GATHER:
        total = count * n;
        factor = (double)(n - 1) / n;
        for (int r = 0; r < n; r++)
            for (int from = 0; from < n; from++) memmove(by_rank[r]->recv + from * bytes, by_rank[from]->send, bytes);
        break;
    case REDUCE_SCATTER:
        total = count * n;
        factor = (double)(n - 1) / n;
        for (int r = 0; r < n; r++) {
            memcpy(acc, by_rank[0]->send + r * bytes, bytes);
            for (int from = 1; from < n; from++) reduce_into(acc, by_rank[from]->send + r * bytes, count, type, redop);
            finish(acc, count, type, redop, n);
            memcpy(by_rank[r]->recv, acc, bytes);
        }
        break;
    }
    free(acc);
    const char *corrupt = getenv("FAKE_NCCL_CORRUPT");
    if (corrupt && !strcmp(corrupt, names[first->kind])) set(by_rank[0]->recv, type, 0, get(by_rank[0]->recv, type, 0) + 1);
    sync_clocks(by_rank, n, (double)total * size * factor / (env_double("FAKE_NCCL_BUSBW_GBPS", 20.0) * 1e9));
    for (int r = 0; r < n; r++) by_rank[r]->done = 1;
    return OK;
}

static double hop_gbps(int from, int to) {
    const char *slow = getenv("FAKE_NCCL_SLOW_HOP");
    int a, b;
    double gbps;
    if (slow && sscanf(slow, "%d-%d:%lf", &a, &b, &gbps) == 3 && a == from && b == to) return gbps;
    return env_double("FAKE_NCCL_P2P_GBPS", 22.0);
}

static int run_send(struct op *send) {
    for (int i = 0; i < op_count; i++) {
        struct op *recv = &ops[i];
        if (recv->done || recv->kind != RECV || recv->comm->rank != send->other || recv->other != send->comm->rank) continue;
        if (recv->count != send->count) return INVALID_USAGE;
        if (recv->type != send->type) return INVALID_USAGE;
        if (send->count) memmove(recv->recv, send->send, send->count * type_size(send->type));
        double gbps = send->comm->rank == recv->comm->rank ? 1000.0 : hop_gbps(send->comm->rank, recv->comm->rank);
        double seconds = (double)send->count * type_size(send->type) / (gbps * 1e9);
        add_busy(send->stream, seconds, 0);
        add_busy(recv->stream, 0, seconds);
        send->done = recv->done = 1;
        return OK;
    }
    return INVALID_USAGE; /* the receiving rank is not in this process's group */
}

/* ---- several processes, through files in FAKE_NCCL_DIR ---- */

static const char *shared_dir(void) {
    const char *d = getenv("FAKE_NCCL_DIR");
    return d && *d ? d : NULL;
}

static double rank_gbps(int world_rank) {
    const char *list = getenv("FAKE_NCCL_RANK_GBPS");
    while (list && *list) {
        int r;
        double g;
        if (sscanf(list, "%d:%lf", &r, &g) == 2 && r == world_rank) return g;
        list = strchr(list, ',');
        if (list) list++;
    }
    return env_double("FAKE_NCCL_P2P_GBPS", 22.0);
}

static void path_of(char *out, size_t len, struct comm *c, const char *what, unsigned n, int a, int b) {
    snprintf(out, len, "%s/%s.%s.%u.%d.%d", shared_dir(), c->id.internal, what, n, a, b);
}

static int put(const char *path, const void *data, size_t bytes) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return SYSTEM_ERROR;
    size_t done = bytes ? fwrite(data, 1, bytes, f) : 0;
    fclose(f);
    if (done != bytes || rename(tmp, path)) return SYSTEM_ERROR;
    return OK;
}

/* Whether process `pid` has ended: gone, or a zombie not yet reaped (its
 * sockets are closed either way). */
static int process_gone(int pid) {
    if (kill(pid, 0) != 0 && errno == ESRCH) return 1;
    char path[64], stat[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = 0;
    const char *close = strrchr(stat, ')');
    return close && close[1] == ' ' && close[2] == 'Z';
}

/* Reads all `bytes` of `path` into `data`: OK, SYSTEM_ERROR when short, or
 * NOT_THERE when the file is not (yet) there. */
enum { NOT_THERE = -1 };
static int read_whole(const char *path, void *data, size_t bytes) {
    FILE *f = fopen(path, "rb");
    if (!f) return NOT_THERE;
    size_t got = bytes ? fread(data, 1, bytes, f) : 0;
    fclose(f);
    return got == bytes ? OK : SYSTEM_ERROR;
}

/* Waits for `path` (from member `peer` of `c`) and reads `bytes` of it into
 * `data`; a peer process that is gone is a remote error, as NCCL sees its
 * socket close. */
static int take_from(struct comm *c, int peer, const char *path, void *data, size_t bytes) {
    double wait = env_double("FAKE_NCCL_WAIT_S", 3600.0);
    for (double waited = 0; waited < wait; waited += 0.001) {
        int rc = read_whole(path, data, bytes);
        if (rc != NOT_THERE) return rc;
        /* Not there yet: a peer process that has ended will never write it.
         * What it sent before it ended still arrives (as over a socket), so
         * the file is looked for once more after the peer is seen gone: it
         * may have been written, and the peer ended, between the two looks. */
        int pid = c && peer >= 0 && peer < MAX_RANKS ? c->pid[peer] : 0;
        if (pid > 0 && process_gone(pid)) {
            if ((rc = read_whole(path, data, bytes)) != NOT_THERE) return rc;
            c->async_error = REMOTE_ERROR;
            set_last_error("NET/Socket : peer rank %d (pid %d) closed the connection", c->world[peer], pid);
            return REMOTE_ERROR;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return SYSTEM_ERROR; /* only after FAKE_NCCL_WAIT_S: the real library hangs */
}
static int take(const char *path, void *data, size_t bytes) { return take_from(NULL, -1, path, data, bytes); }

/* ncclCommInitRank across processes: publish this rank's pid, wait for every
 * other rank's (hanging while one is missing). */
static int init_across(struct comm *c) {
    char path[1024];
    int mine = (int)getpid();
    path_of(path, sizeof path, c, "init", 0, c->rank, 0);
    if (put(path, &mine, sizeof mine)) return SYSTEM_ERROR;
    for (int r = 0; r < c->nranks; r++) {
        path_of(path, sizeof path, c, "init", 0, r, 0);
        if (take(path, &c->pid[r], sizeof c->pid[r])) return SYSTEM_ERROR;
    }
    return OK;
}

static void maybe_exit_at(struct comm *c, unsigned seq) {
    const char *at = getenv("FAKE_NCCL_EXIT_AT");
    int rank;
    unsigned n;
    if (at && sscanf(at, "%d:%u", &rank, &n) == 2 && rank == c->world[c->rank] && n == seq) raise(SIGKILL);
}

static double slowest(struct comm *c, int a, int b) {
    double g = 1e9;
    for (int r = 0; r < c->nranks; r++) {
        if ((a >= 0 && r != a && r != b)) continue;
        double x = rank_gbps(c->world[r]);
        if (x < g) g = x;
    }
    return g;
}

static int cross_collective(struct op *o) {
    struct comm *c = o->comm;
    if (c->async_error != OK) return c->async_error;
    unsigned seq = c->seq++;
    maybe_exit_at(c, seq);
    size_t size = type_size(o->type), in_bytes = o->count * size;
    char path[1024];
    /* A collective starts on every rank when the last one arrives: each
     * publishes when its stream reaches it, and all start at the latest. */
    double start = *fake_cuda_stream_clock(o->stream);
    path_of(path, sizeof path, c, "start", seq, c->rank, 0);
    if (put(path, &start, sizeof start)) return SYSTEM_ERROR;
    for (int r = 0; r < c->nranks; r++) {
        double theirs;
        path_of(path, sizeof path, c, "start", seq, r, 0);
        int rc = take_from(c, r, path, &theirs, sizeof theirs);
        if (rc) return rc;
        if (theirs > start) start = theirs;
    }
    path_of(path, sizeof path, c, "coll", seq, c->rank, 0);
    if (put(path, o->send, in_bytes)) return SYSTEM_ERROR;
    char *peer = malloc(in_bytes ? in_bytes : 1);
    if (!peer) return SYSTEM_ERROR;
    double factor = 1.0;
    if (o->kind == ALL_REDUCE) {
        factor = 2.0 * (c->nranks - 1) / c->nranks;
        if (o->send != o->recv) memmove(o->recv, o->send, in_bytes);
        for (int r = 0; r < c->nranks; r++) {
            if (r == c->rank) continue;
            path_of(path, sizeof path, c, "coll", seq, r, 0);
            int rc = take_from(c, r, path, peer, in_bytes);
            if (rc) { free(peer); return rc; }
            reduce_into(o->recv, peer, o->count, o->type, o->redop);
        }
        finish(o->recv, o->count, o->type, o->redop, c->nranks);
    } else if (o->kind == ALL_GATHER) {
        factor = (double)(c->nranks - 1) / c->nranks;
        for (int r = 0; r < c->nranks; r++) {
            path_of(path, sizeof path, c, "coll", seq, r, 0);
            int rc = take_from(c, r, path, o->recv + r * in_bytes, in_bytes);
            if (rc) { free(peer); return rc; }
        }
    } else {
        free(peer);
        return INVALID_USAGE;
    }
    free(peer);
    size_t total = o->kind == ALL_GATHER ? in_bytes * c->nranks : in_bytes;
    *fake_cuda_stream_clock(o->stream) = start + LATENCY + (double)total * factor / (slowest(c, -1, -1) * 1e9);
    return OK;
}

/* A send and its recv meet across processes: each side publishes when its
 * stream reaches the operation, and the transfer starts at the later of the
 * two (a rank that arrives early times its wait, as on real GPUs). Phase 1
 * numbers the op, publishes its clock and (a send) its data; phase 2 reads
 * the other side's clock and (a recv) the data. */
static int cross_p2p_publish(struct op *o) {
    struct comm *c = o->comm;
    char path[1024];
    size_t bytes = o->count * type_size(o->type);
    double mine = *fake_cuda_stream_clock(o->stream);
    int from = o->kind == SEND ? c->rank : o->other, to = o->kind == SEND ? o->other : c->rank;
    o->seq = o->kind == SEND ? c->sent[o->other]++ : c->received[o->other]++;
    path_of(path, sizeof path, c, o->kind == SEND ? "p2psclock" : "p2prclock", o->seq, from, to);
    if (put(path, &mine, sizeof mine)) return SYSTEM_ERROR;
    if (o->kind != SEND) return OK;
    path_of(path, sizeof path, c, "p2p", o->seq, from, to);
    return put(path, o->send, bytes);
}
static int cross_p2p_take(struct op *o, double *start) {
    struct comm *c = o->comm;
    char path[1024];
    size_t bytes = o->count * type_size(o->type);
    int from = o->kind == SEND ? c->rank : o->other, to = o->kind == SEND ? o->other : c->rank;
    double theirs = 0;
    if (c->async_error) return c->async_error;
    path_of(path, sizeof path, c, o->kind == SEND ? "p2prclock" : "p2psclock", o->seq, from, to);
    int rc = take_from(c, o->other, path, &theirs, sizeof theirs);
    if (rc) return rc;
    if (theirs > *start) *start = theirs;
    if (o->kind == SEND) return OK;
    path_of(path, sizeof path, c, "p2p", o->seq, from, to);
    return take_from(c, o->other, path, o->recv, bytes);
}

/* A group's send/recv pairs with one peer run at once, both ways: the time
 * of the group is the largest of its transfers, from when both sides of
 * every pair have arrived. */
static int run_cross_group(void) {
    int result = OK;
    double longest = 0, start = 0;
    void *stream = NULL;
    for (int i = 0; i < op_count && result == OK; i++) {
        struct op *o = &ops[i];
        if (o->kind != SEND && o->kind != RECV) continue;
        result = cross_p2p_publish(o);
        double t = (double)o->count * type_size(o->type) / (slowest(o->comm, o->comm->rank, o->other) * 1e9);
        if (t > longest) longest = t;
        stream = o->stream;
    }
    for (int i = 0; i < op_count && result == OK; i++) {
        struct op *o = &ops[i];
        result = o->kind == SEND || o->kind == RECV ? cross_p2p_take(o, &start) : cross_collective(o);
    }
    if (stream && result == OK) {
        double *clock = fake_cuda_stream_clock(stream);
        if (start > *clock) *clock = start;
        *clock += LATENCY + longest;
    }
    op_count = 0;
    return result;
}

int ncclCommSplit(struct comm *c, int color, int key, struct comm **out, void *config) {
    (void)config;
    if (!shared_dir()) return INVALID_USAGE;
    unsigned n = c->splits++;
    int mine[3] = {color, key, c->world[c->rank]};
    char path[1024];
    path_of(path, sizeof path, c, "split", n, c->rank, 0);
    if (put(path, mine, sizeof mine)) return SYSTEM_ERROR;
    int all[MAX_RANKS][3];
    for (int r = 0; r < c->nranks; r++) {
        path_of(path, sizeof path, c, "split", n, r, 0);
        int rc = take_from(c, r, path, all[r], sizeof all[r]);
        if (rc) return rc;
    }
    *out = NULL;
    if (color < 0) return OK;
    struct comm *s = calloc(1, sizeof *s);
    snprintf(s->id.internal, sizeof s->id.internal, "%.90s-s%uc%d", c->id.internal, n, color);
    /* Members of this color in (key, rank) order. */
    for (int r = 0; r < c->nranks; r++) {
        if (all[r][0] != color) continue;
        int at = s->nranks++;
        while (at > 0 && (all[s->world[at - 1]][1] > all[r][1])) { s->world[at] = s->world[at - 1]; at--; }
        s->world[at] = r;
    }
    for (int i = 0; i < s->nranks; i++) {
        if (s->world[i] == c->rank) s->rank = i;
        s->pid[i] = c->pid[s->world[i]];
        s->world[i] = all[s->world[i]][2];
    }
    *out = s;
    return OK;
}

static int run_local_group(void);

/* Bytes an operation writes to its output buffer. */
static size_t output_bytes(struct op *o) {
    size_t bytes = o->count * type_size(o->type);
    if (o->kind == SEND || !o->recv) return 0;
    return o->kind == ALL_GATHER ? bytes * (size_t)o->comm->nranks : bytes;
}

/* A group's results land like a kernel's: computed now, but the output
 * buffers keep their old contents until the stream is waited for. */
static int run_group(void) {
    /* Stream order: the copies queued before the group are done first. */
    fake_cuda_run_queue();
    int n = op_count;
    for (int i = 0; i < n; i++) {
        size_t bytes = output_bytes(&ops[i]);
        ops[i].before = bytes ? malloc(bytes) : NULL;
        if (ops[i].before) memcpy(ops[i].before, ops[i].recv, bytes);
    }
    int result = shared_dir() ? run_cross_group() : run_local_group();
    for (int i = 0; i < n; i++) {
        size_t bytes = output_bytes(&ops[i]);
        char *after = ops[i].before ? malloc(bytes) : NULL;
        if (after) {
            memcpy(after, ops[i].recv, bytes);
            memcpy(ops[i].recv, ops[i].before, bytes);
            if (fake_cuda_queue_result(ops[i].recv, after, bytes)) memcpy(ops[i].recv, after, bytes);
        }
        free(ops[i].before);
        ops[i].before = NULL;
    }
    return result;
}

static int run_local_group(void) {
    int result = OK;
    begin_group_time();
    for (int i = 0; i < op_count && result == OK; i++) {
        struct op *o = &ops[i];
        if (o->done || o->kind == RECV) continue;
        result = o->kind == SEND ? run_send(o) : run_collective(o);
    }
    for (int i = 0; i < op_count && result == OK; i++)
        if (!ops[i].done) result = INVALID_USAGE;
    end_group_time();
    op_count = 0;
    return result;
}

static int enqueue(int kind, const void *send, void *recv, size_t count, int other, struct comm *comm, void *stream,
                   int type, int redop) {
    if (op_count == MAX_OPS) return INVALID_USAGE;
    if (!type_size(type) || redop < SUM || redop > AVG) return INVALID_ARGUMENT;
    ops[op_count++] = (struct op){kind, send, recv, count, other, comm, stream, 0, type, redop, 0, NULL};
    return depth ? OK : run_group();
}

int ncclGroupStart(void) { depth++; return OK; }
int ncclGroupEnd(void) {
    if (depth == 0) return INVALID_USAGE;
    if (--depth) return OK;
    int inits = pending_count ? await_ranks() : OK;
    return inits ? inits : run_group();
}
int ncclAllReduce(const void *s, void *r, size_t n, int type, int op, struct comm *c, void *st) {
    return enqueue(ALL_REDUCE, s, r, n, 0, c, st, type, op);
}
int ncclAllGather(const void *s, void *r, size_t n, int type, struct comm *c, void *st) {
    return enqueue(ALL_GATHER, s, r, n, 0, c, st, type, SUM);
}
int ncclReduceScatter(const void *s, void *r, size_t n, int type, int op, struct comm *c, void *st) {
    return enqueue(REDUCE_SCATTER, s, r, n, 0, c, st, type, op);
}
int ncclBroadcast(const void *s, void *r, size_t n, int type, int root, struct comm *c, void *st) {
    return enqueue(BROADCAST, s, r, n, root, c, st, type, SUM);
}
int ncclReduce(const void *s, void *r, size_t n, int type, int op, int root, struct comm *c, void *st) {
    return enqueue(REDUCE, s, r, n, root, c, st, type, op);
}
int ncclSend(const void *s, size_t n, int type, int peer, struct comm *c, void *st) {
    return enqueue(SEND, s, NULL, n, peer, c, st, type, SUM);
}
int ncclRecv(void *r, size_t n, int type, int peer, struct comm *c, void *st) {
    return enqueue(RECV, NULL, r, n, peer, c, st, type, SUM);
}
