/* The software engine's OpenSSL contexts made without a Python frame: the compiled twin of
 * cryptoffload.engines.software's py_gcm_stream (with its two stream classes) and of the cipher
 * branch of SoftwareEngine.session (software.py documents both; the tests run both twins).
 *
 * open_stream(op) gives an AES-GCM AeadOp's engine stream; CipherSessions(slow)(op) gives an
 * AES ECB, CBC or CTR CipherOp's session (the context from its chaining value on). Each reads
 * the op, takes the key's AES object from the software engine's kept objects, makes the mode
 * by setting the attributes its __init__ sets (the provider validated key and IV: no checks
 * again), and asks `cryptography`'s compiled create_encryption_ctx / create_decryption_ctx for
 * the context, as the Python does. Anything else (a key or IV not bytes, an algorithm or family
 * this does not do, a key with no AES object kept yet) goes to the Python given, which decides
 * it the slow way.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* What configure() was given (software.py): the GCM stream's slow path, cryptography's GCM
 * class and the template mode's fields but the nonce, the algorithm names streamed, the kept
 * objects' peek and the maker they are keyed by, the two context makers, and the session
 * modes (our algorithm name -> (mode class or None for ECB, the attribute its IV goes in)). */
static PyObject *slow_stream = NULL, *gcm_class = NULL, *gcm_fields = NULL;
static PyObject *gcm_algorithms = NULL, *peek = NULL, *keyed_maker = NULL;
static PyObject *make_encryption = NULL, *make_decryption = NULL, *session_modes = NULL;
static PyObject *empty_tuple = NULL, *empty_bytes = NULL;
/* The GCM nonce lengths cryptography's GCM takes (software.py's _GCM_NONCE_MIN and _MAX), and
 * the AES block: CBC's IV and CTR's counter block. */
#define GCM_NONCE_MIN 8
#define GCM_NONCE_MAX 128
#define BLOCK 16
static PyObject *str_alg, *str_key, *str_iv, *str_kind, *str_family, *str_encrypt, *str_cipher,
    *str_update, *str_authenticate_additional_data, *str_finalize, *str_finalize_with_tag,
    *str_tag, *str_initialization_vector;

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
        /* bytes(tag or b""), as the pure twin: bytes' own call, whatever tag is */
        PyObject *tag = given ? args[0] : Py_None;
        int truth = PyObject_IsTrue(tag);
        PyObject *bytes = truth < 0  ? NULL
                          : truth    ? PyObject_CallOneArg((PyObject *)&PyBytes_Type, tag)
                                     : Py_NewRef(empty_bytes);
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
    {"_ctx", T_OBJECT_EX, offsetof(GcmStream, ctx), 0, "OpenSSL's GCM context."},
    {"update", T_OBJECT_EX, offsetof(GcmStream, update), 0, "update(data) -> output (bound)."},
    {"update_aad", T_OBJECT_EX, offsetof(GcmStream, update_aad), 0,
     "update_aad(data) -> None (bound)."},
    {"encrypt", T_BOOL, offsetof(GcmStream, encrypt), READONLY,
     "Whether finalize() gives the tag (else it checks one)."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject GcmStreamType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cryptoffload.engines._contexts.GcmStream",
    .tp_basicsize = sizeof(GcmStream),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = PyDoc_STR("OpenSSL's GCM context with the engine AEAD stream's members (compiled)."),
    .tp_traverse = (traverseproc)gcmstream_traverse,
    .tp_clear = (inquiry)gcmstream_clear,
    .tp_dealloc = (destructor)gcmstream_dealloc,
    .tp_methods = gcmstream_methods,
    .tp_members = gcmstream_members,
};

/* A new mode of class cls: iv in the attribute iv_name (none when it is NULL), then `fields`
 * (NULL: none), in the order its __init__ sets them (so the instance shares its class's
 * attribute layout, which the reads of its properties are specialized for), with none of its
 * checks. NULL with an error. */
