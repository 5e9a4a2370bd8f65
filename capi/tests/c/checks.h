/* The C tests' checks: each prints on rank 0 (or where it failed) and counts. A test program
 * includes it after haloport.h, <stdio.h> and <string.h>, and sets `rank`. */
#ifndef HALOPORT_TEST_CHECKS_H
#define HALOPORT_TEST_CHECKS_H

static int rank, failures, checks;

/* `ok` held; otherwise the check failed, with what was seen. */
static void check(const char *name, int ok, const char *seen) {
    checks++;
    if (!ok) failures++;
    if (rank == 0 || !ok) printf("rank %d: %s - %s%s%s\n", rank, ok ? "ok" : "FAIL", name, ok ? "" : ": ", ok ? "" : seen);
}

/* The call returned `want` and the last error contains `fragment` (NULL: any message). */
static void expect(const char *name, haloport_status got, haloport_status want, const char *fragment) {
    const char *message = haloport_last_error();
    char seen[1024];
    snprintf(seen, sizeof seen, "%s (%s)", haloport_status_name(got), got == HALOPORT_STATUS_OK ? "" : message);
    check(name, got == want && (want == HALOPORT_STATUS_OK || fragment == NULL || strstr(message, fragment) != NULL),
          seen);
}

#endif
