/*
 * ExamplePlan: one call that turns a serialized tf.train.Example into the values of a record.
 *
 * A plan is built once per record class from its codecs (codegen/runtime/plan.py): the keys it
 * reads and, per attribute, what to make of its feature (an int, a float, a str, a numpy array of
 * a dtype and shape, ...). Calling the plan with Example bytes returns the tuple of attribute
 * values when the Example is in the canonical form protobuf and TensorFlow write and every value
 * fits the plan; for anything else (a non-canonical encoding, a repeated key, a value out of
 * range, a wrong count, a missing feature that has no simple answer, any error) it returns what
 * the plan's ``fallback`` returns for the same bytes. The fallback is the pure-Python decoder, so
 * errors, their messages and every rare case stay exactly those of the reference path.
 *
 * ``plan.batch(records)`` decodes a batch of SequenceExamples in one call: each feature list's steps
 * are read straight into one buffer for the whole batch, and any record the plan would hand to its
 * fallback makes it decline the whole batch (the caller decodes it record by record).
 *
 * Numeric arrays are made with numpy's C API and filled in place. Work is linear in the input and
 * no allocation is sized by a length before that length has been checked against the input.
 */
#include "speedups.h"
#include "contract.h"

#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL tfr_speedups_plan_ARRAY_API
#include <numpy/arrayobject.h>

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The plan operations (OP_*), list kinds (LIST_*) and element codes (ELEMENT_*): contract.h. */

#define MAX_RANK 32

typedef struct {
    int op;
    Py_ssize_t slot;      /* the key slot of the feature */
    Py_ssize_t companion; /* the key slot of the stored shape (OP_RAW), or -1 */
    int optional;
    PyObject *fallback_default; /* an immutable default for an absent feature, or NULL */
    long long lo, hi;           /* integer range */
    int code;                   /* the element code (ELEMENT_*) */
    Py_ssize_t itemsize; /* the bytes of a stored element (OP_RAW) */
    Py_ssize_t elsize;   /* the bytes of an element of the arrays made (the dtype's) */
    Py_ssize_t count;  /* values of a fixed shape, or -1 (a leading None) */
    Py_ssize_t inner;  /* values per row of the inner dimensions (>= 1) */
    PyObject *dtype;   /* the numpy dtype of arrays */
    int rank;          /* the number of dims below */
    /* From dims[1] on (dims[0] is unused): arrays: the fixed shape, or the dims after a leading
     * None; raw: the declared dims, -1 for None. */
    npy_intp dims[MAX_RANK + 1];
} Op;

typedef struct {
    const uint8_t *key;
    Py_ssize_t key_size;
} Slot;

typedef struct {
    int kind; /* 0: not seen */
    const uint8_t *body;
    Py_ssize_t size;
} Found;

typedef struct {
    PyObject_HEAD
    Py_ssize_t nslots;
    Slot *slots;      /* the feature keys, then (a SequenceExample plan) the feature list keys */
    Py_ssize_t nfeatures; /* how many of the slots are feature keys */
    int sequence;     /* whether the plan reads SequenceExamples */
    PyObject *keys;   /* tuple of bytes: owns the key memory */
    PyObject *list_keys;
    Py_ssize_t nops;
    Op *ops;
    PyObject *fallback;
    vectorcallfunc vectorcall;
    /* The feature-list buffers of the last batch (one per op, or NULL), kept for the next one so
     * that their memory is not paged in again for every batch; ``batching`` while a batch uses
     * them (a batch started meanwhile, by a finalizer run by a value it makes, gets its own). */
    struct Kept *kept;
    int batching;
} Plan;

typedef struct Kept {
    uint8_t *values;
    size_t capacity;
} Kept;

#define KEPT_MAX ((size_t)64 << 20) /* a buffer larger than this is not kept */

/* --- canonical wire reading ----------------------------------------------------------------- */

/* A length varint (at most 5 bytes, < 2**31) at *pos; -1 when there is none. */
static inline Py_ssize_t
read_length(const uint8_t *d, Py_ssize_t *pos, Py_ssize_t end)
{
    uint64_t value = 0;
    for (int shift = 0; shift < 35 && *pos < end; shift += 7) {
        uint8_t byte = d[(*pos)++];
        value |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) {
            return value > (uint64_t)(end - *pos) ? -1 : (Py_ssize_t)value;
        }
    }
    return -1;
}

/* The one length-delimited field 1 (tag 0x0A) that spans body[0:size]: its start and size in
 * ``start``/``inner``; 1 when the body is empty; 0 when it has any other form. */
static inline int
single_field(const uint8_t *body, Py_ssize_t size, Py_ssize_t *start, Py_ssize_t *inner)
{
    if (size == 0) {
        *start = 0;
        *inner = 0;
        return 1;
    }
    if (body[0] != 0x0A) {
        return 0;
    }
    Py_ssize_t pos = 1;
    Py_ssize_t length = read_length(body, &pos, size);
    if (length < 0 || pos + length != size) {
        return 0;
    }
    *start = pos;
    *inner = length;
    return 1;
}

/* The number of packed varints in d[0:size], or -1 when the last one is unfinished. */
static Py_ssize_t
count_varints(const uint8_t *d, Py_ssize_t size)
{
    if (size == 0) {
        return 0;
    }
    if (d[size - 1] & 0x80) {
        return -1;
    }
    Py_ssize_t count = 0;
    Py_ssize_t i = 0;
    for (; i + 8 <= size; i += 8) {
        uint64_t word;
        memcpy(&word, d + i, 8);
        /* one bit per byte below 0x80, summed by the multiply into the top byte */
        count += (Py_ssize_t)((((~word & 0x8080808080808080u) >> 7) * 0x0101010101010101u) >> 56);
    }
    for (; i < size; i++) {
        count += d[i] < 0x80;
    }
    return count;
}

