/* lab_tensor: dense host tensors of the lab's dtypes, and .npy reading/writing byte-compatible with numpy. */
#include "lab_tensor.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab_fs.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "lab_tensor stores tensors little endian and copies them raw; port the byte swaps first"
#endif

/* Layout constants of the .npy format (numpy/lib/format.py). */
#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
#define NPY_GROWTH_AXIS_MAX_DIGITS 21 /* numpy pads this many spare digits after the dict */

/* Name used in messages when the caller gave none. */
static const char *nm(const char *name) { return name ? name : "<npy>"; }

/* Bytes per element; 0 for a value outside the enum. */
size_t lab_dtype_size(lab_dtype dt)
{
    switch (dt) {
    case LAB_DT_F4: return 4;
    case LAB_DT_F8: return 8;
    case LAB_DT_U1: return 1;
    case LAB_DT_U2: return 2;
    case LAB_DT_I4: return 4;
    case LAB_DT_BF16: return 2;
    }
    return 0;
}

/* Lab name of dt, or "?" for a value outside the enum (never NULL). */
const char *lab_dtype_name(lab_dtype dt)
{
    switch (dt) {
    case LAB_DT_F4: return "f4";
    case LAB_DT_F8: return "f8";
    case LAB_DT_U1: return "u1";
    case LAB_DT_U2: return "u2";
    case LAB_DT_I4: return "i4";
    case LAB_DT_BF16: return "bf16";
    }
    return "?";
}

/* Parses a lab dtype name; LAB_ERR_FORMAT naming the string if it is not one of the six. */
lab_status lab_dtype_parse(const char *name, lab_dtype *out)
{
    static const lab_dtype all[] = {LAB_DT_F4, LAB_DT_F8, LAB_DT_U1, LAB_DT_U2, LAB_DT_I4, LAB_DT_BF16};
    if (!name) return lab_err_set(LAB_ERR_FORMAT, "dtype: missing name");
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) {
        if (strcmp(name, lab_dtype_name(all[i])) == 0) {
            *out = all[i];
            return LAB_OK;
        }
    }
    return lab_err_set(LAB_ERR_FORMAT, "dtype '%.64s': unknown (expected f4, f8, u1, u2, i4 or bf16)", name);
}

/* numpy descr of dt ("<u2" for bf16), or "?" for a value outside the enum (never NULL). */
const char *lab_dtype_npy_descr(lab_dtype dt)
{
    switch (dt) {
    case LAB_DT_F4: return "<f4";
    case LAB_DT_F8: return "<f8";
    case LAB_DT_U1: return "|u1";
    case LAB_DT_U2: return "<u2";
    case LAB_DT_I4: return "<i4";
    case LAB_DT_BF16: return "<u2";
    }
    return "?";
}

/* Element count and byte size of a shape, with numpy's rule for what an array may be: the product of
 * the non-zero dimensions times the element size must fit a signed size (numpy's npy_intp), even when
 * another dimension is 0. Returns 0 (outputs untouched) when it does not. */
static int shape_size(lab_dtype dt, int ndim, const size_t *shape, size_t *numel, size_t *nbytes)
{
    size_t esz = lab_dtype_size(dt), b = esz;
    int empty = 0;
    for (int i = 0; i < ndim; ++i) {
        if (shape[i] == 0) {
            empty = 1;
            continue;
        }
        if (__builtin_mul_overflow(b, shape[i], &b) || b > (size_t)PTRDIFF_MAX) return 0;
    }
    if (esz == 0) return 0;
    *numel = empty ? 0 : b / esz;
    *nbytes = empty ? 0 : b;
    return 1;
}

/* Allocates a zeroed tensor; on any failure *t is left zeroed. LAB_ERR_ARG for an unknown dtype,
 * ndim outside 0..LAB_TENSOR_MAXDIM, a NULL shape with ndim > 0 or an overflowing size; LAB_ERR_NOMEM. */
