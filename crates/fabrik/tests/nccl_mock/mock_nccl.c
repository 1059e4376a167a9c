/* MOCK libnccl.so.2 for fabrik's tests on machines without a GPU (no NVIDIA code here).
 * Buffers are host memory (see testbed/mocks/mock-libcuda.c). Ranks of one communicator meet in a POSIX shared
 * memory segment named after the unique id, so the id really must travel from rank 0 to every
 * rank; each collective copies this rank's input into its slot, waits for all ranks, and
 * computes its own output from every slot (integers in 64-bit integer arithmetic, floating
 * types in double, stored back in the type).
 * Operations complete synchronously, before the call returns.
 * Environment: MOCK_NCCL_INIT_FAIL=1 makes ncclCommInitRank fail with ncclSystemError;
 * MOCK_NCCL_CORRUPT_INDEX=k adds 1 to element k of every all_reduce result on rank
 * MOCK_NCCL_CORRUPT_RANK (default 0); MOCK_NCCL_EXIT_RANK=r makes rank r exit (status 9) in its
 * first all_reduce, leaving the others blocked in it as with a peer that died. */
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef int ncclResult_t;
typedef struct { char internal[128]; } ncclUniqueId;

#define SLOT (16u << 20)
#define HDR 4096u
#define MAXP 64

struct hdr {
  volatile int ready;
  int nranks;
  pthread_barrier_t bar;
};

struct pending { const void *sbuf; void *rbuf; size_t count; int dt; int peer; int is_send; };

typedef struct comm {
  int rank, nranks;
  unsigned char *base; /* header + nranks slots */
  size_t maplen;
  char name[64];
} *ncclComm_t;

static __thread char last_err[256];
static __thread int in_group;
static __thread struct pending pend[2 * MAXP];
static __thread int npend;
static __thread ncclComm_t group_comm;

static ncclResult_t fail(ncclResult_t r, const char *msg) {
  snprintf(last_err, sizeof last_err, "%s", msg);
  return r;
}

ncclResult_t ncclGetVersion(int *v) {
  const char *s = getenv("MOCK_NCCL_VERSION");
  *v = s ? atoi(s) : 22105;
  return 0;
}

const char *ncclGetErrorString(ncclResult_t r) {
  switch (r) {
  case 0: return "no error";
  case 2: return "mock: unhandled system error";
  case 4: return "mock: invalid argument";
  case 5: return "mock: invalid usage";
  default: return "mock: error";
  }
}

const char *ncclGetLastError(ncclComm_t c) { (void)c; return last_err; }

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  unsigned char rnd[8] = {0};
  int fd = open("/dev/urandom", O_RDONLY);
  if (fd >= 0) { if (read(fd, rnd, sizeof rnd) < 0) rnd[0] = 1; close(fd); }
  memset(id->internal, 0, sizeof id->internal);
  snprintf(id->internal, sizeof id->internal, "fabrikmock-%d-%02x%02x%02x%02x%02x%02x%02x%02x",
           (int)getpid(), rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
  return 0;
}

static unsigned char *slot(ncclComm_t c, int r) { return c->base + HDR + (size_t)r * SLOT; }

static void barrier(ncclComm_t c) {
  if (c->nranks > 1) pthread_barrier_wait(&((struct hdr *)c->base)->bar);
}

