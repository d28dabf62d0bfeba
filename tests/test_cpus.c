/* test_cpus: the CPUs a replay may use (lab/lab_cpus.c): affinity mask and cgroup quota, with stand-in cgroup trees. */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab_cpus.h"
#include "tests/lab_test_sh.h"

static char root[64];

static void mk(void)
{
    lab_test_tmpdir(root, sizeof root, "cpus");
}

static void rm(void)
{
    lab_test_rmtree(root);
}

static void put(const char *rel, const char *text)
{
    char path[512], dir[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(dir, sizeof dir, "mkdir -p $(dirname %s)", path);
    cr_assert_eq(system(dir), 0);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
}

/* cgroup v2: the tightest cpu.max from the process's cgroup up to the root, rounded up; "max" is no quota. */
Test(cpus, cgroup_v2_quota_walks_up_and_rounds_up, .init = mk, .fini = rm)
{
    put("cpu.max", "max 100000\n");
    put("job/cpu.max", "1600000 100000\n"); /* 16 CPUs */
    put("job/step/cpu.max", "max 100000\n");
    cr_expect_eq(lab_cpus_usable_from(64, "0::/job/step\n", root), 16, "the parent's quota binds");
    cr_expect_eq(lab_cpus_usable_from(8, "0::/job/step\n", root), 8, "the affinity is tighter");
    put("job/step/cpu.max", "250000 100000\n"); /* 2.5 CPUs: 3 workers */
    cr_expect_eq(lab_cpus_usable_from(64, "0::/job/step\n", root), 3);
    put("job/step/cpu.max", "1000 100000\n"); /* a hundredth of a CPU: still 1 */
    cr_expect_eq(lab_cpus_usable_from(64, "0::/job/step\n", root), 1);
    cr_expect_eq(lab_cpus_usable_from(64, "0::/\n", root), 64, "the root sets none");
    cr_expect_eq(lab_cpus_usable_from(64, "0::/elsewhere\n", root), 64, "a cgroup not in the tree: its ancestors decide");
    cr_expect_eq(lab_cpus_usable_from(64, NULL, root), 64, "no cgroup listing: the affinity");
    cr_expect_eq(lab_cpus_usable_from(0, NULL, root), 1, "nothing known: 1");
}

/* cgroup v1: cpu.cfs_quota_us over cpu.cfs_period_us of the "cpu" controller's tree (as "cpu,cpuacct" too); -1 is none. */
Test(cpus, cgroup_v1_quota_of_the_cpu_controller, .init = mk, .fini = rm)
{
    put("cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
    put("cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    put("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "800000\n");
    put("cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
    const char *listing = "12:memory:/docker/abc\n11:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n";
    cr_expect_eq(lab_cpus_usable_from(128, listing, root), 8);
    cr_expect_eq(lab_cpus_usable_from(128, "12:memory:/docker/abc\n", root), 128, "no cpu controller: no quota");
}

/* The live rule follows the process's affinity mask (what `taskset -c 0` gives a job), and LAB_CPUS overrides. */
Test(cpus, the_affinity_mask_bounds_the_count)
{
    unsetenv("LAB_CPUS");
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(0, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0) _exit(3);
        char d[160];
        int n = lab_cpus_describe(d, sizeof d);
        _exit(n == 1 && lab_cpus_usable() == 1 && strstr(d, "affinity 1") ? 0 : 1);
    }
    int ws;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "one CPU in the mask, the count is not 1 (exit %d)", WEXITSTATUS(ws));
    setenv("LAB_CPUS", "5", 1);
    cr_expect_eq(lab_cpus_usable(), 5);
    setenv("LAB_CPUS", "five", 1);
    cr_expect_geq(lab_cpus_usable(), 1, "an unreadable override is ignored");
    unsetenv("LAB_CPUS");
}