static PyObject *
new_mode(PyObject *cls, PyObject *iv_name, PyObject *iv, PyObject *fields)
{
    PyObject *mode = PyBaseObject_Type.tp_new((PyTypeObject *)cls, empty_tuple, NULL);
    if (mode == NULL)
        return NULL;
    if (iv_name != NULL && PyObject_SetAttr(mode, iv_name, iv) < 0) {
        Py_DECREF(mode);
        return NULL;
    }
    PyObject *name, *value;
    Py_ssize_t at = 0;
    while (fields != NULL && PyDict_Next(fields, &at, &name, &value))
        if (PyObject_SetAttr(mode, name, value) < 0) {
            Py_DECREF(mode);
            return NULL;
        }
    return mode;
}

/* The kept AES object of key for alg (a new reference), NULL with no error when none is kept
 * yet, or NULL with an error. */
static PyObject *
kept_algorithm(PyObject *key, PyObject *alg)
{
    PyObject *slot = PyTuple_Pack(3, keyed_maker, key, alg);
    if (slot == NULL)
        return NULL;
    PyObject *algorithm = PyObject_CallOneArg(peek, slot);
    Py_DECREF(slot);
    if (algorithm == Py_None)
        Py_CLEAR(algorithm);
    return algorithm;
}

/* OpenSSL's context of algorithm and mode, for encryption (encrypt) or decryption. */
static PyObject *
make_context(PyObject *algorithm, PyObject *mode, int encrypt)
{
    PyObject *args[2] = {algorithm, mode};
    return PyObject_Vectorcall(encrypt ? make_encryption : make_decryption, args, 2, NULL);
}

/* Whether kind is "encrypt": 1, 0, or -1 (not a str). */
static int
is_encrypt(PyObject *kind)
{
    if (!PyUnicode_CheckExact(kind))
        return -1;
    return kind == str_encrypt || PyUnicode_Compare(kind, str_encrypt) == 0;
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
    if (slow_stream == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "cryptoffload.engines._contexts is not configured");
        return NULL;
    }
    PyObject *alg = NULL, *key = NULL, *iv = NULL, *kind = NULL, *algorithm = NULL;
    PyObject *mode = NULL, *ctx = NULL, *out = NULL;
    if ((alg = PyObject_GetAttr(op, str_alg)) == NULL || (key = PyObject_GetAttr(op, str_key)) == NULL
        || (iv = PyObject_GetAttr(op, str_iv)) == NULL
        || (kind = PyObject_GetAttr(op, str_kind)) == NULL)
        goto slow;
    int encrypt = is_encrypt(kind);
    if (encrypt < 0 || !PyBytes_CheckExact(key) || !PyBytes_CheckExact(iv)
        || PyBytes_GET_SIZE(iv) < GCM_NONCE_MIN || PyBytes_GET_SIZE(iv) > GCM_NONCE_MAX
        || !PyUnicode_CheckExact(alg) || PySet_Contains(gcm_algorithms, alg) != 1)
        goto slow;
    if ((algorithm = kept_algorithm(key, alg)) == NULL)
        goto slow; /* none kept yet: the slow path makes and keeps it */
    if ((mode = new_mode(gcm_class, str_initialization_vector, iv, gcm_fields)) != NULL
        && (ctx = make_context(algorithm, mode, encrypt)) != NULL)
        out = new_stream(ctx, encrypt);
    goto done;
slow:
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            goto done;
        PyErr_Clear();
    }
    out = PyObject_CallOneArg(slow_stream, op);
done:
    Py_XDECREF(ctx);
    Py_XDECREF(mode);
    Py_XDECREF(algorithm);
    Py_XDECREF(kind);
    Py_XDECREF(iv);
    Py_XDECREF(key);
    Py_XDECREF(alg);
    return out;
}

/* -- CipherSessions: SoftwareEngine.session with its cipher branch compiled ---------------- */

typedef struct {
    PyObject_HEAD
    PyObject *slow; /* SoftwareEngine.session, bound: everything the compiled branch does not do */
    vectorcallfunc vectorcall;
} CipherSessions;

