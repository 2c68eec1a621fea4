/* OpenSSL's streaming AES-GCM context as an engine AEAD stream, opened without a Python frame:
 * the compiled twin of cryptoffload.engines.software.py_gcm_stream and its two stream classes
 * (software.py documents the contract; the tests run both).
 *
 * open_stream(op) reads the op, takes the key's AES object from the software engine's kept
 * objects, copies the template GCM mode's attributes into a new mode with the op's nonce, and
 * asks `cryptography`'s compiled create_encryption_ctx / create_decryption_ctx for the context,
 * as the Python does. Anything else (a key or nonce not bytes, an algorithm this stream does not
 * do, a key with no AES object kept yet) goes to the Python function configure() was given,
 * which decides it the slow way.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* What configure() was given (software.py: the slow path, cryptography's GCM class, the
 * template mode's fields but the nonce, the kept objects' peek and the maker they are keyed by,
 * the two context makers, and the algorithm names taken). */
static PyObject *slow_open = NULL, *gcm_class = NULL, *mode_fields = NULL, *peek = NULL;
static PyObject *keyed_maker = NULL, *make_encryption = NULL, *make_decryption = NULL;
static PyObject *algorithms_taken = NULL, *empty_tuple = NULL;
static PyObject *str_alg, *str_key, *str_iv, *str_kind, *str_encrypt, *str_update,
    *str_authenticate_additional_data, *str_finalize, *str_finalize_with_tag, *str_tag,
    *str_initialization_vector, *empty_bytes;

typedef struct {
    PyObject_HEAD
    PyObject *ctx;        /* _ctx: OpenSSL's context (cryptography's) */
    PyObject *update;     /* the context's update, bound */
    PyObject *update_aad; /* the context's authenticate_additional_data, bound */
    char encrypt;
} GcmStream;

static int
gcmstream_traverse(GcmStream *self, visitproc visit, void *arg)
{
    Py_VISIT(self->ctx);
    Py_VISIT(self->update);
    Py_VISIT(self->update_aad);
    return 0;
}

static int
gcmstream_clear(GcmStream *self)
{
    Py_CLEAR(self->ctx);
    Py_CLEAR(self->update);
    Py_CLEAR(self->update_aad);
    return 0;
}

static void
gcmstream_dealloc(GcmStream *self)
{
    PyObject_GC_UnTrack(self);
    gcmstream_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* finalize(tag=None): an encryption's tag, or a decryption's last output (the tag checked). */
static PyObject *
gcmstream_finalize(GcmStream *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t given = nargs + (kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0);
    if (given > 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) == 1
                      && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "tag") != 0)) {
        PyErr_SetString(PyExc_TypeError, "finalize() takes one optional argument: tag");
        return NULL;
    }
    PyObject *ctx = Py_NewRef(self->ctx != NULL ? self->ctx : Py_None), *out = NULL;
    if (self->encrypt) {
        PyObject *rest = PyObject_CallMethodNoArgs(ctx, str_finalize);
        if (rest != NULL) {
            Py_DECREF(rest);
            out = PyObject_GetAttr(ctx, str_tag);
        }
    }
    else {
        /* bytes(tag or b"") */
        PyObject *tag = given ? args[0] : Py_None;
        int truth = PyObject_IsTrue(tag);
        PyObject *bytes = truth < 0 ? NULL : truth ? PyObject_Bytes(tag) : Py_NewRef(empty_bytes);
        if (bytes != NULL) {
            out = PyObject_CallMethodOneArg(ctx, str_finalize_with_tag, bytes);
            Py_DECREF(bytes);
        }
    }
    Py_DECREF(ctx);
    return out;
}

static PyObject *
gcmstream_close(GcmStream *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *ctx = self->ctx, *update = self->update, *update_aad = self->update_aad;
    self->ctx = Py_NewRef(Py_None);
    self->update = Py_NewRef(Py_None);
    self->update_aad = Py_NewRef(Py_None);
    Py_XDECREF(ctx);
    Py_XDECREF(update);
    Py_XDECREF(update_aad);
    Py_RETURN_NONE;
}

