// Helpers of the scenarios about entry points graphmem used to miss or mishandle (exec update,
// streams destroyed inside a capture, peer access set before start-up, many graphs, impossible
// sizes): cases isolated in processes of their own, and counts of return codes.
#pragma once

#include "common.cuh"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

// Runs `fn` in a child process, forked while this process has not touched CUDA, so that a fault,
// a crash or a hang in one case is observed (`OBS <name>_exit exit 0`, `... signal 11`) and the
// next case starts clean. Unless `require` is false the child first checks that the machine
// serves graph memory; a child that skips (exit 77, after its SKIP line) makes the program skip.
// The child is ended by SIGALRM after `seconds`.
static inline void run_isolated(const char *name, void (*fn)(void), bool require = true,
                                unsigned seconds = 60) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(seconds);
        if (require)
            require_graph_memory();
        fn();
        fflush(stdout);
        exit(0); // the runtime's and the preloaded library's exit handlers run as in any program
    }
    char key[96], value[48];
    snprintf(key, sizeof key, "%s_exit", name);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
        obs(key, "fork_failed");
        return;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
        exit(77);
    if (WIFEXITED(status))
        snprintf(value, sizeof value, "exit %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(value, sizeof value, "signal %d", WTERMSIG(status));
    else
        snprintf(value, sizeof value, "status %d", status);
    obs(key, value);
}

// How often each return code was seen, in the order of first appearance:
// `OBS <key> cudaErrorNotSupported x299,cudaSuccess x1`.
struct RcCount {
    static const int kMax = 16;
    cudaError_t code[kMax] = {};
    int count[kMax] = {};
    int distinct = 0, other = 0;

    cudaError_t add(cudaError_t rc) {
        (void)cudaGetLastError();
        for (int i = 0; i < distinct; i++)
            if (code[i] == rc) {
                count[i]++;
                return rc;
            }
        if (distinct == kMax) {
            other++;
            return rc;
        }
        code[distinct] = rc;
        count[distinct++] = 1;
        return rc;
    }

    void report(const char *key) const {
        char value[1024] = "none";
        size_t len = 0;
        for (int i = 0; i < distinct && len < sizeof value - 64; i++)
            len += snprintf(value + len, sizeof value - len, "%s%s x%d", i ? "," : "",
                            cudaGetErrorName(code[i]), count[i]);
        if (other && len < sizeof value - 64)
            snprintf(value + len, sizeof value - len, ",other x%d", other);
        obs(key, value);
    }
};

// A child graph node taking `child` over (ownership move: allowed for graphs with memory nodes).
static inline cudaError_t add_moved_child(cudaGraph_t parent, cudaGraph_t child,
                                          cudaGraphNode_t *node = nullptr) {
    cudaGraphNodeParams np = {};
    np.type = cudaGraphNodeTypeGraph;
    np.graph.graph = child;
    np.graph.ownership = cudaGraphChildGraphOwnershipMove;
    cudaGraphNode_t local = nullptr;
    return cudaGraphAddNode(node ? node : &local, parent, nullptr, nullptr, 0, &np);
}

// Name of a cudaGraphExecUpdateResult, without the common prefix.
static inline const char *update_result_name(cudaGraphExecUpdateResult r) {
    static const char *names[] = {"Success",          "Error",
                                  "TopologyChanged",  "NodeTypeChanged",
                                  "FunctionChanged",  "ParametersChanged",
                                  "NotSupported",     "UnsupportedFunctionChange",
                                  "AttributesChanged"};
    return (unsigned)r < sizeof names / sizeof *names ? names[r] : "unknown";
}

// Name of a capture status, for `OBS ... capture_status <name>`.
static inline const char *capture_status_name(cudaStream_t s) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    cudaError_t rc = cudaStreamIsCapturing(s, &st);
    (void)cudaGetLastError();
    if (rc != cudaSuccess)
        return cudaGetErrorName(rc);
    return st == cudaStreamCaptureStatusActive        ? "active"
           : st == cudaStreamCaptureStatusInvalidated ? "invalidated"
                                                      : "none";
}

// Ends the capture on `s`, observed as `<prefix>_status` (the capture's status just before),
// `<prefix>_end` and `<prefix>_graph_made`; the graph made, NULL when none. The error an
// invalidated capture leaves behind is cleared.
static inline cudaGraph_t end_observed(const char *prefix, cudaStream_t s) {
    char key[96];
    obs(round_key(key, sizeof key, prefix, "status"), capture_status_name(s));
    cudaGraph_t g = nullptr;
    obs_key(prefix, "end", cudaStreamEndCapture(s, &g));
    obs_yes(round_key(key, sizeof key, prefix, "graph_made"), g != nullptr);
    (void)cudaGetLastError();
    return g;
}

// Ends the capture on `s` (end_observed) and runs the graph made (run_graph_observed), both under
// `prefix`.
static inline void end_and_run(const char *prefix, cudaStream_t s) {
    cudaGraph_t g = end_observed(prefix, s);
    if (g) {
        run_graph_observed(prefix, g, s);
        cudaGraphDestroy(g);
    }
}

// A graph allocation left live by its graph: a graph captured on `s` that allocates `bytes` and
// fills them with `value`, instantiated (without AutoFree: a relaunch is refused while the
// allocation lives, §A6.1) and launched once on `s`, not waited for; observed as setup_*.
struct EscapedAllocation {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    uint32_t *ptr = nullptr;
};

static inline EscapedAllocation escaped_allocation(cudaStream_t s, size_t bytes, uint32_t value) {
    EscapedAllocation x;
    obs_rc("setup_begin", cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    obs_rc("setup_malloc", cudaMallocAsync((void **)&x.ptr, bytes, s));
    obs_rc("setup_fill", fill_words(s, x.ptr, bytes / sizeof(uint32_t), value));
    obs_rc("setup_end", cudaStreamEndCapture(s, &x.graph));
    obs_rc("setup_instantiate", cudaGraphInstantiate(&x.exec, x.graph, 0));
    obs_rc("setup_launch", cudaGraphLaunch(x.exec, s));
    return x;
}
