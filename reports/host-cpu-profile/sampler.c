/* sampler.so: a CPU-time (or wall-time: LAB_PROF_CLOCK=wall) sampling profiler for GPU machines that have no perf
 * (LD_PRELOAD it).
 *
 * With LAB_PROF_DIR set, every thread of every process that loads it (and of every child it forks) takes a SIGPROF
 * each millisecond of its own CPU time (a CLOCK_THREAD_CPUTIME_ID timer aimed at that thread, made at the thread's
 * start through an interposed pthread_create; SIGPROF cannot be blocked while it is loaded, since pthread_sigmask and
 * sigprocmask are interposed too). A process-wide ITIMER_PROF would not do: its signal goes to whichever thread the
 * kernel picks, often one asleep in poll or a futex, so another thread's CPU time is charged to a waiting one, and a
 * thread that blocks every signal (the lab's background thread) is never seen. Per sample it records the thread, the
 * interrupted instruction, and up to PROF_DEPTH return addresses into the main program found by scanning the thread's stack
 * upward from the stack pointer (read with process_vm_readv, so an unmapped page ends the scan instead of faulting).
 * The scan is a heuristic: a stale return address left on the stack can show up; the leaf is exact.
 *
 * Files, per process: prof.PID.bin (a header, then samples), prof.PID.maps (its /proc/self/maps, rewritten as the
 * samples are flushed, so libraries loaded late appear), prof.PID.tasks (each thread's name and utime/stime ticks,
 * also rewritten at each flush). Samples are flushed every PROF_FLUSH samples and when the process calls _exit or exit.
 * Only async-signal-safe calls run in the handler. Build: cc -O2 -shared -fPIC -o sampler.so sampler.c */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#define PROF_DEPTH 6
#define PROF_FLUSH 64
#define PROF_SCAN_BYTES 65536

typedef struct {
    uint64_t rip;
    uint32_t tid;
    uint32_t n;
    uint64_t ret[PROF_DEPTH];
} prof_sample;

typedef struct {
    char magic[8]; /* "LABPROF1" */
    uint64_t pid, text_lo, text_hi;
} prof_header;

static char prof_dir[512];
/* Handlers of several threads run at once (their timers expire on the same tick), so samples go to PROF_SLOTS buffers,
 * each taken by one handler at a time; a sample finding every slot taken is dropped (and counted). */
#define PROF_SLOTS 16
static int prof_done; /* the final flush has run: samples after it are not recorded */
static unsigned long prof_dropped;
static pthread_key_t prof_timer_key; /* a thread's timer, deleted when the thread ends */
static int prof_fd = -1;
static uint64_t prof_text_lo, prof_text_hi;
typedef struct {
    int busy;
    int n;
    prof_sample buf[PROF_FLUSH];
    uint64_t scan[PROF_SCAN_BYTES / 8];
} prof_slot;
static prof_slot prof_slots[PROF_SLOTS];
static unsigned prof_flushes;

/* decimal of v into p (no terminator); returns the length */
static int prof_utoa(char *p, unsigned long v)
{
    char t[24];
    int n = 0;
    do t[n++] = (char)('0' + v % 10), v /= 10; while (v);
    for (int i = 0; i < n; ++i) p[i] = t[n - 1 - i];
    return n;
}

/* prof_dir/prof.PID.SUFFIX into p */
static void prof_path(char *p, size_t cap, const char *suffix)
{
    size_t n = strlen(prof_dir);
    if (n + 64 > cap) n = cap - 64;
    memcpy(p, prof_dir, n);
    memcpy(p + n, "/prof.", 6), n += 6;
    n += (size_t)prof_utoa(p + n, (unsigned long)getpid());
    p[n++] = '.';
    size_t s = strlen(suffix);
    memcpy(p + n, suffix, s + 1);
}

static void prof_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w <= 0) return;
        p += w, len -= (size_t)w;
    }
}

/* copies the file at src into prof.PID.suffix (both read with plain syscalls) */
static void prof_copy_file(const char *src, int out)
{
    char buf[4096];
    int in = open(src, O_RDONLY);
    if (in < 0) return;
    ssize_t r;
    while ((r = read(in, buf, sizeof buf)) > 0) prof_write_all(out, buf, (size_t)r);
    close(in);
}

