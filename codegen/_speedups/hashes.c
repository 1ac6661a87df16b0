/*
 * hash_values: the 64-bit FNV-1a hash of each bytes value joined in one buffer (the blob and
 * sizes scan_batch gives for a joined key), so that the statistics of tfr-gen report count
 * values in numpy without making a bytes object per value; tally_values: the same hashes
 * grouped, each distinct one once with how many values have it and where it first is.
 */
#include "speedups.h"

#include <string.h>

PyDoc_STRVAR(hash_values_doc,
"hash_values(blob, sizes, /)\n--\n\n"
"The 64-bit FNV-1a hash of each value joined in ``blob``, as native uint64 bytes; ``sizes`` is a\n"
"buffer of native int64, the size of each value in order. ValueError when the sizes are\n"
"negative or do not add up to the blob's size.");

int
tfr_joined_ends(const int64_t *ends, Py_ssize_t n, Py_ssize_t blob_len)
{
    int64_t last = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (ends[i] < last || ends[i] > blob_len) {
            return -1;
        }
        last = ends[i];
    }
    return last == blob_len ? 0 : -1;
}

int
tfr_joined_sizes(const Py_buffer *blob, const Py_buffer *sizes, Py_ssize_t *n)
{
    if (sizes->len % (Py_ssize_t)sizeof(int64_t) != 0) {
        PyErr_SetString(PyExc_ValueError, "sizes must be a buffer of int64");
        return -1;
    }
    const int64_t *size = (const int64_t *)sizes->buf;
    *n = sizes->len / (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t pos = 0;
    for (Py_ssize_t i = 0; i < *n; i++) {
        if (size[i] < 0 || size[i] > blob->len - pos) {
            PyErr_SetString(PyExc_ValueError, "the sizes do not fit the blob");
            return -1;
        }
        pos += (Py_ssize_t)size[i];
    }
    if (pos != blob->len) {
        PyErr_SetString(PyExc_ValueError, "the sizes do not add up to the blob's size");
        return -1;
    }
    return 0;
}

/* The parsed arguments (blob, sizes) of both functions, checked; 0 with an error set (and the
 * buffers released) when they are not fit. */
static int
joined_args(PyObject *args, const char *format, Py_buffer *blob, Py_buffer *sizes,
            Py_ssize_t *n)
{
    if (!PyArg_ParseTuple(args, format, blob, sizes)) {
        return 0;
    }
    if (tfr_joined_sizes(blob, sizes, n) == 0) {
        return 1;
    }
    PyBuffer_Release(blob);
    PyBuffer_Release(sizes);
    return 0;
}

static inline uint64_t
fnv1a(const uint8_t *data, int64_t size)
{
    uint64_t hash = 14695981039346656037ULL;
    for (int64_t j = 0; j < size; j++) {
        hash ^= data[j];
        hash *= 1099511628211ULL;
    }
    return hash;
}

static PyObject *
hash_values(PyObject *self, PyObject *args)
{
    Py_buffer blob, sizes;
    Py_ssize_t n;
    if (!joined_args(args, "y*y*:hash_values", &blob, &sizes, &n)) {
        return NULL;
    }
    const int64_t *size = (const int64_t *)sizes.buf;
    PyObject *result = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(uint64_t));
    if (result != NULL) {
        uint64_t *out = (uint64_t *)PyBytes_AS_STRING(result);
        const uint8_t *data = (const uint8_t *)blob.buf;
        for (Py_ssize_t i = 0; i < n; i++) {
            out[i] = fnv1a(data, size[i]);
            data += size[i];
        }
    }
    PyBuffer_Release(&blob);
    PyBuffer_Release(&sizes);
    return result;
}

PyDoc_STRVAR(tally_values_doc,
"tally_values(blob, sizes, /)\n--\n\n"
"The distinct 64-bit FNV-1a hashes of the values joined in ``blob`` (``sizes`` as for\n"
"hash_values), in the order they first appear: a tuple of three bytes objects of as many native\n"
"numbers, the hashes (uint64), how many values have each (int64) and the index of the first\n"
"value that has it (int64). ValueError as hash_values.");

static PyObject *
tally_values(PyObject *self, PyObject *args)
{
    Py_buffer blob, sizes;
    Py_ssize_t n;
    if (!joined_args(args, "y*y*:tally_values", &blob, &sizes, &n)) {
        return NULL;
    }
    const int64_t *size = (const int64_t *)sizes.buf;
    PyObject *result = NULL;
    PyObject *hashes_out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(uint64_t));
    PyObject *counts_out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    PyObject *firsts_out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    /* Open addressing: a power of two at least twice the values, each slot 1 + the index of a
     * distinct hash in the outputs (or 0). */
    int bits = 3;
    while (((Py_ssize_t)1 << bits) < 2 * n) {
        bits++;
    }
    size_t slots = (size_t)1 << bits;
    uint32_t *table = n <= UINT32_MAX / 2 ? PyMem_Calloc(slots, sizeof(uint32_t)) : NULL;
    if (hashes_out == NULL || counts_out == NULL || firsts_out == NULL) {
        goto done;
    }
    if (table == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    uint64_t *hashes = (uint64_t *)PyBytes_AS_STRING(hashes_out);
    int64_t *counts = (int64_t *)PyBytes_AS_STRING(counts_out);
    int64_t *firsts = (int64_t *)PyBytes_AS_STRING(firsts_out);
    uint32_t distinct = 0;
    size_t mask = slots - 1;
    const uint8_t *data = (const uint8_t *)blob.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t hash = fnv1a(data, size[i]);
        data += size[i];
        size_t slot = (size_t)((hash * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
        for (;;) {
            uint32_t at = table[slot];
            if (at == 0) {
                table[slot] = ++distinct;
                hashes[distinct - 1] = hash;
                counts[distinct - 1] = 1;
                firsts[distinct - 1] = (int64_t)i;
                break;
            }
            if (hashes[at - 1] == hash) {
                counts[at - 1]++;
                break;
            }
            slot = (slot + 1) & mask;
        }
    }
    if (_PyBytes_Resize(&hashes_out, (Py_ssize_t)distinct * (Py_ssize_t)sizeof(uint64_t)) == 0
        && _PyBytes_Resize(&counts_out, (Py_ssize_t)distinct * (Py_ssize_t)sizeof(int64_t)) == 0
        && _PyBytes_Resize(&firsts_out, (Py_ssize_t)distinct * (Py_ssize_t)sizeof(int64_t)) == 0) {
        result = PyTuple_Pack(3, hashes_out, counts_out, firsts_out);
    }
done:
    PyMem_Free(table);
    Py_XDECREF(hashes_out);
    Py_XDECREF(counts_out);
    Py_XDECREF(firsts_out);
    PyBuffer_Release(&blob);
    PyBuffer_Release(&sizes);
    return result;
}

PyMethodDef tfr_hashes_methods[] = {
    {"hash_values", hash_values, METH_VARARGS, hash_values_doc},
    {"tally_values", tally_values, METH_VARARGS, tally_values_doc},
    {NULL, NULL, 0, NULL},
};
