"""A parent initialises CUDA and launches a graph, then forks a child that touches no GPU
memory but calls into the (inherited, hooked) driver entries, as forked workers do by accident;
the parent goes on using CUDA after the fork: its exec from before the fork and a new capture
must both work, exactly as natively."""

import os

from clientlib import (check, info, driver, error_name, obs, primary_context, read_device, require_gpu,
                       small_graph, small_graph_workload)

SIZE = 1 << 20


def child(cu, dev):
    """CUDA is unusable in a child forked after initialisation; report what the driver says
    (only for calls that fail cleanly: natively cuMemAllocAsync there dies of SIGSEGV).

    os._exit as multiprocessing's fork workers do: no Python teardown calling CUDA in the child.
    """
    try:
        obs("child_init", error_name(cu.cuInit(0)))
        attr = cu.CUgraphMem_attribute.CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT
        obs("child_graph_mem_attribute", error_name(cu.cuDeviceGetGraphMemAttribute(dev, attr)))
    finally:
        os._exit(0)


def main():
    require_gpu()
    cu = driver()
    dev = primary_context()
    stream = check(cu.cuStreamCreate(int(cu.CUstream_flags.CU_STREAM_NON_BLOCKING)))
    graph, exe, out = small_graph(stream, 0x17, SIZE)
    check(cu.cuGraphLaunch(exe, stream))
    check(cu.cuStreamSynchronize(stream))
    obs("before_fork_output_ok", read_device(out, SIZE) == bytes([0x17]) * SIZE)

    pid = os.fork()
    if pid == 0:
        child(cu, dev)
    _, status = os.waitpid(pid, 0)
    obs("child_exit", os.waitstatus_to_exitcode(status))

    # the exec from before the fork relaunches (AutoFree) and still produces its output
    obs("after_fork_relaunch", error_name(cu.cuGraphLaunch(exe, stream)))
    check(cu.cuStreamSynchronize(stream))
    obs("after_fork_output_ok", read_device(out, SIZE) == bytes([0x17]) * SIZE)
    check(cu.cuMemFreeAsync(out, stream))
    check(cu.cuStreamSynchronize(stream))
    check(cu.cuGraphExecDestroy(exe))
    check(cu.cuGraphDestroy(graph))
    check(cu.cuStreamDestroy(stream))

    small_graph_workload("new_capture", 0x71)
    info("pid", os.getpid())  # the process whose statistics graphmem writes last
    obs("done", True)


if __name__ == "__main__":
    main()
