/*
 * encode_examples: many tf.train.Example (or SequenceExample) records serialized at once from columns, byte for
 * byte as each record's encode() writes it (map entries in the order given, lists packed as protobuf packs them).
 *
 * Each entry describes one feature over all records: (key_field, kind, values, offsets, present[, steps]).
 *   key_field  the serialized key field of the map entry (0a len key), as wire.key_field gives it;
 *   kind       3 int64 (values: a buffer of native int64), 2 float (a buffer of float32 as stored),
 *              1 string (a list of str, written as UTF-8), 0 bytes (a list of bytes),
 *              4 raw (one bytes value per list: the bytes of a buffer between offsets, or the joined buffers of
 *              the items of a list, each C-contiguous);
 *   offsets    a buffer of lists + 1 native int64: list i holds values[offsets[i]:offsets[i + 1]];
 *   present    None, or a buffer of count bytes: 0 leaves the record without the entry;
 *   steps      (feature lists only) a buffer of count + 1 native int64: record i's FeatureList holds the lists
 *              steps[i] to steps[i + 1], one Feature each; without steps, list i is record i's Feature.
 * With `lists` (a tuple of entries with steps), each record is a SequenceExample: `entries` its context, `lists`
 * its feature lists. An item of a list that is not of the kind's type (or a str that is not valid UTF-8) raises
 * TypeError, and the caller encodes record by record, which names the problem; so do offsets that do not fit.
 */
#include "speedups.h"

#include <string.h>

typedef struct {
    const char *key;
    Py_ssize_t key_size;
    int kind;
    Py_buffer values; /* numeric kinds, raw from a buffer */
    PyObject *items;  /* string and bytes kinds, raw from a list: a list */
    Py_buffer *item_buffers; /* raw from a list: one per item */
    Py_ssize_t item_count;
    Py_buffer offsets;
    Py_buffer present;
    Py_buffer steps;
    int has_values, has_offsets, has_present, has_steps;
    uint8_t *packed; /* int64: the packed varints of list packed_list (-1: none), read once for size and bytes */
    Py_ssize_t packed_capacity, packed_size;
    int64_t packed_list;
} Entry;

static inline Py_ssize_t
size_of_varint(uint64_t value)
{
    /* 1 + floor(log2(value | 1)) / 7: the number of 7-bit groups */
    return (Py_ssize_t)((63 - __builtin_clzll(value | 1)) / 7 + 1);
}

static inline uint8_t *
put_varint(uint8_t *out, uint64_t value)
{
    if (value < 0x80) {
        *out = (uint8_t)value;
        return out + 1;
    }
    if (value < 0x4000) {
        out[0] = (uint8_t)(value | 0x80);
        out[1] = (uint8_t)(value >> 7);
        return out + 2;
    }
    if (value < 0x200000) {
        out[0] = (uint8_t)(value | 0x80);
        out[1] = (uint8_t)((value >> 7) | 0x80);
        out[2] = (uint8_t)(value >> 14);
        return out + 3;
    }
    while (value >= 0x80) {
        *out++ = (uint8_t)(value | 0x80);
        value >>= 7;
    }
    *out++ = (uint8_t)value;
    return out;
}

/*
 * The packed varints of count native int64 at values. Values below 2**21 (one to three bytes: pixels, token ids)
 * are written without branching on their size: three bytes stored, the pointer moved by the varint's size. That
 * writes up to two bytes past a varint, so it stops two values before the end (each later value takes at least
 * one byte of the exactly sized output).
 */
uint8_t *
tfr_put_packed(uint8_t *out, const char *values, Py_ssize_t count)
{
    Py_ssize_t j = 0;
    for (; j + 2 < count; j++) {
        uint64_t value;
        memcpy(&value, values + 8 * j, 8);
        if (value >= 0x200000) {
            out = put_varint(out, value);
            continue;
        }
        uint32_t more1 = value >= 0x80, more2 = value >= 0x4000;
        out[0] = (uint8_t)((value & 0x7F) | (more1 << 7));
        out[1] = (uint8_t)(((value >> 7) & 0x7F) | (more2 << 7));
        out[2] = (uint8_t)(value >> 14);
        out += 1 + more1 + more2;
    }
    for (; j < count; j++) {
        uint64_t value;
        memcpy(&value, values + 8 * j, 8);
        out = put_varint(out, value);
    }
    return out;
}

