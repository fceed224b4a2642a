/* sdnotify.h - packaging (issue 15): the service manager protocol of the systemd units
 * (debian/fleetplane-serve.service and -agent, Type=notify), over libsystemd's sd_notify(3). Each call sends one state
 * datagram to $NOTIFY_SOCKET and is a no-op when the variable is unset (not run by systemd);
 * a send error is logged at debug level and otherwise ignored (the service keeps running; a
 * unit that waits for READY=1 then fails its start by TimeoutStartSec, which is the right
 * outcome). NOTIFY_SOCKET is left in the environment (serve re-executes itself on a lost etcd
 * leadership and must still be able to notify). Sits in cmd: only the commands that run as
 * services call it. Thread-safe (sd_notify is). */
#ifndef FP_CMD_SDNOTIFY_H
#define FP_CMD_SDNOTIFY_H

/* READY=1 with STATUS=status (a short human line, may be NULL): the service is up (serve: its
 * API answers; agent: its state dir and client are set up). Also ends a reload. */
void sdnotify_ready(const char *status);

/* RELOADING=1 with MONOTONIC_USEC=<CLOCK_MONOTONIC now, microseconds> (systemd >= 253 wants
 * it for Type=notify-reload; older managers ignore it): a reload begins; sdnotify_ready ends
 * it. */
void sdnotify_reloading(void);

/* STOPPING=1: the service is shutting down (after its stop signal). */
void sdnotify_stopping(void);

#endif
