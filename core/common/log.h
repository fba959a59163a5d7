/* Messages: "graphmem: <level>: text" on stderr. Never allocates, never calls CUDA, never takes a
 * lock (one write(2) per message), so it is safe inside hooks, at exit and after fork. */
#ifndef GRAPHMEM_LOG_H
#define GRAPHMEM_LOG_H

typedef enum gm_log_level {
    GM_LOG_ERROR = 0,
    GM_LOG_WARN = 1,
    GM_LOG_INFO = 2,
    GM_LOG_DEBUG = 3,
    GM_LOG_TRACE = 4,
} gm_log_level_t;

void gm_log_set_level(int level);
int gm_log_get_level(void);

#define GM_LOG_ENABLED(level) ((int)(level) <= gm_log_get_level())

void gm_log(gm_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints exactly the text given, whatever the level (banners, tables). */
void gm_log_plain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The one message of a fallback: graphmem gives up and passes everything to the driver. Printed
 * once per process whatever the level, with the reason. */
void gm_log_fallback(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
