/* The engine as the shim sees it: created lazily on the first graph-memory operation with the
 * CUDA backend of shim/backend_cuda.c. */
#ifndef GRAPHMEM_ENGINE_GLUE_H
#define GRAPHMEM_ENGINE_GLUE_H

/* Registers the engine as the source of per-exec statistics. */
void gm_engine_glue_register_stats(void);
/* In a forked child: forget the parent's engine without touching it. */
void gm_engine_glue_forget_after_fork(void);

#endif
