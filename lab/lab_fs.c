/* lab_fs: file helpers: atomic writes (temporary file then rename), whole-file reads, mkdir -p. */
#include "lab_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

lab_status lab_fs_write_atomic(const char *path, const void *data, size_t len)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp)
        return lab_err_set(LAB_ERR_ARG, "%s: path too long", path);
    /* mkstemp: a fresh name opened O_CREAT|O_EXCL, never a file (or link) that was already there. */
    int fd = mkstemp(tmp);
    if (fd < 0) return lab_err_set(LAB_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    if (fchmod(fd, 0644) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return lab_err_set(LAB_ERR_IO, "%s: chmod failed: %s", tmp, strerror(e));
    }
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            unlink(tmp);
            return lab_err_set(LAB_ERR_IO, "%s: write failed: %s", tmp, strerror(e));
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 && errno != EINVAL) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return lab_err_set(LAB_ERR_IO, "%s: fsync failed: %s", tmp, strerror(e));
    }
    if (close(fd) != 0) {
        unlink(tmp);
        return lab_err_set(LAB_ERR_IO, "%s: close failed: %s", tmp, strerror(errno));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return lab_err_set(LAB_ERR_IO, "%s: rename from %s failed: %s", path, tmp, strerror(e));
    }
    return LAB_OK;
}

lab_status lab_fs_read_all(const char *path, char **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return lab_err_set(LAB_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        fclose(f);
        return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
    }
    for (;;) {
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n < cap) break;
        char *nb = realloc(buf, cap * 2 + 1);
        if (!nb) {
            free(buf);
            fclose(f);
            return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory", path);
        }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return lab_err_set(LAB_ERR_IO, "%s: read error", path);
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return LAB_OK;
}

lab_status lab_fs_mkdirs(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) return lab_err_set(LAB_ERR_ARG, "mkdir: bad path '%s'", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; ++i) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return lab_err_set(LAB_ERR_IO, "%s: cannot create directory: %s", buf, strerror(errno));
            buf[i] = c;
        }
    }
    return LAB_OK;
}

int lab_fs_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int lab_fs_count_suffix(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    size_t ls = strlen(suffix);
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        n += l >= ls && strcmp(e->d_name + l - ls, suffix) == 0;
    }
    closedir(d);
    return n;
}

lab_status lab_fs_out_check(const char *flag, const char *path, const char *const *members)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) return LAB_OK; /* missing: made by the writer */
    if (!S_ISDIR(sb.st_mode))
        return lab_err_set(LAB_ERR_ARG, "%s %s is not a folder (a %s): name a missing path, an empty folder or a "
                           "previous result set; nothing was touched", flag, path, S_ISLNK(sb.st_mode) ? "symbolic link" : "file");
    DIR *d = opendir(path);
    if (!d) return lab_err_set(LAB_ERR_IO, "%s %s: cannot read the folder: %s", flag, path, strerror(errno));
    struct dirent *e;
    char other[256] = "";
    int member = 0;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        int known = 0;
        for (size_t i = 0; members[i]; ++i) known |= !strcmp(e->d_name, members[i]);
        if (known) member = 1;
        else if (!other[0]) snprintf(other, sizeof other, "%s", e->d_name);
    }
    closedir(d);
    if (other[0] && !member)
        return lab_err_set(LAB_ERR_ARG, "%s %s holds other things (%s, ...) and no result set of the lab: name a missing "
                           "path, an empty folder or a previous result set; nothing was touched", flag, path, other);
    return LAB_OK;
}