static inline int64_t
int64_at(const Py_buffer *buffer, Py_ssize_t i)
{
    int64_t value;
    memcpy(&value, (const char *)buffer->buf + 8 * i, 8);
    return value;
}

/* The UTF-8 or bytes of item i of a string or bytes entry; NULL with TypeError when it is not of the kind. */
static const char *
item_data(const Entry *e, Py_ssize_t i, Py_ssize_t *size)
{
    PyObject *item = PyList_GET_ITEM(e->items, i);
    if (e->kind == 1) {
        if (!PyUnicode_CheckExact(item)) {
            PyErr_SetString(PyExc_TypeError, "encode_examples: a string value is not a str");
            return NULL;
        }
        const char *data = PyUnicode_AsUTF8AndSize(item, size);
        if (data == NULL) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "encode_examples: a str is not valid UTF-8");
        }
        return data;
    }
    if (!PyBytes_CheckExact(item)) {
        PyErr_SetString(PyExc_TypeError, "encode_examples: a bytes value is not bytes");
        return NULL;
    }
    *size = PyBytes_GET_SIZE(item);
    return PyBytes_AS_STRING(item);
}

/* The bytes of a raw list's one value. */
static Py_ssize_t
raw_length(const Entry *e, int64_t start, int64_t stop)
{
    if (e->item_buffers == NULL) {
        return (Py_ssize_t)(stop - start);
    }
    Py_ssize_t length = 0;
    for (int64_t j = start; j < stop; j++) {
        length += e->item_buffers[j].len;
    }
    return length;
}

