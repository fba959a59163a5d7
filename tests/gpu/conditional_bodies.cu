// GRAPHMEM_LIFT_RESTRICTIONS: memory nodes inside conditional bodies, which the driver refuses at
// instantiation (§A3.11, §A3.12). Graph P: an IF node whose body allocates A, fills and checks it,
// frees it; then a WHILE node whose body allocates B, fills it with its iteration's value and
// checks it (the kernel ends the loop after kIterations), frees B, allocates D, fills and checks
// it, frees D. P is launched twice. Graph Q: an IF body that allocates without freeing, refused by
// the driver, by graphmem as it is, and by graphmem with the option (a body runs zero or more
// times). A clone of P: graphmem with the option refuses it (its bodies would be copies it cannot
// plan). Graph R: a child graph whose IF body allocates, fills, checks and frees E; the driver
// refuses R's instantiation as for P, graphmem with the option runs it.
// tests/python/test_gpu_conformance.py runs it natively, under graphmem as it is (the same
// observations) and with the option (the observations it expects).
#include "common.cuh"

static const size_t kBytes = 4u << 20, kWords = kBytes / 4;
static const unsigned kIterations = 5;

// One block: stamps p with the iteration count, checks it, and ends the loop after kIterations.
static __global__ void k_iteration(uint32_t *p, size_t n, unsigned *iteration,
                                   cudaGraphConditionalHandle loop, unsigned *bad) {
    __shared__ unsigned it;
    if (threadIdx.x == 0)
        it = *iteration;
    __syncthreads();
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        p[i] = it * 7919u + (uint32_t)i;
    __syncthreads();
    unsigned wrong = 0;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        wrong += p[i] != it * 7919u + (uint32_t)i;
    if (wrong)
        atomicAdd(bad, wrong);
    __syncthreads();
    if (threadIdx.x == 0) {
        *iteration = it + 1;
        if (it + 1 >= kIterations)
            cudaGraphSetConditional(loop, 0);
    }
}

// A conditional node of `type` in `g` after `deps` (condition defaults to 1); its body.
static cudaGraph_t add_conditional(cudaGraph_t g, cudaGraphNode_t *node,
                                   const cudaGraphNode_t *deps, size_t ndeps,
                                   cudaGraphConditionalNodeType type,
                                   cudaGraphConditionalHandle *handle, bool *built) {
    *built &=
        cudaGraphConditionalHandleCreate(handle, g, 1, cudaGraphCondAssignDefault) == cudaSuccess;
    cudaGraphNodeParams np = {};
    np.type = cudaGraphNodeTypeConditional;
    np.conditional.handle = *handle;
    np.conditional.type = type;
    np.conditional.size = 1;
    *built &= cudaGraphAddNode(node, g, deps, nullptr, ndeps, &np) == cudaSuccess;
    return np.conditional.phGraph_out ? np.conditional.phGraph_out[0] : nullptr;
}

// Adds to `body` after `dep` (NULL: none): alloc X, fill with v, check, free X; returns the free.
static cudaGraphNode_t add_checked_use(cudaGraph_t body, const cudaGraphNode_t *dep, uint32_t v,
                                       unsigned *bad, bool *built) {
    cudaGraphNode_t alloc, fill, check, done = nullptr;
    void *x = nullptr;
    *built &= add_alloc(&alloc, body, dep, dep ? 1 : 0, kBytes, &x) == cudaSuccess;
    *built &= add_fill(&fill, body, &alloc, 1, x, kWords, v) == cudaSuccess;
    *built &= add_check(&check, body, &fill, 1, x, kWords, v, bad) == cudaSuccess;
    *built &= cudaGraphAddMemFreeNode(&done, body, &check, 1, x) == cudaSuccess;
    return done;
}

