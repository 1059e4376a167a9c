/* MOCK libcuda.so.1 for fabrik's tests on machines without a GPU (no NVIDIA code here).
 * "Device memory" is host memory from malloc, copies are memmove, streams complete at once.
 * It exists to exercise fabrik's run-time loading, typed entry points and error paths; it
 * says nothing about a real GPU. Environment: MOCK_CUDA_DEVICES (default 1);
 * MOCK_CUDA_STREAM_HANG=1 makes streams never finish (cuStreamQuery: CUDA_ERROR_NOT_READY). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static int ndev(void) {
  const char *s = getenv("MOCK_CUDA_DEVICES");
  return s ? atoi(s) : 1;
}

CUresult cuInit(unsigned flags) { return flags == 0 ? 0 : 1; }
CUresult cuDriverGetVersion(int *v) { *v = 12040; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = ndev(); return 0; }
CUresult cuDeviceGet(int *dev, int ordinal) {
  if (ordinal < 0 || ordinal >= ndev()) return 101; /* CUDA_ERROR_INVALID_DEVICE */
  *dev = ordinal;
  return 0;
}
CUresult cuDeviceGetName(char *name, int len, int dev) {
  snprintf(name, (size_t)len, "Mock GPU %d (host memory)", dev);
  return 0;
}
CUresult cuDeviceGetPCIBusId(char *id, int len, int dev) {
  snprintf(id, (size_t)len, "0000:%02x:00.0", 0x18 + dev);
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { *ctx = (void *)(uintptr_t)(dev + 1); return 0; }
CUresult cuCtxSetCurrent(void *ctx) { return ctx ? 0 : 201; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  void *m = calloc(1, n ? n : 1);
  if (!m) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  *p = (CUdeviceptr)(uintptr_t)m;
  return 0;
}
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned flags) { (void)flags; return cuMemAlloc_v2(p, n); }
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); return 0; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { memmove((void *)(uintptr_t)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { memmove(d, (void *)(uintptr_t)s, n); return 0; }
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
  return 0;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void *stream) {
  (void)stream;
  return cuMemcpyDtoD_v2(d, s, n);
}
CUresult cuStreamCreate(void **s, unsigned flags) { (void)flags; *s = malloc(1); return *s ? 0 : 2; }
CUresult cuStreamQuery(void *s) {
  const char *h = getenv("MOCK_CUDA_STREAM_HANG");
  if (h && *h == '1') return 600; /* CUDA_ERROR_NOT_READY */
  return s ? 0 : 400;
}
CUresult cuStreamSynchronize(void *s) { return s ? 0 : 400; }
CUresult cuStreamDestroy_v2(void *s) { free(s); return 0; }
CUresult cuGetErrorString(CUresult e, const char **s) {
  switch (e) {
  case 2: *s = "mock: out of memory"; return 0;
  case 101: *s = "mock: invalid device ordinal"; return 0;
  default: *s = "mock: unknown error"; return 0;
  }
}
