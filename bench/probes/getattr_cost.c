// What glibc's pthread_getattr_np costs on the main thread with N mappings (it reads /proc/self/maps for
// the main thread; the walk took each thread's stack bounds from it at the thread's first launch).
// Build: gcc -O2 -o /tmp/getattr_cost bench/probes/getattr_cost.c -lpthread; run: /tmp/getattr_cost 2000
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
int main(int argc,char**argv){int n=atoi(argv[1]);
 for(int i=0;i<n;i++){char*p=mmap(0,8192,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); mprotect(p,4096,PROT_READ);}
 for(int k=0;k<3;k++){double t0=now();pthread_attr_t a;pthread_getattr_np(pthread_self(),&a);double t1=now();printf("%d maps: %.1f us\n",n,t1-t0);pthread_attr_destroy(&a);}
}
