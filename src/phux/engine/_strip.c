/* The engine's strip in one pass (ARCHITECTURE.md, "Keeping up with floods"):
 * the text of a coloured flood without its SGR, EL and ECH sequences and bells,
 * for the bulk path (phux.engine._bulk) and wait's line scan
 * (phux.client.line_scan, SGRs only).
 *
 * Pure Python needs a pass over the bytes per distinct sequence once the text
 * holds digits (a digit of the text and a parameter of an SGR look alike to
 * every context-free operation); this reads them once. It is optional: built
 * where a compiler is, else each user's pure path, which is also the oracle of
 * the property tests that hold the two equal (tests/engine/test_bulk.py,
 * tests/client/test_line_scan.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define ESC 0x1b
#define BEL 0x07

/* A CSI's parameter bytes: the digits, ":" and ";" (0x30-0x3b). */
static inline int
is_param(unsigned char c)
{
    return c >= '0' && c <= ';';
}

/* ESC "[" parameters and a final of `finals` ("m", "K" or "X" if not given)
 * from each ESC of `data`, and every BEL, deleted; None if an ESC starts
 * anything else (or is cut short). */
static PyObject *
strip(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    const char *finals = "mKX";
    Py_ssize_t nfinals = 3;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "strip(data, finals=b'mKX')");
        return NULL;
    }
    if (nargs == 2) {
        if (!PyBytes_Check(args[1])) {
            PyErr_SetString(PyExc_TypeError, "finals must be bytes");
            return NULL;
        }
        finals = PyBytes_AS_STRING(args[1]);
        nfinals = PyBytes_GET_SIZE(args[1]);
    }
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    const unsigned char *p = view.buf;
    const unsigned char *end = p + view.len;
    PyObject *out = PyBytes_FromStringAndSize(NULL, view.len);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    unsigned char *start = (unsigned char *)PyBytes_AS_STRING(out);
    unsigned char *q = start;
    while (p < end) {
        const unsigned char *esc = memchr(p, ESC, (size_t)(end - p));
        if (esc == NULL) {
            esc = end;
        }
        memcpy(q, p, (size_t)(esc - p));
        q += esc - p;
        if (esc == end) {
            break;
        }
        const unsigned char *s = esc + 1;
        if (s == end || *s != '[') {
            goto refuse;
        }
        for (s++; s < end && is_param(*s); s++) {
        }
        if (s == end || memchr(finals, *s, (size_t)nfinals) == NULL) {
            goto refuse;
        }
        p = s + 1;
    }
    PyBuffer_Release(&view);
    /* Bells are rare: taken out of what is left, in place, only if there are any. */
    unsigned char *bel = memchr(start, BEL, (size_t)(q - start));
    if (bel != NULL) {
        unsigned char *w = bel;
        for (const unsigned char *r = bel; r < q; r++) {
            if (*r != BEL) {
                *w++ = *r;
            }
        }
        q = w;
    }
    if (_PyBytes_Resize(&out, q - start) < 0) {
        return NULL;
    }
    return out;

refuse:
    PyBuffer_Release(&view);
    Py_DECREF(out);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"strip", (PyCFunction)(void (*)(void))strip, METH_FASTCALL,
     "strip(data, finals=b'mKX') -> bytes | None: data without its bells and its "
     "CSIs of parameter bytes only ending in one of finals (SGR, EL and ECH); "
     "None if an ESC in it starts anything else."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "phux.engine._strip",
    "The engine's strip of escape sequences in one pass (see phux.engine.native_strip).",
    -1,
    methods,
};

PyMODINIT_FUNC
PyInit__strip(void)
{
    return PyModule_Create(&module);
}
