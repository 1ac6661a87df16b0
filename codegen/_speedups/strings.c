/*
 * join_strings: a list of str (or of bytes) as the two buffers of an Arrow string (binary) array, in one pass:
 * the int32 offsets of each item and the items' UTF-8 (bytes) one after the other. Compact ASCII strings give their
 * UTF-8 without a copy of their own (read in place, without a call), so each item costs one memcpy.
 */
#include "speedups.h"

#include <string.h>

/* The UTF-8 of a str: a compact ASCII string's own characters (no call, no copy), else the cached UTF-8 CPython
 * makes on first use. NULL with an exception for a str that has no UTF-8 (lone surrogates). */
static inline const char *
utf8_of(PyObject *item, Py_ssize_t *size)
{
    if (PyUnicode_IS_COMPACT_ASCII(item)) {
        *size = PyUnicode_GET_LENGTH(item);
        return (const char *)PyUnicode_1BYTE_DATA(item);
    }
    return PyUnicode_AsUTF8AndSize(item, size);
}

static PyObject *
join_strings(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *items;
    int text;
    if (!PyArg_ParseTuple(args, "O!p:join_strings", &PyList_Type, &items, &text)) {
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(items), total = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        Py_ssize_t size;
        if (text) {
            if (!PyUnicode_CheckExact(item)) {
                PyErr_SetString(PyExc_TypeError, "join_strings: an item is not a str");
                return NULL;
            }
            if (utf8_of(item, &size) == NULL) {
                return NULL;
            }
        }
        else {
            if (!PyBytes_CheckExact(item)) {
                PyErr_SetString(PyExc_TypeError, "join_strings: an item is not bytes");
                return NULL;
            }
            size = PyBytes_GET_SIZE(item);
        }
        total += size;
        if (total > INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "join_strings: more than 2**31 - 1 bytes");
            return NULL;
        }
    }
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, 4 * (count + 1));
    PyObject *data = PyBytes_FromStringAndSize(NULL, total);
    if (offsets == NULL || data == NULL) {
        Py_XDECREF(offsets);
        Py_XDECREF(data);
        return NULL;
    }
    char *out = PyBytes_AS_STRING(data);
    char *ends = PyBytes_AS_STRING(offsets);
    int32_t at = 0;
    memcpy(ends, &at, 4);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        Py_ssize_t size;
        const char *bytes;
        if (text) {
            bytes = utf8_of(item, &size); /* the first pass made (and cached) any UTF-8 */
        }
        else {
            bytes = PyBytes_AS_STRING(item);
            size = PyBytes_GET_SIZE(item);
        }
        memcpy(out + at, bytes, (size_t)size);
        at += (int32_t)size;
        memcpy(ends + 4 * (i + 1), &at, 4);
    }
    return Py_BuildValue("(NN)", offsets, data);
}

PyDoc_STRVAR(join_strings_doc,
"join_strings(items, text) -> (offsets, data)\n\n"
"A list of str (``text``) or bytes as an Arrow string or binary array's buffers: ``count + 1``\n"
"native int32 offsets and the items' bytes joined (see codegen/_speedups/strings.c).");

PyMethodDef tfr_strings_methods[] = {
    {"join_strings", join_strings, METH_VARARGS, join_strings_doc},
    {NULL, NULL, 0, NULL},
};
