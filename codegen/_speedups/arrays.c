/*
 * adjacent_arrays: whether a list of C-contiguous arrays lie one after the other in one buffer (as decode_batch
 * gives a raw tensor's arrays of different shapes: views of the batch's buffer), so that Arrow can take that
 * buffer instead of a joined copy; with their shapes. Every array must have the given buffer format (its dtype), so
 * that the joined bytes are values of that dtype. Gives the offsets of each array's values too (Arrow's list
 * offsets), which numpy would take longer to sum from the shapes than this takes to check the whole run.
 */
#include "speedups.h"

#include <string.h>

static PyObject *
adjacent_arrays(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *items, *owner;
    int rank;
    const char *format;
    if (!PyArg_ParseTuple(args, "O!Ois:adjacent_arrays", &PyList_Type, &items, &owner, &rank, &format)) {
        return NULL;
    }
    if (rank < 0 || rank > 64) {
        PyErr_SetString(PyExc_ValueError, "adjacent_arrays: rank out of range");
        return NULL;
    }
    Py_buffer whole;
    if (PyObject_GetBuffer(owner, &whole, PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Py_ssize_t count = PyList_GET_SIZE(items);
    PyObject *shapes = PyBytes_FromStringAndSize(NULL, 8 * rank * count);
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, 8 * (count + 1));
    if (shapes == NULL || offsets == NULL) {
        Py_XDECREF(shapes);
        Py_XDECREF(offsets);
        PyBuffer_Release(&whole);
        return NULL;
    }
    int64_t *dims = (int64_t *)PyBytes_AS_STRING(shapes);
    char *ends = PyBytes_AS_STRING(offsets);
    int64_t at = 0;
    memcpy(ends, &at, 8);
    const char *start = NULL, *next = NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_buffer view;
        if (PyObject_GetBuffer(PyList_GET_ITEM(items, i), &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            PyErr_Clear();
            goto unfit;
        }
        /* an empty array may point anywhere (numpy gives empty views their base's start) */
        int fits = view.ndim == rank && strcmp(view.format != NULL ? view.format : "B", format) == 0
                   && (view.len == 0 || start == NULL || (const char *)view.buf == next);
        if (fits) {
            if (view.len && start == NULL) {
                start = next = (const char *)view.buf;
            }
            next += view.len;
            at += view.itemsize ? (int64_t)(view.len / view.itemsize) : 0;
            memcpy(ends + 8 * (i + 1), &at, 8);
            for (int d = 0; d < rank; d++) {
                dims[(Py_ssize_t)rank * i + d] = (int64_t)view.shape[d];
            }
        }
        PyBuffer_Release(&view);
        if (!fits) {
            goto unfit;
        }
    }
    const char *base = (const char *)whole.buf;
    if (start == NULL) {
        start = next = base; /* nothing but empty arrays */
    }
    if (count == 0 || start < base || next > base + whole.len) {
        goto unfit;
    }
    PyBuffer_Release(&whole);
    return Py_BuildValue("(nnNN)", (Py_ssize_t)(start - base), (Py_ssize_t)(next - start), shapes, offsets);
unfit:
    PyBuffer_Release(&whole);
    Py_DECREF(shapes);
    Py_DECREF(offsets);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(adjacent_arrays_doc,
"adjacent_arrays(arrays, owner, rank, format) -> (offset, size, shapes, offsets) | None\n\n"
"Where the C-contiguous ``arrays`` (each of ``rank`` dimensions, of buffer ``format``) lie in ``owner``'s buffer when\n"
"each starts where the one before ends: the byte offset of the first, the bytes of all, their\n"
"shapes and the ``count + 1`` offsets of their values as native int64; ``None`` otherwise\n"
"(see codegen/_speedups/arrays.c).");

PyMethodDef tfr_arrays_methods[] = {
    {"adjacent_arrays", adjacent_arrays, METH_VARARGS, adjacent_arrays_doc},
    {NULL, NULL, 0, NULL},
};
