/*
 * Spans: a sequence of records that are stretches of buffers, without an object per record.
 *
 * scan_spans (frames.c) makes one of the frames of a TFRecord reader's buffer; join_spans puts
 * several together (a batch whose records come from more than one buffer) and a slice takes part of
 * one; scan_batch reads the records straight from their buffers. Anything else sees a sequence of
 * bytes: an item is a copy of its stretch, made when it is asked for. A Spans holds a memoryview of
 * each buffer its records lie in, so the memory stays there, unchanged in size, while it lives.
 */
#include "speedups.h"

static PyTypeObject SpansType;

/* A Spans of ``n`` records (their stretches unset) kept by the memoryviews in ``owners`` (a
 * tuple, a new reference taken). */
static TfrSpans *
spans_alloc(PyObject *owners, Py_ssize_t n)
{
    TfrSpans *spans = PyObject_New(TfrSpans, &SpansType);
    if (spans == NULL) {
        return NULL;
    }
    spans->n = n;
    spans->data = PyMem_Malloc(((size_t)n + 1) * sizeof(*spans->data));
    spans->sizes = PyMem_Malloc(((size_t)n + 1) * sizeof(*spans->sizes));
    Py_INCREF(owners);
    spans->owners = owners;
    if (spans->data == NULL || spans->sizes == NULL) {
        Py_DECREF(spans);
        return (TfrSpans *)PyErr_NoMemory();
    }
    return spans;
}

TfrSpans *
tfr_spans_new(PyObject *buffer, Py_ssize_t n)
{
    PyObject *view = PyMemoryView_FromObject(buffer);
    if (view == NULL) {
        return NULL;
    }
    PyObject *owners = PyTuple_Pack(1, view);
    Py_DECREF(view);
    if (owners == NULL) {
        return NULL;
    }
    TfrSpans *spans = spans_alloc(owners, n);
    Py_DECREF(owners);
    return spans;
}

int
tfr_spans_check(PyObject *object)
{
    return Py_IS_TYPE(object, &SpansType);
}

static void
spans_dealloc(TfrSpans *self)
{
    PyMem_Free(self->data);
    PyMem_Free(self->sizes);
    Py_XDECREF(self->owners);
    PyObject_Free(self);
}

static Py_ssize_t
spans_length(TfrSpans *self)
{
    return self->n;
}

static PyObject *
spans_item(TfrSpans *self, Py_ssize_t i)
{
    if (i < 0 || i >= self->n) {
        PyErr_SetString(PyExc_IndexError, "Spans index out of range");
        return NULL;
    }
    return PyBytes_FromStringAndSize((const char *)self->data[i], self->sizes[i]);
}

static PyObject *
spans_subscript(TfrSpans *self, PyObject *key)
{
    if (!PySlice_Check(key)) {
        Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
        if (i == -1 && PyErr_Occurred()) {
            return NULL;
        }
        return spans_item(self, i < 0 ? i + self->n : i);
    }
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(key, &start, &stop, &step) < 0) {
        return NULL;
    }
    Py_ssize_t n = PySlice_AdjustIndices(self->n, &start, &stop, step);
    TfrSpans *out = spans_alloc(self->owners, n);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t j = 0, i = start; j < n; j++, i += step) {
        out->data[j] = self->data[i];
        out->sizes[j] = self->sizes[i];
    }
    return (PyObject *)out;
}

static PyObject *
spans_nbytes(TfrSpans *self, void *closure)
{
    (void)closure;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < self->n; i++) {
        total += self->sizes[i];
    }
    return PyLong_FromSsize_t(total);
}

static PySequenceMethods spans_as_sequence = {
    .sq_length = (lenfunc)spans_length,
    .sq_item = (ssizeargfunc)spans_item,
};

static PyMappingMethods spans_as_mapping = {
    .mp_length = (lenfunc)spans_length,
    .mp_subscript = (binaryfunc)spans_subscript,
};

static PyGetSetDef spans_getset[] = {
    {"nbytes", (getter)spans_nbytes, NULL, "The bytes of all the records together.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(spans_doc,
"Records that are stretches of buffers: a sequence of bytes (an item is a copy of its stretch,\n"
"made when asked for; a slice is a Spans) that scan_batch reads in place. Made by scan_spans\n"
"and join_spans.");

static PyTypeObject SpansType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "codegen._speedups.Spans",
    .tp_basicsize = sizeof(TfrSpans),
    .tp_dealloc = (destructor)spans_dealloc,
    .tp_as_sequence = &spans_as_sequence,
    .tp_as_mapping = &spans_as_mapping,
    .tp_getset = spans_getset,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_SEQUENCE,
    .tp_doc = spans_doc,
    .tp_hash = PyObject_HashNotImplemented,
};

/* --- join_spans ------------------------------------------------------------------------------ */

static PyObject *
join_spans(PyObject *module, PyObject *arg)
{
    (void)module;
    PyObject *parts = PySequence_Fast(arg, "join_spans: expected a sequence of Spans");
    if (parts == NULL) {
        return NULL;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(parts), n = 0, owned = 0;
    PyObject **items = PySequence_Fast_ITEMS(parts);
    for (Py_ssize_t k = 0; k < count; k++) {
        if (!Py_IS_TYPE(items[k], &SpansType)) {
            PyErr_Format(PyExc_TypeError, "join_spans: expected Spans, got %.100s",
                         Py_TYPE(items[k])->tp_name);
            Py_DECREF(parts);
            return NULL;
        }
        n += ((TfrSpans *)items[k])->n;
        owned += PyTuple_GET_SIZE(((TfrSpans *)items[k])->owners);
    }
    /* The owners of all parts, each once where parts that follow each other share one. */
    PyObject *owners = PyTuple_New(owned);
    TfrSpans *out = NULL;
    if (owners == NULL) {
        goto done;
    }
    Py_ssize_t kept = 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *mine = ((TfrSpans *)items[k])->owners;
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(mine); j++) {
            PyObject *owner = PyTuple_GET_ITEM(mine, j);
            if (kept > 0 && PyTuple_GET_ITEM(owners, kept - 1) == owner) {
                continue;
            }
            Py_INCREF(owner);
            PyTuple_SET_ITEM(owners, kept++, owner);
        }
    }
    if (kept < owned && _PyTuple_Resize(&owners, kept) < 0) {
        goto done;
    }
    out = spans_alloc(owners, n);
    if (out == NULL) {
        goto done;
    }
    Py_ssize_t at = 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        TfrSpans *part = (TfrSpans *)items[k];
        if (part->n > 0) {
            memcpy(out->data + at, part->data, (size_t)part->n * sizeof(*out->data));
            memcpy(out->sizes + at, part->sizes, (size_t)part->n * sizeof(*out->sizes));
        }
        at += part->n;
    }
done:
    Py_XDECREF(owners);
    Py_DECREF(parts);
    return (PyObject *)out;
}

PyDoc_STRVAR(join_spans_doc,
"join_spans(parts, /) -> Spans\n\n"
"The records of the Spans ``parts``, one after another, in one Spans.");

PyMethodDef tfr_spans_methods[] = {
    {"join_spans", join_spans, METH_O, join_spans_doc},
    {NULL, NULL, 0, NULL},
};

int
tfr_add_spans_type(PyObject *module)
{
    if (PyType_Ready(&SpansType) < 0) {
        return -1;
    }
    return PyModule_AddObjectRef(module, "Spans", (PyObject *)&SpansType);
}