/* The next packed varint (low 64 bits) as int64; 0 when it is longer than 10 bytes. */
static inline int
next_varint(const uint8_t *d, Py_ssize_t *pos, int64_t *value)
{
    uint8_t byte = d[(*pos)++];
    if (byte < 0x80) {
        *value = byte;
        return 1;
    }
    uint64_t result = byte & 0x7F;
    for (int shift = 7; shift < 70; shift += 7) {
        byte = d[(*pos)++];
        result |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) {
            *value = (int64_t)result;
            return 1;
        }
    }
    return 0;
}

/* A map key that is not the plan's: plain ASCII (UTF-8 checks are the fallback's). */
static int
plain_key(const uint8_t *key, Py_ssize_t size)
{
    for (Py_ssize_t k = 0; k < size; k++) {
        if (key[k] & 0x80) {
            return 0;
        }
    }
    return 1;
}

/* The slot of ``key`` among slots[first:last], or -1. */
static Py_ssize_t
find_slot(Plan *plan, Py_ssize_t first, Py_ssize_t last, const uint8_t *key, Py_ssize_t size)
{
    for (Py_ssize_t i = first; i < last; i++) {
        Slot *slot = &plan->slots[i];
        if (slot->key_size == size && memcmp(slot->key, key, (size_t)size) == 0) {
            return i;
        }
    }
    return -1;
}

/* Find the features the plan reads in the Features map d[pos:end]; 0 when it is not canonical or
 * a key repeats. */
static int
find_features(Plan *plan, const uint8_t *d, Py_ssize_t pos, Py_ssize_t end, Found *found)
{
    while (pos < end) {
        if (d[pos++] != 0x0A) {
            return 0;
        }
        Py_ssize_t entry = read_length(d, &pos, end);
        if (entry < 0) {
            return 0;
        }
        Py_ssize_t entry_end = pos + entry;
        if (pos >= entry_end || d[pos++] != 0x0A) {
            return 0;
        }
        Py_ssize_t key_size = read_length(d, &pos, entry_end);
        if (key_size < 0) {
            return 0;
        }
        const uint8_t *key = d + pos;
        pos += key_size;
        if (pos >= entry_end || d[pos++] != 0x12) {
            return 0;
        }
        Py_ssize_t feature = read_length(d, &pos, entry_end);
        if (feature < 0 || pos + feature != entry_end) {
            return 0;
        }
        /* The Feature: exactly one list, spanning it (a kindless feature is not for here). */
        if (feature == 0) {
            return 0;
        }
        uint8_t tag = d[pos++];
        int kind = tag == 0x0A ? LIST_BYTES : tag == 0x12 ? LIST_FLOAT : tag == 0x1A ? LIST_INT64 : 0;
        Py_ssize_t body = read_length(d, &pos, entry_end);
        if (kind == 0 || body < 0 || pos + body != entry_end) {
            return 0;
        }
        Py_ssize_t i = find_slot(plan, 0, plan->nfeatures, key, key_size);
        if (i >= 0) {
            if (found[i].kind) {
                return 0;
            }
            found[i].kind = kind;
            found[i].body = d + pos;
            found[i].size = body;
        }
        else if (!plain_key(key, key_size)) {
            return 0;
        }
        pos = entry_end;
    }
    return 1;
}

/* The next step of a FeatureList d[*pos:end] (pos < end): its list kind (0: kindless) and list
 * body; 0 when it is not canonical. */
static inline int
next_step(const uint8_t *d, Py_ssize_t *pos, Py_ssize_t end, int *kind, Py_ssize_t *body,
          Py_ssize_t *size)
{
    if (d[(*pos)++] != 0x0A) {
        return 0;
    }
    Py_ssize_t feature = read_length(d, pos, end);
    if (feature < 0) {
        return 0;
    }
    Py_ssize_t feature_end = *pos + feature;
    if (feature == 0) {
        *kind = 0;
        *body = *pos;
        *size = 0;
        return 1;
    }
    uint8_t tag = d[(*pos)++];
    *kind = tag == 0x0A ? LIST_BYTES : tag == 0x12 ? LIST_FLOAT : tag == 0x1A ? LIST_INT64 : 0;
    *size = read_length(d, pos, feature_end);
    if (*kind == 0 || *size < 0 || *pos + *size != feature_end) {
        return 0;
    }
    *body = *pos;
    *pos = feature_end;
    return 1;
}

/* Find the feature lists the plan reads in the FeatureLists map d[pos:end] (into the list slots
 * of ``found``); 0 when it is not canonical or a key repeats. */
static int
find_lists(Plan *plan, const uint8_t *d, Py_ssize_t pos, Py_ssize_t end, Found *found)
{
    while (pos < end) {
        if (d[pos++] != 0x0A) {
            return 0;
        }
        Py_ssize_t entry = read_length(d, &pos, end);
        if (entry < 0) {
            return 0;
        }
        Py_ssize_t entry_end = pos + entry;
        if (pos >= entry_end || d[pos++] != 0x0A) {
            return 0;
        }
        Py_ssize_t key_size = read_length(d, &pos, entry_end);
        if (key_size < 0) {
            return 0;
        }
        const uint8_t *key = d + pos;
        pos += key_size;
        if (pos >= entry_end || d[pos++] != 0x12) {
            return 0;
        }
        Py_ssize_t list = read_length(d, &pos, entry_end);
        if (list < 0 || pos + list != entry_end) {
            return 0;
        }
        Py_ssize_t i = find_slot(plan, plan->nfeatures, plan->nslots, key, key_size);
        if (i >= 0) {
            if (found[i].kind) {
                return 0;
            }
            found[i].kind = 1;
            found[i].body = d + pos;
            found[i].size = list;
        }
        else {
            if (!plain_key(key, key_size)) {
                return 0;
            }
            for (Py_ssize_t at = pos; at < entry_end;) {
                int kind;
                Py_ssize_t body, size;
                if (!next_step(d, &at, entry_end, &kind, &body, &size)) {
                    return 0;
                }
            }
        }
        pos = entry_end;
    }
    return 1;
}

/* Find what the plan reads in the Example or SequenceExample d[0:size]; 0 when it is not
 * canonical or a key repeats. */
