/* test_json: lab_json's contract: a tree serialised pretty or compact and ended by one newline, several trees
 * appended into one buffer (a JSON Lines file), a non-finite number written as null, the buffer written whole to
 * its file, and a write into a folder that does not exist refused naming the file. */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab_fs.h"
#include "lab_json.h"

static cJSON *tree(double x)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "s", "a\"b");
    cJSON_AddNumberToObject(o, "x", x);
    return o;
}

Test(json, forms_and_lines)
{
    lab_json_buf b = {0};
    cJSON *one = tree(1.5), *two = tree(NAN);
    cr_assert(lab_json_buf_add(&b, one, LAB_JSON_COMPACT));
    cr_assert(lab_json_buf_add(&b, two, LAB_JSON_COMPACT));
    cr_expect_str_eq(b.data, "{\"s\":\"a\\\"b\",\"x\":1.5}\n{\"s\":\"a\\\"b\",\"x\":null}\n");
    cr_expect_eq(b.len, strlen(b.data));
    lab_json_buf_free(&b);
    cr_expect_null(b.data);
    cr_assert(lab_json_buf_add(&b, one, LAB_JSON_PRETTY));
    cr_expect_str_eq(b.data, "{\n\t\"s\":\t\"a\\\"b\",\n\t\"x\":\t1.5\n}\n");
    lab_json_buf_free(&b);
    cJSON_Delete(one);
    cJSON_Delete(two);
}

Test(json, written_whole_and_atomically)
{
    char dir[] = "/tmp/lab-test-json-XXXXXX", path[64], *text;
    size_t len;
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.json", dir);
    cJSON *o = tree(2);
    cr_assert_eq(lab_json_write_file(path, o, LAB_JSON_COMPACT), LAB_OK, "%s", lab_err_msg());
    cr_assert_eq(lab_fs_read_all(path, &text, &len), LAB_OK);
    cr_expect_str_eq(text, "{\"s\":\"a\\\"b\",\"x\":2}\n");
    free(text);
    lab_json_buf empty = {0};
    cr_assert_eq(lab_json_write_atomic(path, &empty), LAB_OK);
    cr_assert_eq(lab_fs_read_all(path, &text, &len), LAB_OK);
    cr_expect_eq(len, 0);
    free(text);
    unlink(path);
    rmdir(dir);
    cr_expect_eq(lab_json_write_file("/nonexistent-lab-json/t.json", o, LAB_JSON_PRETTY), LAB_ERR_IO);
    cr_expect(strstr(lab_err_msg(), "/nonexistent-lab-json/t.json") != NULL, "%s", lab_err_msg());
    cJSON_Delete(o);
}

Test(json, out_of_memory_is_refused_at_the_write)
{
    lab_json_buf b = {.oom = 1};
    cJSON *o = tree(1);
    cr_expect_eq(lab_json_buf_add(&b, o, LAB_JSON_COMPACT), 0);
    cr_expect_eq(lab_json_write_atomic("/tmp/never-written.json", &b), LAB_ERR_NOMEM);
    cr_expect(strstr(lab_err_msg(), "/tmp/never-written.json") != NULL, "%s", lab_err_msg());
    cr_expect_eq(access("/tmp/never-written.json", F_OK), -1);
    cJSON_Delete(o);
}
