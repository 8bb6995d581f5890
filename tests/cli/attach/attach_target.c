/* A program to attach to in tests/cli/attach_test.sh: prints "tick N" every 20 ms for N ticks while a
 * second thread waits on a condition variable and a third one computes, then exits with status 7.
 * With a second argument it first loads that library (the fake libcuda.so.1) and "launches" through
 * its cuLaunchKernel at every tick (a third argument: that many launches a tick). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static volatile int done = 0;

static void* waiter(void* arg) {
  (void)arg;
  pthread_mutex_lock(&mu);
  while (!done) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  return NULL;
}

static void* spinner(void* arg) {
  volatile double x = 1;
  (void)arg;
  while (!done) x = x * 1.0000001 + 1e-9;
  return NULL;
}

int main(int argc, char** argv) {
  int ticks = argc > 1 ? atoi(argv[1]) : 100;
  int per_tick = argc > 3 ? atoi(argv[3]) : 1;
  int (*launch)(void) = NULL;
  if (argc > 2) {
    void* cuda = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!cuda) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    launch = (int (*)(void))dlsym(cuda, "fake_launch");
  }
  pthread_t w, s;
  pthread_create(&w, NULL, waiter, NULL);
  pthread_create(&s, NULL, spinner, NULL);
  unsigned long sum = 0;
  for (int i = 0; i < ticks; i++) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    for (int k = 0; launch && k < per_tick; k++) launch();
    sum = sum * 31 + (unsigned long)i;
    printf("tick %d\n", i);
    fflush(stdout);
  }
  pthread_mutex_lock(&mu);
  done = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  pthread_join(w, NULL);
  pthread_join(s, NULL);
  printf("sum %lu\n", sum);
  return 7;
}
