#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#define GM_LOG_LINE_MAX 1024

static atomic_int log_level = GM_LOG_WARN;
static atomic_int fallback_reported;
/* A message printed while formatting another (a bug) must not recurse. */
static _Thread_local int log_depth;

static const char *const level_words[] = {"error", "warning", "info", "debug", "trace"};

void gm_log_set_level(int level) {
    atomic_store_explicit(&log_level, level, memory_order_relaxed);
}

int gm_log_get_level(void) {
    return atomic_load_explicit(&log_level, memory_order_relaxed);
}

/* vsnprintf into a stack buffer: glibc does not allocate for the integer and string conversions
 * graphmem uses (no %ls, no floating point beyond %f of counters). */
static void write_message(const char *prefix, const char *fmt, va_list args, int newline) {
    if (log_depth > 0)
        return;
    log_depth++;
    char line[GM_LOG_LINE_MAX];
    int used = prefix ? snprintf(line, sizeof line, "%s", prefix) : 0;
    if (used < 0)
        used = 0;
    int body = vsnprintf(line + used, sizeof line - (size_t)used, fmt, args);
    if (body > 0)
        used += body;
    if (used > (int)sizeof line - 2)
        used = (int)sizeof line - 2;
    if (newline)
        line[used++] = '\n';
    /* write() is a cancellation point, and messages are written under the engine's locks: a
     * thread cancelled here would leave them held for every other thread. */
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    ssize_t ignored = write(STDERR_FILENO, line, (size_t)used);
    (void)ignored;
    pthread_setcancelstate(cancel, NULL);
    log_depth--;
}

void gm_log(gm_log_level_t level, const char *fmt, ...) {
    if (!GM_LOG_ENABLED(level))
        return;
    char prefix[32];
    snprintf(prefix, sizeof prefix, "graphmem: %s: ", level_words[level]);
    va_list args;
    va_start(args, fmt);
    write_message(prefix, fmt, args, 1);
    va_end(args);
}

void gm_log_plain(const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    write_message(NULL, fmt, args, 0);
    va_end(args);
}

void gm_log_fallback(const char *fmt, ...) {
    if (atomic_exchange(&fallback_reported, 1))
        return;
    va_list args;
    va_start(args, fmt);
    write_message("graphmem: warning: passing every call to the driver: ", fmt, args, 1);
    va_end(args);
}