static void prof_snapshot(void)
{
    char p[600];
    prof_path(p, sizeof p, "maps");
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) prof_copy_file("/proc/self/maps", fd), close(fd);
    prof_path(p, sizeof p, "tasks");
    fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return;
    char line[48] = "dropped ";
    size_t ln = 8 + (size_t)prof_utoa(line + 8, prof_dropped);
    line[ln++] = '\n';
    prof_write_all(fd, line, ln); /* samples lost to a handler already running on another thread */
    int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY);
    if (dir >= 0) {
        char dents[8192];
        long got;
        while ((got = syscall(SYS_getdents64, dir, dents, sizeof dents)) > 0) {
            for (long off = 0; off < got;) {
                struct { uint64_t ino; int64_t off; unsigned short reclen; unsigned char type; char name[]; } *d = (void *)(dents + off);
                off += d->reclen;
                if (d->name[0] < '0' || d->name[0] > '9') continue;
                char sp[64] = "/proc/self/task/";
                size_t k = strlen(sp), nl = strlen(d->name);
                if (k + nl + 6 >= sizeof sp) continue;
                memcpy(sp + k, d->name, nl), memcpy(sp + k + nl, "/stat", 6);
                prof_copy_file(sp, fd); /* one line per thread: tid (comm) ... utime stime (fields 14, 15) */
            }
        }
        close(dir);
    }
    close(fd);
}

/* writes a slot's samples (the file is O_APPEND: one write() lands whole beside other slots' writes) */
static void prof_flush(prof_slot *sl)
{
    if (prof_fd < 0) return;
    if (sl->n > 0) prof_write_all(prof_fd, sl->buf, (size_t)sl->n * sizeof(prof_sample));
    sl->n = 0;
    if (__atomic_fetch_add(&prof_flushes, 1, __ATOMIC_RELAXED) % 8 == 0) prof_snapshot();
}


static void prof_on_sigprof(int sig, siginfo_t *si, void *uc_)
{
    (void)sig, (void)si;
    if (prof_done || prof_fd < 0) return;
    prof_slot *sl = NULL;
    for (int k = 0; k < PROF_SLOTS && !sl; ++k)
        if (!__atomic_exchange_n(&prof_slots[k].busy, 1, __ATOMIC_ACQUIRE)) sl = &prof_slots[k];
    if (!sl) {
        __atomic_add_fetch(&prof_dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    int saved = errno;
    ucontext_t *uc = uc_;
    prof_sample *s = &sl->buf[sl->n];
    s->rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    s->tid = (uint32_t)syscall(SYS_gettid);
    s->n = 0;
    struct iovec local = {sl->scan, sizeof sl->scan}, remote = {(void *)uc->uc_mcontext.gregs[REG_RSP], sizeof sl->scan};
    ssize_t got = syscall(SYS_process_vm_readv, getpid(), &local, 1, &remote, 1, 0);
    for (ssize_t i = 0; got > 0 && i < got / 8 && s->n < PROF_DEPTH; ++i)
        if (sl->scan[i] >= prof_text_lo && sl->scan[i] < prof_text_hi) s->ret[s->n++] = sl->scan[i];
    if (++sl->n == PROF_FLUSH) prof_flush(sl);
    errno = saved;
    __atomic_store_n(&sl->busy, 0, __ATOMIC_RELEASE);
}

static int prof_main_text(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            prof_text_lo = info->dlpi_addr + ph->p_vaddr;
            prof_text_hi = prof_text_lo + ph->p_memsz;
        }
    }
    return 1; /* the first object is the main program */
}

/* LAB_PROF_CLOCK=wall: the timers count wall time instead, so a thread is also sampled while it waits (a lock, a
 * system call, a device wait) and the samples say where the threads' time went, not only their CPU. A thread asleep in
 * a system call is woken by each sample: one that returns EINTR regardless of SA_RESTART (poll, nanosleep) comes back
 * early to a caller that must retry. */
static clockid_t prof_clock = CLOCK_THREAD_CPUTIME_ID;
static long prof_period_ns = 1000000; /* LAB_PROF_US: the timers' period in microseconds (1 to 999999; default 1000) */

/* a SIGPROF each period (a millisecond unless LAB_PROF_US) of the calling thread's CPU time (or of wall time),
 * delivered to that thread */
static void prof_thread_arm(void)
{
    if (!prof_dir[0]) return;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    timer_t *t = malloc(sizeof *t);
    if (!t) return;
    if (timer_create(prof_clock, &sev, t) != 0) {
        free(t);
        return;
    }
    struct itimerspec its = {{0, prof_period_ns}, {0, prof_period_ns}};
    timer_settime(*t, 0, &its, NULL);
    pthread_setspecific(prof_timer_key, t);
}

