// A launch that graphmem refuses must leave nothing behind. GRAPHMEM_MAX_RESERVED is set to
// 8 MiB before the first CUDA call (natively the variable means nothing). Y (4 MiB, a kernel
// that writes its signature once and re-checks it for about a second) and X (8 MiB) share a
// sharing group: both were launched on s1 first. A third graph W holds 4 MiB it leaves unfreed.
// While Y runs on s1, X is launched on s3: natively that works; under graphmem the cap refuses it
// (Y's 4 MiB + W's 4 MiB + X's other 4 MiB > 8 MiB; the code goes to INFO). W's allocation is
// then freed and trimmed, and X is launched on s4 while Y still runs: it fits now, and it must
// wait for Y (X's bytes 0..4 MiB are Y's). A graphmem that let the refused launch record "the
// group was last used by X on s3" skips that wait (X follows itself) and X's kernel overwrites
// Y's words under Y's checks: Y's wrong-word count is the observation.
#include "threads.cuh"

static const size_t kMiB = 1u << 20;

int main() {
    setenv("GRAPHMEM_MAX_RESERVED", "8M", 1);
    require_graph_memory();
    cudaStream_t s1, s2, s3, s4;
    cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s3, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&s4, cudaStreamNonBlocking);
    unsigned *bad_y = new_counter(), *bad_x = new_counter(), *bad_w = new_counter();

    // Y: ~1 s of 1 ms sleeps, each followed by a check of all its words.
    Work y, x, w;
    obs_rc("make_y", make_work(&y, s1, 4 * kMiB, 1, 1000000, 1000, bad_y, false, 0));
    obs_rc("make_x", make_work(&x, s1, 8 * kMiB, 2, 50000, 4, bad_x, false, 0));
    obs_rc("make_w", make_work(&w, s2, 4 * kMiB, 3, 1000, 1, bad_w, true, 0));

    // Y first, then X, on s1: one sharing group, cut in two 4 MiB handles.
    obs_rc("prime_y", cudaGraphLaunch(y.exec, s1));
    obs_rc("prime_y_sync", cudaStreamSynchronize(s1));
    obs_rc("prime_x", cudaGraphLaunch(x.exec, s1));
    obs_rc("prime_x_sync", cudaStreamSynchronize(s1));
    obs_rc("prime_trim", cudaDeviceGraphMemTrim(0));
    info_attrs("primed", read_attrs());

    // W keeps 4 MiB.
    obs_rc("launch_w", cudaGraphLaunch(w.exec, s2));
    obs_rc("launch_w_sync", cudaStreamSynchronize(s2));

    // Y runs for about a second on s1.
    double t0 = host_seconds();
    obs_rc("launch_y", cudaGraphLaunch(y.exec, s1));
    info_attrs("y_running", read_attrs());

    // X on s3: refused under graphmem's cap, runs natively.
    cudaError_t refused = cudaGraphLaunch(x.exec, s3);
    (void)cudaGetLastError();
    info("launch_x_s3", "%s", cudaGetErrorName(refused));

    // W's allocation goes (checked first), its memory is trimmed: now X fits beside Y.
    k_verify_sig<<<kWorkGrid, kWorkBlock, 0, s2>>>(w.escaped, w.words, w.count, w.id, bad_w);
    obs_rc("verify_w", cudaGetLastError());
    obs_rc("free_w", cudaFreeAsync(w.escaped, s2));
    obs_rc("free_w_sync", cudaStreamSynchronize(s2));
    obs_rc("trim", cudaDeviceGraphMemTrim(0));
    info_attrs("trimmed", read_attrs());

    // X on s4 while Y still runs: it must not touch Y's bytes before Y is done.
    info("y_running_at_x_s4", "%s after %.3f s", cudaGetErrorName(cudaStreamQuery(s1)),
         host_seconds() - t0);
    (void)cudaGetLastError();
    obs_rc("launch_x_s4", cudaGraphLaunch(x.exec, s4));
    obs_rc("sync_s4", cudaStreamSynchronize(s4));
    obs_rc("sync_s3", cudaStreamSynchronize(s3));
    obs_rc("sync_s1", cudaStreamSynchronize(s1));
    info("y_done_after", "%.3f s", host_seconds() - t0);
    obs_wrong("wrong_words_y", bad_y);
    obs_wrong("wrong_words_x", bad_x);
    obs_wrong("wrong_words_w", bad_w);
    uint32_t launches = 0;
    cudaMemcpy(&launches, x.count, sizeof launches, cudaMemcpyDeviceToHost);
    info("x_launches", "%u", launches);

    // Afterwards X and Y run again, one after the other, on s4.
    obs_rc("again_y", cudaGraphLaunch(y.exec, s4));
    obs_rc("again_x", cudaGraphLaunch(x.exec, s4));
    obs_rc("again_sync", cudaStreamSynchronize(s4));
    obs_wrong("again_wrong_words", bad_x);
    obs_wrong("again_wrong_words_y", bad_y);
    info_attrs("end", read_attrs());

    destroy_work(&x);
    destroy_work(&y);
    destroy_work(&w);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
    cudaStreamDestroy(s3);
    cudaStreamDestroy(s4);
    return 0;
}