static int
find_all(Plan *plan, const uint8_t *d, Py_ssize_t size, Found *found)
{
    memset(found, 0, sizeof(Found) * (size_t)plan->nslots);
    Py_ssize_t pos = 0;
    if (!plan->sequence) {
        Py_ssize_t start, length;
        return single_field(d, size, &start, &length)
               && find_features(plan, d, start, start + length, found);
    }
    /* context (field 1), then feature_lists (field 2), each at most once */
    for (int field = 1; field <= 2 && pos < size; field++) {
        if (d[pos] != (field << 3 | 2)) {
            continue;
        }
        pos++;
        Py_ssize_t length = read_length(d, &pos, size);
        if (length < 0) {
            return 0;
        }
        int ok = field == 1 ? find_features(plan, d, pos, pos + length, found)
                            : find_lists(plan, d, pos, pos + length, found);
        if (!ok) {
            return 0;
        }
        pos += length;
    }
    return pos == size;
}

/* --- values --------------------------------------------------------------------------------- */

/* A new C-order array of the op's dtype with the ``ndim`` dims at ``dims``. */
static inline PyObject *
new_array(Op *op, int ndim, npy_intp *dims)
{
    Py_INCREF(op->dtype);
    return PyArray_Empty(ndim, dims, (PyArray_Descr *)op->dtype, 0);
}

/* A new array for ``count`` values: the fixed shape, or rows of the inner dims; NULL without an
 * error when the count does not fit. */
static PyObject *
array_for(Op *op, Py_ssize_t count)
{
    if (op->count >= 0) {
        return count == op->count ? new_array(op, op->rank, op->dims + 1) : NULL;
    }
    if (count % op->inner) {
        return NULL;
    }
    npy_intp dims[MAX_RANK + 1];
    memcpy(dims + 1, op->dims + 1, sizeof(npy_intp) * (size_t)op->rank);
    dims[0] = count / op->inner;
    return new_array(op, op->rank + 1, dims);
}

/* Store ``value`` as element ``i`` of an array of the op's integer code. */
static inline void
store_int(int code, void *out, Py_ssize_t i, int64_t value)
{
    switch (code) {
    case ELEMENT_INT64: ((int64_t *)out)[i] = value; break;
    case ELEMENT_INT32: ((int32_t *)out)[i] = (int32_t)value; break;
    case ELEMENT_INT16: ((int16_t *)out)[i] = (int16_t)value; break;
    case ELEMENT_INT8: ((int8_t *)out)[i] = (int8_t)value; break;
    case ELEMENT_UINT32: ((uint32_t *)out)[i] = (uint32_t)value; break;
    case ELEMENT_UINT16: ((uint16_t *)out)[i] = (uint16_t)value; break;
    default: ((uint8_t *)out)[i] = (uint8_t)value; break; /* ELEMENT_UINT8 and ELEMENT_BOOL */
    }
}

static PyObject *
int_array(Op *op, const uint8_t *body, Py_ssize_t size, int *pass)
{
    Py_ssize_t start, length;
    if (!single_field(body, size, &start, &length)) {
        *pass = 1;
        return NULL;
    }
    const uint8_t *d = body + start;
    Py_ssize_t count = count_varints(d, length);
    PyObject *array = count < 0 ? NULL : array_for(op, count);
    if (array == NULL) {
        *pass = !PyErr_Occurred();
        return NULL;
    }
    void *buf = PyArray_DATA((PyArrayObject *)array);
    int ok;
    if (op->code == ELEMENT_INT64) {
        ok = tfr_decode_varints(d, length, buf, count, 0) < 0;
    }
    else {
        /* int64 values first (in a scratch buffer), then each checked and narrowed */
        int64_t small[256];
        int64_t *values = count <= 256 ? small : PyMem_Malloc(sizeof(int64_t) * (size_t)count);
        if (values == NULL) {
            Py_DECREF(array);
            return PyErr_NoMemory();
        }
        ok = tfr_decode_varints(d, length, (uint64_t *)values, count, 0) < 0;
        long long lo = op->lo, hi = op->hi;
        for (Py_ssize_t i = 0; ok && i < count; i++) {
            ok = values[i] >= lo && values[i] <= hi;
            store_int(op->code, buf, i, values[i]);
        }
        if (values != small) {
            PyMem_Free(values);
        }
    }
    if (!ok) {
        Py_DECREF(array);
        *pass = 1;
        return NULL;
    }
    return array;
}

static PyObject *
float_array(Op *op, const uint8_t *body, Py_ssize_t size, int *pass)
{
    Py_ssize_t start, length;
    if (!single_field(body, size, &start, &length) || length % 4) {
        *pass = 1;
        return NULL;
    }
    PyObject *array = array_for(op, length / 4);
    if (array == NULL) {
        *pass = !PyErr_Occurred();
        return NULL;
    }
    if (length) {
        memcpy(PyArray_DATA((PyArrayObject *)array), body + start, (size_t)length);
    }
    return array;
}

/* The number of values of the canonical BytesList body[0:size], or -1 for any other form. */
static Py_ssize_t
count_bytes_values(const uint8_t *body, Py_ssize_t size)
{
    Py_ssize_t pos = 0, count = 0;
    while (pos < size) {
        if (body[pos++] != 0x0A) {
            return -1;
        }
        Py_ssize_t length = read_length(body, &pos, size);
        if (length < 0) {
            return -1;
        }
        pos += length;
        count++;
    }
    return count;
}

/* The next value of a BytesList body already counted: its start and size. */
static inline const uint8_t *
next_bytes_value(const uint8_t *body, Py_ssize_t size, Py_ssize_t *pos, Py_ssize_t *length)
{
    (*pos)++;
    *length = read_length(body, pos, size);
    const uint8_t *value = body + *pos;
    *pos += *length;
    return value;
}

/* One str or bytes object; NULL with *pass set for invalid UTF-8. */
static PyObject *
string_value(int text, const uint8_t *value, Py_ssize_t length, int *pass)
{
    if (!text) {
        return PyBytes_FromStringAndSize((const char *)value, length);
    }
    PyObject *result = tfr_utf8_text(value, length);
    if (result == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
        *pass = 1;
    }
    return result;
}

