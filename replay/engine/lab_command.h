/* lab_command: the commands the lab prints for a user to type: a case's replay, a variant's, the resume of an
 * interrupted replay, and the command line a report records. Pure text: nothing here runs or reads anything. */
#ifndef LAB_COMMAND_H
#define LAB_COMMAND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The one command that replays exactly one case into buf (cut at len), e.g.
 * "build/lab replay --incident 0004-pow-grad-nan --variant fix --seed 7 --backend cpu". */
void lab_command_case(const char *lab_bin, const char *incident, const char *variant, uint64_t seed,
                      const char *backend, char *buf, size_t len);

/* The command that replays a variant over `seeds` seeds (a stated rate's verdict that needs more), into buf. */
void lab_command_variant(const char *lab_bin, const char *incident, const char *variant, size_t seeds, char *buf,
                         size_t len);

/* What one resume command of an interrupted replay says: some of its incidents, from a seed on. */
typedef struct {
    const char *lab_bin;
    const char *const *ids; /* the incidents it replays (their full ids) */
    size_t n_ids;
    const char *variant;    /* NULL: all */
    int one_seed;           /* the replay ran one seed: first_seed */
    int default_seeds;      /* the seeds were not given and these incidents resume from their start: --seeds left
                               out (each runs its own default count again), --first-seed written unless it is 1 */
    uint64_t first_seed;    /* the lowest seed of these incidents with an unfinished case */
    size_t n_seeds;         /* seeds from it on */
    const char *backend;
    const char *out;        /* the interrupted replay's folder */
    int part;               /* 0: the one command, into <out>-resumed; K >= 1: the K-th of several, <out>-resumed-K */
} lab_command_resume;

/* The resume command into buf (cut at len; buf may be NULL when len is 0): "<lab> replay [--incident ID]...
 * [--variant V] [--seed S | --first-seed S --seeds K | --first-seed S] --backend B --out <out>-resumed[-K]" (out
 * NULL: build/replay), a shell command line: the lab's path, the variant and the folder as lab_command_sh_word writes
 * them (a folder named `a b; rm x` stays one word). Returns the length the whole command needs, as snprintf does
 * (len must exceed it for the command to be whole), so that a caller can make room for it. */
size_t lab_command_resume_line(const lab_command_resume *r, char *buf, size_t len);

/* The command that completes an interrupted or killed replay in its folder, "<lab> replay --resume <out>" (the lab's
 * path and the folder as lab_command_sh_word writes them), into buf (cut at len; NULL when len is 0). Returns the
 * length the whole command needs, as lab_command_resume_line does. */
size_t lab_command_resume_dir(const char *lab_bin, const char *out, char *buf, size_t len);

/* s as one word for sh into buf (cut at len, as lab_command_resume_line cuts): as it is when it holds only letters, digits
 * and `/._-+=:,@%`, else in single quotes with a quote inside as '\''. Returns the length the whole word needs (at
 * most 4 * strlen(s) + 2). */
size_t lab_command_sh_word(const char *s, char *buf, size_t len);

/* The command line "<lab_bin> <command> <args...>" (arguments joined by one space, as given) into buf, cut at len:
 * what a report records as the command that made it. */
void lab_command_line(const char *lab_bin, const char *command, int argc, char *const *argv, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
