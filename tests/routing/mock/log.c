/* Call log of the mock driver: one line per entry, appended to $GM_MOCK_LOG.
 *
 * Lines are "call NAME from=OBJECT" where OBJECT is the basename of the shared object (or
 * executable) holding the return address, which tells a call forwarded by a graphmem hook
 * (from=libgraphmem.so) from a direct one. Each line is one write() on an O_APPEND descriptor
 * so concurrent threads and forked children do not interleave within a line. An "exit" line
 * comes from the mock's exit handler, registered when the mock is loaded (the runtime loads it at
 * the program's first CUDA call): it runs before the handlers registered earlier (a static
 * runtime's teardown, in the routing apps) and before every library's destructor (a shared
 * runtime's teardown), both of which may come after graphmem wrote its statistics. */
#include "mock.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static int log_fd = -1;

static void log_open(void) {
    const char *path = getenv("GM_MOCK_LOG");
    if (path && *path)
        log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

void gm_mock_logf(const char *fmt, ...) {
    pthread_once(&log_once, log_open);
    if (log_fd < 0)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2)
        n = sizeof(line) - 2;
    line[n++] = '\n';
    ssize_t w = write(log_fd, line, (size_t)n);
    (void)w;
}

static const char *caller_object(const void *caller) {
    Dl_info info;
    const char *obj = "?";
    if (dladdr(caller, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        obj = slash ? slash + 1 : info.dli_fname;
        if (!*obj)
            obj = "main";
    }
    return obj;
}

/* Whether lines are written: the caller's object is looked up (dladdr) only then. */
static bool logging(void) {
    pthread_once(&log_once, log_open);
    return log_fd >= 0;
}

void gm_mock_log_call(const char *name, const void *caller) {
    if (logging())
        gm_mock_logf("call %s from=%s", name, caller_object(caller));
}

static void log_exit(void) {
    gm_mock_logf("exit");
}

__attribute__((constructor)) static void register_exit_mark(void) {
    atexit(log_exit);
}

/* Called by the weak defaults of stubs.c: a program reaching one needs more of the mock. */
void gm_mock_log_unimplemented(const char *name, const void *caller) {
    if (logging())
        gm_mock_logf("call %s from=%s unimplemented", name, caller_object(caller));
}
