# Issue #24's reference: a workload script run under PyTorch's own profiler with stacks, as a user
# comparing tools would run it (CPU and CUDA activities, with_stack=True, the whole script inside the
# profiler, then export_stacks). The script's own loop_s is the loop under the profiler; whole_s and
# export_s follow it.  Usage: python3 torchprof.py SCRIPT [ARGS...]
import runpy, sys, time
t0 = time.perf_counter()
from torch.profiler import profile, ProfilerActivity
script = sys.argv[1]
sys.argv = sys.argv[1:]
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True) as p:
    runpy.run_path(script, run_name="__main__")
t1 = time.perf_counter()
p.export_stacks("/tmp/torchprof_stacks.txt", "self_cuda_time_total")
print("whole_s %.2f export_s %.2f" % (t1 - t0, time.perf_counter() - t1), flush=True)
