/* Messages (core/common/log.c) are written under the engine's locks, and write() is a cancellation
 * point: a thread with a cancellation pending that writes a message while holding a lock returns
 * from the message with the lock still its own to release, and only the next cancellation point
 * ends it (without the guard the cancellation unwinds it inside the write, the lock held). */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#include "check.h"
#include "log.h"

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool logged_and_released;

/* A frame of its own, returned from before the cancellation unwinds the thread (frames a
 * cancellation unwinds keep their stack poisoned under AddressSanitizer). */
__attribute__((noinline)) static bool log_under_lock(void) {
    pthread_mutex_lock(&held);
    gm_log(GM_LOG_WARN, "a message written with a cancellation pending (expected by the test)");
    pthread_mutex_unlock(&held);
    return true;
}

static void *cancelled_main(void *arg) {
    (void)arg;
    pthread_cancel(pthread_self());
    atomic_store(&logged_and_released, log_under_lock());
    pthread_testcancel();
    return NULL;
}

static void test_message_is_no_cancellation_point(void) {
    /* The message goes to /dev/null: only its write matters. */
    int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);
    REQUIRE(saved >= 0 && null >= 0 && dup2(null, STDERR_FILENO) == STDERR_FILENO);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, cancelled_main, NULL) == 0);
    void *result;
    pthread_join(t, &result);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(null);
    CHECK(result == PTHREAD_CANCELED);
    CHECK(atomic_load(&logged_and_released));
    CHECK(pthread_mutex_trylock(&held) == 0);
    pthread_mutex_unlock(&held);
}

int main(void) {
    RUN_TEST(test_message_is_no_cancellation_point);
    return gm_check_summary();
}