lab_status lab_tensor_create(lab_tensor *t, lab_dtype dt, int ndim, const size_t *shape)
{
    memset(t, 0, sizeof *t);
    if (lab_dtype_size(dt) == 0) return lab_err_set(LAB_ERR_ARG, "tensor: unknown dtype %d", (int)dt);
    if (ndim < 0 || ndim > LAB_TENSOR_MAXDIM)
        return lab_err_set(LAB_ERR_ARG, "tensor: ndim %d out of range 0..%d", ndim, LAB_TENSOR_MAXDIM);
    if (ndim > 0 && !shape) return lab_err_set(LAB_ERR_ARG, "tensor: shape is NULL for ndim %d", ndim);
    size_t numel, nbytes;
    if (!shape_size(dt, ndim, shape, &numel, &nbytes))
        return lab_err_set(LAB_ERR_ARG,
                           "tensor: shape overflows: the non-zero dimensions times the element size exceed "
                           "2^63-1 (ndim %d, dtype %s)",
                           ndim, lab_dtype_name(dt));
    void *data = calloc(nbytes ? nbytes : 1, 1);
    if (!data) return lab_err_set(LAB_ERR_NOMEM, "tensor: out of memory for %zu bytes", nbytes);
    t->dtype = dt;
    t->ndim = ndim;
    for (int i = 0; i < ndim; ++i) t->shape[i] = shape[i];
    t->numel = numel;
    t->data = data;
    return LAB_OK;
}

/* Frees t->data and zeroes *t; NULL, zeroed and already freed tensors are fine. */
void lab_tensor_free(lab_tensor *t)
{
    if (!t) return;
    free(t->data);
    memset(t, 0, sizeof *t);
}

/* ---------------------------------------------------------------------------------------- writing */

/* Appends numpy's repr of t's shape tuple ("()", "(n,)", "(a, b)") at out+*pos (cap bytes in all). */
static void shape_repr(const lab_tensor *t, char *out, size_t cap, size_t *pos)
{
    size_t p = *pos;
    p += (size_t)snprintf(out + p, cap - p, "(");
    for (int i = 0; i < t->ndim; ++i)
        p += (size_t)snprintf(out + p, cap - p, i ? ", %zu" : "%zu", t->shape[i]);
    p += (size_t)snprintf(out + p, cap - p, t->ndim == 1 ? ",)" : ")");
    *pos = p;
}

