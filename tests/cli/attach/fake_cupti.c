/* A stand-in for libcupti (AIFLAME_CUPTI=path in the target's environment) for the attach tests on
 * machines without a GPU: every call succeeds and returns no data; a subscriber receives the launch
 * callbacks that the fake libcuda's fake_launch() fires, each launch becomes a kernel record of
 * "fake_kernel" (1 us) at the next flush, and every drain after a launch returns 5 samples of it at
 * offset 0x10; cuptiFinalize drops the subscriber. The cubin is never announced (as for an attach,
 * whose modules were loaded before).
 * FAKE_CUPTI_BUSY=1: cuptiSubscribe answers as when another CUPTI client is subscribed.
 * FAKE_CUPTI_SILENT=N: the first N subscriptions of the process get no sample (PC sampling enabled
 * again after a cuptiFinalize that stays silent, as seen on the H100); later ones sample as above.
 * FAKE_CUPTI_MODULE=1: the first launch of the process with a subscriber announces a module (cubin
 * "FAKECUBIN", CRC 1) first, as a lazily loaded module is announced once, at its first launch.
 * FAKE_CUPTI_LOG=path: appends "subscribe", "finalize" and "callback" (a launch callback delivered)
 * lines, so that a test sees when CUPTI was attached. */
#include <stdio.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static CUpti_CallbackFunc subscriber_fn;
static int launch_enabled;
static uint32_t correlation;
static CUpti_BuffersCallbackRequestFunc buffer_requested;
static CUpti_BuffersCallbackCompleteFunc buffer_completed;
static uint32_t pending[4096];      /* correlation ids of launches not yet flushed as kernel records */
static uint64_t pending_ts[4096];
static unsigned npending;
static unsigned launches_since_drain;
static unsigned subscriptions;
static void log_event(const char* what) {
  const char* path = getenv("FAKE_CUPTI_LOG");
  FILE* f = path ? fopen(path, "a") : NULL;
  if (!f) return;
  fprintf(f, "%s\n", what);
  fclose(f);
}
static int module_announced;

CUptiResult cuptiGetVersion(uint32_t* v) { *v = CUPTI_API_VERSION; return CUPTI_SUCCESS; }
CUptiResult cuptiGetResultString(CUptiResult r, const char** s) { *s = r ? "CUPTI_ERROR_FAKE" : "CUPTI_SUCCESS"; return CUPTI_SUCCESS; }
CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* h, CUpti_CallbackFunc fn, void* u) {
  (void)u;
  if (getenv("FAKE_CUPTI_BUSY") || subscriber_fn) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  subscriber_fn = fn;
  subscriptions++;
  log_event("subscribe");
  *h = (CUpti_SubscriberHandle)&subscriber_fn;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle h) { (void)h; subscriber_fn = NULL; launch_enabled = 0; return CUPTI_SUCCESS; }
