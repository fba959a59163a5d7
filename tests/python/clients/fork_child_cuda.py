"""A parent forks before it initialises CUDA; the child initialises CUDA and runs a small
capture + launches and exits normally (so graphmem's exit path runs in it); then the parent
initialises CUDA after the fork and does the same. Both must behave as natively."""

import os
import subprocess
import sys

from clientlib import SKIP, info, need, obs, primary_context, require_gpu, skip, small_graph_workload

GPU_PROBE = """
import sys
from cuda.bindings import driver as cu
try:
    ok = cu.cuInit(0)[0] == cu.CUresult.CUDA_SUCCESS and cu.cuDeviceGetCount()[1] > 0
except Exception:
    ok = False
sys.exit(0 if ok else 77)
"""


def main():
    need("cuda.bindings.driver")
    # the GPU check must not initialise CUDA in this process, so it runs in a subprocess
    if subprocess.run([sys.executable, "-c", GPU_PROBE]).returncode == SKIP:
        skip("no usable CUDA device")

    pid = os.fork()
    if pid == 0:
        require_gpu()
        primary_context()
        small_graph_workload("child", 0x21)
        sys.exit(0)  # a normal exit: atexit handlers and library destructors run

    _, status = os.waitpid(pid, 0)
    obs("child_exit", os.waitstatus_to_exitcode(status))
    require_gpu()
    primary_context()
    small_graph_workload("parent", 0x42)
    info("pid", os.getpid())  # the process whose statistics graphmem writes last
    obs("done", True)


if __name__ == "__main__":
    main()