ncclResult_t ncclCommInitRank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank) {
  const char *f = getenv("MOCK_NCCL_INIT_FAIL");
  if (f && *f == '1') return fail(2, "mock: bootstrap refused by MOCK_NCCL_INIT_FAIL");
  if (nranks < 1 || nranks > MAXP || rank < 0 || rank >= nranks) return fail(4, "mock: bad rank");
  if (strncmp(id.internal, "fabrikmock-", 11) != 0) return fail(4, "mock: not a mock unique id");
  ncclComm_t c = calloc(1, sizeof *c);
  c->rank = rank;
  c->nranks = nranks;
  c->maplen = HDR + (size_t)nranks * SLOT;
  if (nranks == 1) {
    c->base = calloc(1, c->maplen);
    *out = c;
    return 0;
  }
  id.internal[60] = 0;
  snprintf(c->name, sizeof c->name, "/%.60s", id.internal);
  int fd = -1;
  if (rank == 0) {
    fd = shm_open(c->name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)c->maplen) != 0) return fail(2, "mock: shm_open failed");
  } else {
    for (int i = 0; i < 3000 && fd < 0; i++) {
      fd = shm_open(c->name, O_RDWR, 0600);
      struct stat st;
      if (fd >= 0 && (fstat(fd, &st) != 0 || (size_t)st.st_size < c->maplen)) { close(fd); fd = -1; }
      if (fd < 0) usleep(10000);
    }
    if (fd < 0) return fail(2, "mock: rank 0's segment never appeared (was the unique id passed?)");
  }
  c->base = mmap(NULL, c->maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (c->base == MAP_FAILED) return fail(2, "mock: mmap failed");
  struct hdr *h = (struct hdr *)c->base;
  if (rank == 0) {
    pthread_barrierattr_t a;
    pthread_barrierattr_init(&a);
    pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&h->bar, &a, (unsigned)nranks);
    h->nranks = nranks;
    __atomic_store_n(&h->ready, 1, __ATOMIC_RELEASE);
  } else {
    for (int i = 0; i < 3000 && !__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE); i++) usleep(10000);
    if (!h->ready) return fail(2, "mock: rank 0 never initialised the segment");
  }
  barrier(c);
  if (rank == 0) shm_unlink(c->name);
  *out = c;
  return 0;
}

static ncclResult_t finish(ncclComm_t c) {
  if (!c) return 4;
  if (c->nranks == 1) free(c->base); else munmap(c->base, c->maplen);
  free(c);
  return 0;
}
ncclResult_t ncclCommDestroy(ncclComm_t c) { return finish(c); }
ncclResult_t ncclCommAbort(ncclComm_t c) { return finish(c); }
ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *e) { (void)c; *e = 0; return 0; }

/* ncclDataType_t: 0 int8, 1 uint8, 2 int32, 3 uint32, 4 int64, 5 uint64, 6 half, 7 float,
 * 8 double, 9 bfloat16. */