/* The size of the list body of one list's values (the packed payload for numbers), or -1 with an error. */
static Py_ssize_t
payload_size(Entry *e, int64_t start, int64_t stop)
{
    if (e->kind == 2) {
        return (Py_ssize_t)(stop - start) * 4;
    }
    Py_ssize_t size = 0;
    if (e->kind == 3) {
        Py_ssize_t needed = 10 * (Py_ssize_t)(stop - start) + 8;
        if (needed > e->packed_capacity) {
            uint8_t *grown = PyMem_Realloc(e->packed, (size_t)needed);
            if (grown == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            e->packed = grown;
            e->packed_capacity = needed;
        }
        const char *values = (const char *)e->values.buf + 8 * start;
        e->packed_size = tfr_put_packed(e->packed, values, (Py_ssize_t)(stop - start)) - e->packed;
        e->packed_list = start;
        return e->packed_size;
    }
    if (e->kind == 4) {
        Py_ssize_t length = raw_length(e, start, stop);
        return 1 + size_of_varint((uint64_t)length) + length;
    }
    for (int64_t j = start; j < stop; j++) {
        Py_ssize_t length;
        if (item_data(e, (Py_ssize_t)j, &length) == NULL) {
            return -1;
        }
        size += 1 + size_of_varint((uint64_t)length) + length;
    }
    return size;
}

static const uint8_t LIST_TAGS[5] = {0x0A, 0x0A, 0x12, 0x1A, 0x0A};

/* The size of the Feature of a list's values given its payload size. */
static Py_ssize_t
feature_size(int kind, Py_ssize_t count, Py_ssize_t payload)
{
    if (kind == 2 || kind == 3) { /* numbers: one packed field 1 inside the list, none when empty */
        if (count == 0) {
            return 2;
        }
        Py_ssize_t list = 1 + size_of_varint((uint64_t)payload) + payload;
        return 1 + size_of_varint((uint64_t)list) + list;
    }
    return 1 + size_of_varint((uint64_t)payload) + payload;
}

static uint8_t *
put_values(uint8_t *out, Entry *e, int64_t start, int64_t stop, Py_ssize_t payload)
{
    Py_ssize_t count = (Py_ssize_t)(stop - start);
    *out++ = LIST_TAGS[e->kind];
    if (e->kind == 2 || e->kind == 3) {
        if (count == 0) {
            *out++ = 0;
            return out;
        }
        out = put_varint(out, (uint64_t)(1 + size_of_varint((uint64_t)payload) + payload));
        *out++ = 0x0A;
        out = put_varint(out, (uint64_t)payload);
        const char *values = (const char *)e->values.buf;
        if (e->kind == 2) {
            memcpy(out, values + 4 * start, (size_t)payload);
            return out + payload;
        }
        if (e->packed_list == start && e->packed_size == payload) {
            memcpy(out, e->packed, (size_t)payload);
            return out + payload;
        }
        return tfr_put_packed(out, values + 8 * start, (Py_ssize_t)(stop - start));
    }
    out = put_varint(out, (uint64_t)payload);
    if (e->kind == 4) {
        *out++ = 0x0A;
        out = put_varint(out, (uint64_t)raw_length(e, start, stop));
        if (e->item_buffers == NULL) {
            memcpy(out, (const char *)e->values.buf + start, (size_t)count);
            return out + count;
        }
        for (int64_t j = start; j < stop; j++) {
            memcpy(out, e->item_buffers[j].buf, (size_t)e->item_buffers[j].len);
            out += e->item_buffers[j].len;
        }
        return out;
    }
    for (int64_t j = start; j < stop; j++) {
        Py_ssize_t length;
        const char *data = item_data(e, (Py_ssize_t)j, &length); /* checked by payload_size */
        *out++ = 0x0A;
        out = put_varint(out, (uint64_t)length);
        memcpy(out, data, (size_t)length);
        out += length;
    }
    return out;
}

/* The size of the Feature of list j (payload_size of it in *payload), or -1 with an error. */
static Py_ssize_t
list_feature_size(Entry *e, Py_ssize_t j, Py_ssize_t *payload)
{
    int64_t start = int64_at(&e->offsets, j), stop = int64_at(&e->offsets, j + 1);
    *payload = payload_size(e, start, stop);
    if (*payload < 0) {
        return -1;
    }
    return feature_size(e->kind, (Py_ssize_t)(stop - start), *payload);
}

/* The size of record i's map value of the entry: its Feature, or its FeatureList of one Feature per step. */
static Py_ssize_t
value_size(Entry *e, Py_ssize_t i, Py_ssize_t *payload)
{
    if (!e->has_steps) {
        return list_feature_size(e, i, payload);
    }
    Py_ssize_t size = 0;
    int64_t first = int64_at(&e->steps, i), last = int64_at(&e->steps, i + 1);
    for (int64_t j = first; j < last; j++) {
        Py_ssize_t step_payload;
        Py_ssize_t feature = list_feature_size(e, (Py_ssize_t)j, &step_payload);
        if (feature < 0) {
            return -1;
        }
        size += 1 + size_of_varint((uint64_t)feature) + feature;
    }
    return size;
}

static uint8_t *
put_value(uint8_t *out, Entry *e, Py_ssize_t i, Py_ssize_t payload)
{
    if (!e->has_steps) {
        return put_values(out, e, int64_at(&e->offsets, i), int64_at(&e->offsets, i + 1), payload);
    }
    int64_t first = int64_at(&e->steps, i), last = int64_at(&e->steps, i + 1);
    for (int64_t j = first; j < last; j++) {
        Py_ssize_t step_payload;
        Py_ssize_t feature = list_feature_size(e, (Py_ssize_t)j, &step_payload); /* checked by value_size */
        *out++ = 0x0A;
        out = put_varint(out, (uint64_t)feature);
        out = put_values(out, e, int64_at(&e->offsets, j), int64_at(&e->offsets, j + 1), step_payload);
    }
    return out;
}

/* The size of record i's map of n entries (each entry's payload and value size in sizes), or -1 with an error. */
static Py_ssize_t
map_size(Entry *entries, Py_ssize_t n, Py_ssize_t i, Py_ssize_t *sizes)
{
    Py_ssize_t body = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        Entry *e = &entries[k];
        sizes[2 * k + 1] = -1;
        if (e->has_present && !((const char *)e->present.buf)[i]) {
            continue;
        }
        Py_ssize_t value = value_size(e, i, &sizes[2 * k]);
        if (value < 0) {
            return -1;
        }
        Py_ssize_t inner = e->key_size + 1 + size_of_varint((uint64_t)value) + value;
        sizes[2 * k + 1] = value;
        body += 1 + size_of_varint((uint64_t)inner) + inner;
    }
    return body;
}

static uint8_t *
put_map(uint8_t *out, Entry *entries, Py_ssize_t n, Py_ssize_t i, const Py_ssize_t *sizes)
{
    for (Py_ssize_t k = 0; k < n; k++) {
        Entry *e = &entries[k];
        Py_ssize_t payload = sizes[2 * k], value = sizes[2 * k + 1];
        if (value < 0) {
            continue;
        }
        Py_ssize_t inner = e->key_size + 1 + size_of_varint((uint64_t)value) + value;
        *out++ = 0x0A;
        out = put_varint(out, (uint64_t)inner);
        memcpy(out, e->key, (size_t)e->key_size);
        out += e->key_size;
        *out++ = 0x12;
        out = put_varint(out, (uint64_t)value);
        out = put_value(out, e, i, payload);
    }
    return out;
}