static PyMethodDef gcmstream_methods[] = {
    {"finalize", (PyCFunction)(void (*)(void))gcmstream_finalize, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("finalize(tag=None) -> an encryption's tag, or a decryption's last output")},
    {"close", (PyCFunction)gcmstream_close, METH_NOARGS,
     PyDoc_STR("close() -> None: the context let go")},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef gcmstream_members[] = {
    {"_ctx", T_OBJECT, offsetof(GcmStream, ctx), 0, "OpenSSL's GCM context."},
    {"update", T_OBJECT, offsetof(GcmStream, update), 0, "update(data) -> output (bound)."},
    {"update_aad", T_OBJECT, offsetof(GcmStream, update_aad), 0,
     "update_aad(data) -> None (bound)."},
    {"encrypt", T_BOOL, offsetof(GcmStream, encrypt), READONLY,
     "Whether finalize() gives the tag (else it checks one)."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject GcmStreamType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cryptoffload.engines._gcmstream.GcmStream",
    .tp_basicsize = sizeof(GcmStream),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("OpenSSL's GCM context with the engine AEAD stream's members (compiled)."),
    .tp_traverse = (traverseproc)gcmstream_traverse,
    .tp_clear = (inquiry)gcmstream_clear,
    .tp_dealloc = (destructor)gcmstream_dealloc,
    .tp_methods = gcmstream_methods,
    .tp_members = gcmstream_members,
};

/* A new GCM mode: iv, then the template's other fields, set in the order its __init__ sets
 * them (so the instance shares its class's attribute layout, which the iv property's reads are
 * specialized for) with none of its checks (the provider validated the nonce). NULL with an
 * error. */
static PyObject *
new_mode(PyObject *iv)
{
    PyObject *mode = PyBaseObject_Type.tp_new((PyTypeObject *)gcm_class, empty_tuple, NULL);
    if (mode == NULL)
        return NULL;
    if (PyObject_SetAttr(mode, str_initialization_vector, iv) < 0) {
        Py_DECREF(mode);
        return NULL;
    }
    PyObject *name, *value;
    Py_ssize_t at = 0;
    while (PyDict_Next(mode_fields, &at, &name, &value))
        if (PyObject_SetAttr(mode, name, value) < 0) {
            Py_DECREF(mode);
            return NULL;
        }
    return mode;
}

/* The stream of ctx (a new reference), or NULL with an error. */
static PyObject *
new_stream(PyObject *ctx, int encrypt)
{
    GcmStream *stream = PyObject_GC_New(GcmStream, &GcmStreamType);
    if (stream == NULL)
        return NULL;
    stream->ctx = Py_NewRef(ctx);
    stream->encrypt = (char)encrypt;
    stream->update = PyObject_GetAttr(ctx, str_update);
    stream->update_aad = stream->update == NULL
                             ? NULL
                             : PyObject_GetAttr(ctx, str_authenticate_additional_data);
    PyObject_GC_Track(stream);
    if (stream->update_aad == NULL) {
        Py_DECREF(stream);
        return NULL;
    }
    return (PyObject *)stream;
}

static PyObject *
open_stream(PyObject *module, PyObject *op)
{
    if (slow_open == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "cryptoffload.engines._gcmstream is not configured");
        return NULL;
    }
    PyObject *alg = NULL, *key = NULL, *iv = NULL, *kind = NULL, *slot = NULL, *mode = NULL;
    PyObject *ctx = NULL, *out = NULL;
    if ((alg = PyObject_GetAttr(op, str_alg)) == NULL || (key = PyObject_GetAttr(op, str_key)) == NULL
        || (iv = PyObject_GetAttr(op, str_iv)) == NULL
        || (kind = PyObject_GetAttr(op, str_kind)) == NULL)
        goto slow;
    if (!PyBytes_CheckExact(key) || !PyBytes_CheckExact(iv) || !PyUnicode_CheckExact(alg)
        || !PyUnicode_CheckExact(kind))
        goto slow;
    int taken = PySet_Contains(algorithms_taken, alg);
    if (taken <= 0)
        goto slow;
    int encrypt = PyUnicode_Compare(kind, str_encrypt);
    if (encrypt == -1 && PyErr_Occurred())
        goto slow;
    encrypt = encrypt == 0;
    if ((slot = PyTuple_Pack(3, keyed_maker, key, alg)) == NULL)
        goto slow;
    PyObject *algorithm = PyObject_CallOneArg(peek, slot);
    if (algorithm == NULL)
        goto slow;
    if (algorithm == Py_None) {
        Py_DECREF(algorithm);
        goto slow; /* none kept yet: the slow path makes and keeps it */
    }
    if ((mode = new_mode(iv)) != NULL) {
        ctx = PyObject_CallFunctionObjArgs(encrypt ? make_encryption : make_decryption, algorithm,
                                           mode, NULL);
        if (ctx != NULL)
            out = new_stream(ctx, encrypt);
    }
    Py_DECREF(algorithm);
    goto done;
slow:
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            goto done;
        PyErr_Clear();
    }
    out = PyObject_CallOneArg(slow_open, op);
done:
    Py_XDECREF(ctx);
    Py_XDECREF(mode);
    Py_XDECREF(slot);
    Py_XDECREF(kind);
    Py_XDECREF(iv);
    Py_XDECREF(key);
    Py_XDECREF(alg);
    return out;
}

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *new[8];
    if (!PyArg_UnpackTuple(args, "configure", 8, 8, &new[0], &new[1], &new[2], &new[3], &new[4],
                           &new[5], &new[6], &new[7]))
        return NULL;
    if (!PyType_Check(new[1]) || !PyDict_CheckExact(new[2]) || !PyCallable_Check(new[3])
        || !PyAnySet_CheckExact(new[7])) {
        PyErr_SetString(PyExc_TypeError,
                        "configure(slow_open, gcm_class, fields: dict, peek, keyed_maker, "
                        "make_encryption, make_decryption, algorithms: frozenset)");
        return NULL;
    }
    PyObject **slots[8] = {&slow_open,       &gcm_class,       &mode_fields,
                           &peek,            &keyed_maker,     &make_encryption,
                           &make_decryption, &algorithms_taken};
    for (int i = 0; i < 8; i++)
        Py_XSETREF(*slots[i], Py_NewRef(new[i]));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"open_stream", open_stream, METH_O,
     PyDoc_STR("open_stream(op) -> the engine AEAD stream of an AES-GCM AeadOp")},
    {"configure", configure, METH_VARARGS,
     PyDoc_STR("configure(slow_open, gcm_class, fields, peek, keyed_maker, make_encryption, "
               "make_decryption, algorithms) -> None")},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cryptoffload.engines._gcmstream",
    .m_doc = "OpenSSL's streaming AES-GCM context as an engine AEAD stream (compiled).",
    .m_size = -1,
    .m_methods = module_methods,
};

