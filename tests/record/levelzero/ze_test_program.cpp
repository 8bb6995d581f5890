// A small Level Zero program with a known truth, run under `aiflame record` against the fake driver
// (fake_ze_driver.cpp): kernel_a is launched from host_one three times for each launch from host_two
// (host_one through an immediate command list without an event, host_two through one with the
// program's own timestamp event), and kernel_b from host_three through a regular command list and a
// queue. Usage: ze_test_program KERNELS.zebin [ROUNDS]
// With ZE_TEST_ALSO_CUDA=1 it then does what CUDA's cuInit does under `aiflame record`: calls the
// InitializeInjection of the library CUDA_INJECTION64_PATH names (a program of both runtimes).
#include <dlfcn.h>
#include <level_zero/ze_api.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

namespace {

ze_context_handle_t g_context;
ze_device_handle_t g_device;
ze_command_list_handle_t g_immediate;
ze_kernel_handle_t g_a, g_b;
ze_event_handle_t g_event;
ze_group_count_t g_groups{1, 1, 1};

void check(ze_result_t r, const char* what) {
  if (r != ZE_RESULT_SUCCESS) {
    std::fprintf(stderr, "ze_test_program: %s failed: 0x%x\n", what, static_cast<unsigned>(r));
    std::exit(1);
  }
}

__attribute__((noinline)) void host_one() {
  check(zeCommandListAppendLaunchKernel(g_immediate, g_a, &g_groups, nullptr, 0, nullptr), "append (host_one)");
  asm volatile("");
}

__attribute__((noinline)) void host_two() {
  check(zeCommandListAppendLaunchKernel(g_immediate, g_a, &g_groups, g_event, 0, nullptr), "append (host_two)");
  check(zeEventHostSynchronize(g_event, UINT64_MAX), "event synchronize");
  ze_kernel_timestamp_result_t ts{};
  check(zeEventQueryKernelTimestamp(g_event, &ts), "kernel timestamp");
  check(zeEventHostReset(g_event), "event reset");
  asm volatile("");
}

__attribute__((noinline)) void host_three(ze_command_queue_handle_t queue) {
  ze_command_list_desc_t desc{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, 0, 0};
  ze_command_list_handle_t list;
  check(zeCommandListCreate(g_context, g_device, &desc, &list), "command list");
  check(zeCommandListAppendLaunchKernel(list, g_b, &g_groups, nullptr, 0, nullptr), "append (host_three)");
  check(zeCommandListClose(list), "close");
  check(zeCommandQueueExecuteCommandLists(queue, 1, &list, nullptr), "execute");
  check(zeCommandQueueSynchronize(queue, UINT64_MAX), "queue synchronize");
  check(zeCommandListDestroy(list), "destroy list");
  asm volatile("");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ze_test_program KERNELS.zebin [ROUNDS]\n");
    return 2;
  }
  int rounds = argc > 2 ? std::atoi(argv[2]) : 100;
  std::ifstream in(argv[1], std::ios::binary);
  std::string binary((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (binary.empty()) {
    std::fprintf(stderr, "ze_test_program: cannot read %s\n", argv[1]);
    return 2;
  }
  check(zeInit(ZE_INIT_FLAG_GPU_ONLY), "zeInit");
  if (const char* also = std::getenv("ZE_TEST_ALSO_CUDA"); also && *also == '1') {
    const char* lib = std::getenv("CUDA_INJECTION64_PATH");
    void* h = lib ? dlopen(lib, RTLD_NOW) : nullptr;
    auto init = h ? reinterpret_cast<int (*)()>(dlsym(h, "InitializeInjection")) : nullptr;
    if (init) init();
  }
  uint32_t n = 1;
  ze_driver_handle_t driver;
  check(zeDriverGet(&n, &driver), "zeDriverGet");
  n = 0;
  check(zeDeviceGet(driver, &n, nullptr), "zeDeviceGet");
  if (n == 0) {
    std::printf("ze_test_program: no devices\n");
    return 0;
  }
  n = 1;
  check(zeDeviceGet(driver, &n, &g_device), "zeDeviceGet");
  ze_context_desc_t cdesc{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  check(zeContextCreate(driver, &cdesc, &g_context), "zeContextCreate");
  ze_module_desc_t mdesc{ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_NATIVE, binary.size(),
                         reinterpret_cast<const uint8_t*>(binary.data()), nullptr, nullptr};
  ze_module_handle_t module;
  check(zeModuleCreate(g_context, g_device, &mdesc, &module, nullptr), "zeModuleCreate");
  ze_kernel_desc_t ka{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "kernel_a"};
  ze_kernel_desc_t kb{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "kernel_b"};
  check(zeKernelCreate(module, &ka, &g_a), "zeKernelCreate a");
  check(zeKernelCreate(module, &kb, &g_b), "zeKernelCreate b");
  ze_command_queue_desc_t qdesc{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0,
                                ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  check(zeCommandListCreateImmediate(g_context, g_device, &qdesc, &g_immediate), "immediate list");
  ze_command_queue_handle_t queue;
  check(zeCommandQueueCreate(g_context, g_device, &qdesc, &queue), "queue");
  ze_event_pool_desc_t pdesc{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr,
                             ZE_EVENT_POOL_FLAG_HOST_VISIBLE | ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP, 1};
  ze_event_pool_handle_t pool;
  check(zeEventPoolCreate(g_context, &pdesc, 0, nullptr, &pool), "event pool");
  ze_event_desc_t edesc{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, 0, ZE_EVENT_SCOPE_FLAG_HOST};
  check(zeEventCreate(pool, &edesc, &g_event), "event");
  for (int r = 0; r < rounds; r++) {
    host_one();
    host_one();
    host_one();
    host_two();
    host_three(queue);
  }
  zeEventDestroy(g_event);
  zeEventPoolDestroy(pool);
  zeCommandQueueDestroy(queue);
  zeCommandListDestroy(g_immediate);
  zeKernelDestroy(g_a);
  zeKernelDestroy(g_b);
  zeModuleDestroy(module);
  zeContextDestroy(g_context);
  std::printf("ze_test_program: %d rounds\n", rounds);
  return 0;
}
