/*
 * joined_traits: what the statistics of tfr-gen stats and report note about the bytes values
 * joined in one buffer (a joined key of scan_batch), in one pass over them rather than one numpy
 * call per trait: whether one holds a NUL byte, how many start with each image signature, and
 * the short values: which they are while the kept ones are still chosen, how many there are of
 * each kept one once they are (codegen/tools/observe.py holds the numpy reference,
 * joined_traits).
 */
#include "speedups.h"

#include <string.h>

#define MAX_SIGNATURES 8

PyDoc_STRVAR(joined_traits_doc,
"joined_traits(blob, sizes, signatures, short, held, kept, kept_ends, /)\n--\n\n"
"For the values joined in ``blob`` (``sizes``: a buffer of native int64, the size of each in\n"
"order): whether the blob holds a NUL byte, a tuple of how many values start with each bytes of\n"
"``signatures``, the indexes (native int64 bytes) of values of at most ``short`` bytes, and how\n"
"many values equal each kept value (native int64 bytes).\n\n"
"Without ``held`` (None), every short value's index is given (and no count). With it, the\n"
"values ``kept`` (joined, ``kept_ends`` the native int64 end of each) are counted: ``held`` is\n"
"a table of 2**bits native int16 by probe (see codegen/tools/observe.py, _probes): 0 where no\n"
"kept value has that probe, i + 1 where only kept value i has it, -1 where several have it; a\n"
"short value whose probe is at -1 is given by its index instead. ValueError when the sizes are\n"
"negative or do not add up to the blob's size, or the tables are not fit.");

/* The probe of one value of ``size`` bytes at ``value``: its length and five of its bytes mixed,
 * the top ``bits`` bits (as observe._probes computes them in numpy). */
static inline uint64_t
probe(const uint8_t *value, int64_t size, int bits)
{
    const uint64_t mix = 0x9E3779B97F4A7C15ULL;
    int64_t last = size > 0 ? size - 1 : 0;
    int64_t at[5] = {0, 1, last / 2, last - 1, last};
    uint64_t hash = (uint64_t)size;
    for (int i = 0; i < 5; i++) {
        int64_t place = at[i] < 0 ? 0 : (at[i] > last ? last : at[i]);
        hash = (hash + (size > 0 ? value[place] : 0)) * mix;
    }
    return hash >> (64 - bits);
}