#define INTERN(var, text)                                                                        \
    if ((var = PyUnicode_InternFromString(text)) == NULL)                                        \
        return NULL;

PyMODINIT_FUNC
PyInit__gcmstream(void)
{
    INTERN(str_alg, "alg");
    INTERN(str_key, "key");
    INTERN(str_iv, "iv");
    INTERN(str_kind, "kind");
    INTERN(str_encrypt, "encrypt");
    INTERN(str_update, "update");
    INTERN(str_authenticate_additional_data, "authenticate_additional_data");
    INTERN(str_finalize, "finalize");
    INTERN(str_finalize_with_tag, "finalize_with_tag");
    INTERN(str_tag, "tag");
    INTERN(str_initialization_vector, "_initialization_vector");
    if ((empty_bytes = PyBytes_FromStringAndSize(NULL, 0)) == NULL
        || (empty_tuple = PyTuple_New(0)) == NULL || PyType_Ready(&GcmStreamType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    Py_INCREF(&GcmStreamType);
    if (PyModule_AddObject(module, "GcmStream", (PyObject *)&GcmStreamType) < 0) {
        Py_DECREF(&GcmStreamType);
        Py_DECREF(module);
        return NULL;
    }
    /* What software.py expects (its GCM_STREAM_API): a build left from older sources is not used. */
    if (PyModule_AddIntConstant(module, "API", 1) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