int main() {
    require_graph_memory();
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    unsigned *bad = new_counter(), *iteration = new_counter();
    bool built = true;

    cudaGraph_t p = nullptr;
    cudaGraphCreate(&p, 0);
    cudaGraphNode_t if_node, while_node;
    cudaGraphConditionalHandle if_handle, loop;
    cudaGraph_t if_body =
        add_conditional(p, &if_node, nullptr, 0, cudaGraphCondTypeIf, &if_handle, &built);
    add_checked_use(if_body, nullptr, 5, bad, &built);

    cudaGraph_t loop_body =
        add_conditional(p, &while_node, &if_node, 1, cudaGraphCondTypeWhile, &loop, &built);
    void *b = nullptr;
    cudaGraphNode_t m1, m2, m3;
    built &= add_alloc(&m1, loop_body, nullptr, 0, kBytes, &b) == cudaSuccess;
    size_t n = kWords;
    void *args[] = {&b, &n, &iteration, &loop, &bad};
    cudaKernelNodeParams k = {};
    k.func = (void *)k_iteration;
    k.gridDim = dim3(1);
    k.blockDim = dim3(1024);
    k.kernelParams = args;
    built &= cudaGraphAddKernelNode(&m2, loop_body, &m1, 1, &k) == cudaSuccess;
    built &= cudaGraphAddMemFreeNode(&m3, loop_body, &m2, 1, b) == cudaSuccess;
    add_checked_use(loop_body, &m3, 9, bad, &built);
    obs_ok("built", built);

    cudaGraphExec_t e = nullptr;
    cudaError_t inst = cudaGraphInstantiate(&e, p, 0);
    obs_rc("instantiate", inst);
    if (inst == cudaSuccess) {
        for (int run = 0; run < 2; run++) {
            cudaMemsetAsync(iteration, 0, sizeof(unsigned), s);
            char key[32];
            snprintf(key, sizeof key, "launch%d", run);
            obs_rc(key, cudaGraphLaunch(e, s));
            snprintf(key, sizeof key, "sync%d", run);
            obs_rc(key, cudaStreamSynchronize(s));
            unsigned its = 0;
            cudaMemcpy(&its, iteration, sizeof its, cudaMemcpyDeviceToHost);
            snprintf(key, sizeof key, "iterations%d", run);
            obs_int(key, its);
        }
        cudaGraphExecDestroy(e);
    }

    cudaGraph_t pc = nullptr;
    obs_rc("clone_with_bodies", cudaGraphClone(&pc, p));
    if (pc)
        cudaGraphDestroy(pc);

    // R: the IF body sits in R's child graph (added empty, reached through the child node).
    cudaGraph_t r = nullptr, empty = nullptr, child = nullptr;
    cudaGraphCreate(&r, 0);
    cudaGraphCreate(&empty, 0);
    cudaGraphNode_t c_if, r_child;
    cudaGraphConditionalHandle c_handle;
    bool r_built = cudaGraphAddChildGraphNode(&r_child, r, nullptr, 0, empty) == cudaSuccess &&
                   cudaGraphChildGraphNodeGetGraph(r_child, &child) == cudaSuccess;
    cudaGraphDestroy(empty);
    cudaGraph_t c_body = r_built ? add_conditional(child, &c_if, nullptr, 0, cudaGraphCondTypeIf,
                                                   &c_handle, &r_built)
                                 : nullptr;
    if (c_body)
        add_checked_use(c_body, nullptr, 8, bad, &r_built);
    obs_ok("child_body_built", r_built);
    cudaGraphExec_t er = nullptr;
    cudaError_t r_inst = cudaGraphInstantiate(&er, r, 0);
    obs_rc("child_body_instantiate", r_inst);
    if (r_inst == cudaSuccess) {
        obs_rc("child_body_launch", cudaGraphLaunch(er, s));
        obs_rc("child_body_sync", cudaStreamSynchronize(s));
        cudaGraphExecDestroy(er);
    }
    cudaGraphDestroy(r);

    // Q: a body allocation never freed in its body.
    cudaGraph_t q = nullptr;
    cudaGraphCreate(&q, 0);
    cudaGraphNode_t q_if, q1, q2;
    cudaGraphConditionalHandle q_handle;
    bool q_built = true;
    cudaGraph_t q_body =
        add_conditional(q, &q_if, nullptr, 0, cudaGraphCondTypeIf, &q_handle, &q_built);
    void *c = nullptr;
    q_built &= add_alloc(&q1, q_body, nullptr, 0, kBytes, &c) == cudaSuccess;
    q_built &= add_fill(&q2, q_body, &q1, 1, c, kWords, 3) == cudaSuccess;
    obs_ok("escape_built", q_built);
    cudaGraphExec_t eq = nullptr;
    obs_rc("escape_body_instantiate", cudaGraphInstantiate(&eq, q, 0));
    if (eq)
        cudaGraphExecDestroy(eq);

    unsigned wrong = 0;
    cudaMemcpy(&wrong, bad, sizeof wrong, cudaMemcpyDeviceToHost);
    obs_int("wrong_words", wrong);
    cudaGraphDestroy(p);
    cudaGraphDestroy(q);
    cudaFree(bad);
    cudaFree(iteration);
    cudaStreamDestroy(s);
    return 0;
}