/* Encodes t with messages starting with `name`. See lab_npy_encode. */
static lab_status npy_encode_named(const lab_tensor *t, const char *name, uint8_t **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    if (!t) return lab_err_set(LAB_ERR_ARG, "%s: tensor is NULL", name);
    size_t esz = lab_dtype_size(t->dtype);
    if (esz == 0) return lab_err_set(LAB_ERR_ARG, "%s: unknown dtype %d", name, (int)t->dtype);
    if (t->ndim < 0 || t->ndim > LAB_TENSOR_MAXDIM)
        return lab_err_set(LAB_ERR_ARG, "%s: ndim %d out of range 0..%d", name, t->ndim, LAB_TENSOR_MAXDIM);
    size_t numel, nbytes;
    if (!shape_size(t->dtype, t->ndim, t->shape, &numel, &nbytes))
        return lab_err_set(LAB_ERR_ARG,
                           "%s: shape overflows: the non-zero dimensions times the element size exceed 2^63-1",
                           name);
    if (numel != t->numel)
        return lab_err_set(LAB_ERR_ARG, "%s: numel %zu does not match the shape's %zu elements", name,
                           t->numel, numel);
    if (nbytes > 0 && !t->data) return lab_err_set(LAB_ERR_ARG, "%s: data is NULL", name);

    /* The dict exactly as numpy's _write_array_header builds it: keys sorted, repr values, ", "
     * after each, then GROWTH_AXIS_MAX_DIGITS - len(repr(shape[0])) spare spaces (ndim > 0). */
    char dict[512];
    size_t p = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': ",
                                lab_dtype_npy_descr(t->dtype));
    shape_repr(t, dict, sizeof dict, &p);
    p += (size_t)snprintf(dict + p, sizeof dict - p, ", }");
    if (t->ndim > 0) {
        char d0[32];
        int w = snprintf(d0, sizeof d0, "%zu", t->shape[0]);
        for (int i = w; i < NPY_GROWTH_AXIS_MAX_DIGITS; ++i) dict[p++] = ' ';
    }
    /* _wrap_header: hlen counts the final '\n'; padlen is 1..64 so that the whole prefix + header is a
     * multiple of 64 bytes (an already aligned header still gets 64 more spaces, as numpy does). */
    size_t hlen = p + 1;
    size_t padlen = NPY_ALIGN - ((NPY_MAGIC_LEN + 2 + 2 + hlen) % NPY_ALIGN);
    size_t hfield = hlen + padlen;
    if (hfield > 0xFFFF) return lab_err_set(LAB_ERR_ARG, "%s: header of %zu bytes too big for .npy v1.0", name, hfield);
    size_t off = NPY_MAGIC_LEN + 2 + 2 + hfield, total;
    if (__builtin_add_overflow(off, nbytes, &total)) return lab_err_set(LAB_ERR_ARG, "%s: file size overflows", name);
    uint8_t *b = malloc(total ? total : 1);
    if (!b) return lab_err_set(LAB_ERR_NOMEM, "%s: out of memory for %zu bytes", name, total);
    memcpy(b, NPY_MAGIC, NPY_MAGIC_LEN);
    b[6] = 1;
    b[7] = 0;
    b[8] = (uint8_t)(hfield & 0xFF);
    b[9] = (uint8_t)(hfield >> 8);
    memcpy(b + 10, dict, p);
    memset(b + 10 + p, ' ', padlen);
    b[off - 1] = '\n';
    if (nbytes) memcpy(b + off, t->data, nbytes);
    *buf = b;
    *len = total;
    return LAB_OK;
}

/* Serialises t as .npy v1.0 into a malloc'ed buffer (caller frees). LAB_ERR_ARG for an inconsistent
 * tensor (unknown dtype, ndim out of range, numel not the shape's product, NULL data), LAB_ERR_NOMEM. */
lab_status lab_npy_encode(const lab_tensor *t, uint8_t **buf, size_t *len)
{
    return npy_encode_named(t, "<tensor>", buf, len);
}

/* Writes t to path as .npy v1.0 through lab_fs_write_atomic. Errors as lab_npy_encode (naming path)
 * and LAB_ERR_IO from the write. */
lab_status lab_npy_write(const char *path, const lab_tensor *t)
{
    uint8_t *buf;
    size_t len;
    lab_status st = npy_encode_named(t, path, &buf, &len);
    if (st != LAB_OK) return st;
    st = lab_fs_write_atomic(path, buf, len);
    free(buf);
    return st;
}

/* ---------------------------------------------------------------------------------------- parsing */

/* Cursor over the header text [p, end). */
typedef struct {
    const uint8_t *p, *end;
    const char *name;
} npy_cur;

/* Copies up to n bytes of s into out (cap >= 8) with non-printable bytes as '?', "..." if cut. */
static const char *printable(const uint8_t *s, size_t n, char *out, size_t cap)
{
    size_t k = 0, lim = cap - 4;
    for (size_t i = 0; i < n && k < lim; ++i) out[k++] = (s[i] >= 0x20 && s[i] < 0x7F) ? (char)s[i] : '?';
    if (n > lim) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k] = '\0';
    return out;
}

/* Skips the whitespace Python allows between tokens. */
static void skip_ws(npy_cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r' ||
                             *c->p == '\f' || *c->p == '\v'))
        c->p++;
}

/* Reports what the header has at the cursor ("end of header" or the next few bytes). */
static const char *at_desc(const npy_cur *c, char *out, size_t cap)
{
    if (c->p >= c->end) return "end of header";
    size_t n = (size_t)(c->end - c->p);
    char tmp[24];
    printable(c->p, n < 12 ? n : 12, tmp, sizeof tmp);
    snprintf(out, cap, "'%s'", tmp);
    return out;
}

