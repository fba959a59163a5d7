// Two host threads launch two graphs at the same time, each on its own stream. X and Y are first
// launched once each on one stream s0, which makes graphmem put them in one sharing group (the
// same physical memory behind both); afterwards every launch must be ordered after the other
// graph's previous launch on the other stream. A wait recorded on the other stream before the
// other thread's launch reached it lets the two run at once: the kernels write a signature over
// their 64 MiB, sleep, check every word and count the words the other graph overwrote.
// Natively the graphs have memory of their own and nothing can go wrong.
// Variants: created streams, and each thread's per-thread default stream.
#include "threads.cuh"

static const size_t kBytes = 64u << 20;
static const int kLaunches = 3000;

struct Result {
    FirstError launch;
    cudaError_t sync = cudaSuccess;
};

static void launcher(cudaGraphExec_t e, cudaStream_t s, bool per_thread, Result *r) {
    cudaStream_t st = per_thread ? cudaStreamPerThread : s;
    for (int i = 0; i < kLaunches; i++) {
        cudaError_t rc = cudaGraphLaunch(e, st);
        r->launch.note(rc);
        if (rc != cudaSuccess)
            break;
    }
    r->sync = cudaStreamSynchronize(st);
}

static void variant(const char *tag, Work *x, Work *y, cudaStream_t s0, cudaStream_t s1,
                    cudaStream_t s2, bool per_thread, unsigned *bad) {
    char key[96];
    snprintf(key, sizeof key, "%s_prime_x", tag);
    obs_rc(key, cudaGraphLaunch(x->exec, s0));
    snprintf(key, sizeof key, "%s_prime_y", tag);
    obs_rc(key, cudaGraphLaunch(y->exec, s0));
    snprintf(key, sizeof key, "%s_prime_sync", tag);
    obs_rc(key, cudaStreamSynchronize(s0));

    Result rx, ry;
    double t0 = host_seconds();
    std::thread t1(launcher, x->exec, s1, per_thread, &rx);
    std::thread t2(launcher, y->exec, s2, per_thread, &ry);
    t1.join();
    t2.join();
    snprintf(key, sizeof key, "%s_seconds", tag);
    info(key, "%.3f", host_seconds() - t0);

    snprintf(key, sizeof key, "%s_launch_x", tag);
    obs_rc(key, rx.launch.get());
    snprintf(key, sizeof key, "%s_launch_y", tag);
    obs_rc(key, ry.launch.get());
    snprintf(key, sizeof key, "%s_sync_x", tag);
    obs_rc(key, rx.sync);
    snprintf(key, sizeof key, "%s_sync_y", tag);
    obs_rc(key, ry.sync);
    snprintf(key, sizeof key, "%s_device_sync", tag);
    obs_rc(key, cudaDeviceSynchronize());
    snprintf(key, sizeof key, "%s_wrong_words", tag);
    obs_wrong(key, bad);
    uint32_t counts[2] = {0, 0};
    cudaMemcpy(&counts[0], x->count, sizeof(uint32_t), cudaMemcpyDeviceToHost);
    cudaMemcpy(&counts[1], y->count, sizeof(uint32_t), cudaMemcpyDeviceToHost);
    (void)cudaGetLastError();
    snprintf(key, sizeof key, "%s_launch_counts", tag);
    info(key, "x=%u y=%u", counts[0], counts[1]);
}

int main() {
    require_graph_memory();
    cudaStream_t s0, s1, s2;
    cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    unsigned *bad = new_counter();
    Work x, y;
    obs_rc("make_x", make_work(&x, s0, kBytes, 1, 25000, 2, bad, false, 0));
    obs_rc("make_y", make_work(&y, s0, kBytes, 2, 25000, 2, bad, false, 0));

    variant("streams", &x, &y, s0, s1, s2, false, bad);
    variant("per_thread", &x, &y, s0, s1, s2, true, bad);
    info_attrs("end", read_attrs());

    destroy_work(&x);
    destroy_work(&y);
    cudaFree(bad);
    cudaStreamDestroy(s0);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
    return 0;
}
