// A library with thread-locals whose load stops halfway (tests/util/loaded_objects_test.cpp).
//
// Its IFUNC resolver runs while the loader relocates it: the object is then in the list of loaded
// objects with its TLS module id, but the loader has not yet added its TLS slot or moved the TLS
// generation (glibc's dl_open_worker). That is the window in which a thread with an out-of-date DTV
// faulted in dl_iterate_phdr (util/loaded_objects.h). The resolver writes a byte to descriptor 250 and
// waits for one on descriptor 251, so that the test runs an iteration inside that window; where those
// descriptors are not open, it returns at once.
//
// No libc call: the resolver runs before this object's own relocations are done, so it makes its
// system calls itself. Built without sanitizers or stack protector for the same reason.
__thread int tls_relocation_hook_value = 5;

int* tls_relocation_hook_address(void) { return &tls_relocation_hook_value; }

static long raw_syscall3(long nr, long a, long b, long c) {
  long r;
  __asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return r;
}

static int hooked_impl(void) { return 1; }

typedef int (*hooked_fn)(void);

static hooked_fn hooked_resolver(void) {
  char b = 'r';
  if (raw_syscall3(1 /* write */, 250, (long)&b, 1) == 1) raw_syscall3(0 /* read */, 251, (long)&b, 1);
  return hooked_impl;
}

int tls_relocation_hooked(void) __attribute__((ifunc("hooked_resolver")));
// A data relocation against the IFUNC symbol: resolved when the object is loaded (not lazily).
int (*tls_relocation_hooked_ptr)(void) = tls_relocation_hooked;
