/* test_new: `lab new` makes a compilable incident directory from the template, and refuses bad ids. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab_fs.h"
#include "lab_new.h"

Test(new, template_becomes_an_incident_that_compiles)
{
    char root[] = "/tmp/lab-new-XXXXXX", cmd[2048];
    cr_assert_not_null(mkdtemp(root));
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/incidents' && cp -r incidents/_template '%s/incidents/'", root, root);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(lab_new_incident(root, "0999-probe-thing"), LAB_OK, "%s", lab_err_msg());
    char path[4096], *text;
    size_t len;
    const char *files[] = {"README.md", "incident.mk", "probe_thing.c", "test_probe_thing.c"};
    for (int k = 0; k < 4; ++k) {
        snprintf(path, sizeof path, "%s/incidents/0999-probe-thing/%s", root, files[k]);
        cr_assert_eq(lab_fs_read_all(path, &text, &len), LAB_OK, "%s", lab_err_msg());
        cr_expect(!strstr(text, "NNNN") && !strstr(text, "nnnn"), "%s: placeholder left", files[k]);
        free(text);
    }
    snprintf(path, sizeof path, "%s/incidents/0999-probe-thing/incident.mk", root);
    cr_assert_eq(lab_fs_read_all(path, &text, &len), LAB_OK);
    cr_expect(strstr(text, "$(eval $(call lab_incident,0999-probe-thing))") != NULL, "%s", text);
    free(text);
    /* The generated incident and its test compile against the lab's headers (the template is code). Where
     * Criterion's development files are absent (a bare GPU host), only the incident itself is compiled. */
    int have_criterion = system("pkg-config --exists criterion") == 0;
    snprintf(cmd, sizeof cmd,
             "cc -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -Ilab "
             "-Ikernels -DLAB_INCIDENT_ID='\"0999-probe-thing\"' -fsyntax-only "
             "'%s/incidents/0999-probe-thing/probe_thing.c' && "
             "{ [ %d = 0 ] || cc -std=gnu11 -Wall -Ilab -DLAB_INCIDENT_ID='\"0999-probe-thing\"' "
             "$(pkg-config --cflags criterion) -fsyntax-only "
             "'%s/incidents/0999-probe-thing/test_probe_thing.c'; }", root, have_criterion, root);
    if (!have_criterion) cr_log_warn("criterion not installed: the generated test was not compiled");
    cr_expect_eq(system(cmd), 0, "the generated incident does not compile");
    /* Never overwritten; malformed ids refused naming them. */
    cr_expect_eq(lab_new_incident(root, "0999-probe-thing"), LAB_ERR_ARG);
    cr_expect(strstr(lab_err_msg(), "exists") != NULL, "%s", lab_err_msg());
    const char *bad[] = {"999-x", "0999_probe", "0999-Probe", "0999-", "0999-a/b", "abcd-x", "0999-x;rm"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
        cr_expect_eq(lab_new_incident(root, bad[k]), LAB_ERR_ARG, "%s accepted", bad[k]);
        cr_expect(strstr(lab_err_msg(), bad[k]) != NULL, "%s", lab_err_msg());
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    cr_expect_eq(system(cmd), 0);
}
