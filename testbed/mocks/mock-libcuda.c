/*
 * MOCK libcuda.so.1: NOT NVIDIA's driver, and no GPU behind it. The one mock driver of fabrik's
 * tests: the Soft-RoCE VM's `--mem cuda|managed` checks, crates/fabrik/tests/bench_rdma_mem.rs, and
 * (with the mock libnccl.so.2 in crates/fabrik/tests/nccl_mock/) the nccl backend's tests.
 *
 * It lets CI run fabrik's `--mem cuda|managed` plumbing on real verbs without a GPU: the
 * driver is dlopened, initialised, a context made current, "device" memory allocated, filled
 * and read back, registered with the NIC and moved over rxe, exactly as on a GPU node, except
 * that the "device" memory is ordinary host memory (posix_memalign), so rxe can pin it.
 *
 * cuMemGetHandleForAddressRange exists and fails with CUDA_ERROR_NOT_SUPPORTED, as a driver
 * without dma-buf support answers, so fabrik takes its ibv_reg_mr (nvidia_peermem) fallback.
 *
 * Knobs (environment): MOCK_CUDA_DEVICES=N devices (default 1; cuDeviceGet beyond them fails
 * with CUDA_ERROR_INVALID_DEVICE); MOCK_CUDA_INIT_FAIL=1 makes cuInit fail with
 * CUDA_ERROR_NO_DEVICE (a node with the driver but no usable GPU); MOCK_CUDA_STREAM_HANG=1 makes
 * streams never finish (cuStreamQuery answers CUDA_ERROR_NOT_READY), for the nccl backend's
 * bounded waits.
 *
 * Only the driver API entry points fabrik loads are here, with the CUDA driver API's C
 * prototypes (cuda.h); every "device pointer" is a host address.
 * Built by testbed/softroce/build.sh and by the tests: cc -shared -fPIC -O2 -o libcuda.so.1 mock-libcuda.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef uint64_t CUdeviceptr;
typedef void *CUcontext;
typedef void *CUstream;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_NOT_SUPPORTED = 801,
};

static int initialised;
static char mock_context;

static int device_count(void) {
  const char *s = getenv("MOCK_CUDA_DEVICES");
  return s ? atoi(s) : 1;
}

CUresult cuGetErrorString(CUresult e, const char **s) {
  switch (e) {
  case CUDA_SUCCESS: *s = "no error"; break;
  case CUDA_ERROR_INVALID_VALUE: *s = "invalid argument"; break;
  case CUDA_ERROR_OUT_OF_MEMORY: *s = "out of memory"; break;
  case CUDA_ERROR_NOT_INITIALIZED: *s = "initialization error"; break;
  case CUDA_ERROR_NO_DEVICE: *s = "no CUDA-capable device is detected (mock)"; break;
  case CUDA_ERROR_INVALID_DEVICE: *s = "invalid device ordinal"; break;
  case CUDA_ERROR_INVALID_HANDLE: *s = "invalid resource handle"; break;
  case CUDA_ERROR_NOT_READY: *s = "device not ready"; break;
  case CUDA_ERROR_NOT_SUPPORTED: *s = "operation not supported"; break;
  default: *s = 0; return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuInit(unsigned flags) {
  const char *f = getenv("MOCK_CUDA_INIT_FAIL");
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((f && *f == '1') || device_count() < 1) return CUDA_ERROR_NO_DEVICE;
  initialised = 1;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v) { *v = 12040; return CUDA_SUCCESS; }

CUresult cuDeviceGetCount(int *n) {
  if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
  *n = device_count();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *d = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  if (len < 1) return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "Mock GPU %d (host memory)", d);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice d) {
  if (len < 13) return CUDA_ERROR_INVALID_VALUE;
  snprintf(bus, (size_t)len, "0000:%02x:00.0", 0x18 + d);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (d < 0 || d >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *c = &mock_context;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext c) { (void)c; return CUDA_SUCCESS; }

static CUresult alloc(CUdeviceptr *p, size_t n) {
  void *m = 0;
  if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (n == 0) return CUDA_ERROR_INVALID_VALUE;
  if (posix_memalign(&m, 4096, n) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  memset(m, 0, n);
  *p = (CUdeviceptr)(uintptr_t)m;
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { return alloc(p, n); }
CUresult cuMemAlloc(CUdeviceptr *p, size_t n) { return alloc(p, n); }
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned flags) { (void)flags; return alloc(p, n); }
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); return CUDA_SUCCESS; }
CUresult cuMemFree(CUdeviceptr p) { return cuMemFree_v2(p); }

CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return CUDA_SUCCESS; }
CUresult cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n) { return cuMemcpyHtoD_v2(d, s, n); }
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { memcpy(d, (const void *)(uintptr_t)s, n); return CUDA_SUCCESS; }
CUresult cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n) { return cuMemcpyDtoH_v2(d, s, n); }
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n); return CUDA_SUCCESS; }
CUresult cuMemcpyDtoD(CUdeviceptr d, CUdeviceptr s, size_t n) { return cuMemcpyDtoD_v2(d, s, n); }
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { (void)st; return cuMemcpyDtoD_v2(d, s, n); }
CUresult cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { return cuMemcpyDtoDAsync_v2(d, s, n, st); }

CUresult cuStreamCreate(CUstream *s, unsigned flags) { (void)flags; *s = &mock_context; return CUDA_SUCCESS; }
CUresult cuStreamDestroy_v2(CUstream s) { (void)s; return CUDA_SUCCESS; }
CUresult cuStreamQuery(CUstream s) {
  const char *h = getenv("MOCK_CUDA_STREAM_HANG");
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  return (h && *h == '1') ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
/* NULL is the legacy default stream, which the real driver accepts too. */
CUresult cuStreamSynchronize(CUstream s) { (void)s; return CUDA_SUCCESS; }

/* No dma-buf export: the caller falls back to ibv_reg_mr. */
CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr p, size_t n, int type, unsigned long long flags) {
  (void)handle; (void)p; (void)n; (void)type; (void)flags;
  return CUDA_ERROR_NOT_SUPPORTED;
}
