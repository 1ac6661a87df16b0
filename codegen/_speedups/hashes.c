/*
 * hash_values: the 64-bit FNV-1a hash of each bytes value joined in one buffer (the blob and
 * sizes scan_batch gives for a joined key), so that the statistics of tfr-gen report count
 * values in numpy without making a bytes object per value.
 */
#include "speedups.h"

#include <string.h>

PyDoc_STRVAR(hash_values_doc,
"hash_values(blob, sizes, /)\n--\n\n"
"The 64-bit FNV-1a hash of each value joined in ``blob``, as native uint64 bytes; ``sizes`` is a\n"
"buffer of native int64, the size of each value in order. ValueError when the sizes are\n"
"negative or do not add up to the blob's size.");

static PyObject *
hash_values(PyObject *self, PyObject *args)
{
    Py_buffer blob, sizes;
    if (!PyArg_ParseTuple(args, "y*y*:hash_values", &blob, &sizes)) {
        return NULL;
    }
    PyObject *result = NULL;
    const int64_t *size = (const int64_t *)sizes.buf;
    Py_ssize_t n = sizes.len / (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t pos = 0;
    if (sizes.len % (Py_ssize_t)sizeof(int64_t) != 0) {
        PyErr_SetString(PyExc_ValueError, "sizes must be a buffer of int64");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (size[i] < 0 || size[i] > blob.len - pos) {
            PyErr_SetString(PyExc_ValueError, "the sizes do not fit the blob");
            goto done;
        }
        pos += (Py_ssize_t)size[i];
    }
    if (pos != blob.len) {
        PyErr_SetString(PyExc_ValueError, "the sizes do not add up to the blob's size");
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(uint64_t));
    if (result == NULL) {
        goto done;
    }
    uint64_t *out = (uint64_t *)PyBytes_AS_STRING(result);
    const uint8_t *data = (const uint8_t *)blob.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t hash = 14695981039346656037ULL;
        for (int64_t j = 0; j < size[i]; j++) {
            hash ^= data[j];
            hash *= 1099511628211ULL;
        }
        out[i] = hash;
        data += size[i];
    }
done:
    PyBuffer_Release(&blob);
    PyBuffer_Release(&sizes);
    return result;
}

PyMethodDef tfr_hashes_methods[] = {
    {"hash_values", hash_values, METH_VARARGS, hash_values_doc},
    {NULL, NULL, 0, NULL},
};