/* Consumes the character ch (after whitespace) or fails naming what was expected and what was found. */
static lab_status expect(npy_cur *c, char ch, const char *what)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == (uint8_t)ch) {
        c->p++;
        return LAB_OK;
    }
    char d[40];
    return lab_err_set(LAB_ERR_FORMAT, "%s: header: expected '%c' %s, found %s", c->name, ch, what,
                       at_desc(c, d, sizeof d));
}

/* Parses a Python string literal in ' or " quotes without escapes into out (cap bytes, NUL ended). */
static lab_status parse_str(npy_cur *c, char *out, size_t cap, const char *what)
{
    skip_ws(c);
    char d[40];
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return lab_err_set(LAB_ERR_FORMAT, "%s: header: expected a quoted string for %s, found %s", c->name,
                           what, at_desc(c, d, sizeof d));
    uint8_t q = *c->p++;
    const uint8_t *s = c->p;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\')
            return lab_err_set(LAB_ERR_FORMAT, "%s: header: escape sequences in %s are not supported",
                               c->name, what);
        if (*c->p == '\n' || *c->p < 0x20 || *c->p >= 0x7F)
            return lab_err_set(LAB_ERR_FORMAT, "%s: header: bad byte 0x%02x in %s", c->name, *c->p, what);
        c->p++;
    }
    if (c->p >= c->end)
        return lab_err_set(LAB_ERR_FORMAT, "%s: header: unterminated string in %s", c->name, what);
    size_t n = (size_t)(c->p - s);
    c->p++; /* closing quote */
    if (n >= cap) {
        char tmp[40];
        return lab_err_set(LAB_ERR_FORMAT, "%s: header: %s '%s' is too long", c->name, what,
                           printable(s, n, tmp, sizeof tmp));
    }
    memcpy(out, s, n);
    out[n] = '\0';
    return LAB_OK;
}

/* Maps a numpy descr to a lab dtype; "<u1" and "|u1" are both u1. */
static lab_status descr_to_dtype(const char *name, const char *descr, lab_dtype *dt)
{
    static const struct {
        const char *descr;
        lab_dtype dt;
    } map[] = {{"<f4", LAB_DT_F4}, {"<f8", LAB_DT_F8}, {"|u1", LAB_DT_U1}, {"<u1", LAB_DT_U1},
               {"<u2", LAB_DT_U2}, {"<i4", LAB_DT_I4}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; ++i) {
        if (strcmp(descr, map[i].descr) == 0) {
            *dt = map[i].dt;
            return LAB_OK;
        }
    }
    if (descr[0] == '>')
        return lab_err_set(LAB_ERR_FORMAT, "%s: header: big-endian descr '%s' is not supported (little endian only)",
                           name, descr);
    return lab_err_set(LAB_ERR_FORMAT,
                       "%s: header: unsupported descr '%s' (expected <f4, <f8, |u1, <u2 or <i4)", name, descr);
}

/* Parses the shape tuple "(a, b, ...)": non-negative decimal integers that fit size_t, at most
 * LAB_TENSOR_MAXDIM of them, a one-element tuple needing its trailing comma as in Python. */