/* The session of an AES ECB, CBC or CTR CipherOp of bytes (a new reference), or NULL with no
 * error when the slow path must decide, or NULL with an error (from making the context). */
static PyObject *
cipher_session(PyObject *op)
{
    PyObject *family = NULL, *alg = NULL, *key = NULL, *kind = NULL, *iv = NULL, *how = NULL;
    PyObject *algorithm = NULL, *mode = NULL, *out = NULL;
    if ((family = PyObject_GetAttr(op, str_family)) == NULL
        || (family != str_cipher
            && !(PyUnicode_CheckExact(family) && PyUnicode_Compare(family, str_cipher) == 0))
        || (alg = PyObject_GetAttr(op, str_alg)) == NULL || !PyUnicode_CheckExact(alg)
        || (key = PyObject_GetAttr(op, str_key)) == NULL || !PyBytes_CheckExact(key)
        || (kind = PyObject_GetAttr(op, str_kind)) == NULL)
        goto done;
    how = PyDict_GetItemWithError(session_modes, alg);
    int encrypt = is_encrypt(kind);
    if (how == NULL || encrypt < 0 || !PyTuple_CheckExact(how) || PyTuple_GET_SIZE(how) != 2) {
        how = NULL;
        goto done;
    }
    Py_INCREF(how); /* held across the reads below, which may run Python */
    PyObject *cls = PyTuple_GET_ITEM(how, 0), *iv_name = PyTuple_GET_ITEM(how, 1);
    if (iv_name != Py_None
        && ((iv = PyObject_GetAttr(op, str_iv)) == NULL || !PyBytes_CheckExact(iv)
            || PyBytes_GET_SIZE(iv) != BLOCK))
        goto done; /* the slow path decides (an IV Cipher refuses: no session) */
    if ((algorithm = kept_algorithm(key, alg)) == NULL)
        goto done; /* none kept yet: the slow path makes and keeps it */
    mode = new_mode(cls, iv_name == Py_None ? NULL : iv_name, iv, NULL);
    if (mode != NULL)
        out = make_context(algorithm, mode, encrypt);
    if (out == NULL)
        goto failed;
    goto done;
done:
    if (out == NULL && PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_Exception))
        PyErr_Clear(); /* the slow path decides it, and says why */
failed:
    Py_XDECREF(how);
    Py_XDECREF(mode);
    Py_XDECREF(algorithm);
    Py_XDECREF(iv);
    Py_XDECREF(kind);
    Py_XDECREF(key);
    Py_XDECREF(alg);
    Py_XDECREF(family);
    return out;
}

static PyObject *
sessions_vectorcall(CipherSessions *self, PyObject *const *args, size_t nargsf,
                    PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs == 1 && kwnames == NULL && session_modes != NULL) {
        PyObject *out = cipher_session(args[0]);
        if (out != NULL || PyErr_Occurred())
            return out;
    }
    return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
}

static PyObject *
sessions_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *slow;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "CipherSessions(slow) takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_UnpackTuple(args, "CipherSessions", 1, 1, &slow))
        return NULL;
    if (!PyCallable_Check(slow)) {
        PyErr_SetString(PyExc_TypeError, "CipherSessions(slow): slow must be callable");
        return NULL;
    }
    CipherSessions *self = (CipherSessions *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->slow = Py_NewRef(slow);
    self->vectorcall = (vectorcallfunc)sessions_vectorcall;
    return (PyObject *)self;
}

static int
sessions_traverse(CipherSessions *self, visitproc visit, void *arg)
{
    Py_VISIT(self->slow);
    return 0;
}

static int
sessions_clear(CipherSessions *self)
{
    Py_CLEAR(self->slow);
    return 0;
}