static void
release(Entry *entries, Py_ssize_t n)
{
    if (entries == NULL) {
        return;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        Entry *e = &entries[k];
        if (e->has_values) {
            PyBuffer_Release(&e->values);
        }
        if (e->has_offsets) {
            PyBuffer_Release(&e->offsets);
        }
        if (e->has_present) {
            PyBuffer_Release(&e->present);
        }
        if (e->has_steps) {
            PyBuffer_Release(&e->steps);
        }
        for (Py_ssize_t j = 0; j < e->item_count; j++) {
            PyBuffer_Release(&e->item_buffers[j]);
        }
        PyMem_Free(e->packed);
        PyMem_Free(e->item_buffers);
    }
    PyMem_Free(entries);
}

/* Whether the count + 1 int64 of buffer never decrease, from 0 or more up to at most available. */
static int
ascending(const Py_buffer *buffer, Py_ssize_t count, Py_ssize_t available)
{
    int64_t previous = int64_at(buffer, 0);
    if (previous < 0) {
        return 0;
    }
    for (Py_ssize_t i = 1; i <= count; i++) {
        int64_t next = int64_at(buffer, i);
        if (next < previous || next > available) {
            return 0;
        }
        previous = next;
    }
    return 1;
}

static int
load_raw_items(Entry *e, PyObject *values)
{
    Py_ssize_t size = PyList_GET_SIZE(values);
    e->item_buffers = PyMem_Calloc((size_t)(size ? size : 1), sizeof(Py_buffer));
    if (e->item_buffers == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t j = 0; j < size; j++) {
        if (PyObject_GetBuffer(PyList_GET_ITEM(values, j), &e->item_buffers[j], PyBUF_C_CONTIGUOUS) < 0) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "encode_examples: a raw value is not a C-contiguous buffer");
            return -1;
        }
        e->item_count = j + 1;
    }
    return 0;
}

static int
load_entry(Entry *e, PyObject *spec, Py_ssize_t count, int with_steps)
{
    PyObject *key, *values, *offsets, *present, *steps = NULL;
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 5 + with_steps) {
        PyErr_SetString(PyExc_TypeError, with_steps ? "encode_examples: a feature list entry is not a 6-tuple"
                                                    : "encode_examples: an entry is not a 5-tuple");
        return -1;
    }
    if (!PyArg_ParseTuple(spec, with_steps ? "O!iOOOO" : "O!iOOO", &PyBytes_Type, &key, &e->kind, &values,
                          &offsets, &present, &steps)) {
        return -1;
    }
    e->packed_list = -1;
    e->key = PyBytes_AS_STRING(key);
    e->key_size = PyBytes_GET_SIZE(key);
    if (e->kind < 0 || e->kind > 4) {
        PyErr_Format(PyExc_ValueError, "encode_examples: unknown kind %d", e->kind);
        return -1;
    }
    Py_ssize_t lists = count;
    if (with_steps) {
        if (PyObject_GetBuffer(steps, &e->steps, PyBUF_C_CONTIGUOUS) < 0) {
            return -1;
        }
        e->has_steps = 1;
        if (e->steps.len != 8 * (count + 1)) {
            PyErr_SetString(PyExc_ValueError, "encode_examples: steps must hold count + 1 int64");
            return -1;
        }
    }
    if (PyObject_GetBuffer(offsets, &e->offsets, PyBUF_C_CONTIGUOUS) < 0) {
        return -1;
    }
    e->has_offsets = 1;
    if (with_steps) {
        lists = e->offsets.len / 8 - 1;
        if (lists < 0 || e->offsets.len % 8 || !ascending(&e->steps, count, lists)) {
            PyErr_SetString(PyExc_ValueError, "encode_examples: steps out of range");
            return -1;
        }
    }
    if (e->offsets.len != 8 * (lists + 1)) {
        PyErr_SetString(PyExc_ValueError, "encode_examples: offsets must hold count + 1 int64 (one more than the lists)");
        return -1;
    }
    Py_ssize_t available;
    if (e->kind >= 2 && !(e->kind == 4 && PyList_CheckExact(values))) {
        if (PyObject_GetBuffer(values, &e->values, PyBUF_C_CONTIGUOUS) < 0) {
            return -1;
        }
        e->has_values = 1;
        available = e->values.len / (e->kind == 2 ? 4 : e->kind == 3 ? 8 : 1);
    } else {
        if (!PyList_CheckExact(values)) {
            PyErr_SetString(PyExc_TypeError, "encode_examples: string and bytes values must be a list");
            return -1;
        }
        e->items = values;
        available = PyList_GET_SIZE(values);
        if (e->kind == 4 && load_raw_items(e, values) < 0) {
            return -1;
        }
    }
    if (!ascending(&e->offsets, lists, available)) {
        PyErr_SetString(PyExc_ValueError, "encode_examples: offsets out of range");
        return -1;
    }
    if (present != Py_None) {
        if (PyObject_GetBuffer(present, &e->present, PyBUF_C_CONTIGUOUS) < 0) {
            return -1;
        }
        e->has_present = 1;
        if (e->present.len != count) {
            PyErr_SetString(PyExc_ValueError, "encode_examples: present must hold count bytes");
            return -1;
        }
    }
    return 0;
}