static lab_status parse_shape(npy_cur *c, int *ndim, size_t *shape)
{
    char d[40];
    lab_status st = expect(c, '(', "to open the shape tuple");
    if (st != LAB_OK) return st;
    int n = 0, trailing_comma = 0;
    for (;;) {
        skip_ws(c);
        if (c->p < c->end && *c->p == ')') {
            c->p++;
            break;
        }
        if (c->p < c->end && *c->p == '-')
            return lab_err_set(LAB_ERR_FORMAT, "%s: header: negative dimension in shape (dimension %d)", c->name, n);
        if (c->p >= c->end || *c->p < '0' || *c->p > '9')
            return lab_err_set(LAB_ERR_FORMAT, "%s: header: expected a dimension or ')' in shape, found %s",
                               c->name, at_desc(c, d, sizeof d));
        if (n >= LAB_TENSOR_MAXDIM)
            return lab_err_set(LAB_ERR_FORMAT, "%s: header: shape has more than %d dimensions", c->name,
                               LAB_TENSOR_MAXDIM);
        size_t v = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            if (__builtin_mul_overflow(v, (size_t)10, &v) || __builtin_add_overflow(v, (size_t)(*c->p - '0'), &v))
                return lab_err_set(LAB_ERR_FORMAT, "%s: header: shape dimension %d overflows size_t", c->name, n);
            c->p++;
        }
        shape[n++] = v;
        trailing_comma = 0;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            trailing_comma = 1;
            continue;
        }
        if (c->p < c->end && *c->p == ')') {
            c->p++;
            break;
        }
        return lab_err_set(LAB_ERR_FORMAT, "%s: header: expected ',' or ')' in shape, found %s", c->name,
                           at_desc(c, d, sizeof d));
    }
    if (n == 1 && !trailing_comma)
        return lab_err_set(LAB_ERR_FORMAT, "%s: header: shape '(%zu)' is not a tuple (write '(%zu,)')", c->name,
                           shape[0], shape[0]);
    *ndim = n;
    return LAB_OK;
}

/* Parses the header dict into dtype and shape. */
static lab_status parse_dict(npy_cur *c, lab_dtype *dt, int *ndim, size_t *shape)
{
    char d[40];
    int have_descr = 0, have_fortran = 0, have_shape = 0;
    lab_status st = expect(c, '{', "at the start of the header dict");
    if (st != LAB_OK) return st;
    for (;;) {
        skip_ws(c);
        if (c->p < c->end && *c->p == '}') {
            c->p++;
            break;
        }
        char key[32];
        if ((st = parse_str(c, key, sizeof key, "a header key")) != LAB_OK) return st;
        if ((st = expect(c, ':', "after a header key")) != LAB_OK) return st;
        skip_ws(c);
        if (strcmp(key, "descr") == 0) {
            if (have_descr++) return lab_err_set(LAB_ERR_FORMAT, "%s: header: duplicate key 'descr'", c->name);
            char descr[32];
            if ((st = parse_str(c, descr, sizeof descr, "'descr'")) != LAB_OK) return st;
            if ((st = descr_to_dtype(c->name, descr, dt)) != LAB_OK) return st;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (have_fortran++)
                return lab_err_set(LAB_ERR_FORMAT, "%s: header: duplicate key 'fortran_order'", c->name);
            size_t left = (size_t)(c->end - c->p);
            if (left >= 5 && memcmp(c->p, "False", 5) == 0) {
                c->p += 5;
            } else if (left >= 4 && memcmp(c->p, "True", 4) == 0) {
                return lab_err_set(LAB_ERR_FORMAT,
                                   "%s: header: fortran_order True is not supported (C order only)", c->name);
            } else {
                return lab_err_set(LAB_ERR_FORMAT, "%s: header: fortran_order must be False or True, found %s",
                                   c->name, at_desc(c, d, sizeof d));
            }
        } else if (strcmp(key, "shape") == 0) {
            if (have_shape++) return lab_err_set(LAB_ERR_FORMAT, "%s: header: duplicate key 'shape'", c->name);
            if ((st = parse_shape(c, ndim, shape)) != LAB_OK) return st;
        } else {
            return lab_err_set(LAB_ERR_FORMAT, "%s: header: unexpected key '%s' (expected descr, fortran_order, shape)",
                               c->name, key);
        }
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == '}') {
            c->p++;
            break;
        }
        return lab_err_set(LAB_ERR_FORMAT, "%s: header: expected ',' or '}' in the dict, found %s", c->name,
                           at_desc(c, d, sizeof d));
    }
    skip_ws(c);
    if (c->p < c->end)
        return lab_err_set(LAB_ERR_FORMAT, "%s: header: unexpected %s after the dict", c->name,
                           at_desc(c, d, sizeof d));
    if (!have_descr) return lab_err_set(LAB_ERR_FORMAT, "%s: header: missing key 'descr'", c->name);
    if (!have_fortran) return lab_err_set(LAB_ERR_FORMAT, "%s: header: missing key 'fortran_order'", c->name);
    if (!have_shape) return lab_err_set(LAB_ERR_FORMAT, "%s: header: missing key 'shape'", c->name);
    return LAB_OK;
}

