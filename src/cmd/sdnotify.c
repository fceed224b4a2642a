/* sdnotify.c - READY/RELOADING/STOPPING for systemd (sdnotify.h), by sd_notify(3) of
 * libsystemd (the protocol: sd_notify(3), "Notes", and systemd.service(5) Type=notify). */
#include "cmd/sdnotify.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "base/log.h"

/* Sends state; a failure (a negative errno) is logged at debug. */
static void notify(const char *state)
{
	int rc = sd_notify(0, state);
	if (rc < 0)
		log_debug("sd_notify failed state=\"%.40s\" err=\"%s\"", state, strerror(-rc));
}

void sdnotify_ready(const char *status)
{
	char msg[256];
	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s", status ? status : "running");
	notify(msg);
}

void sdnotify_reloading(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t usec = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	char msg[96];
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, usec);
	notify(msg);
}

void sdnotify_stopping(void)
{
	notify("STOPPING=1");
}