static Entry *
load_entries(PyObject *specs, Py_ssize_t count, int with_steps)
{
    Py_ssize_t n = PyTuple_GET_SIZE(specs);
    Entry *entries = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Entry));
    if (entries == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        if (load_entry(&entries[k], PyTuple_GET_ITEM(specs, k), count, with_steps) < 0) {
            release(entries, n);
            return NULL;
        }
    }
    return entries;
}

static PyObject *
encode_examples(PyObject *module, PyObject *args)
{
    (void)module;
    Py_ssize_t count;
    PyObject *specs, *list_specs = Py_None;
    if (!PyArg_ParseTuple(args, "nO!|O:encode_examples", &count, &PyTuple_Type, &specs, &list_specs)) {
        return NULL;
    }
    if (count < 0) {
        PyErr_SetString(PyExc_ValueError, "encode_examples: count must not be negative");
        return NULL;
    }
    int sequence = list_specs != Py_None;
    if (sequence && !PyTuple_Check(list_specs)) {
        PyErr_SetString(PyExc_TypeError, "encode_examples: lists must be a tuple or None");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(specs), m = sequence ? PyTuple_GET_SIZE(list_specs) : 0;
    PyObject *result = NULL;
    Entry *lists = NULL;
    Py_ssize_t *sizes = NULL;
    Entry *entries = load_entries(specs, count, 0);
    if (entries == NULL) {
        return NULL;
    }
    if (sequence && (lists = load_entries(list_specs, count, 1)) == NULL) {
        goto done;
    }
    sizes = PyMem_Calloc((size_t)(n + m + 1), 2 * sizeof(Py_ssize_t));
    if (sizes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t *list_sizes = sizes + 2 * n;
    result = PyList_New(count);
    if (result == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t body = map_size(entries, n, i, sizes), total;
        Py_ssize_t feature_lists = 0;
        if (body < 0 || (sequence && (feature_lists = map_size(lists, m, i, list_sizes)) < 0)) {
            Py_CLEAR(result);
            goto done;
        }
        total = 1 + size_of_varint((uint64_t)body) + body;
        if (sequence) {
            total += 1 + size_of_varint((uint64_t)feature_lists) + feature_lists;
        }
        PyObject *record = PyBytes_FromStringAndSize(NULL, total);
        if (record == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        uint8_t *out = (uint8_t *)PyBytes_AS_STRING(record);
        *out++ = 0x0A;
        out = put_varint(out, (uint64_t)body);
        out = put_map(out, entries, n, i, sizes);
        if (sequence) {
            *out++ = 0x12;
            out = put_varint(out, (uint64_t)feature_lists);
            put_map(out, lists, m, i, list_sizes);
        }
        PyList_SET_ITEM(result, i, record);
    }
done:
    release(entries, n);
    release(lists, m);
    PyMem_Free(sizes);
    return result;
}

PyDoc_STRVAR(encode_examples_doc,
"encode_examples(count, entries, lists=None) -> list[bytes]\n\n"
"``count`` serialized tf.train.Example records from columns: each entry is (key_field, kind,\n"
"values, offsets, present) for one feature, in map order; with ``lists`` (entries with the\n"
"record's steps last), SequenceExample records whose context is ``entries`` (see\n"
"codegen/_speedups/encode.c).");

PyMethodDef tfr_encode_methods[] = {
    {"encode_examples", encode_examples, METH_VARARGS, encode_examples_doc},
    {NULL, NULL, 0, NULL},
};
