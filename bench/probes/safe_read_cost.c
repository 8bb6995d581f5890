// Issue #23 item 5: what a safe read of this process's memory costs while other threads map and unmap
// (as CUDA's and an allocator's threads do): process_vm_readv, which takes the mmap lock, against a
// write of the memory into a pipe and a read back (copy_from_user: no lock for present pages).
// Build and run: gcc -O2 -o /tmp/safe_read_cost bench/probes/safe_read_cost.c -lpthread && /tmp/safe_read_cost THREADS
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
static volatile int stop;
static void* hammer(void* a) { (void)a; while (!stop) { char* p = mmap(0, 1 << 20, 3, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); memset(p, 1, 4096); munmap(p, 1 << 20); } return 0; }
static double now() { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
int main(int argc, char** argv) {
  int nh = atoi(argv[1]);
  static char src[8192], dst[8192];
  memset(src, 7, sizeof src);
  int fds[2]; pipe(fds);
  pthread_t th[8];
  for (int i = 0; i < nh; i++) pthread_create(&th[i], 0, hammer, 0);
  usleep(50000);
  pid_t self = getpid();
  for (int rep = 0; rep < 2; rep++) {
    double t0 = now();
    for (int i = 0; i < 20000; i++) { struct iovec l = {dst, 8192}, r = {src, 8192}; process_vm_readv(self, &l, 1, &r, 1, 0); }
    double t1 = now();
    for (int i = 0; i < 20000; i++) { if (write(fds[1], src, 8192) != 8192) return 1; if (read(fds[0], dst, 8192) != 8192) return 1; }
    double t2 = now();
    printf("%d hammer threads: process_vm_readv 8 KiB %.2f us, pipe write+read %.2f us\n", nh, (t1 - t0) / 20000, (t2 - t1) / 20000);
  }
  stop = 1;
  for (int i = 0; i < nh; i++) pthread_join(th[i], 0);
  return 0;
}