static PyObject *
string_list(Op *op, const uint8_t *body, Py_ssize_t size, int *pass)
{
    Py_ssize_t count = count_bytes_values(body, size);
    if (count < 0 || (op->count >= 0 && count != op->count)) {
        *pass = 1;
        return NULL;
    }
    PyObject *list = PyList_New(count);
    if (list == NULL) {
        return NULL;
    }
    Py_ssize_t pos = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t length;
        const uint8_t *value = next_bytes_value(body, size, &pos, &length);
        PyObject *item = string_value(op->op == OP_TEXT_LIST, value, length, pass);
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *
scalar(Op *op, const uint8_t *body, Py_ssize_t size, int *pass)
{
    Py_ssize_t start, length;
    if (op->op == OP_TEXT || op->op == OP_BYTES) {
        if (count_bytes_values(body, size) != 1) {
            *pass = 1;
            return NULL;
        }
        Py_ssize_t pos = 0;
        const uint8_t *value = next_bytes_value(body, size, &pos, &length);
        return string_value(op->op == OP_TEXT, value, length, pass);
    }
    if (!single_field(body, size, &start, &length)) {
        *pass = 1;
        return NULL;
    }
    const uint8_t *d = body + start;
    if (op->op == OP_FLOAT) {
        if (length != 4) {
            *pass = 1;
            return NULL;
        }
        float value;
        memcpy(&value, d, 4);
        return PyFloat_FromDouble((double)value);
    }
    Py_ssize_t pos = 0;
    int64_t value;
    if (length == 0 || !next_varint(d, &pos, &value) || pos != length || value < op->lo
        || value > op->hi) {
        *pass = 1;
        return NULL;
    }
    if (op->op == OP_BOOL) {
        return PyBool_FromLong((long)value);
    }
    return PyLong_FromLongLong(value);
}

static PyObject *
raw_array(Op *op, Found *found, int *pass)
{
    Found *item = &found[op->slot];
    if (count_bytes_values(item->body, item->size) != 1) {
        *pass = 1;
        return NULL;
    }
    Py_ssize_t pos = 0, length;
    const uint8_t *value = next_bytes_value(item->body, item->size, &pos, &length);
    npy_intp dims[MAX_RANK];
    Py_ssize_t count = 1;
    if (op->companion < 0) {
        count = op->count;
        memcpy(dims, op->dims + 1, sizeof(npy_intp) * (size_t)op->rank);
    }
    else {
        Found *stored = &found[op->companion];
        Py_ssize_t start, size;
        if (stored->kind != LIST_INT64
            || !single_field(stored->body, stored->size, &start, &size)
            || count_varints(stored->body + start, size) != op->rank) {
            *pass = 1;
            return NULL;
        }
        const uint8_t *d = stored->body + start;
        Py_ssize_t at = 0;
        for (int i = 0; i < op->rank; i++) {
            int64_t dim;
            npy_intp declared = op->dims[i + 1];
            if (!next_varint(d, &at, &dim) || dim < 0 || (declared >= 0 && dim != declared)
                || (dim > 0 && count > PY_SSIZE_T_MAX / dim)) {
                *pass = 1;
                return NULL;
            }
            count *= (Py_ssize_t)dim;
            dims[i] = (npy_intp)dim;
        }
    }
    if (count > length / op->itemsize || count * op->itemsize != length) {
        *pass = 1;
        return NULL;
    }
    if (op->code == ELEMENT_BOOL) {
        for (Py_ssize_t i = 0; i < length; i++) {
            if (value[i] > 1) {
                *pass = 1;
                return NULL;
            }
        }
    }
    PyObject *array = new_array(op, op->rank, dims);
    if (array != NULL && length) {
        memcpy(PyArray_DATA((PyArrayObject *)array), value, (size_t)length);
    }
    return array;
}

/* The values of a feature list whose steps each hold one step shape of values in one packed list,
 * as protobuf writes them, stored from ``values_out`` on (as elements of the op's dtype); how many steps, or
 * -1 with *pass set for anything else. Each int64 value takes at least one byte of the list and
 * each float four, so ``values_out`` needs room for at most 8 (ints) or 1 (floats) bytes per byte
 * of the list (:func:`steps_room`). */
static Py_ssize_t
read_steps(const Op *op, const Found *item, uint8_t *values_out, int *pass)
{
    const uint8_t *d = item->body;
    Py_ssize_t end = item->size;
    int floats = op->op == OP_STEPS_FLOAT;
    int want = floats ? LIST_FLOAT : LIST_INT64;
    Py_ssize_t steps = 0;
    Py_ssize_t i = 0; /* values stored */
    /* A step as protobuf writes a short one: Feature (0A n), its list (1A/12 n-2), the packed
     * values (0A n-4), every length one byte. */
    const uint8_t list_tag = floats ? 0x12 : 0x1A;
    for (Py_ssize_t pos = 0; pos < end; steps++) {
        Py_ssize_t start, length;
        const uint8_t *values;
        if (pos + 6 <= end && d[pos] == 0x0A && d[pos + 2] == list_tag && d[pos + 4] == 0x0A
            && d[pos + 1] < 0x80 && d[pos + 1] >= 4 && d[pos + 3] == d[pos + 1] - 2
            && d[pos + 5] == d[pos + 1] - 4 && pos + 2 + d[pos + 1] <= end) {
            values = d + pos + 6;
            length = d[pos + 5];
            pos += 2 + d[pos + 1];
        }
        else {
            int kind;
            Py_ssize_t body, size;
            if (!next_step(d, &pos, end, &kind, &body, &size) || kind != want
                || !single_field(d + body, size, &start, &length)) {
                *pass = 1;
                return -1;
            }
            values = d + body + start;
        }
        if (floats) {
            if (length != 4 * op->inner) {
                *pass = 1;
                return -1;
            }
            memcpy(values_out + 4 * i, values, (size_t)length);
            i += op->inner;
            continue;
        }
        /* The last byte ends a varint, so no varint runs past the list. */
        if (length && (values[length - 1] & 0x80)) {
            *pass = 1;
            return -1;
        }
        Py_ssize_t last = i + op->inner;
        for (Py_ssize_t at = 0; at < length; i++) {
            int64_t value;
            if (i == last || !next_varint(values, &at, &value) || value < op->lo
                || value > op->hi) {
                *pass = 1;
                return -1;
            }
            store_int(op->code, values_out, i, value);
        }
        if (i != last) {
            *pass = 1;
            return -1;
        }
    }
    return steps;
}

/* The most bytes read_steps stores for a feature list of ``size`` bytes. */
static inline size_t
steps_room(const Op *op, Py_ssize_t size)
{
    return (size_t)size * (op->op == OP_STEPS_FLOAT ? 1 : 8);
}

/* The array [T, *step shape] of a feature list (see read_steps); NULL with *pass set when
 * read_steps passes. The steps are read once into a scratch buffer (on the stack when small), and
 * the array is made when T is known. */
static PyObject *
steps_array(Op *op, const Found *item, int *pass)
{
    uint8_t stack[4096];
    size_t capacity = steps_room(op, item->size);
    uint8_t *values_out = capacity <= sizeof(stack) ? stack : PyMem_Malloc(capacity);
    if (values_out == NULL) {
        return PyErr_NoMemory();
    }
    PyObject *array = NULL;
    npy_intp dims[MAX_RANK + 1];
    dims[0] = read_steps(op, item, values_out, pass);
    if (dims[0] >= 0) {
        memcpy(dims + 1, op->dims + 1, sizeof(npy_intp) * (size_t)op->rank);
        array = new_array(op, op->rank + 1, dims);
        if (array != NULL) {
            memcpy(PyArray_DATA((PyArrayObject *)array), values_out,
                   (size_t)PyArray_NBYTES((PyArrayObject *)array));
        }
    }
    if (values_out != stack) {
        PyMem_Free(values_out);
    }
    return array;
}

/* The value of one op, or NULL: with an error set, or with *pass set (the fallback decodes). */
static PyObject *
op_value(Op *op, Found *found, int *pass)
{
    Found *item = &found[op->slot];
    if (op->op == OP_STEPS_INT || op->op == OP_STEPS_FLOAT) {
        if (item->kind) {
            return steps_array(op, item, pass);
        }
        if (op->optional) { /* no steps */
            npy_intp dims[MAX_RANK + 1];
            memcpy(dims + 1, op->dims + 1, sizeof(npy_intp) * (size_t)op->rank);
            dims[0] = 0;
            return new_array(op, op->rank + 1, dims);
        }
        *pass = 1;
        return NULL;
    }
    if (!item->kind) {
        if (op->op == OP_RAW && op->companion >= 0 && found[op->companion].kind) {
            *pass = 1; /* a stored shape without its feature */
            return NULL;
        }
        if (op->optional) {
            Py_RETURN_NONE;
        }
        if (op->fallback_default != NULL) {
            Py_INCREF(op->fallback_default);
            return op->fallback_default;
        }
        if (op->count < 0) { /* no rows of a leading None */
            if (op->op == OP_INT_ARRAY || op->op == OP_FLOAT_ARRAY) {
                return array_for(op, 0);
            }
            if (op->op == OP_TEXT_LIST || op->op == OP_BYTES_LIST) {
                return PyList_New(0);
            }
        }
        *pass = 1;
        return NULL;
    }
    int want;
    switch (op->op) {
    case OP_FLOAT:
    case OP_FLOAT_ARRAY: want = LIST_FLOAT; break;
    case OP_INT:
    case OP_BOOL:
    case OP_INT_ARRAY: want = LIST_INT64; break;
    default: want = LIST_BYTES; break;
    }
    if (item->kind != want) {
        *pass = 1;
        return NULL;
    }
    switch (op->op) {
    case OP_INT_ARRAY: return int_array(op, item->body, item->size, pass);
    case OP_FLOAT_ARRAY: return float_array(op, item->body, item->size, pass);
    case OP_TEXT_LIST:
    case OP_BYTES_LIST: return string_list(op, item->body, item->size, pass);
    case OP_RAW: return raw_array(op, found, pass);
    default: return scalar(op, item->body, item->size, pass);
    }
}

/* The values of the Example in ``data``, or NULL: with an error set, or without (the fallback
 * decodes it). */
static PyObject *
plan_values(Plan *plan, const uint8_t *d, Py_ssize_t size)
{
    Found stack[16];
    Found *found = stack;
    if (plan->nslots > 16) {
        found = PyMem_Malloc(sizeof(Found) * (size_t)plan->nslots);
        if (found == NULL) {
            return PyErr_NoMemory();
        }
    }
    PyObject *values = NULL;
    if (find_all(plan, d, size, found)) {
        values = PyTuple_New(plan->nops);
        for (Py_ssize_t i = 0; values != NULL && i < plan->nops; i++) {
            int pass = 0;
            PyObject *value = op_value(&plan->ops[i], found, &pass);
            if (value == NULL) {
                Py_CLEAR(values);
                break;
            }
            PyTuple_SET_ITEM(values, i, value);
        }
    }
    if (found != stack) {
        PyMem_Free(found);
    }
    return values;
}

static PyObject *
plan_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Plan *plan = (Plan *)self;
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "ExamplePlan takes one positional argument: the bytes");
        return NULL;
    }
    PyObject *data = args[0];
    PyObject *values;
    if (PyBytes_CheckExact(data)) {
        values = plan_values(plan, (const uint8_t *)PyBytes_AS_STRING(data),
                             PyBytes_GET_SIZE(data));
    }
    else {
        Py_buffer view;
        if (PyObject_GetBuffer(data, &view, PyBUF_C_CONTIGUOUS) < 0) {
            PyErr_Clear(); /* not a buffer: the fallback names the problem */
            values = NULL;
        }
        else {
            values = plan_values(plan, view.buf, view.len);
            PyBuffer_Release(&view);
        }
    }
    if (values != NULL || PyErr_Occurred()) {
        return values;
    }
    return PyObject_Vectorcall(plan->fallback, args, 1, NULL);
}