static size_t dsize(int dt) {
  static const size_t s[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
  return (dt >= 0 && dt <= 9) ? s[dt] : 0;
}

static float h2f(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? INFINITY : ldexpf(1.0f + m / 1024.0f, e - 15);
  return (h & 0x8000) ? -v : v;
}
static uint16_t f2h(float f) {
  uint16_t sign = signbit(f) ? 0x8000 : 0;
  float a = fabsf(f);
  if (a == 0) return sign;
  int e;
  float m = frexpf(a, &e);
  int E = e - 1 + 15;
  if (E >= 31) return sign | 0x7c00;
  if (E <= 0) return sign | (uint16_t)lrintf(a * 16777216.0f);
  long mant = lrintf((m * 2 - 1) * 1024);
  if (mant == 1024) { mant = 0; E++; }
  return sign | (uint16_t)(E << 10) | (uint16_t)mant;
}
static float bf2f(uint16_t b) { uint32_t u = (uint32_t)b << 16; float f; memcpy(&f, &u, 4); return f; }
static uint16_t f2bf(float f) {
  uint32_t u; memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

static double load(int dt, const void *p, size_t i) {
  switch (dt) {
  case 0: return ((const int8_t *)p)[i];
  case 1: return ((const uint8_t *)p)[i];
  case 2: return ((const int32_t *)p)[i];
  case 3: return ((const uint32_t *)p)[i];
  case 4: return (double)((const int64_t *)p)[i];
  case 5: return (double)((const uint64_t *)p)[i];
  case 6: return h2f(((const uint16_t *)p)[i]);
  case 7: return ((const float *)p)[i];
  case 8: return ((const double *)p)[i];
  default: return bf2f(((const uint16_t *)p)[i]);
  }
}
static void store(int dt, void *p, size_t i, double v) {
  switch (dt) {
  case 0: ((int8_t *)p)[i] = (int8_t)(int64_t)v; break;
  case 1: ((uint8_t *)p)[i] = (uint8_t)(int64_t)v; break;
  case 2: ((int32_t *)p)[i] = (int32_t)(int64_t)v; break;
  case 3: ((uint32_t *)p)[i] = (uint32_t)(int64_t)v; break;
  case 4: ((int64_t *)p)[i] = (int64_t)v; break;
  case 5: ((uint64_t *)p)[i] = (uint64_t)(int64_t)v; break;
  case 6: ((uint16_t *)p)[i] = f2h((float)v); break;
  case 7: ((float *)p)[i] = (float)v; break;
  case 8: ((double *)p)[i] = v; break;
  default: ((uint16_t *)p)[i] = f2bf((float)v); break;
  }
}

static uint64_t load_u(int dt, const void *p, size_t i) {
  switch (dt) {
  case 0: return (uint64_t)(int64_t)((const int8_t *)p)[i];
  case 1: return ((const uint8_t *)p)[i];
  case 2: return (uint64_t)(int64_t)((const int32_t *)p)[i];
  case 3: return ((const uint32_t *)p)[i];
  default: return ((const uint64_t *)p)[i];
  }
}
static void store_u(int dt, void *p, size_t i, uint64_t v) {
  switch (dt) {
  case 0: ((int8_t *)p)[i] = (int8_t)v; break;
  case 1: ((uint8_t *)p)[i] = (uint8_t)v; break;
  case 2: ((int32_t *)p)[i] = (int32_t)v; break;
  case 3: ((uint32_t *)p)[i] = (uint32_t)v; break;
  default: ((uint64_t *)p)[i] = v; break;
  }
}
/* Integers reduce exactly in 64 bits (wrapping, compared signed or unsigned as the type is),
 * then truncate to the type, as NCCL's integer kernels do. */
static uint64_t reduce_int(int dt, int op, uint64_t a, uint64_t b) {
  int is_signed = dt == 0 || dt == 2 || dt == 4;
  switch (op) {
  case 1: return a * b;
  case 2: return is_signed ? ((int64_t)b > (int64_t)a ? b : a) : (b > a ? b : a);
  case 3: return is_signed ? ((int64_t)b < (int64_t)a ? b : a) : (b < a ? b : a);
  default: return a + b;
  }
}

/* out[i] = op over ranks of slot[r][off + i]; integer avg truncates, as NCCL's does. */
static void reduce_slots(ncclComm_t c, int dt, int op, size_t off, size_t count, void *out) {
  for (size_t i = 0; i < count; i++) {
    if (dt <= 5) {
      uint64_t acc = load_u(dt, slot(c, 0), off + i);
      for (int r = 1; r < c->nranks; r++) acc = reduce_int(dt, op, acc, load_u(dt, slot(c, r), off + i));
      /* Narrow first so that the sign of a wrapped sum is the type's. */
      store_u(dt, out, i, acc);
      if (op == 4) {
        uint64_t v = load_u(dt, out, i);
        int is_signed = dt == 0 || dt == 2 || dt == 4;
        store_u(dt, out, i, is_signed ? (uint64_t)((int64_t)v / c->nranks) : v / (uint64_t)c->nranks);
      }
      continue;
    }
    double acc = load(dt, slot(c, 0), off + i);
    for (int r = 1; r < c->nranks; r++) {
      double v = load(dt, slot(c, r), off + i);
      switch (op) {
      case 1: acc *= v; break;
      case 2: acc = v > acc ? v : acc; break;
      case 3: acc = v < acc ? v : acc; break;
      default: acc += v; break;
      }
    }
    if (op == 4) acc /= c->nranks;
    store(dt, out, i, acc);
  }
}

static ncclResult_t check(ncclComm_t c, int dt, size_t bytes) {
  if (!c) return fail(4, "mock: null communicator");
  if (!dsize(dt)) return fail(4, "mock: unknown data type");
  if (bytes > SLOT) return fail(4, "mock: message larger than the mock's 16 MiB slot");
  return 0;
}

static void corrupt(ncclComm_t c, int dt, void *recv, size_t count) {
  const char *k = getenv("MOCK_NCCL_CORRUPT_INDEX");
  const char *r = getenv("MOCK_NCCL_CORRUPT_RANK");
  if (!k || c->rank != (r ? atoi(r) : 0)) return;
  size_t i = (size_t)atol(k);
  if (i < count) store(dt, recv, i, load(dt, recv, i) + 1);
}

ncclResult_t ncclAllReduce(const void *s, void *d, size_t count, int dt, int op, ncclComm_t c, void *st) {
  (void)st;
  ncclResult_t e = check(c, dt, count * dsize(dt));
  if (e) return e;
  const char *x = getenv("MOCK_NCCL_EXIT_RANK");
  if (x && atoi(x) == c->rank) _exit(9);
  memmove(slot(c, c->rank), s, count * dsize(dt));
  barrier(c);
  reduce_slots(c, dt, op, 0, count, d);
  barrier(c);
  corrupt(c, dt, d, count);
  return 0;
}

ncclResult_t ncclReduce(const void *s, void *d, size_t count, int dt, int op, int root, ncclComm_t c, void *st) {
  (void)st;
  ncclResult_t e = check(c, dt, count * dsize(dt));
  if (e) return e;
  memmove(slot(c, c->rank), s, count * dsize(dt));
  barrier(c);
  if (c->rank == root) reduce_slots(c, dt, op, 0, count, d);
  barrier(c);
  return 0;
}

ncclResult_t ncclBroadcast(const void *s, void *d, size_t count, int dt, int root, ncclComm_t c, void *st) {
  (void)st;
  ncclResult_t e = check(c, dt, count * dsize(dt));
  if (e) return e;
  if (c->rank == root) memmove(slot(c, root), s, count * dsize(dt));
  barrier(c);
  memmove(d, slot(c, root), count * dsize(dt));
  barrier(c);
  return 0;
}

ncclResult_t ncclAllGather(const void *s, void *d, size_t count, int dt, ncclComm_t c, void *st) {
  (void)st;
  size_t b = count * dsize(dt);
  ncclResult_t e = check(c, dt, b);
  if (e) return e;
  memmove(slot(c, c->rank), s, b);
  barrier(c);
  for (int r = 0; r < c->nranks; r++) memmove((char *)d + (size_t)r * b, slot(c, r), b);
  barrier(c);
  return 0;
}

ncclResult_t ncclReduceScatter(const void *s, void *d, size_t count, int dt, int op, ncclComm_t c, void *st) {
  (void)st;
  ncclResult_t e = check(c, dt, count * dsize(dt) * (size_t)(c ? c->nranks : 1));
  if (e) return e;
  memmove(slot(c, c->rank), s, count * dsize(dt) * (size_t)c->nranks);
  barrier(c);
  reduce_slots(c, dt, op, (size_t)c->rank * count, count, d);
  barrier(c);
  return 0;
}

ncclResult_t ncclGroupStart(void) { in_group++; return 0; }

static ncclResult_t queue(const void *s, void *r, size_t count, int dt, int peer, ncclComm_t c, int is_send) {
  if (!in_group) return fail(5, "mock: ncclSend/ncclRecv only inside a group");
  ncclResult_t e = check(c, dt, count * dsize(dt) * (size_t)c->nranks);
  if (e) return e;
  if (npend >= 2 * MAXP || peer < 0 || peer >= c->nranks) return fail(4, "mock: bad peer");
  pend[npend++] = (struct pending){s, r, count, dt, peer, is_send};
  group_comm = c;
  return 0;
}
ncclResult_t ncclSend(const void *s, size_t count, int dt, int peer, ncclComm_t c, void *st) {
  (void)st;
  return queue(s, NULL, count, dt, peer, c, 1);
}
ncclResult_t ncclRecv(void *r, size_t count, int dt, int peer, ncclComm_t c, void *st) {
  (void)st;
  return queue(NULL, r, count, dt, peer, c, 0);
}

/* Sends to peer p land in this rank's slot at block p; a receive from q reads q's slot at the
 * block of this rank (equal counts, as in all-to-all). */
ncclResult_t ncclGroupEnd(void) {
  if (in_group == 0) return fail(5, "mock: ncclGroupEnd without ncclGroupStart");
  if (--in_group > 0 || npend == 0) return 0;
  ncclComm_t c = group_comm;
  for (int i = 0; i < npend; i++)
    if (pend[i].is_send)
      memmove(slot(c, c->rank) + (size_t)pend[i].peer * pend[i].count * dsize(pend[i].dt), pend[i].sbuf,
              pend[i].count * dsize(pend[i].dt));
  barrier(c);
  for (int i = 0; i < npend; i++)
    if (!pend[i].is_send)
      memmove(pend[i].rbuf, slot(c, pend[i].peer) + (size_t)c->rank * pend[i].count * dsize(pend[i].dt),
              pend[i].count * dsize(pend[i].dt));
  barrier(c);
  npend = 0;
  return 0;
}
