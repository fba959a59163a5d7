#include "engine_glue.h"

#include "stats.h"

void gm_engine_glue_register_stats(void) {
    /* No engine yet in this build step: nothing to report per exec. */
}

void gm_engine_glue_forget_after_fork(void) {}