CUptiResult cuptiFinalize(void) {
  subscriber_fn = NULL;
  launch_enabled = 0;
  log_event("finalize");
  return CUPTI_SUCCESS;
}
CUptiResult cuptiEnableCallback(uint32_t on, CUpti_SubscriberHandle h, CUpti_CallbackDomain d, CUpti_CallbackId id) {
  (void)h;
  if (d == CUPTI_CB_DOMAIN_DRIVER_API && id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) launch_enabled = on;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiGetTimestamp(uint64_t* t) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  *t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiGetDeviceId(CUcontext c, uint32_t* d) { (void)c; *d = 0; return CUPTI_SUCCESS; }
CUptiResult cuptiGetContextId(CUcontext c, uint32_t* id) { (void)c; *id = 1; return CUPTI_SUCCESS; }
CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc a, CUpti_BuffersCallbackCompleteFunc b) {
  buffer_requested = a;
  buffer_completed = b;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityEnable(CUpti_ActivityKind k) { (void)k; return CUPTI_SUCCESS; }
CUptiResult cuptiActivityFlushAll(uint32_t f) {
  (void)f;
  if (!buffer_requested || !buffer_completed || npending == 0) return CUPTI_SUCCESS;
  uint8_t* buf = NULL;
  size_t size = 0, max_records = 0;
  buffer_requested(&buf, &size, &max_records);
  size_t n = size / sizeof(CUpti_ActivityKernel10);
  if (n > npending) n = npending;
  for (size_t i = 0; i < n; i++) {
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = pending_ts[i] + 1000;
    k.end = pending_ts[i] + 2000;
    k.contextId = 1;
    k.streamId = 7;
    k.gridX = k.gridY = k.gridZ = k.blockX = k.blockY = k.blockZ = 1;
    k.correlationId = pending[i];
    k.name = "fake_kernel";
    memcpy(buf + i * sizeof k, &k, sizeof k);
  }
  npending = 0;
  buffer_completed(NULL, 0, buf, size, n * sizeof(CUpti_ActivityKernel10));
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityGetNextRecord(uint8_t* b, size_t n, CUpti_Activity** r) {
  uint8_t* next = *r ? (uint8_t*)*r + sizeof(CUpti_ActivityKernel10) : b;
  if (next + sizeof(CUpti_ActivityKernel10) > b + n) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *r = (CUpti_Activity*)next;
  return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t* n) { (void)c; (void)s; *n = 0; return CUPTI_SUCCESS; }
CUptiResult cuptiGetCubinCrc(CUpti_GetCubinCrcParams* p) { p->cubinCrc = 1; return CUPTI_SUCCESS; }
CUptiResult cuptiPCSamplingEnable(CUpti_PCSamplingEnableParams* p) { (void)p; return CUPTI_SUCCESS; }
CUptiResult cuptiPCSamplingDisable(CUpti_PCSamplingDisableParams* p) { (void)p; return CUPTI_SUCCESS; }
CUptiResult cuptiPCSamplingGetNumStallReasons(CUpti_PCSamplingGetNumStallReasonsParams* p) { *p->numStallReasons = 1; return CUPTI_SUCCESS; }
CUptiResult cuptiPCSamplingGetStallReasons(CUpti_PCSamplingGetStallReasonsParams* p) {
  p->stallReasonIndex[0] = 1;
  strcpy(p->stallReasons[0], "smsp__pcsamp_warps_issue_stalled_selected");
  return CUPTI_SUCCESS;
}
CUptiResult cuptiPCSamplingSetConfigurationAttribute(CUpti_PCSamplingConfigurationInfoParams* p) { (void)p; return CUPTI_SUCCESS; }
CUptiResult cuptiPCSamplingGetData(CUpti_PCSamplingGetDataParams* p) {
  CUpti_PCSamplingData* d = (CUpti_PCSamplingData*)p->pcSamplingData;
  d->totalNumPcs = 0;
  d->remainingNumPcs = 0;
  d->totalSamples = 0;
  d->droppedSamples = 0;
  const char* silent = getenv("FAKE_CUPTI_SILENT");
  if (silent && subscriptions <= (unsigned)atoi(silent)) launches_since_drain = 0;
  if (launches_since_drain && d->collectNumPcs > 0) {
    CUpti_PCSamplingPCData* pc = &d->pPcData[0];
    pc->cubinCrc = 1;
    pc->pcOffset = 0x10;
    pc->functionIndex = 0;
    pc->functionName = strdup("fake_kernel");  /* the caller's to free, as with CUPTI */
    pc->stallReasonCount = 1;
    pc->stallReason[0].pcSamplingStallReasonIndex = 1;
    pc->stallReason[0].samples = 5;
    d->totalNumPcs = 1;
    d->totalSamples = 5;
    launches_since_drain = 0;
  }
  return CUPTI_SUCCESS;
}
CUptiResult cuptiPCSamplingStart(CUpti_PCSamplingStartParams* p) { (void)p; return CUPTI_SUCCESS; }
CUptiResult cuptiPCSamplingStop(CUpti_PCSamplingStopParams* p) { (void)p; return CUPTI_SUCCESS; }

/* Called by the fake libcuda's fake_launch(): a cuLaunchKernel's entry and exit callbacks. */
void fake_cupti_launch(void* context) {
  CUpti_CallbackFunc fn = subscriber_fn;
  if (!fn || !launch_enabled) return;
  if (getenv("FAKE_CUPTI_MODULE") && !module_announced) {
    static const char image[] = "FAKECUBIN";
    CUpti_ModuleResourceData m;
    CUpti_ResourceData r;
    memset(&m, 0, sizeof m);
    memset(&r, 0, sizeof r);
    m.pCubin = image;
    m.cubinSize = sizeof image;
    r.context = (CUcontext)context;
    r.resourceDescriptor = &m;
    module_announced = 1;
    fn(NULL, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED, &r);
  }
  CUpti_CallbackData cb;
  memset(&cb, 0, sizeof cb);
  cb.context = (CUcontext)context;
  cb.functionName = "cuLaunchKernel";
  cb.symbolName = "fake_kernel";
  cb.correlationId = ++correlation;
  if (npending < 4096) {
    cuptiGetTimestamp(&pending_ts[npending]);
    pending[npending++] = cb.correlationId;
  }
  launches_since_drain++;
  log_event("callback");
  cb.callbackSite = CUPTI_API_ENTER;
  fn(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
  cb.callbackSite = CUPTI_API_EXIT;
  fn(NULL, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
}
