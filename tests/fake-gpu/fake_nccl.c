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
 *   FAKE_NCCL_INIT_FAIL   set: ncclCommInitRank fails with ncclSystemError
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double *fake_cuda_stream_clock(void *s);

typedef struct { char internal[128]; } ncclUniqueId;

enum { OK = 0, SYSTEM_ERROR = 2, INVALID_ARGUMENT = 4, INVALID_USAGE = 5 };
enum { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, REDUCE, SEND, RECV };
static const char *names[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "send", "recv"};

#define MAX_RANKS 64
#define MAX_OPS 4096
#define LATENCY 10e-6

struct comm { int rank, nranks; ncclUniqueId id; };
struct op { int kind; const float *send; float *recv; size_t count; int other; struct comm *comm; void *stream; int done; };

static struct op ops[MAX_OPS];
static int op_count, depth;
static unsigned id_counter;

static double env_double(const char *name, double fallback) {
    const char *v = getenv(name);
    return v && *v ? atof(v) : fallback;
}

int ncclGetVersion(int *v) { *v = 22105; return OK; }
const char *ncclGetErrorString(int code) {
    switch (code) {
    case SYSTEM_ERROR: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case INVALID_USAGE: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    default: return "unknown result code";
    }
}
int ncclGetUniqueId(ncclUniqueId *id) {
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "fake-nccl-%u", ++id_counter);
    return OK;
}
int ncclCommInitRank(struct comm **comm, int nranks, ncclUniqueId id, int rank) {
    if (getenv("FAKE_NCCL_INIT_FAIL")) return SYSTEM_ERROR;
    if (rank < 0 || rank >= nranks || nranks > MAX_RANKS) return INVALID_ARGUMENT;
    struct comm *c = calloc(1, sizeof *c);
    c->rank = rank;
    c->nranks = nranks;
    c->id = id;
    *comm = c;
    return OK;
}
int ncclCommDestroy(struct comm *c) { free(c); return OK; }
int ncclCommAbort(struct comm *c) { free(c); return OK; }

static void sync_clocks(struct op **members, int n, double seconds) {
    double start = 0;
    for (int i = 0; i < n; i++) {
        double t = *fake_cuda_stream_clock(members[i]->stream);
        if (t > start) start = t;
    }
    for (int i = 0; i < n; i++) *fake_cuda_stream_clock(members[i]->stream) = start + LATENCY + seconds;
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
    size_t count = first->count;
    size_t total = count;
    double factor = 1.0;
    switch (first->kind) {
    case ALL_REDUCE:
        factor = 2.0 * (n - 1) / n;
        for (size_t e = 0; e < count; e++) {
            float sum = 0;
            for (int r = 0; r < n; r++) sum += by_rank[r]->send[e];
            for (int r = 0; r < n; r++) by_rank[r]->recv[e] = sum;
        }
        break;
    case REDUCE:
        for (size_t e = 0; e < count; e++) {
            float sum = 0;
            for (int r = 0; r < n; r++) sum += by_rank[r]->send[e];
            by_rank[first->other]->recv[e] = sum;
        }
        break;
    case BROADCAST:
        for (int r = 0; r < n; r++) memcpy(by_rank[r]->recv, by_rank[first->other]->send, count * sizeof(float));
        break;
    case ALL_GATHER:
        total = count * n;
        factor = (double)(n - 1) / n;
        for (int r = 0; r < n; r++)
            for (int from = 0; from < n; from++)
                memcpy(by_rank[r]->recv + from * count, by_rank[from]->send, count * sizeof(float));
        break;
    case REDUCE_SCATTER:
        total = count * n;
        factor = (double)(n - 1) / n;
        for (int r = 0; r < n; r++)
            for (size_t e = 0; e < count; e++) {
                float sum = 0;
                for (int from = 0; from < n; from++) sum += by_rank[from]->send[r * count + e];
                by_rank[r]->recv[e] = sum;
            }
        break;
    }
    const char *corrupt = getenv("FAKE_NCCL_CORRUPT");
    if (corrupt && !strcmp(corrupt, names[first->kind])) by_rank[0]->recv[0] += 1.0f;
    sync_clocks(by_rank, n, (double)total * sizeof(float) * factor / (env_double("FAKE_NCCL_BUSBW_GBPS", 20.0) * 1e9));
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
        if (send->count) memmove(recv->recv, send->send, send->count * sizeof(float));
        struct op *pair[2] = {send, recv};
        double gbps = send->comm->rank == recv->comm->rank ? 1000.0 : hop_gbps(send->comm->rank, recv->comm->rank);
        sync_clocks(pair, 2, (double)send->count * sizeof(float) / (gbps * 1e9));
        send->done = recv->done = 1;
        return OK;
    }
    return INVALID_USAGE; /* the receiving rank is not in this process's group */
}

static int run_group(void) {
    int result = OK;
    for (int i = 0; i < op_count && result == OK; i++) {
        struct op *o = &ops[i];
        if (o->done || o->kind == RECV) continue;
        result = o->kind == SEND ? run_send(o) : run_collective(o);
    }
    for (int i = 0; i < op_count && result == OK; i++)
        if (!ops[i].done) result = INVALID_USAGE;
    op_count = 0;
    return result;
}

static int enqueue(int kind, const void *send, void *recv, size_t count, int other, struct comm *comm, void *stream) {
    if (op_count == MAX_OPS) return INVALID_USAGE;
    ops[op_count++] = (struct op){kind, send, recv, count, other, comm, stream, 0};
    return depth ? OK : run_group();
}

int ncclGroupStart(void) { depth++; return OK; }
int ncclGroupEnd(void) {
    if (depth == 0) return INVALID_USAGE;
    return --depth ? OK : run_group();
}
int ncclAllReduce(const void *s, void *r, size_t n, int type, int op, struct comm *c, void *st) {
    (void)type; (void)op;
    return enqueue(ALL_REDUCE, s, r, n, 0, c, st);
}
int ncclAllGather(const void *s, void *r, size_t n, int type, struct comm *c, void *st) {
    (void)type;
    return enqueue(ALL_GATHER, s, r, n, 0, c, st);
}
int ncclReduceScatter(const void *s, void *r, size_t n, int type, int op, struct comm *c, void *st) {
    (void)type; (void)op;
    return enqueue(REDUCE_SCATTER, s, r, n, 0, c, st);
}
int ncclBroadcast(const void *s, void *r, size_t n, int type, int root, struct comm *c, void *st) {
    (void)type;
    return enqueue(BROADCAST, s, r, n, root, c, st);
}
int ncclReduce(const void *s, void *r, size_t n, int type, int op, int root, struct comm *c, void *st) {
    (void)type; (void)op;
    return enqueue(REDUCE, s, r, n, root, c, st);
}
int ncclSend(const void *s, size_t n, int type, int peer, struct comm *c, void *st) {
    (void)type;
    return enqueue(SEND, s, NULL, n, peer, c, st);
}
int ncclRecv(void *r, size_t n, int type, int peer, struct comm *c, void *st) {
    (void)type;
    return enqueue(RECV, NULL, r, n, peer, c, st);
}