static PyObject *
joined_traits(PyObject *self, PyObject *args)
{
    Py_buffer blob, sizes, held = {0}, kept = {0}, kept_ends = {0};
    PyObject *signatures, *held_arg, *kept_arg, *kept_ends_arg;
    Py_ssize_t short_size;
    if (!PyArg_ParseTuple(args, "y*y*O!nOOO:joined_traits", &blob, &sizes, &PyTuple_Type,
                          &signatures, &short_size, &held_arg, &kept_arg, &kept_ends_arg)) {
        return NULL;
    }
    PyObject *result = NULL, *images = NULL, *picked = NULL, *counted = NULL;
    Py_ssize_t nsignatures = PyTuple_GET_SIZE(signatures);
    Py_ssize_t counts[MAX_SIGNATURES] = {0}, needs[MAX_SIGNATURES];
    const char *starts[MAX_SIGNATURES];
    int bits = 0;
    Py_ssize_t nkept = 0;
    if (nsignatures > MAX_SIGNATURES) {
        PyErr_Format(PyExc_ValueError, "joined_traits: at most %d signatures", MAX_SIGNATURES);
        goto done;
    }
    for (Py_ssize_t k = 0; k < nsignatures; k++) {
        PyObject *signature = PyTuple_GET_ITEM(signatures, k);
        if (!PyBytes_Check(signature)) {
            PyErr_SetString(PyExc_TypeError, "joined_traits: a signature is not bytes");
            goto done;
        }
        starts[k] = PyBytes_AS_STRING(signature);
        needs[k] = PyBytes_GET_SIZE(signature);
        if (needs[k] == 0) {
            PyErr_SetString(PyExc_ValueError, "joined_traits: a signature is empty");
            goto done;
        }
    }
    if (held_arg != Py_None) {
        if (PyObject_GetBuffer(held_arg, &held, PyBUF_SIMPLE) < 0
            || PyObject_GetBuffer(kept_arg, &kept, PyBUF_SIMPLE) < 0
            || PyObject_GetBuffer(kept_ends_arg, &kept_ends, PyBUF_SIMPLE) < 0) {
            goto done;
        }
        while (((Py_ssize_t)2 << bits) < held.len) {
            bits++;
        }
        nkept = kept_ends.len / (Py_ssize_t)sizeof(int64_t);
        if (held.len < 4 || ((Py_ssize_t)2 << bits) != held.len
            || kept_ends.len % (Py_ssize_t)sizeof(int64_t) != 0
            || tfr_joined_ends((const int64_t *)kept_ends.buf, nkept, kept.len) < 0) {
            PyErr_SetString(PyExc_ValueError,
                            "joined_traits: held must be 2**bits int16 (bits > 0) and kept_ends "
                            "the ends of the kept values");
            goto done;
        }
    }
    Py_ssize_t n;
    if (tfr_joined_sizes(&blob, &sizes, &n) < 0) {
        goto done;
    }
    const int64_t *size = (const int64_t *)sizes.buf;
    const uint8_t *data = (const uint8_t *)blob.buf;
    int nul = memchr(data, 0, (size_t)blob.len) != NULL;
    picked = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    counted = PyBytes_FromStringAndSize(NULL, nkept * (Py_ssize_t)sizeof(int64_t));
    if (picked == NULL || counted == NULL) {
        goto done;
    }
    int64_t *out = (int64_t *)PyBytes_AS_STRING(picked);
    int64_t *tally = (int64_t *)PyBytes_AS_STRING(counted);
    memset(tally, 0, (size_t)nkept * sizeof(int64_t));
    Py_ssize_t npicked = 0;
    const int16_t *table = (const int16_t *)held.buf;
    const uint8_t *kept_data = (const uint8_t *)kept.buf;
    const int64_t *ends = (const int64_t *)kept_ends.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint8_t *value = data;
        int64_t length = size[i];
        data += length;
        for (Py_ssize_t k = 0; k < nsignatures; k++) {
            /* (a signature is at least one byte: its first is compared before the call) */
            if (length >= needs[k] && value[0] == (uint8_t)starts[k][0]
                && memcmp(value, starts[k], (size_t)needs[k]) == 0) {
                counts[k]++;
            }
        }
        if (length > short_size) {
            continue;
        }
        if (table == NULL) {
            out[npicked++] = (int64_t)i;
            continue;
        }
        int16_t entry = table[probe(value, length, bits)];
        if (entry < -1 || entry > nkept) {
            PyErr_SetString(PyExc_ValueError, "joined_traits: held names no kept value");
            goto done;
        }
        if (entry > 0) { /* only kept value entry - 1 has this probe: it, or no kept value */
            int64_t start = entry > 1 ? ends[entry - 2] : 0;
            if (ends[entry - 1] - start == length
                && memcmp(kept_data + start, value, (size_t)length) == 0) {
                tally[entry - 1]++;
            }
        }
        else if (entry < 0) {
            out[npicked++] = (int64_t)i;
        }
    }
    if (_PyBytes_Resize(&picked, npicked * (Py_ssize_t)sizeof(int64_t)) < 0) {
        goto done;
    }
    images = PyTuple_New(nsignatures);
    for (Py_ssize_t k = 0; images != NULL && k < nsignatures; k++) {
        PyObject *count = PyLong_FromSsize_t(counts[k]);
        if (count == NULL) {
            Py_CLEAR(images);
            break;
        }
        PyTuple_SET_ITEM(images, k, count);
    }
    if (images != NULL) {
        result = Py_BuildValue("(OOOO)", nul ? Py_True : Py_False, images, picked, counted);
    }
done:
    Py_XDECREF(images);
    Py_XDECREF(picked);
    Py_XDECREF(counted);
    if (held.obj != NULL) {
        PyBuffer_Release(&held);
    }
    if (kept.obj != NULL) {
        PyBuffer_Release(&kept);
    }
    if (kept_ends.obj != NULL) {
        PyBuffer_Release(&kept_ends);
    }
    PyBuffer_Release(&blob);
    PyBuffer_Release(&sizes);
    return result;
}

PyMethodDef tfr_joined_methods[] = {
    {"joined_traits", joined_traits, METH_VARARGS, joined_traits_doc},
    {NULL, NULL, 0, NULL},
};