/* --- batches -------------------------------------------------------------------------------- */

/* The joined values of a feature-list op over a batch: the bytes read_steps stored for each record,
 * one record after the other (raw memory: filled without the GIL), and each record's number of
 * steps. */
typedef struct {
    uint8_t *values;
    size_t used; /* bytes */
    size_t capacity;
    int64_t *steps; /* the data of ``steps_array`` */
    PyObject *steps_array;
} Joined;

enum { JOINED, PASSED, NO_MEMORY };

/* Appends the steps of one record (``item``; absent: none when the op is optional) to ``joined``:
 * JOINED, PASSED when the record is not one the plan reads, or NO_MEMORY (no error set: this runs
 * without the GIL). */
static int
join_steps(const Op *op, const Found *item, Joined *joined, Py_ssize_t record)
{
    Py_ssize_t steps = 0;
    if (item->kind && item->size) {
        size_t room = steps_room(op, item->size);
        if (joined->capacity - joined->used < room) {
            size_t capacity = joined->capacity + (joined->capacity >> 1);
            if (capacity < joined->used + room) {
                capacity = joined->used + room;
            }
            uint8_t *grown = PyMem_RawRealloc(joined->values, capacity);
            if (grown == NULL) {
                return NO_MEMORY;
            }
            joined->values = grown;
            joined->capacity = capacity;
        }
        int pass = 0;
        steps = read_steps(op, item, joined->values + joined->used, &pass);
        if (steps < 0) {
            return PASSED;
        }
        joined->used += (size_t)steps * (size_t)op->inner * (size_t)op->elsize;
    }
    else if (!item->kind && !op->optional) {
        return PASSED;
    }
    joined->steps[record] = steps;
    return JOINED;
}

