/*
 * export_arrow: a tree of Arrow arrays described by Python objects as one ArrowArray of the Arrow C data interface
 * (https://arrow.apache.org/docs/format/CDataInterface.html), for pyarrow to import in one call.
 *
 * A node is a tuple (length, null_count, buffers, children): ``buffers`` a tuple of objects with the buffer protocol
 * (or None for an absent buffer, such as a validity bitmap of a column without nulls), ``children`` a tuple of nodes.
 * The ArrowArray points into those buffers without copying them and holds a view of each (so a reference to its
 * object) until it is released: by pyarrow, from whichever thread frees the last Arrow buffer, with or without the
 * GIL (the release takes it). The caller describes valid arrays of the type it imports them as: lengths, buffer sizes
 * and offsets are trusted here, as Arrow's own import trusts them.
 */
#include "speedups.h"

#include <string.h>

struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};

#define MAX_DEPTH 64

typedef struct {
    Py_ssize_t nviews;
    Py_buffer *views; /* one per buffer; .obj is NULL for an absent buffer */
    const void **pointers;
    struct ArrowArray **children;
} Exported;

static void
release_array(struct ArrowArray *array)
{
    if (array->release == NULL) {
        return;
    }
    Exported *exported = array->private_data;
    for (int64_t i = 0; i < array->n_children; i++) {
        struct ArrowArray *child = exported->children[i];
        if (child->release != NULL) {
            child->release(child);
        }
        PyMem_RawFree(child);
    }
    if (exported->nviews && !_Py_IsFinalizing()) { /* at exit the objects are left to the interpreter */
        PyGILState_STATE state = PyGILState_Ensure();
        for (Py_ssize_t i = 0; i < exported->nviews; i++) {
            if (exported->views[i].obj != NULL) {
                PyBuffer_Release(&exported->views[i]);
            }
        }
        PyGILState_Release(state);
    }
    PyMem_RawFree(exported->views);
    PyMem_RawFree(exported->pointers);
    PyMem_RawFree(exported->children);
    PyMem_RawFree(exported);
    array->release = NULL;
}

/* Fill ``out`` from ``node`` (0), or set an error and leave ``out`` released (-1). */
static int
fill(PyObject *node, struct ArrowArray *out, int depth)
{
    memset(out, 0, sizeof(*out));
    if (depth > MAX_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "export_arrow: nodes nested too deep");
        return -1;
    }
    if (!PyTuple_Check(node) || PyTuple_GET_SIZE(node) != 4) {
        PyErr_SetString(PyExc_TypeError, "export_arrow: a node is a tuple (length, null_count, buffers, children)");
        return -1;
    }
    long long length = PyLong_AsLongLong(PyTuple_GET_ITEM(node, 0));
    long long nulls = length < 0 ? -1 : PyLong_AsLongLong(PyTuple_GET_ITEM(node, 1));
    if (PyErr_Occurred()) {
        return -1;
    }
    PyObject *buffers = PyTuple_GET_ITEM(node, 2), *children = PyTuple_GET_ITEM(node, 3);
    if (length < 0 || nulls < -1 || nulls > length || !PyTuple_Check(buffers) || !PyTuple_Check(children)) {
        PyErr_SetString(PyExc_ValueError, "export_arrow: a node's length, null count, buffers or children are invalid");
        return -1;
    }
    Py_ssize_t nbuffers = PyTuple_GET_SIZE(buffers), nchildren = PyTuple_GET_SIZE(children);
    Exported *exported = PyMem_RawCalloc(1, sizeof(Exported));
    if (exported == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    out->length = length;
    out->null_count = nulls;
    out->release = release_array;
    out->private_data = exported;
    exported->views = PyMem_RawCalloc((size_t)nbuffers + 1, sizeof(Py_buffer));
    exported->pointers = PyMem_RawCalloc((size_t)nbuffers + 1, sizeof(void *));
    exported->children = PyMem_RawCalloc((size_t)nchildren + 1, sizeof(struct ArrowArray *));
    if (exported->views == NULL || exported->pointers == NULL || exported->children == NULL) {
        PyErr_NoMemory();
        release_array(out);
        return -1;
    }
    out->buffers = exported->pointers;
    out->children = exported->children;
    for (Py_ssize_t i = 0; i < nbuffers; i++) {
        PyObject *buffer = PyTuple_GET_ITEM(buffers, i);
        exported->nviews = i + 1;
        out->n_buffers = i + 1;
        if (buffer == Py_None) {
            continue;
        }
        if (PyObject_GetBuffer(buffer, &exported->views[i], PyBUF_C_CONTIGUOUS) < 0) {
            exported->views[i].obj = NULL;
            release_array(out);
            return -1;
        }
        exported->pointers[i] = exported->views[i].buf;
    }
    for (Py_ssize_t i = 0; i < nchildren; i++) {
        struct ArrowArray *child = PyMem_RawMalloc(sizeof(struct ArrowArray));
        if (child == NULL) {
            PyErr_NoMemory();
            release_array(out);
            return -1;
        }
        if (fill(PyTuple_GET_ITEM(children, i), child, depth + 1) < 0) {
            PyMem_RawFree(child);
            release_array(out);
            return -1;
        }
        exported->children[i] = child;
        out->n_children = i + 1;
    }
    return 0;
}

static const char CAPSULE_NAME[] = "arrow_array";

static void
capsule_release(PyObject *capsule)
{
    struct ArrowArray *array = PyCapsule_GetPointer(capsule, CAPSULE_NAME);
    if (array == NULL) {
        PyErr_Clear();
        return;
    }
    if (array->release != NULL) { /* not imported (an importer moves it out and marks it released) */
        array->release(array);
    }
    PyMem_RawFree(array);
}

static PyObject *
export_arrow(PyObject *module, PyObject *node)
{
    struct ArrowArray *array = PyMem_RawMalloc(sizeof(struct ArrowArray));
    if (array == NULL) {
        return PyErr_NoMemory();
    }
    if (fill(node, array, 0) < 0) {
        PyMem_RawFree(array);
        return NULL;
    }
    PyObject *capsule = PyCapsule_New(array, CAPSULE_NAME, capsule_release);
    if (capsule == NULL) {
        release_array(array);
        PyMem_RawFree(array);
        return NULL;
    }
    PyObject *result = Py_BuildValue("(NK)", capsule, (unsigned long long)(uintptr_t)array);
    return result;
}

PyDoc_STRVAR(export_arrow_doc,
"export_arrow(node) -> (capsule, address)\n\n"
"The Arrow C data interface ArrowArray of ``node``, a tuple (length, null_count, buffers, children) whose buffers\n"
"(objects with the buffer protocol, or None) are shared, not copied, and whose children are nodes: the capsule\n"
"(named \"arrow_array\") owns the struct, releasing it when dropped unless an importer moved it out first, and\n"
"``address`` is the struct's address for pyarrow's ``_import_from_c`` (see codegen/_speedups/export.c).");

PyMethodDef tfr_export_methods[] = {
    {"export_arrow", export_arrow, METH_O, export_arrow_doc},
    {NULL, NULL, 0, NULL},
};
