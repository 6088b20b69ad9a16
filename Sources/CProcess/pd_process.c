// Process priority for background runners. ioprio_set has no glibc wrapper, and syscall(2) is
// variadic, which Swift cannot call: both calls live here.
#define _GNU_SOURCE
#include "pd_process.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

// From linux/ioprio.h (not every system installs the header).
#define PD_IOPRIO_CLASS_SHIFT 13
#define PD_IOPRIO_CLASS_IDLE 3
#define PD_IOPRIO_WHO_PROCESS 1

/// Both priorities for one thread (0: the calling one); 0 or the first errno.
static int set_idle(pid_t thread) {
    int failure = 0;
    struct sched_param parameters = { .sched_priority = 0 };
    if (sched_setscheduler(thread, SCHED_IDLE, &parameters) != 0) failure = errno;
    if (syscall(SYS_ioprio_set, PD_IOPRIO_WHO_PROCESS, thread, PD_IOPRIO_CLASS_IDLE << PD_IOPRIO_CLASS_SHIFT) != 0 && failure == 0) {
        failure = errno;
    }
    return failure;
}

int pd_process_set_idle_priority(void) {
    // Linux sets both per thread, and a new thread takes its creator's: every thread that runs
    // now (Swift's runtime may have started some) is lowered, so every later one is too.
    int failure = set_idle(0);
    DIR *tasks = opendir("/proc/self/task");
    if (tasks == NULL) return failure;
    struct dirent *entry;
    while ((entry = readdir(tasks)) != NULL) {
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
        int result = set_idle((pid_t)atoi(entry->d_name));
        if (result != 0 && result != ESRCH && failure == 0) failure = result;
    }
    closedir(tasks);
    return failure;
}
