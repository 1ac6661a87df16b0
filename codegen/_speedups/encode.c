/*
 * encode_examples: many tf.train.Example records serialized at once from columns, byte for byte as each record's
 * encode() writes it (map entries in the order given, lists packed as protobuf packs them).
 *
 * Each entry describes one feature over all records: (key_field, kind, values, offsets, present).
 *   key_field  the serialized key field of the map entry (0a len key), as wire.key_field gives it;
 *   kind       3 int64 (values: a buffer of native int64), 2 float (a buffer of float32 as stored),
 *              1 string (a list of str, written as UTF-8), 0 bytes (a list of bytes);
 *   offsets    a buffer of count + 1 native int64: record i holds values[offsets[i]:offsets[i + 1]];
 *   present    None, or a buffer of count bytes: 0 leaves the record without the entry.
 * An item of a list that is not of the kind's type (or a str that is not valid UTF-8) raises TypeError, and the
 * caller encodes record by record, which names the problem; so do offsets that do not fit the values.
 */
#include "speedups.h"

#include <string.h>

typedef struct {
    const char *key;
    Py_ssize_t key_size;
    int kind;
    Py_buffer values; /* numeric kinds */
    PyObject *items;  /* string and bytes kinds: a list */
    Py_buffer offsets;
    Py_buffer present;
    int has_values, has_offsets, has_present;
} Entry;

static Py_ssize_t
size_of_varint(uint64_t value)
{
    Py_ssize_t size = 1;
    while (value >= 0x80) {
        value >>= 7;
        size++;
    }
    return size;
}

static uint8_t *
put_varint(uint8_t *out, uint64_t value)
{
    while (value >= 0x80) {
        *out++ = (uint8_t)(value | 0x80);
        value >>= 7;
    }
    *out++ = (uint8_t)value;
    return out;
}

