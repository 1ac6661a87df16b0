/*
 * adjacent_arrays: whether a list of C-contiguous arrays lie one after the other in one buffer (as decode_batch
 * gives a raw tensor's arrays of different shapes: views of the batch's buffer), so that Arrow can take that
 * buffer instead of a joined copy; with their shapes.
 */
#include "speedups.h"

#include <string.h>

static PyObject *
adjacent_arrays(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *items, *owner;
    int rank;
    if (!PyArg_ParseTuple(args, "O!Oi:adjacent_arrays", &PyList_Type, &items, &owner, &rank)) {
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
    if (shapes == NULL) {
        PyBuffer_Release(&whole);
        return NULL;
    }
    int64_t *dims = (int64_t *)PyBytes_AS_STRING(shapes);
    const char *start = NULL, *next = NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_buffer view;
        if (PyObject_GetBuffer(PyList_GET_ITEM(items, i), &view, PyBUF_C_CONTIGUOUS) < 0) {
            PyErr_Clear();
            goto unfit;
        }
        /* an empty array may point anywhere (numpy gives empty views their base's start) */
        int fits = view.ndim == rank && (view.len == 0 || start == NULL || (const char *)view.buf == next);
        if (fits) {
            if (view.len && start == NULL) {
                start = next = (const char *)view.buf;
            }
            next += view.len;
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
    return Py_BuildValue("(nnN)", (Py_ssize_t)(start - base), (Py_ssize_t)(next - start), shapes);
unfit:
    PyBuffer_Release(&whole);
    Py_DECREF(shapes);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(adjacent_arrays_doc,
"adjacent_arrays(arrays, owner, rank) -> (offset, size, shapes) | None\n\n"
"Where the C-contiguous ``arrays`` (each of ``rank`` dimensions) lie in ``owner``'s buffer when\n"
"each starts where the one before ends: the byte offset of the first, the bytes of all, and\n"
"their shapes as native int64; ``None`` otherwise (see codegen/_speedups/arrays.c).");

PyMethodDef tfr_arrays_methods[] = {
    {"adjacent_arrays", adjacent_arrays, METH_VARARGS, adjacent_arrays_doc},
    {NULL, NULL, 0, NULL},
};
