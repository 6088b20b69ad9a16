#ifndef PD_PROCESS_H
#define PD_PROCESS_H

/// Lowers every thread of the process (and so every thread created from now on) to idle priority:
/// CPU scheduling policy SCHED_IDLE and I/O priority class IOPRIO_CLASS_IDLE, so the person at
/// the machine never waits for it. Call it before any other thread starts. Returns 0, or the
/// errno of the first call that failed (the other is still tried).
int pd_process_set_idle_priority(void);

#endif
