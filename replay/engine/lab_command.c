/* lab_command: the commands the lab prints for a user to type (lab_command.h). */
#include "lab_command.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void lab_command_case(const char *lab_bin, const char *incident, const char *variant, uint64_t seed,
                      const char *backend, char *buf, size_t len)
{
    snprintf(buf, len, "%s replay --incident %s --variant %s --seed %llu --backend %s", lab_bin, incident, variant,
             (unsigned long long)seed, backend);
}

void lab_command_variant(const char *lab_bin, const char *incident, const char *variant, size_t seeds, char *buf,
                         size_t len)
{
    snprintf(buf, len, "%s replay --incident %s --variant %s --seeds %zu", lab_bin, incident, variant, seeds);
}

/* Appends to buf[0..len) at *k what fmt says, while it fits (*k past len: the rest is cut); *k counts on past len,
 * to the length the whole text needs (buf may be NULL when len is 0). */
static void lab_command_add(char *buf, size_t len, int *k, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void lab_command_add(char *buf, size_t len, int *k, const char *fmt, ...)
{
    if (*k < 0) return;
    int room = (size_t)*k < len;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(room ? buf + *k : NULL, room ? len - (size_t)*k : 0, fmt, ap);
    va_end(ap);
    *k = w < 0 ? -1 : *k + w;
}

size_t lab_command_sh_word(const char *s, char *buf, size_t len)
{
    size_t k = 0;
    int plain = *s != 0;
    for (const char *c = s; *c && plain; ++c) plain = isalnum((unsigned char)*c) || strchr("/._-+=:,@%", *c) != NULL;
#define LAB_COMMAND_PUT(ch) (k + 1 < len ? (void)(buf[k] = (ch)) : (void)0, ++k)
    if (!plain) LAB_COMMAND_PUT('\'');
    for (; *s; ++s) {
        if (!plain && *s == '\'') {
            LAB_COMMAND_PUT('\''), LAB_COMMAND_PUT('\\'), LAB_COMMAND_PUT('\''), LAB_COMMAND_PUT('\'');
        } else {
            LAB_COMMAND_PUT(*s);
        }
    }
    if (!plain) LAB_COMMAND_PUT('\'');
#undef LAB_COMMAND_PUT
    if (len) buf[k < len ? k : len - 1] = 0;
    return k;
}

/* Appends s as one word for sh (lab_command_sh_word) to buf[0..len) at *k, counting on past len as lab_command_add does. */
static void lab_command_add_word(char *buf, size_t len, int *k, const char *s)
{
    if (*k < 0) return;
    int room = (size_t)*k < len;
    *k += (int)lab_command_sh_word(s, room ? buf + *k : NULL, room ? len - (size_t)*k : 0);
}

size_t lab_command_resume_line(const lab_command_resume *r, char *buf, size_t len)
{
    int k = 0;
    char out[PATH_MAX + 16];
    if (len) buf[0] = 0;
    lab_command_add_word(buf, len, &k, r->lab_bin);
    lab_command_add(buf, len, &k, " replay");
    for (size_t i = 0; i < r->n_ids; ++i) lab_command_add(buf, len, &k, " --incident %s", r->ids[i]);
    if (r->variant) {
        lab_command_add(buf, len, &k, " --variant ");
        lab_command_add_word(buf, len, &k, r->variant);
    }
    if (r->one_seed) lab_command_add(buf, len, &k, " --seed %llu", (unsigned long long)r->first_seed);
    else if (!r->default_seeds)
        lab_command_add(buf, len, &k, " --first-seed %llu --seeds %zu", (unsigned long long)r->first_seed, r->n_seeds);
    else if (r->first_seed != 1) lab_command_add(buf, len, &k, " --first-seed %llu", (unsigned long long)r->first_seed);
    if (r->part > 0) snprintf(out, sizeof out, "%s-resumed-%d", r->out ? r->out : "build/replay", r->part);
    else snprintf(out, sizeof out, "%s-resumed", r->out ? r->out : "build/replay");
    lab_command_add(buf, len, &k, " --backend %s --out ", r->backend);
    lab_command_add_word(buf, len, &k, out);
    return k < 0 ? 0 : (size_t)k;
}

size_t lab_command_resume_dir(const char *lab_bin, const char *out, char *buf, size_t len)
{
    int k = 0;
    if (len) buf[0] = 0;
    lab_command_add_word(buf, len, &k, lab_bin);
    lab_command_add(buf, len, &k, " replay --resume ");
    lab_command_add_word(buf, len, &k, out);
    return k < 0 ? 0 : (size_t)k;
}

void lab_command_line(const char *lab_bin, const char *command, int argc, char *const *argv, char *buf, size_t len)
{
    int k = 0;
    if (len) buf[0] = 0;
    lab_command_add(buf, len, &k, "%s %s", lab_bin, command);
    for (int i = 0; i < argc; ++i) lab_command_add(buf, len, &k, " %s", argv[i]);
}