static void
sessions_dealloc(CipherSessions *self)
{
    PyObject_GC_UnTrack(self);
    sessions_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef sessions_members[] = {
    {"slow", T_OBJECT, offsetof(CipherSessions, slow), READONLY,
     "SoftwareEngine.session, bound: what the compiled branch does not do."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject CipherSessionsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cryptoffload.engines._contexts.CipherSessions",
    .tp_basicsize = sizeof(CipherSessions),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = PyDoc_STR("CipherSessions(slow)(op) -> a session: SoftwareEngine.session with its "
                        "AES ECB/CBC/CTR branch compiled."),
    .tp_new = sessions_new,
    .tp_traverse = (traverseproc)sessions_traverse,
    .tp_clear = (inquiry)sessions_clear,
    .tp_dealloc = (destructor)sessions_dealloc,
    .tp_vectorcall_offset = offsetof(CipherSessions, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_members = sessions_members,
};

static PyObject *
configure(PyObject *module, PyObject *args, PyObject *kwds)
{
    static char *names[] = {"slow_stream",     "gcm_class",       "gcm_fields",
                            "gcm_algorithms",  "peek",            "keyed_maker",
                            "make_encryption", "make_decryption", "session_modes",
                            NULL};
    PyObject *new[9];
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "$OO!O!O!OOOOO!:configure", names, &new[0],
                                     &PyType_Type, &new[1], &PyDict_Type, &new[2],
                                     &PyFrozenSet_Type, &new[3], &new[4], &new[5], &new[6],
                                     &new[7], &PyDict_Type, &new[8]))
        return NULL;
    PyObject **slots[9] = {&slow_stream, &gcm_class,       &gcm_fields,
                           &gcm_algorithms, &peek,       &keyed_maker,
                           &make_encryption, &make_decryption, &session_modes};
    for (int i = 0; i < 9; i++)
        Py_XSETREF(*slots[i], Py_NewRef(new[i]));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"open_stream", open_stream, METH_O,
     PyDoc_STR("open_stream(op) -> the engine AEAD stream of an AES-GCM AeadOp")},
    {"configure", (PyCFunction)(void (*)(void))configure, METH_VARARGS | METH_KEYWORDS,
     PyDoc_STR("configure(*, slow_stream, gcm_class, gcm_fields, gcm_algorithms, peek, "
               "keyed_maker, make_encryption, make_decryption, session_modes) -> None")},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cryptoffload.engines._contexts",
    .m_doc = "The software engine's OpenSSL contexts (GCM streams, cipher sessions), compiled.",
    .m_size = -1,
    .m_methods = module_methods,
};

#define INTERN(var, text)                                                                        \
    if ((var = PyUnicode_InternFromString(text)) == NULL)                                        \
        return NULL;

PyMODINIT_FUNC
PyInit__contexts(void)
{
    INTERN(str_alg, "alg");
    INTERN(str_key, "key");
    INTERN(str_iv, "iv");
    INTERN(str_kind, "kind");
    INTERN(str_family, "family");
    INTERN(str_cipher, "cipher");
    INTERN(str_encrypt, "encrypt");
    INTERN(str_update, "update");
    INTERN(str_authenticate_additional_data, "authenticate_additional_data");
    INTERN(str_finalize, "finalize");
    INTERN(str_finalize_with_tag, "finalize_with_tag");
    INTERN(str_tag, "tag");
    INTERN(str_initialization_vector, "_initialization_vector");
    if ((empty_bytes = PyBytes_FromStringAndSize(NULL, 0)) == NULL
        || (empty_tuple = PyTuple_New(0)) == NULL || PyType_Ready(&GcmStreamType) < 0
        || PyType_Ready(&CipherSessionsType) < 0)
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
    Py_INCREF(&CipherSessionsType);
    if (PyModule_AddObject(module, "CipherSessions", (PyObject *)&CipherSessionsType) < 0) {
        Py_DECREF(&CipherSessionsType);
        Py_DECREF(module);
        return NULL;
    }
    /* What software.py expects (its CONTEXTS_API): a build left from older sources is not used. */
    if (PyModule_AddIntConstant(module, "API", 1) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