/* The array [steps of every record, *step shape] of a feature-list op's joined values. */
static PyObject *
joined_array(Op *op, const Joined *joined)
{
    npy_intp dims[MAX_RANK + 1];
    memcpy(dims + 1, op->dims + 1, sizeof(npy_intp) * (size_t)op->rank);
    dims[0] = (npy_intp)(joined->used / ((size_t)op->inner * (size_t)op->elsize));
    PyObject *array = new_array(op, op->rank + 1, dims);
    if (array != NULL && joined->used) {
        memcpy(PyArray_DATA((PyArrayObject *)array), joined->values,
               (size_t)PyArray_NBYTES((PyArrayObject *)array));
    }
    return array;
}

/* The records of a batch: where each one's bytes are, and the views to release. */
typedef struct {
    Py_ssize_t n;
    const uint8_t **data;
    Py_ssize_t *sizes;
    Py_buffer *views; /* views[i].obj is NULL for a bytes object or a span */
    PyObject *records; /* the sequence holding them (NULL for Spans) */
} Records;

/* Opens every record of ``records_arg`` (a Spans, or a sequence of bytes-like objects): 1, or 0
 * when one is not bytes-like (the per-record path names the problem), or -1 with an error set. */
static int
records_open(PyObject *records_arg, Records *records)
{
    TfrSpans *spans = tfr_spans_check(records_arg) ? (TfrSpans *)records_arg : NULL;
    if (spans == NULL && (records->records = PySequence_Fast(records_arg, "records")) == NULL) {
        return -1;
    }
    Py_ssize_t n = spans != NULL ? spans->n : PySequence_Fast_GET_SIZE(records->records);
    records->data = PyMem_Calloc((size_t)n + 1, sizeof(*records->data));
    records->sizes = PyMem_Calloc((size_t)n + 1, sizeof(*records->sizes));
    records->views = PyMem_Calloc((size_t)n + 1, sizeof(*records->views));
    if (records->data == NULL || records->sizes == NULL || records->views == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (; records->n < n; records->n++) {
        Py_ssize_t i = records->n;
        if (spans != NULL) {
            records->data[i] = spans->data[i];
            records->sizes[i] = spans->sizes[i];
            continue;
        }
        PyObject *record = PySequence_Fast_GET_ITEM(records->records, i);
        if (PyBytes_CheckExact(record)) {
            records->data[i] = (const uint8_t *)PyBytes_AS_STRING(record);
            records->sizes[i] = PyBytes_GET_SIZE(record);
            continue;
        }
        if (PyObject_GetBuffer(record, &records->views[i], PyBUF_C_CONTIGUOUS) < 0) {
            records->views[i].obj = NULL;
            PyErr_Clear();
            return 0;
        }
        records->data[i] = records->views[i].buf;
        records->sizes[i] = records->views[i].len;
    }
    return 1;
}

static void
records_close(Records *records)
{
    for (Py_ssize_t i = 0; records->views != NULL && i < records->n; i++) {
        if (records->views[i].obj != NULL) {
            PyBuffer_Release(&records->views[i]);
        }
    }
    PyMem_Free(records->data);
    PyMem_Free(records->sizes);
    PyMem_Free(records->views);
    Py_XDECREF(records->records);
}

/* The first pass over a batch, without the GIL: each record's features found (into ``found``,
 * ``plan->nslots`` per record) and its feature lists joined. JOINED, PASSED or NO_MEMORY. */
static int
find_and_join(Plan *plan, const Records *records, Found *found, Joined *joined)
{
    for (Py_ssize_t r = 0; r < records->n; r++) {
        Found *own = found + r * plan->nslots;
        if (!find_all(plan, records->data[r], records->sizes[r], own)) {
            return PASSED;
        }
        for (Py_ssize_t i = 0; i < plan->nops; i++) {
            Op *op = &plan->ops[i];
            if (op->op == OP_STEPS_INT || op->op == OP_STEPS_FLOAT) {
                int status = join_steps(op, &own[op->slot], &joined[i], r);
                if (status != JOINED) {
                    return status;
                }
            }
        }
    }
    return JOINED;
}

/* plan.batch(records): see the docstring. The feature lists are read without the GIL; then the
 * other attributes' values are made, record by record. */
static PyObject *
plan_batch(PyObject *self, PyObject *records_arg)
{
    Plan *plan = (Plan *)self;
    Records records = {0};
    PyObject *result = NULL, *parts = NULL;
    Found *found = NULL;
    Joined *joined = PyMem_Calloc((size_t)plan->nops + 1, sizeof(Joined));
    int keeps = 0;
    if (joined == NULL) {
        return PyErr_NoMemory();
    }
    int opened = records_open(records_arg, &records);
    if (opened <= 0) {
        result = opened < 0 ? NULL : Py_NewRef(Py_None);
        goto done;
    }
    Py_ssize_t n = records.n;
    if ((size_t)n > PY_SSIZE_T_MAX / sizeof(Found) / ((size_t)plan->nslots + 1)) {
        PyErr_NoMemory();
        goto done;
    }
    found = PyMem_RawMalloc(sizeof(Found) * ((size_t)n * (size_t)plan->nslots + 1));
    parts = PyTuple_New(plan->nops);
    if (found == NULL || parts == NULL) {
        if (found == NULL) {
            PyErr_NoMemory();
        }
        goto done;
    }
    keeps = !plan->batching;
    if (keeps) { /* the last batch's buffers (a batch that starts meanwhile makes its own) */
        plan->batching = 1;
        for (Py_ssize_t i = 0; i < plan->nops; i++) {
            joined[i].values = plan->kept[i].values;
            joined[i].capacity = plan->kept[i].capacity;
            plan->kept[i].values = NULL;
            plan->kept[i].capacity = 0;
        }
    }
    for (Py_ssize_t i = 0; i < plan->nops; i++) {
        Op *op = &plan->ops[i];
        PyObject *part;
        if (op->op == OP_STEPS_INT || op->op == OP_STEPS_FLOAT) {
            npy_intp count = n;
            part = joined[i].steps_array = PyArray_EMPTY(1, &count, NPY_INT64, 0);
            if (part != NULL) {
                joined[i].steps = PyArray_DATA((PyArrayObject *)part);
                Py_INCREF(part);
            }
        }
        else {
            part = PyList_New(n);
        }
        if (part == NULL) {
            goto done;
        }
        PyTuple_SET_ITEM(parts, i, part);
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = find_and_join(plan, &records, found, joined);
    Py_END_ALLOW_THREADS
    if (status == NO_MEMORY) {
        PyErr_NoMemory();
        goto done;
    }
    int pass = status == PASSED;
    for (Py_ssize_t r = 0; r < n && !pass; r++) {
        for (Py_ssize_t i = 0; i < plan->nops; i++) {
            Op *op = &plan->ops[i];
            if (op->op == OP_STEPS_INT || op->op == OP_STEPS_FLOAT) {
                continue;
            }
            PyObject *value = op_value(op, found + r * plan->nslots, &pass);
            if (value == NULL) {
                if (!pass) {
                    goto done; /* an error */
                }
                break;
            }
            PyList_SET_ITEM(PyTuple_GET_ITEM(parts, i), r, value);
        }
    }
    if (pass) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    for (Py_ssize_t i = 0; i < plan->nops; i++) {
        if (joined[i].steps_array == NULL) {
            continue;
        }
        PyObject *values = joined_array(&plan->ops[i], &joined[i]);
        PyObject *pair = values == NULL ? NULL : PyTuple_Pack(2, values, joined[i].steps_array);
        Py_XDECREF(values);
        if (pair == NULL) {
            goto done;
        }
        Py_SETREF(((PyTupleObject *)parts)->ob_item[i], pair);
    }
    result = Py_NewRef(parts);
done:
    for (Py_ssize_t i = 0; i < plan->nops; i++) {
        if (keeps && joined[i].capacity <= KEPT_MAX) {
            plan->kept[i].values = joined[i].values;
            plan->kept[i].capacity = joined[i].capacity;
        }
        else {
            PyMem_RawFree(joined[i].values);
        }
        Py_XDECREF(joined[i].steps_array);
    }
    if (keeps) {
        plan->batching = 0;
    }
    PyMem_Free(joined);
    PyMem_RawFree(found);
    Py_XDECREF(parts);
    records_close(&records);
    return result;
}

PyDoc_STRVAR(plan_batch_doc,
"batch(records) -> tuple | None\n\n"
"The values of every record of ``records`` (a sequence of bytes-like objects, or a Spans, read in\n"
"place), attribute by attribute: a list of the values the plan gives each record, or, for a\n"
"feature list, a pair (values, steps): the arrays the plan gives each record joined along their\n"
"first axis, and each record's number of steps (int64). ``None`` when the plan would hand any of\n"
"the records to its fallback (the caller then decodes them one by one).");

static PyMethodDef plan_methods[] = {
    {"batch", plan_batch, METH_O, plan_batch_doc},
    {NULL, NULL, 0, NULL},
};

/* --- construction ---------------------------------------------------------------------------- */

static void
plan_dealloc(Plan *plan)
{
    PyObject_GC_UnTrack(plan);
    for (Py_ssize_t i = 0; plan->ops != NULL && i < plan->nops; i++) {
        Py_XDECREF(plan->ops[i].fallback_default);
        Py_XDECREF(plan->ops[i].dtype);
    }
    for (Py_ssize_t i = 0; plan->kept != NULL && i < plan->nops; i++) {
        PyMem_RawFree(plan->kept[i].values);
    }
    PyMem_Free(plan->kept);
    PyMem_Free(plan->ops);
    PyMem_Free(plan->slots);
    Py_XDECREF(plan->keys);
    Py_XDECREF(plan->list_keys);
    Py_XDECREF(plan->fallback);
    PyObject_GC_Del(plan);
}

static int
plan_traverse(Plan *plan, visitproc visit, void *arg)
{
    Py_VISIT(plan->fallback);
    for (Py_ssize_t i = 0; plan->ops != NULL && i < plan->nops; i++) {
        Py_VISIT(plan->ops[i].fallback_default);
        Py_VISIT(plan->ops[i].dtype);
    }
    return 0;
}

static int
read_op(PyObject *spec, Op *op, Py_ssize_t nfeatures, Py_ssize_t nslots)
{
    PyObject *dflt, *shape, *dtype;
    int has_default;
    if (!PyTuple_Check(spec)
        || !PyArg_ParseTuple(spec, "innppOLLinnOO;an ExamplePlan op", &op->op, &op->slot,
                             &op->companion, &op->optional, &has_default, &dflt, &op->lo, &op->hi,
                             &op->code, &op->itemsize, &op->count, &shape, &dtype)) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "an ExamplePlan op is a tuple");
        }
        return -1;
    }
    int steps = op->op == OP_STEPS_INT || op->op == OP_STEPS_FLOAT;
    if (op->op < OP_INT || op->op > OP_STEPS_FLOAT || op->slot < (steps ? nfeatures : 0)
        || op->slot >= (steps ? nslots : nfeatures) || op->companion >= nfeatures
        || op->itemsize < 1 || !PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > MAX_RANK) {
        PyErr_SetString(PyExc_ValueError, "an ExamplePlan op is out of range");
        return -1;
    }
    int arrays = op->op == OP_INT_ARRAY || op->op == OP_FLOAT_ARRAY || op->op == OP_RAW || steps;
    if (arrays && !PyArray_DescrCheck(dtype)) {
        PyErr_SetString(PyExc_TypeError, "an ExamplePlan array op needs a numpy dtype");
        return -1;
    }
    op->inner = 1;
    op->rank = (int)PyTuple_GET_SIZE(shape);
    for (int i = 0; i < op->rank; i++) {
        Py_ssize_t dim = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (dim == -1 && PyErr_Occurred()) {
            return -1;
        }
        op->dims[i + 1] = dim;
        if (dim > 0) {
            op->inner *= dim;
        }
    }
    op->elsize = arrays ? (Py_ssize_t)PyDataType_ELSIZE((PyArray_Descr *)dtype) : 0;
    if (steps && (op->elsize < 1 || op->elsize > 8)) {
        PyErr_SetString(PyExc_ValueError, "an ExamplePlan feature-list op needs a dtype of 1 to 8 bytes");
        return -1;
    }
    op->fallback_default = has_default ? Py_NewRef(dflt) : NULL;
    op->dtype = Py_NewRef(dtype);
    return 0;
}

