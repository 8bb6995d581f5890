# A small CNN trained from a torch DataLoader whose worker processes are forked again every epoch
# (persistent_workers=False), for the fork guard (src/util/fork_guard.h): a worker forked while the
# recorder's unwind-table builder held the loader's list lock or the table's mutexes would hang at its
# first dl_iterate_phdr. Each worker makes one at its start: worker_init_fn throws and catches a C++
# exception inside torch (the unwinder looks the thrower's FDE up through dl_iterate_phdr) and dlopens
# a library through ctypes. The first epochs fork while the builder is still building torch's rows.
# EPOCHS (default 12), WORKERS (default 4). Prints "loop_s X", each epoch's seconds, and the forks:
# how many, and the time of each fork() call in the parent (os.register_at_fork's hooks around it, so
# pthread_atfork's prepare handlers, which may wait for a lock of the recorder's, are inside it).
# MEMORY=1 also prints what fork() copies: VmRSS, VmPTE, the number of mappings, and the largest
# mappings by resident size (fork's cost grows with the parent's mapped, touched pages).
import ctypes, ctypes.util, os, time
import torch
from torch.utils.data import DataLoader, TensorDataset


def worker_init(_):
    try:
        torch.zeros(2)[5]  # c10::IndexError thrown in C++, caught by torch's Python binding
    except IndexError:
        pass
    ctypes.CDLL(ctypes.util.find_library("m"))


_fork_start = [0.0]
_fork_ms = []


def _before_fork():
    _fork_start[0] = time.perf_counter()


def _after_fork_in_parent():
    _fork_ms.append((time.perf_counter() - _fork_start[0]) * 1e3)


def print_memory():
    status = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
    maps, cur = [], None
    for line in open("/proc/self/smaps"):
        f = line.split()
        if "-" in f[0] and len(f) >= 5 and not f[0].endswith(":"):
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            cur = [0, 0, (hi - lo) >> 10, f[1], f[5] if len(f) > 5 else "[anon]"]
            maps.append(cur)
        elif f[0] == "Rss:":
            cur[0] = int(f[1])
        elif f[0] == "Anonymous:":
            cur[1] = int(f[1])
    print("memory: VmRSS %s, VmPTE %s, %d mappings, %d kB resident in anonymous memory" %
          (status["VmRSS"].strip(), status["VmPTE"].strip(), len(maps), sum(m[1] for m in maps)))
    for rss, anon, size, perms, name in sorted(maps, reverse=True)[:12]:
        print("  rss %8d kB (anon %8d) of %9d kB %s %s" % (rss, anon, size, perms, name))


def main():
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent)
    epochs = int(os.environ.get("EPOCHS", "12"))
    workers = int(os.environ.get("WORKERS", "4"))
    data = TensorDataset(torch.randn(512, 3, 32, 32), torch.randint(0, 10, (512,)))
    loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=workers, worker_init_fn=worker_init,
                        multiprocessing_context="fork")
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4),
                                torch.nn.Flatten(), torch.nn.Linear(256, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    t0 = time.perf_counter()
    epoch_s = []
    for _ in range(epochs):
        e0 = time.perf_counter()
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        epoch_s.append(time.perf_counter() - e0)
    print("loop_s %.3f" % (time.perf_counter() - t0))
    print("epoch_s " + " ".join("%.3f" % e for e in epoch_s))
    ms = sorted(_fork_ms)
    if ms:
        print("forked %d workers: fork() %.2f ms median, %.2f ms max, %.1f ms in all" %
              (len(ms), ms[len(ms) // 2], ms[-1], sum(ms)))
    if os.environ.get("MEMORY") == "1":
        print_memory()


if __name__ == "__main__":
    main()