/* Parses a .npy v1.0/v2.0 image into *t (zeroed on failure). Every failure is LAB_ERR_FORMAT with a
 * message starting with `name`, except LAB_ERR_NOMEM. Never reads outside buf[0..len). */
lab_status lab_npy_parse(const uint8_t *buf, size_t len, const char *name, lab_tensor *t)
{
    name = nm(name);
    memset(t, 0, sizeof *t);
    if (!buf && len) return lab_err_set(LAB_ERR_ARG, "%s: buffer is NULL", name);
    if (len < NPY_MAGIC_LEN || memcmp(buf, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return lab_err_set(LAB_ERR_FORMAT, "%s: bad magic: not a .npy file (expected \\x93NUMPY)", name);
    if (len < NPY_MAGIC_LEN + 2)
        return lab_err_set(LAB_ERR_FORMAT, "%s: truncated: %zu bytes, no version", name, len);
    unsigned major = buf[6], minor = buf[7];
    size_t lenfield, hlen;
    if (major == 1 && minor == 0) {
        lenfield = 2;
    } else if (major == 2 && minor == 0) {
        lenfield = 4;
    } else {
        return lab_err_set(LAB_ERR_FORMAT, "%s: unsupported .npy version %u.%u (expected 1.0 or 2.0)", name,
                           major, minor);
    }
    if (len < NPY_MAGIC_LEN + 2 + lenfield)
        return lab_err_set(LAB_ERR_FORMAT, "%s: truncated: %zu bytes, no header length", name, len);
    hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
    if (lenfield == 4) hlen |= (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
    size_t hstart = NPY_MAGIC_LEN + 2 + lenfield;
    if (hlen > len - hstart)
        return lab_err_set(LAB_ERR_FORMAT,
                           "%s: truncated: header length %zu runs past the end (%zu bytes after the prefix)", name,
                           hlen, len - hstart);

    npy_cur c = {buf + hstart, buf + hstart + hlen, name};
    lab_dtype dt = LAB_DT_F4;
    int ndim = 0;
    size_t shape[LAB_TENSOR_MAXDIM] = {0};
    lab_status st = parse_dict(&c, &dt, &ndim, shape);
    if (st != LAB_OK) return st;

    size_t numel, nbytes;
    if (!shape_size(dt, ndim, shape, &numel, &nbytes))
        return lab_err_set(LAB_ERR_FORMAT,
                           "%s: header: shape overflows: the non-zero dimensions times %zu bytes exceed 2^63-1",
                           name, lab_dtype_size(dt));
    size_t off = hstart + hlen, have = len - off;
    if (have < nbytes)
        return lab_err_set(LAB_ERR_FORMAT, "%s: truncated: expected %zu bytes of data, got %zu", name, nbytes, have);
    if (have > nbytes)
        return lab_err_set(LAB_ERR_FORMAT, "%s: trailing bytes: expected %zu bytes of data, got %zu", name, nbytes,
                           have);
    st = lab_tensor_create(t, dt, ndim, shape);
    if (st != LAB_OK) return lab_err_set(st, "%s: cannot allocate %zu bytes", name, nbytes);
    if (nbytes) memcpy(t->data, buf + off, nbytes);
    return LAB_OK;
}

/* Reads path whole and parses it with lab_npy_parse (messages start with path); LAB_ERR_IO if
 * unreadable. */
lab_status lab_npy_read(const char *path, lab_tensor *t)
{
    memset(t, 0, sizeof *t);
    char *data;
    size_t len;
    lab_status st = lab_fs_read_all(path, &data, &len);
    if (st != LAB_OK) return st;
    st = lab_npy_parse((const uint8_t *)data, len, path, t);
    free(data);
    return st;
}