static int64_t
offset_at(const Entry *e, Py_ssize_t i)
{
    int64_t value;
    memcpy(&value, (const char *)e->offsets.buf + 8 * i, 8);
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

/* The size of the list body of record i's values (the packed payload for numbers), or -1 with an error. */
static Py_ssize_t
payload_size(const Entry *e, int64_t start, int64_t stop)
{
    if (e->kind == 2) {
        return (Py_ssize_t)(stop - start) * 4;
    }
    Py_ssize_t size = 0;
    if (e->kind == 3) {
        const char *values = (const char *)e->values.buf;
        for (int64_t j = start; j < stop; j++) {
            uint64_t value;
            memcpy(&value, values + 8 * j, 8);
            size += size_of_varint(value);
        }
        return size;
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

static const uint8_t LIST_TAGS[4] = {0x0A, 0x0A, 0x12, 0x1A};

/* The size of the Feature of record i's values given its payload size. */
static Py_ssize_t
feature_size(int kind, Py_ssize_t count, Py_ssize_t payload)
{
    if (kind >= 2) { /* numbers: one packed field 1 inside the list, none when empty */
        if (count == 0) {
            return 2;
        }
        Py_ssize_t list = 1 + size_of_varint((uint64_t)payload) + payload;
        return 1 + size_of_varint((uint64_t)list) + list;
    }
    return 1 + size_of_varint((uint64_t)payload) + payload;
}

static uint8_t *
put_values(uint8_t *out, const Entry *e, int64_t start, int64_t stop, Py_ssize_t payload)
{
    Py_ssize_t count = (Py_ssize_t)(stop - start);
    *out++ = LIST_TAGS[e->kind];
    if (e->kind >= 2) {
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
        for (int64_t j = start; j < stop; j++) {
            uint64_t value;
            memcpy(&value, values + 8 * j, 8);
            out = put_varint(out, value);
        }
        return out;
    }
    out = put_varint(out, (uint64_t)payload);
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

static void
release(Entry *entries, Py_ssize_t n)
{
    for (Py_ssize_t k = 0; k < n; k++) {
        if (entries[k].has_values) {
            PyBuffer_Release(&entries[k].values);
        }
        if (entries[k].has_offsets) {
            PyBuffer_Release(&entries[k].offsets);
        }
        if (entries[k].has_present) {
            PyBuffer_Release(&entries[k].present);
        }
    }
    PyMem_Free(entries);
}

static int
load_entry(Entry *e, PyObject *spec, Py_ssize_t count)
{
    PyObject *key, *values, *offsets, *present;
    if (!PyTuple_Check(spec)
        || !PyArg_ParseTuple(spec, "O!iOOO", &PyBytes_Type, &key, &e->kind, &values, &offsets,
                             &present)) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "encode_examples: an entry is not a tuple");
        }
        return -1;
    }
    e->key = PyBytes_AS_STRING(key);
    e->key_size = PyBytes_GET_SIZE(key);
    if (e->kind < 0 || e->kind > 3) {
        PyErr_Format(PyExc_ValueError, "encode_examples: unknown kind %d", e->kind);
        return -1;
    }
    if (PyObject_GetBuffer(offsets, &e->offsets, PyBUF_C_CONTIGUOUS) < 0) {
        return -1;
    }
    e->has_offsets = 1;
    if (e->offsets.len != 8 * (count + 1)) {
        PyErr_SetString(PyExc_ValueError, "encode_examples: offsets must hold count + 1 int64");
        return -1;
    }
    Py_ssize_t available;
    if (e->kind >= 2) {
        if (PyObject_GetBuffer(values, &e->values, PyBUF_C_CONTIGUOUS) < 0) {
            return -1;
        }
        e->has_values = 1;
        available = e->values.len / (e->kind == 2 ? 4 : 8);
    } else {
        if (!PyList_CheckExact(values)) {
            PyErr_SetString(PyExc_TypeError, "encode_examples: string and bytes values must be a list");
            return -1;
        }
        e->items = values;
        available = PyList_GET_SIZE(values);
    }
    int64_t previous = offset_at(e, 0);
    if (previous < 0) {
        PyErr_SetString(PyExc_ValueError, "encode_examples: offsets out of range");
        return -1;
    }
    for (Py_ssize_t i = 1; i <= count; i++) {
        int64_t next = offset_at(e, i);
        if (next < previous || next > available) {
            PyErr_SetString(PyExc_ValueError, "encode_examples: offsets out of range");
            return -1;
        }
        previous = next;
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

static PyObject *
encode_examples(PyObject *module, PyObject *args)
{
    (void)module;
    Py_ssize_t count;
    PyObject *specs;
    if (!PyArg_ParseTuple(args, "nO!:encode_examples", &count, &PyTuple_Type, &specs)) {
        return NULL;
    }
    if (count < 0) {
        PyErr_SetString(PyExc_ValueError, "encode_examples: count must not be negative");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(specs);
    Entry *entries = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Entry));
    Py_ssize_t *sizes = PyMem_Calloc((size_t)(n ? n : 1), 2 * sizeof(Py_ssize_t));
    if (entries == NULL || sizes == NULL) {
        PyMem_Free(entries);
        PyMem_Free(sizes);
        return PyErr_NoMemory();
    }
    PyObject *result = NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (load_entry(&entries[k], PyTuple_GET_ITEM(specs, k), count) < 0) {
            goto done;
        }
    }
    result = PyList_New(count);
    if (result == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t body = 0;
        for (Py_ssize_t k = 0; k < n; k++) {
            const Entry *e = &entries[k];
            sizes[2 * k] = -1;
            if (e->has_present && !((const char *)e->present.buf)[i]) {
                continue;
            }
            int64_t start = offset_at(e, i), stop = offset_at(e, i + 1);
            Py_ssize_t payload = payload_size(e, start, stop);
            if (payload < 0) {
                Py_CLEAR(result);
                goto done;
            }
            Py_ssize_t feature = feature_size(e->kind, (Py_ssize_t)(stop - start), payload);
            Py_ssize_t inner = e->key_size + 1 + size_of_varint((uint64_t)feature) + feature;
            sizes[2 * k] = payload;
            sizes[2 * k + 1] = feature;
            body += 1 + size_of_varint((uint64_t)inner) + inner;
        }
        PyObject *record = PyBytes_FromStringAndSize(NULL, 1 + size_of_varint((uint64_t)body) + body);
        if (record == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        uint8_t *out = (uint8_t *)PyBytes_AS_STRING(record);
        *out++ = 0x0A;
        out = put_varint(out, (uint64_t)body);
        for (Py_ssize_t k = 0; k < n; k++) {
            const Entry *e = &entries[k];
            Py_ssize_t payload = sizes[2 * k], feature = sizes[2 * k + 1];
            if (payload < 0) {
                continue;
            }
            Py_ssize_t inner = e->key_size + 1 + size_of_varint((uint64_t)feature) + feature;
            *out++ = 0x0A;
            out = put_varint(out, (uint64_t)inner);
            memcpy(out, e->key, (size_t)e->key_size);
            out += e->key_size;
            *out++ = 0x12;
            out = put_varint(out, (uint64_t)feature);
            out = put_values(out, e, offset_at(e, i), offset_at(e, i + 1), payload);
        }
        PyList_SET_ITEM(result, i, record);
    }
done:
    release(entries, n);
    PyMem_Free(sizes);
    return result;
}

PyDoc_STRVAR(encode_examples_doc,
"encode_examples(count, entries) -> list[bytes]\n\n"
"``count`` serialized tf.train.Example records from columns: each entry is (key_field, kind,\n"
"values, offsets, present) for one feature, in map order (see codegen/_speedups/encode.c).");

PyMethodDef tfr_encode_methods[] = {
    {"encode_examples", encode_examples, METH_VARARGS, encode_examples_doc},
    {NULL, NULL, 0, NULL},
};