static void prof_timer_end(void *p)
{
    timer_delete(*(timer_t *)p);
    free(p);
}

/* SIGPROF stays deliverable: a mask that would block it is passed on without it, to libc's own function (which also
 * keeps its internal signals out of the mask) */
static const sigset_t *prof_unblocked(int how, const sigset_t *set, sigset_t *copy)
{
    if (!set || how == SIG_UNBLOCK || !prof_dir[0]) return set;
    *copy = *set;
    sigdelset(copy, SIGPROF);
    return copy;
}

int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    static int (*real)(int, const sigset_t *, sigset_t *);
    if (!real) real = (int (*)(int, const sigset_t *, sigset_t *))dlsym(RTLD_NEXT, "pthread_sigmask");
    sigset_t copy;
    return real(how, prof_unblocked(how, set, &copy), old);
}

int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    static int (*real)(int, const sigset_t *, sigset_t *);
    if (!real) real = (int (*)(int, const sigset_t *, sigset_t *))dlsym(RTLD_NEXT, "sigprocmask");
    sigset_t copy;
    return real(how, prof_unblocked(how, set, &copy), old);
}

typedef struct {
    void *(*fn)(void *);
    void *arg;
} prof_start;

static void *prof_thread_main(void *p)
{
    prof_start s = *(prof_start *)p;
    free(p);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPROF);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL); /* a thread made with every signal blocked */
    prof_thread_arm();
    return s.fn(s.arg);
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!real) real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(RTLD_NEXT, "pthread_create");
    prof_start *s = prof_dir[0] ? malloc(sizeof *s) : NULL;
    if (!s) return real(t, attr, fn, arg);
    s->fn = fn, s->arg = arg;
    int rc = real(t, attr, prof_thread_main, s);
    if (rc != 0) free(s);
    return rc;
}

/* opens this process's sample file and starts the calling thread's timer */
static void prof_arm(void)
{
    char p[600];
    prof_path(p, sizeof p, "bin");
    prof_fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (prof_fd < 0) return;
    for (int k = 0; k < PROF_SLOTS; ++k) prof_slots[k].n = 0, prof_slots[k].busy = 0; /* a parent's handler may have held one */
    prof_flushes = 0;
    prof_header h = {{'L', 'A', 'B', 'P', 'R', 'O', 'F', '1'}, (uint64_t)getpid(), prof_text_lo, prof_text_hi};
    prof_write_all(prof_fd, &h, sizeof h);
    prof_thread_arm();
}

static void prof_child(void)
{
    if (prof_fd >= 0) close(prof_fd);
    prof_fd = -1;
    prof_done = 0;
    prof_arm();
}

/* the last samples and snapshot, once; the buffer taken from any handler in flight */
static void prof_final(void)
{
    if (prof_fd < 0 || prof_done) return;
    prof_done = 1;
    for (int k = 0; k < PROF_SLOTS; ++k) {
        for (int i = 0; i < 1000 && __atomic_exchange_n(&prof_slots[k].busy, 1, __ATOMIC_ACQUIRE); ++i) sched_yield();
        prof_flush(&prof_slots[k]);
    }
    prof_snapshot();
}

/* the lab's children end with _exit, which runs no atexit handler */
void _exit(int code)
{
    prof_final();
    syscall(SYS_exit_group, code);
    __builtin_unreachable();
}

__attribute__((constructor)) static void prof_init(void)
{
    const char *d = getenv("LAB_PROF_DIR");
    if (!d || !*d || strlen(d) >= sizeof prof_dir) return;
    if (pthread_key_create(&prof_timer_key, prof_timer_end) != 0) return;
    memcpy(prof_dir, d, strlen(d) + 1);
    const char *c = getenv("LAB_PROF_CLOCK");
    if (c && strcmp(c, "wall") == 0) prof_clock = CLOCK_MONOTONIC;
    const char *us = getenv("LAB_PROF_US");
    if (us && atol(us) > 0 && atol(us) < 1000000) prof_period_ns = 1000 * atol(us);
    dl_iterate_phdr(prof_main_text, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = prof_on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, NULL);
    pthread_atfork(NULL, NULL, prof_child);
    atexit(prof_final);
    prof_arm();
}