static PyObject *
plan_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *keys, *ops, *fallback, *list_keys = Py_None;
    static char *names[] = {"keys", "ops", "fallback", "list_keys", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!O|O:ExamplePlan", names, &PyTuple_Type,
                                     &keys, &PyTuple_Type, &ops, &fallback, &list_keys)) {
        return NULL;
    }
    if (list_keys != Py_None && !PyTuple_Check(list_keys)) {
        PyErr_SetString(PyExc_TypeError, "ExamplePlan list_keys is a tuple or None");
        return NULL;
    }
    Plan *plan = PyObject_GC_New(Plan, type);
    if (plan == NULL) {
        return NULL;
    }
    plan->sequence = list_keys != Py_None;
    plan->nfeatures = PyTuple_GET_SIZE(keys);
    plan->nslots = plan->nfeatures + (plan->sequence ? PyTuple_GET_SIZE(list_keys) : 0);
    plan->nops = PyTuple_GET_SIZE(ops);
    plan->keys = Py_NewRef(keys);
    plan->list_keys = Py_NewRef(list_keys);
    plan->fallback = Py_NewRef(fallback);
    plan->vectorcall = plan_vectorcall;
    plan->slots = PyMem_Calloc((size_t)plan->nslots + 1, sizeof(Slot));
    plan->ops = PyMem_Calloc((size_t)plan->nops + 1, sizeof(Op));
    plan->kept = PyMem_Calloc((size_t)plan->nops + 1, sizeof(Kept));
    plan->batching = 0;
    PyObject_GC_Track(plan);
    if (plan->slots == NULL || plan->ops == NULL || plan->kept == NULL) {
        Py_DECREF(plan);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < plan->nslots; i++) {
        PyObject *key = i < plan->nfeatures ? PyTuple_GET_ITEM(keys, i)
                                            : PyTuple_GET_ITEM(list_keys, i - plan->nfeatures);
        if (!PyBytes_Check(key)) {
            PyErr_SetString(PyExc_TypeError, "ExamplePlan keys are bytes");
            Py_DECREF(plan);
            return NULL;
        }
        plan->slots[i].key = (const uint8_t *)PyBytes_AS_STRING(key);
        plan->slots[i].key_size = PyBytes_GET_SIZE(key);
    }
    for (Py_ssize_t i = 0; i < plan->nops; i++) {
        if (read_op(PyTuple_GET_ITEM(ops, i), &plan->ops[i], plan->nfeatures, plan->nslots) < 0) {
            plan->nops = i; /* only the ops read so far hold references */
            Py_DECREF(plan);
            return NULL;
        }
    }
    return (PyObject *)plan;
}

PyDoc_STRVAR(plan_doc,
"ExamplePlan(keys, ops, fallback, list_keys=None)\n\n"
"A callable that decodes serialized tf.train.Example bytes (with list_keys, the feature list\n"
"keys: tf.train.SequenceExample bytes) into a tuple of attribute values (built by\n"
"codegen.runtime.plan from a record's codecs). Input in canonical form is decoded in C; every\n"
"other input goes to fallback(data), whose result (or error) is the call's.");

static PyTypeObject PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "codegen._speedups.ExamplePlan",
    .tp_basicsize = sizeof(Plan),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Plan, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = plan_new,
    .tp_dealloc = (destructor)plan_dealloc,
    .tp_traverse = (traverseproc)plan_traverse,
    .tp_doc = plan_doc,
    .tp_methods = plan_methods,
};

int
tfr_add_plan_type(PyObject *module)
{
    if (PyArray_ImportNumPyAPI() < 0 || PyType_Ready(&PlanType) < 0) {
        return -1;
    }
    return PyModule_AddObjectRef(module, "ExamplePlan", (PyObject *)&PlanType);
}
