/* The direct paths, compiled: cryptoffload.directpath documents the contract.
 *
 * Three base types (and SizeLog, the counters' record). ChainedCore, a Cipher context's
 * held-back update path, is described where it is defined below. The AEAD path's two:
 * LaneCore holds the fields of a Lane that the direct paths read on every operation
 * (provider, direct, direct_q, direct_below, direct_above, direct_room, hold_below,
 * hold_above, tally, tally_q); Lane subclasses it in Python. AeadCore holds a primitive's
 * lane, provider, `cryptography` object and tag length, and defines encrypt, decrypt,
 * encrypt_into and decrypt_into: when the lane bound is the one in force, the data is bytes,
 * software takes its size and the lane's record has room, they call OpenSSL's object and
 * append the size to the record; anything else goes to the Python method of the same name
 * with a leading underscore (_encrypt ...), which takes every decision the slow way. The
 * pure-Python twins in directpath.py do exactly the same; the tests run both.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

/* Set once by configure(): the `using` blocks' ContextVar, the default provider's box
 * (a one-item list) and cryptography's InvalidTag. */
/* Inlined into each caller: a per-op helper whose call would cost more than its body. */
#if defined(__GNUC__) || defined(__clang__)
#define HOT_INLINE inline __attribute__((always_inline))
#else
#define HOT_INLINE inline
#endif

static PyObject *current_var = NULL;
static PyObject *default_box = NULL;
static PyObject *invalid_tag = NULL;

static PyObject *str_encrypt, *str_decrypt, *str_encrypt_into, *str_decrypt_into;
static PyObject *str_fold_due;
static PyObject *str_update, *str_update_into, *str_slow_update, *str_slow_update_into;
static PyObject *str_slow_encrypt, *str_slow_decrypt, *str_slow_encrypt_into,
    *str_slow_decrypt_into;

/* -- SizeLog: the counters' record of operation sizes ------------------------------------ */

typedef struct {
    PyObject_HEAD
    Py_ssize_t *items;
    Py_ssize_t len;
    Py_ssize_t cap;
} SizeLog;

static PyTypeObject SizeLogType;
static int set_size(Py_ssize_t *field, PyObject *value, const char *name);

/* The record is full: twice the room (out of line, rarely run). */
static int
sizelog_grow(SizeLog *log)
{
    Py_ssize_t cap = log->cap ? log->cap * 2 : 256;
    Py_ssize_t *items = PyMem_Resize(log->items, Py_ssize_t, cap);
    if (items == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    log->items = items;
    log->cap = cap;
    return 0;
}

static HOT_INLINE int
sizelog_push(SizeLog *log, Py_ssize_t n)
{
    if (log->len == log->cap && sizelog_grow(log) < 0)
        return -1;
    log->items[log->len++] = n;
    return 0;
}

/* After a drain: a record that grew large (a burst between folds) gives its memory back. */
static void
sizelog_emptied(SizeLog *log)
{
    log->len = 0;
    if (log->cap > 16384) {
        PyMem_Free(log->items);
        log->items = NULL;
        log->cap = 0;
    }
}

static void
sizelog_dealloc(SizeLog *self)
{
    PyMem_Free(self->items);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
sizelog_append(SizeLog *self, PyObject *size)
{
    Py_ssize_t n = PyLong_AsSsize_t(size);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (sizelog_push(self, n) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
sizelog_drain(SizeLog *self, PyObject *unused)
{
    PyObject *out = PyList_New(self->len);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < self->len; i++) {
        PyObject *size = PyLong_FromSsize_t(self->items[i]);
        if (size == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, size);
    }
    sizelog_emptied(self);
    return out;
}

static PyObject *
sizelog_drain_total(SizeLog *self, PyObject *unused)
{
    long long total = 0;
    for (Py_ssize_t i = 0; i < self->len; i++)
        total += self->items[i];
    PyObject *out = Py_BuildValue("(nL)", self->len, total);
    if (out != NULL)
        sizelog_emptied(self);
    return out;
}

/* One pass over the record for a fold, which it empties: the sum of its sizes and, per edge,
 * how many counted sizes are below it (a new list), or NULL with an error set. Every size is
 * counted; with `marked_only`, only the held-back ones marked ~size (read as size), *marked
 * telling how many there were. */
static PyObject *
drain_counting(SizeLog *self, PyObject *edges, int marked_only, long long *total,
               Py_ssize_t *marked)
{
    PyObject *seq = PySequence_Fast(edges, "edges must be a sequence of ints");
    if (seq == NULL)
        return NULL;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    Py_ssize_t *bound = PyMem_New(Py_ssize_t, k ? k : 1);
    Py_ssize_t *count = PyMem_New(Py_ssize_t, k ? k : 1);
    PyObject *counts = NULL;
    if (bound == NULL || count == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < k; j++) {
        if (set_size(&bound[j], PySequence_Fast_GET_ITEM(seq, j), "an edge") < 0)
            goto done;
        count[j] = 0;
    }
    /* Locals, not the pointers' targets, in the loop: stores through them could alias the
     * record, and the compiler would reload and store every one each size. One route (two
     * edges, the common case) gets a loop of its own. */
    long long sum = 0;
    Py_ssize_t held = 0, len = self->len;
    const Py_ssize_t *items = self->items;
    if (k == 2) {
        Py_ssize_t low = bound[0], high = bound[1], under_low = 0, under_high = 0;
        for (Py_ssize_t i = 0; i < len; i++) {
            Py_ssize_t n = items[i];
            if (marked_only) {
                if (n >= 0) {
                    sum += n;
                    continue;
                }
                n = ~n;
                held++;
            }
            sum += n;
            under_low += n < low;
            under_high += n < high;
        }
        count[0] = under_low;
        count[1] = under_high;
    }
    else {
        for (Py_ssize_t i = 0; i < len; i++) {
            Py_ssize_t n = items[i];
            if (marked_only) {
                if (n >= 0) {
                    sum += n;
                    continue;
                }
                n = ~n;
                held++;
            }
            sum += n;
            for (Py_ssize_t j = 0; j < k; j++)
                count[j] += n < bound[j];
        }
    }
    *total = sum;
    *marked = held;
    counts = PyList_New(k);
    if (counts == NULL)
        goto done;
    for (Py_ssize_t j = 0; j < k; j++) {
        PyObject *c = PyLong_FromSsize_t(count[j]);
        if (c == NULL) {
            Py_CLEAR(counts);
            goto done;
        }
        PyList_SET_ITEM(counts, j, c);
    }
done:
    PyMem_Free(bound);
    PyMem_Free(count);
    Py_DECREF(seq);
    return counts;
}

/* drain_below(edges): (how many, their sum, [how many are below each edge]), and an empty
 * record. Edges beyond the sizes an object can have count as the largest. */
static PyObject *
sizelog_drain_below(SizeLog *self, PyObject *edges)
{
    long long total;
    Py_ssize_t marked, n = self->len;
    PyObject *counts = drain_counting(self, edges, 0, &total, &marked);
    if (counts == NULL)
        return NULL;
    PyObject *out = Py_BuildValue("(nLN)", n, total, counts);
    if (out != NULL)
        sizelog_emptied(self);
    return out;
}

/* drain_marked(edges): for a record of plain sizes and held-back ones marked ~size: (how many,
 * the sum of their sizes, how many were marked, [how many marked sizes are below each edge]),
 * and an empty record. */
static PyObject *
sizelog_drain_marked(SizeLog *self, PyObject *edges)
{
    long long total;
    Py_ssize_t marked, n = self->len;
    PyObject *counts = drain_counting(self, edges, 1, &total, &marked);
    if (counts == NULL)
        return NULL;
    PyObject *out = Py_BuildValue("(nLnN)", n, total, marked, counts);
    if (out != NULL)
        sizelog_emptied(self);
    return out;
}

static Py_ssize_t
sizelog_length(SizeLog *self)
{
    return self->len;
}

static PyObject *
sizelog_repr(SizeLog *self)
{
    return PyUnicode_FromFormat("<SizeLog of %zd>", self->len);
}

static PyMethodDef sizelog_methods[] = {
    {"append", (PyCFunction)sizelog_append, METH_O, PyDoc_STR("Record one size.")},
    {"drain", (PyCFunction)sizelog_drain, METH_NOARGS,
     PyDoc_STR("The sizes recorded, in order, and an empty record.")},
    {"drain_total", (PyCFunction)sizelog_drain_total, METH_NOARGS,
     PyDoc_STR("(how many, their sum), and an empty record.")},
    {"drain_marked", (PyCFunction)sizelog_drain_marked, METH_O,
     PyDoc_STR("drain_marked(edges): (how many, their sizes' sum, how many were marked ~size, "
               "[how many marked sizes are below each edge]), and an empty record.")},
    {"drain_below", (PyCFunction)sizelog_drain_below, METH_O,
     PyDoc_STR("drain_below(edges): (how many, their sum, [how many are below each edge]), "
               "and an empty record.")},
    {NULL},
};

static PySequenceMethods sizelog_as_sequence = {
    .sq_length = (lenfunc)sizelog_length,
};

static PyTypeObject SizeLogType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload._directpath.SizeLog",
    .tp_doc = PyDoc_STR("Sizes of operations not yet folded into the counters (compiled)."),
    .tp_basicsize = sizeof(SizeLog),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)sizelog_dealloc,
    .tp_repr = (reprfunc)sizelog_repr,
    .tp_methods = sizelog_methods,
    .tp_as_sequence = &sizelog_as_sequence,
};

/* -- LaneCore --------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *provider;
    PyObject *direct;
    PyObject *direct_q;
    PyObject *tally;
    PyObject *tally_q;
    Py_ssize_t direct_below;
    Py_ssize_t direct_above;
    Py_ssize_t direct_room;
    Py_ssize_t hold_below;
    Py_ssize_t hold_above;
    /* The ints hold_below and hold_above were set to, given back as they are: Python code
     * reads them per op (a new int per read would cost it). NULL: not set yet. */
    PyObject *hold_below_set;
    PyObject *hold_above_set;
} LaneCore;

static int
lane_traverse(LaneCore *self, visitproc visit, void *arg)
{
    Py_VISIT(self->provider);
    Py_VISIT(self->direct);
    Py_VISIT(self->direct_q);
    Py_VISIT(self->tally);
    Py_VISIT(self->tally_q);
    return 0;
}

static int
lane_clear(LaneCore *self)
{
    Py_CLEAR(self->provider);
    Py_CLEAR(self->direct);
    Py_CLEAR(self->direct_q);
    Py_CLEAR(self->tally);
    Py_CLEAR(self->tally_q);
    Py_CLEAR(self->hold_below_set);
    Py_CLEAR(self->hold_above_set);
    return 0;
}

static void
lane_dealloc(LaneCore *self)
{
    PyObject_GC_UnTrack(self);
    lane_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
lane_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    LaneCore *self = (LaneCore *)type->tp_alloc(type, 0);
    if (self != NULL) {
        /* Until the Lane sets them: no size is the direct path's, and the record is full. */
        self->direct_below = -1;
        self->direct_above = PY_SSIZE_T_MAX;
        self->direct_room = 0;
        /* and no size is held back from the engines */
        self->hold_below = -1;
        self->hold_above = PY_SSIZE_T_MAX;
    }
    return (PyObject *)self;
}

/* The size fields: any int. Above the largest size an object can have, a bound means
 * "never" and is kept as that largest size (the comparisons give the same answers). */
static int
set_size(Py_ssize_t *field, PyObject *value, const char *name)
{
    if (value == NULL) {
        PyErr_Format(PyExc_AttributeError, "%s cannot be deleted", name);
        return -1;
    }
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int", name);
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow > 0 || v > PY_SSIZE_T_MAX)
        *field = PY_SSIZE_T_MAX;
    else if (overflow < 0 || v < -PY_SSIZE_T_MAX)
        *field = -PY_SSIZE_T_MAX;
    else
        *field = (Py_ssize_t)v;
    return 0;
}

#define SIZE_GETSET(NAME)                                                              \
    static PyObject *lane_get_##NAME(LaneCore *self, void *closure)                    \
    {                                                                                  \
        return PyLong_FromSsize_t(self->NAME);                                         \
    }                                                                                  \
    static int lane_set_##NAME(LaneCore *self, PyObject *value, void *closure)         \
    {                                                                                  \
        return set_size(&self->NAME, value, #NAME);                                    \
    }

SIZE_GETSET(direct_below)
SIZE_GETSET(direct_above)
SIZE_GETSET(direct_room)
/* A size field that gives back the int it was set to (the C field: that int, clamped). */
#define HELD_SIZE_GETSET(NAME)                                                         \
    static PyObject *lane_get_##NAME(LaneCore *self, void *closure)                    \
    {                                                                                  \
        if (self->NAME##_set != NULL)                                                  \
            return Py_NewRef(self->NAME##_set);                                        \
        return PyLong_FromSsize_t(self->NAME);                                         \
    }                                                                                  \
    static int lane_set_##NAME(LaneCore *self, PyObject *value, void *closure)         \
    {                                                                                  \
        if (set_size(&self->NAME, value, #NAME) < 0)                                   \
            return -1;                                                                 \
        Py_INCREF(value);                                                              \
        Py_XSETREF(self->NAME##_set, value);                                           \
        return 0;                                                                      \
    }

HELD_SIZE_GETSET(hold_below)
HELD_SIZE_GETSET(hold_above)

static PyGetSetDef lane_getset[] = {
    {"direct_below", (getter)lane_get_direct_below, (setter)lane_set_direct_below,
     "Sizes below this are the direct path's.", NULL},
    {"direct_above", (getter)lane_get_direct_above, (setter)lane_set_direct_above,
     "Sizes above this are the direct path's.", NULL},
    {"direct_room", (getter)lane_get_direct_room, (setter)lane_set_direct_room,
     "The direct path records while len(direct_q) is below this.", NULL},
    {"hold_below", (getter)lane_get_hold_below, (setter)lane_set_hold_below,
     "Sizes below this are held back from every engine.", NULL},
    {"hold_above", (getter)lane_get_hold_above, (setter)lane_set_hold_above,
     "Sizes above this are held back from every engine.", NULL},
    {NULL},
};

static PyMemberDef lane_members[] = {
    {"provider", T_OBJECT_EX, offsetof(LaneCore, provider), 0, "The lane's provider."},
    {"direct", T_OBJECT_EX, offsetof(LaneCore, direct), 0, "Records one direct op's size."},
    {"direct_q", T_OBJECT_EX, offsetof(LaneCore, direct_q), 0, "The direct path's record."},
    {"tally", T_OBJECT_EX, offsetof(LaneCore, tally), 0,
     "Records one software op's size (~size: held back from every engine)."},
    {"tally_q", T_OBJECT_EX, offsetof(LaneCore, tally_q), 0,
     "The record tally appends to, when tally is its bound append."},
    {NULL},
};

static PyTypeObject LaneCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload._directpath.LaneCore",
    .tp_doc = PyDoc_STR("The fields of a Lane that the direct path reads (compiled)."),
    .tp_basicsize = sizeof(LaneCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = lane_new,
    .tp_dealloc = (destructor)lane_dealloc,
    .tp_traverse = (traverseproc)lane_traverse,
    .tp_clear = (inquiry)lane_clear,
    .tp_members = lane_members,
    .tp_getset = lane_getset,
};

/* -- AeadCore --------------------------------------------------------------------------- */

/* Whether any `using` block has set the ContextVar in this process (note_using()): until one
 * has, every context holds its default (None) and the direct path need not look it up. */
static int using_seen = 0;

enum { ENCRYPT, DECRYPT, ENCRYPT_INTO, DECRYPT_INTO, CALLS };

typedef struct {
    PyObject_HEAD
    PyObject *lane;
    PyObject *provider;
    PyObject *sw;
    PyObject *tag_length;
    /* Set with _lane: it is a LaneCore (else the direct path never runs). */
    int lane_is_core;
    /* Set with _sw: its bound encrypt, decrypt, encrypt_into and decrypt_into (no lookup per
     * op), each NULL where sw has none (then looked up per op, which raises as Python would). */
    PyObject *calls[CALLS];
} AeadCore;

static PyObject **const call_names[CALLS] = {&str_encrypt, &str_decrypt, &str_encrypt_into,
                                       &str_decrypt_into};

static int
aead_traverse(AeadCore *self, visitproc visit, void *arg)
{
    Py_VISIT(self->lane);
    Py_VISIT(self->provider);
    Py_VISIT(self->sw);
    Py_VISIT(self->tag_length);
    for (int i = 0; i < CALLS; i++)
        Py_VISIT(self->calls[i]);
    return 0;
}

static int
aead_clear(AeadCore *self)
{
    Py_CLEAR(self->lane);
    Py_CLEAR(self->provider);
    Py_CLEAR(self->sw);
    Py_CLEAR(self->tag_length);
    for (int i = 0; i < CALLS; i++)
        Py_CLEAR(self->calls[i]);
    self->lane_is_core = 0;
    return 0;
}

static void
aead_dealloc(AeadCore *self)
{
    PyObject_GC_UnTrack(self);
    aead_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
get_field(PyObject *value, const char *name)
{
    if (value == NULL) {
        PyErr_Format(PyExc_AttributeError, "%s", name);
        return NULL;
    }
    return Py_NewRef(value);
}

static PyObject *
aead_get_lane(AeadCore *self, void *closure)
{
    return get_field(self->lane, "_lane");
}

/* A core's _lane := value (NULL: deleted); returns whether it is a LaneCore, the one kind of
 * lane the compiled paths read. */
static int
set_lane(PyObject **field, PyObject *value)
{
    Py_XINCREF(value);
    Py_XSETREF(*field, value);
    return value != NULL && PyObject_TypeCheck(value, &LaneCoreType);
}

/* The builtin methods `names` of sw, bound once into calls[] (new references; NULL where sw's
 * is none, or not a builtin: looked up per op, as Python would). -1 with an error set, calls[]
 * then left all NULL. */
static int
bind_builtins(PyObject *sw, PyObject **const names[], int n, PyObject *calls[])
{
    for (int i = 0; i < n; i++) {
        calls[i] = NULL;
        PyObject *found = PyObject_GetAttr(sw, *names[i]);
        if (found != NULL && PyCFunction_Check(found))
            calls[i] = found;
        else if (found != NULL)
            Py_DECREF(found);
        else if (PyErr_ExceptionMatches(PyExc_AttributeError))
            PyErr_Clear();
        else {
            for (int j = 0; j < i; j++)
                Py_CLEAR(calls[j]);
            return -1;
        }
    }
    return 0;
}

/* *field = value (NULL: deleted), with value's builtin methods `names` bound into calls[] (see
 * bind_builtins; none for None or False). 0, or -1 with an error set and nothing changed. */
static int
set_bound(PyObject **field, PyObject *calls[], PyObject **const names[], int n, PyObject *value)
{
    PyObject *bound[CALLS] = {NULL}; /* CALLS: the most any core binds (n <= CALLS) */
    if (value != NULL && value != Py_None && value != Py_False
        && bind_builtins(value, names, n, bound) < 0)
        return -1;
    Py_XINCREF(value);
    Py_XSETREF(*field, value);
    for (int i = 0; i < n; i++)
        Py_XSETREF(calls[i], bound[i]);
    return 0;
}

static int
aead_set_lane(AeadCore *self, PyObject *value, void *closure)
{
    self->lane_is_core = set_lane(&self->lane, value);
    return 0;
}

static PyObject *
aead_get_sw(AeadCore *self, void *closure)
{
    return get_field(self->sw, "_sw");
}

static int
aead_set_sw(AeadCore *self, PyObject *value, void *closure)
{
    /* OpenSSL's object: calling its methods bound costs no more than the calls they replace. */
    return set_bound(&self->sw, self->calls, call_names, CALLS, value);
}

static PyGetSetDef aead_getset[] = {
    {"_lane", (getter)aead_get_lane, (setter)aead_set_lane, NULL, NULL},
    {"_sw", (getter)aead_get_sw, (setter)aead_set_sw, NULL, NULL},
    {NULL},
};

/* The lane when the direct path may take an op of n bytes, else NULL (no error set), or NULL
 * with an error set (*failed = 1). Borrowed reference. */
static inline LaneCore *
direct_lane(AeadCore *self, Py_ssize_t n, int *failed)
{
    if (!self->lane_is_core)
        return NULL;
    LaneCore *core = (LaneCore *)self->lane;
    if (!(n < core->direct_below || n > core->direct_above))
        return NULL;
    PyObject *sw = self->sw;
    if (sw == NULL || sw == Py_None || sw == Py_False)
        return NULL;
    /* The provider in force: the primitive's own, else the innermost `using` block's, else
     * the default (a Provider is always true, so `or` is "not None" here). */
    PyObject *provider = self->provider;
    if (provider == NULL || provider == Py_None) {
        provider = NULL;
        if (using_seen) {
            PyObject *value = NULL;
            if (PyContextVar_Get(current_var, NULL, &value) < 0) {
                *failed = 1;
                return NULL;
            }
            if (value != NULL && value != Py_None)
                provider = value;
            Py_XDECREF(value); /* the ContextVar still holds it */
        }
        if (provider == NULL)
            provider = PyList_GET_ITEM(default_box, 0);
    }
    if (provider != core->provider)
        return NULL;
    PyObject *record = core->direct_q;
    if (record == NULL || core->direct == NULL)
        return NULL;
    Py_ssize_t queued;
    if (Py_IS_TYPE(record, &SizeLogType))
        queued = ((SizeLog *)record)->len;
    else if ((queued = PyObject_Size(record)) < 0) {
        *failed = 1;
        return NULL;
    }
    if (queued >= core->direct_room)
        return NULL;
    return core;
}

static inline int
record(LaneCore *core, Py_ssize_t n)
{
    if (Py_IS_TYPE(core->direct_q, &SizeLogType))
        return sizelog_push((SizeLog *)core->direct_q, n);
    PyObject *size = PyLong_FromSsize_t(n);
    if (size == NULL)
        return -1;
    PyObject *done = PyObject_CallOneArg(core->direct, size);
    Py_DECREF(size);
    if (done == NULL)
        return -1;
    Py_DECREF(done);
    return 0;
}

/* self.<name>(*args, **kw): the ordinary path. */
static PyObject *
slow(void *self, PyObject *name, PyObject *const *args, Py_ssize_t nargs,
     PyObject *kwnames)
{
    Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *small[8];
    PyObject **stack = small;
    if (total + 2 > 8) {
        stack = PyMem_New(PyObject *, total + 2);
        if (stack == NULL)
            return PyErr_NoMemory();
    }
    stack[1] = (PyObject *)self;
    memcpy(stack + 2, args, total * sizeof(PyObject *));
    PyObject *out = PyObject_VectorcallMethod(
        name, stack + 1, (nargs + 1) | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
    if (stack != small)
        PyMem_Free(stack);
    return out;
}

/* bound(*args): a builtin method (PyCFunction_Check), kept alive across the call. One taking
 * METH_FASTCALL | METH_KEYWORDS is called as its own vectorcall would call it, less the
 * generic dispatch (this call is what the caller's own call of it would have been). */
static inline PyObject *
call_leaf(PyObject *bound, PyObject *const *args, Py_ssize_t nargs)
{
    Py_INCREF(bound); /* the call may set _sw again */
    PyObject *out;
    if ((PyCFunction_GET_FLAGS(bound) & ~(METH_COEXIST | METH_STATIC | METH_CLASS))
        == (METH_FASTCALL | METH_KEYWORDS)) {
        _PyCFunctionFastWithKeywords meth =
            (_PyCFunctionFastWithKeywords)(void (*)(void))PyCFunction_GET_FUNCTION(bound);
        out = meth(PyCFunction_GET_SELF(bound), args, nargs, NULL);
        if (out == NULL && !PyErr_Occurred())
            PyErr_SetString(PyExc_SystemError, "OpenSSL's method returned no result");
    }
    else
        out = PyObject_Vectorcall(bound, args, nargs, NULL);
    Py_DECREF(bound);
    return out;
}

/* sw.<name>(args...) (at most 4 arguments): through `bound`, sw's builtin method bound once,
 * else looked up now. */
static inline PyObject *
call_on(PyObject *sw, PyObject *bound, PyObject *name, PyObject *const *args, Py_ssize_t nargs)
{
    if (bound != NULL)
        return call_leaf(bound, args, nargs);
    PyObject *stack[6];
    stack[1] = sw;
    for (Py_ssize_t i = 0; i < nargs; i++)
        stack[2 + i] = args[i];
    return PyObject_VectorcallMethod(name, stack + 1,
                                     (nargs + 1) | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

/* Whether the error set is one the ordinary path explains (TypeError, ValueError): cleared. */
static int
explained_below(void)
{
    if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError)) {
        PyErr_Clear();
        return 1;
    }
    return 0;
}

static int
invalid_tag_raised(void)
{
    return invalid_tag != NULL && PyErr_ExceptionMatches(invalid_tag);
}

/* Record n for a failed tag, the InvalidTag going on (a record failure replaces it). */
static void
record_failed_tag(LaneCore *core, Py_ssize_t n)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (record(core, n) < 0) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
    }
    else
        PyErr_Restore(type, value, tb);
}

static Py_ssize_t
tag_length_of(AeadCore *self)
{
    if (self->tag_length == NULL || !PyLong_CheckExact(self->tag_length))
        return -1;
    Py_ssize_t t = PyLong_AsSsize_t(self->tag_length);
    if (t == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return t;
}

/* One direct op: OpenSSL's `call`, n recorded. Returns the result; NULL with an error to
 * raise; or NULL without one when the ordinary path must run (it says why). `zero` is the
 * buffer a failed tag zeroes (decrypt_into), else NULL. */
static inline PyObject *
direct(AeadCore *self, LaneCore *core, int call, PyObject *const *args, Py_ssize_t nargs,
       Py_ssize_t n, int check_tag, PyObject *zero)
{
    Py_INCREF(core);
    PyObject *out = call_on(self->sw, self->calls[call], *call_names[call], args, nargs);
    if (out != NULL) {
        if (record(core, n) < 0)
            Py_CLEAR(out);
    }
    else if (check_tag && invalid_tag_raised()) {
        if (zero != NULL) /* OpenSSL's GCM has written the plaintext before the tag failed */
            memset(PyByteArray_AS_STRING(zero), 0, (size_t)PyByteArray_GET_SIZE(zero));
        record_failed_tag(core, n);
    }
    else
        explained_below();
    Py_DECREF(core);
    return out;
}

static PyObject *
aead_encrypt(AeadCore *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs == 3 && kwnames == NULL && PyBytes_CheckExact(args[1])) {
        Py_ssize_t n = PyBytes_GET_SIZE(args[1]);
        int failed = 0;
        LaneCore *core = direct_lane(self, n, &failed);
        if (failed)
            return NULL;
        if (core != NULL) {
            PyObject *out = direct(self, core, ENCRYPT, args, 3, n, 0, NULL);
            if (out != NULL || PyErr_Occurred())
                return out;
        }
    }
    return slow(self, str_slow_encrypt, args, nargs, kwnames);
}

static PyObject *
aead_decrypt(AeadCore *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs == 3 && kwnames == NULL && PyBytes_CheckExact(args[1])) {
        Py_ssize_t tag = tag_length_of(self);
        Py_ssize_t n = PyBytes_GET_SIZE(args[1]) - tag;
        int failed = 0;
        LaneCore *core = tag >= 0 && n >= 0 ? direct_lane(self, n, &failed) : NULL;
        if (failed)
            return NULL;
        if (core != NULL) {
            PyObject *out = direct(self, core, DECRYPT, args, 3, n, 1, NULL);
            if (out != NULL || PyErr_Occurred())
                return out;
        }
    }
    return slow(self, str_slow_decrypt, args, nargs, kwnames);
}

static PyObject *
aead_encrypt_into(AeadCore *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs == 4 && kwnames == NULL && PyBytes_CheckExact(args[1])
        && PyByteArray_CheckExact(args[3])) {
        Py_ssize_t n = PyBytes_GET_SIZE(args[1]);
        int failed = 0;
        LaneCore *core = direct_lane(self, n, &failed);
        if (failed)
            return NULL;
        if (core != NULL) {
            PyObject *out = direct(self, core, ENCRYPT_INTO, args, 4, n, 0, NULL);
            if (out != NULL || PyErr_Occurred())
                return out;
        }
    }
    return slow(self, str_slow_encrypt_into, args, nargs, kwnames);
}

static PyObject *
aead_decrypt_into(AeadCore *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs == 4 && kwnames == NULL && PyBytes_CheckExact(args[1])
        && PyByteArray_CheckExact(args[3])) {
        Py_ssize_t tag = tag_length_of(self);
        Py_ssize_t n = PyBytes_GET_SIZE(args[1]) - tag;
        int failed = 0;
        LaneCore *core = tag >= 0 && n >= 0 ? direct_lane(self, n, &failed) : NULL;
        if (failed)
            return NULL;
        if (core != NULL) {
            PyObject *out = direct(self, core, DECRYPT_INTO, args, 4, n, 1, args[3]);
            if (out != NULL || PyErr_Occurred())
                return out;
        }
    }
    return slow(self, str_slow_decrypt_into, args, nargs, kwnames);
}

static PyMethodDef aead_methods[] = {
    {"encrypt", (PyCFunction)(void (*)(void))aead_encrypt, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("encrypt(nonce, data, associated_data) -> ciphertext followed by the tag")},
    {"decrypt", (PyCFunction)(void (*)(void))aead_decrypt, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("decrypt(nonce, data, associated_data) -> the plaintext, or InvalidTag (and "
               "nothing else) when the data was altered")},
    {"encrypt_into", (PyCFunction)(void (*)(void))aead_encrypt_into,
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("encrypt_into(nonce, data, associated_data, buf) -> bytes written: ciphertext "
               "and tag")},
    {"decrypt_into", (PyCFunction)(void (*)(void))aead_decrypt_into,
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("decrypt_into(nonce, data, associated_data, buf) -> bytes written, only once "
               "the tag holds (on InvalidTag buf holds zeros)")},
    {NULL},
};

static PyMemberDef aead_members[] = {
    {"_provider", T_OBJECT_EX, offsetof(AeadCore, provider), 0, NULL},
    {"_tag_length", T_OBJECT_EX, offsetof(AeadCore, tag_length), 0, NULL},
    {NULL},
};

static PyTypeObject AeadCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload._directpath.AeadCore",
    .tp_doc = PyDoc_STR("An AEAD primitive's direct path (compiled)."),
    .tp_basicsize = sizeof(AeadCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)aead_dealloc,
    .tp_traverse = (traverseproc)aead_traverse,
    .tp_clear = (inquiry)aead_clear,
    .tp_methods = aead_methods,
    .tp_members = aead_members,
    .tp_getset = aead_getset,
};

/* -- ChainedCore ------------------------------------------------------------------------ */

/* A Cipher context's held-back path (cryptoffload.directpath.PureChainedCore is its twin and
 * documents the contract): while the kept OpenSSL context `_sw` is set and the op an engine
 * would get is one the policy holds back from every engine, update and update_into run it on
 * that context and keep the tails an engine needs to take over; else _update_slow and
 * _update_into_slow (Python) decide the slow way. */

/* Input bytes a held-back stream keeps: directpath.TAIL (a test checks that both agree). */
#define TAIL 31
/* Sizes a record holds before it is folded (counters.FOLD_AT; a test checks they agree). */
#define FOLD_AT 4096
/* The output tail CBC encryption keeps: its chaining value (a block of AES). */
#define OUT_TAIL 16

enum { UPDATE, UPDATE_INTO, CHAIN_CALLS };

typedef struct {
    PyObject_HEAD
    PyObject *lane;
    PyObject *sw;
    PyObject *sw_in;
    PyObject *sw_out;
    PyObject *whole_blocks;
    PyObject *cbc_encrypt;
    Py_ssize_t block;
    Py_ssize_t sw_total;
    char has_block;
    char has_sw_total;
    /* update_into's output tail, kept here (no object per update) until _sw_out is read:
     * then sw_out is NULL and these bytes stand for it. */
    char out_inline;
    unsigned char out_len;
    char out_tail[OUT_TAIL];
    /* Set with _lane: it is a LaneCore (else the held-back path never runs here). */
    char lane_is_core;
    /* Set with _sw: its bound update and update_into when builtin (no lookup per op). */
    PyObject *calls[CHAIN_CALLS];
} ChainedCore;

static PyObject **const chain_call_names[CHAIN_CALLS] = {&str_update, &str_update_into};

static int
chained_traverse(ChainedCore *self, visitproc visit, void *arg)
{
    Py_VISIT(self->lane);
    Py_VISIT(self->sw);
    Py_VISIT(self->sw_in);
    Py_VISIT(self->sw_out);
    Py_VISIT(self->whole_blocks);
    Py_VISIT(self->cbc_encrypt);
    for (int i = 0; i < CHAIN_CALLS; i++)
        Py_VISIT(self->calls[i]);
    return 0;
}

static int
chained_clear(ChainedCore *self)
{
    Py_CLEAR(self->lane);
    Py_CLEAR(self->sw);
    Py_CLEAR(self->sw_in);
    Py_CLEAR(self->sw_out);
    Py_CLEAR(self->whole_blocks);
    Py_CLEAR(self->cbc_encrypt);
    for (int i = 0; i < CHAIN_CALLS; i++)
        Py_CLEAR(self->calls[i]);
    self->lane_is_core = 0;
    self->out_inline = 0;
    return 0;
}

static void
chained_dealloc(ChainedCore *self)
{
    PyObject_GC_UnTrack(self);
    chained_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
chained_get_lane(ChainedCore *self, void *closure)
{
    return get_field(self->lane, "_lane");
}

static int
chained_set_lane(ChainedCore *self, PyObject *value, void *closure)
{
    self->lane_is_core = (char)set_lane(&self->lane, value);
    return 0;
}

static PyObject *
chained_get_sw(ChainedCore *self, void *closure)
{
    return get_field(self->sw, "_sw");
}

static int
chained_set_sw(ChainedCore *self, PyObject *value, void *closure)
{
    Py_BUILD_ASSERT((int)CHAIN_CALLS <= (int)CALLS); /* set_bound's room */
    return set_bound(&self->sw, self->calls, chain_call_names, CHAIN_CALLS, value);
}

/* An int field that may be unset (AttributeError when read, as an unset slot). */
static PyObject *
get_count(Py_ssize_t value, char has, const char *name)
{
    if (!has) {
        PyErr_Format(PyExc_AttributeError, "%s", name);
        return NULL;
    }
    return PyLong_FromSsize_t(value);
}

static int
set_count(Py_ssize_t *field, char *has, PyObject *value, const char *name)
{
    if (value == NULL) {
        if (!*has) {
            PyErr_Format(PyExc_AttributeError, "%s", name);
            return -1;
        }
        *has = 0;
        return 0;
    }
    if (!PyLong_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int", name);
        return -1;
    }
    Py_ssize_t v = PyLong_AsSsize_t(value);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *field = v;
    *has = 1;
    return 0;
}

static PyObject *
chained_get_block(ChainedCore *self, void *closure)
{
    return get_count(self->block, self->has_block, "_block");
}

static int
chained_set_block(ChainedCore *self, PyObject *value, void *closure)
{
    return set_count(&self->block, &self->has_block, value, "_block");
}

static PyObject *
chained_get_sw_total(ChainedCore *self, void *closure)
{
    return get_count(self->sw_total, self->has_sw_total, "_sw_total");
}

static int
chained_set_sw_total(ChainedCore *self, PyObject *value, void *closure)
{
    return set_count(&self->sw_total, &self->has_sw_total, value, "_sw_total");
}

/* _sw_out as an object (borrowed), made from the inline tail if that stands for it; NULL when
 * unset (no error) or with an error set (*failed = 1). */
static PyObject *
sw_out_object(ChainedCore *self, int *failed)
{
    if (self->out_inline) {
        PyObject *tail = PyBytes_FromStringAndSize(self->out_tail, self->out_len);
        if (tail == NULL) {
            *failed = 1;
            return NULL;
        }
        Py_XSETREF(self->sw_out, tail);
        self->out_inline = 0;
    }
    return self->sw_out;
}

static PyObject *
chained_get_sw_out(ChainedCore *self, void *closure)
{
    int failed = 0;
    PyObject *out = sw_out_object(self, &failed);
    return failed ? NULL : get_field(out, "_sw_out");
}

static int
chained_set_sw_out(ChainedCore *self, PyObject *value, void *closure)
{
    if (value == NULL && self->sw_out == NULL && !self->out_inline) {
        PyErr_SetString(PyExc_AttributeError, "_sw_out");
        return -1;
    }
    Py_XINCREF(value);
    Py_XSETREF(self->sw_out, value);
    self->out_inline = 0;
    return 0;
}

static PyGetSetDef chained_getset[] = {
    {"_lane", (getter)chained_get_lane, (setter)chained_set_lane, NULL, NULL},
    {"_sw", (getter)chained_get_sw, (setter)chained_set_sw, NULL, NULL},
    {"_block", (getter)chained_get_block, (setter)chained_set_block, NULL, NULL},
    {"_sw_total", (getter)chained_get_sw_total, (setter)chained_set_sw_total, NULL, NULL},
    {"_sw_out", (getter)chained_get_sw_out, (setter)chained_set_sw_out,
     "CBC encryption's output tail (bytes when update_into kept it)", NULL},
    {NULL},
};

static PyMemberDef chained_members[] = {
    {"_sw_in", T_OBJECT_EX, offsetof(ChainedCore, sw_in), 0, NULL},
    {"_whole_blocks", T_OBJECT_EX, offsetof(ChainedCore, whole_blocks), 0, NULL},
    {"_cbc_encrypt", T_OBJECT_EX, offsetof(ChainedCore, cbc_encrypt), 0, NULL},
    {NULL},
};

static inline int
truth(PyObject *value)
{
    if (value == Py_True)
        return 1;
    if (value == Py_False || value == Py_None)
        return 0;
    return PyObject_IsTrue(value);
}

/* The lane when the held-back path takes an op of n more bytes (*size: the op an engine would
 * get), else NULL with no error, or NULL with an error set (*failed = 1). Borrowed. */
static inline LaneCore *
held_lane(ChainedCore *self, Py_ssize_t n, Py_ssize_t *size, int *failed)
{
    if (self->sw == NULL || self->sw == Py_None || !self->lane_is_core || !self->has_block
        || !self->has_sw_total || self->block <= 0 || self->whole_blocks == NULL
        || self->cbc_encrypt == NULL || self->sw_in == NULL
        || (self->sw_out == NULL && !self->out_inline))
        return NULL;
    Py_ssize_t block = self->block;
    /* A block of a power of two bytes (AES's 16, every block cipher here) takes a mask: a
     * division costs tens of cycles, two an op, where the rest of this path costs a few. */
    Py_ssize_t mask = (block & (block - 1)) == 0 ? block - 1 : -1;
    Py_ssize_t rest = mask >= 0 ? self->sw_total & mask : self->sw_total % block;
    if (rest < 0) /* Python's %: the sign of the divisor */
        rest += block;
    if (n > PY_SSIZE_T_MAX - rest)
        return NULL;
    Py_ssize_t s = rest + n;
    int whole = truth(self->whole_blocks);
    if (whole < 0) {
        *failed = 1;
        return NULL;
    }
    if (whole)
        s -= mask >= 0 ? s & mask : s % block;
    LaneCore *core = (LaneCore *)self->lane;
    if (!(s < core->hold_below || s > core->hold_above))
        return NULL;
    *size = s;
    return core;
}

/* What the stream keeps of its input after `data` (n bytes): data itself when it is a tail's
 * length or more, else the last TAIL bytes of the kept tail and data (new reference). */
static PyObject *
input_tail(ChainedCore *self, PyObject *data, Py_ssize_t n)
{
    if (n >= TAIL)
        return Py_NewRef(data);
    if (self->sw_in == NULL) { /* deleted during the op */
        PyErr_SetString(PyExc_AttributeError, "_sw_in");
        return NULL;
    }
    PyObject *kept = PyBytes_FromObject(self->sw_in); /* bytes(self._sw_in) */
    if (kept == NULL)
        return NULL;
    Py_ssize_t had = PyBytes_GET_SIZE(kept);
    Py_ssize_t total = had + n < TAIL ? had + n : TAIL;
    Py_ssize_t from_kept = total - n;
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out != NULL) {
        char *to = PyBytes_AS_STRING(out);
        memcpy(to, PyBytes_AS_STRING(kept) + had - from_kept, (size_t)from_kept);
        memcpy(to + from_kept, PyBytes_AS_STRING(data), (size_t)n);
    }
    Py_DECREF(kept);
    return out;
}

/* seq[-OUT_TAIL:] (new reference). */
static PyObject *
last_out(PyObject *seq)
{
    Py_ssize_t len = PyObject_Length(seq);
    if (len < 0)
        return NULL;
    return PySequence_GetSlice(seq, len > OUT_TAIL ? len - OUT_TAIL : 0, len);
}

/* lane.tally(value), then lane.fold_due() once the record is long: software's own record,
 * a size (or ~size, held back) per op. 0, or -1 with an error set. */
static HOT_INLINE int
lane_tally(LaneCore *core, Py_ssize_t value)
{
    PyObject *tally = core->tally;
    if (tally == NULL) {
        PyErr_SetString(PyExc_AttributeError, "tally");
        return -1;
    }
    /* lane.tally is the bound append of the SizeLog tally_q: push there, no call. */
    PyObject *q = core->tally_q;
    if (q != NULL && Py_IS_TYPE(q, &SizeLogType) && PyCFunction_Check(tally)
        && PyCFunction_GET_SELF(tally) == q
        && PyCFunction_GET_FUNCTION(tally) == (PyCFunction)sizelog_append) {
        if (sizelog_push((SizeLog *)q, value) < 0)
            return -1;
        if (((SizeLog *)q)->len <= FOLD_AT)
            return 0;
    }
    else {
        PyObject *size = PyLong_FromSsize_t(value);
        if (size == NULL)
            return -1;
        Py_INCREF(tally);
        PyObject *done = PyObject_CallOneArg(tally, size);
        Py_DECREF(tally);
        Py_DECREF(size);
        if (done == NULL)
            return -1;
        Py_DECREF(done);
    }
    /* A long stream (or a record we cannot see into): the lane folds when due. */
    PyObject *folded = PyObject_CallMethodNoArgs((PyObject *)core, str_fold_due);
    if (folded == NULL)
        return -1;
    Py_DECREF(folded);
    return 0;
}

/* After the op: the bytes count, the input tail, and ~size recorded (size 0: nothing).
 * `out_tail` (stolen, may be NULL) is the new _sw_out. 0, or -1 with an error set. */
static HOT_INLINE int
note_held(ChainedCore *self, LaneCore *core, PyObject *data, Py_ssize_t n, Py_ssize_t size,
          PyObject *out_tail)
{
    self->sw_total += n;
    PyObject *tail = input_tail(self, data, n);
    if (tail == NULL) {
        Py_XDECREF(out_tail);
        return -1;
    }
    Py_XSETREF(self->sw_in, tail);
    if (out_tail != NULL) {
        Py_XSETREF(self->sw_out, out_tail);
        self->out_inline = 0;
    }
    if (!size)
        return 0;
    return lane_tally(core, ~size);
}

/* The output tail update's result gives (new reference), NULL for none (*failed on error). */
static PyObject *
update_out_tail(ChainedCore *self, PyObject *out, int *failed)
{
    int some = PyObject_IsTrue(out);
    int cbc = some > 0 ? truth(self->cbc_encrypt) : 0;
    if (some < 0 || cbc < 0) {
        *failed = 1;
        return NULL;
    }
    if (!cbc)
        return NULL;
    Py_ssize_t len = PyObject_Length(out);
    if (len < 0) {
        *failed = 1;
        return NULL;
    }
    if (len >= OUT_TAIL)
        return Py_NewRef(out);
    PyObject *had = sw_out_object(self, failed);
    if (had == NULL) {
        if (!*failed) { /* deleted during the op */
            PyErr_SetString(PyExc_AttributeError, "_sw_out");
            *failed = 1;
        }
        return NULL;
    }
    PyObject *joined = PyNumber_Add(had, out);
    if (joined == NULL) {
        *failed = 1;
        return NULL;
    }
    PyObject *tail = last_out(joined);
    Py_DECREF(joined);
    if (tail == NULL)
        *failed = 1;
    return tail;
}

static PyObject *
chained_update(ChainedCore *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs == 1 && kwnames == NULL && PyBytes_CheckExact(args[0])) {
        PyObject *data = args[0];
        Py_ssize_t n = PyBytes_GET_SIZE(data), size = 0;
        int failed = 0;
        LaneCore *core = n ? held_lane(self, n, &size, &failed) : NULL;
        if (failed)
            return NULL;
        if (core != NULL) {
            PyObject *sw = Py_NewRef(self->sw);
            Py_INCREF(core);
            PyObject *out = call_on(sw, self->calls[UPDATE], str_update, args, 1);
            if (out != NULL) {
                PyObject *tail = update_out_tail(self, out, &failed);
                if (failed || note_held(self, core, data, n, size, tail) < 0)
                    Py_CLEAR(out);
            }
            Py_DECREF(core);
            Py_DECREF(sw);
            return out;
        }
    }
    return slow(self, str_slow_update, args, nargs, kwnames);
}

static PyObject *
chained_update_into(ChainedCore *self, PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames)
{
    if (nargs == 2 && kwnames == NULL && PyBytes_CheckExact(args[0])
        && PyByteArray_CheckExact(args[1])) {
        PyObject *data = args[0], *buf = args[1];
        Py_ssize_t n = PyBytes_GET_SIZE(data), size = 0;
        int failed = 0;
        LaneCore *core = held_lane(self, n, &size, &failed);
        if (failed)
            return NULL;
        if (core != NULL && n <= PY_SSIZE_T_MAX - self->block
            && PyByteArray_GET_SIZE(buf) >= n + self->block - 1) {
            PyObject *sw = Py_NewRef(self->sw);
            Py_INCREF(core);
            PyObject *k = call_on(sw, self->calls[UPDATE_INTO], str_update_into, args, 2);
            if (k != NULL) {
                /* OpenSSL's count is an int: its value says whether any came out, no
                 * PyObject_IsTrue first (anything else takes the general test). */
                Py_ssize_t end = 0;
                int some;
                if (PyLong_CheckExact(k)) {
                    end = PyLong_AsSsize_t(k);
                    some = end == -1 && PyErr_Occurred() ? -1 : end != 0;
                }
                else
                    some = PyObject_IsTrue(k);
                int cbc = some > 0 ? truth(self->cbc_encrypt) : 0;
                if (some < 0 || cbc < 0)
                    failed = 1;
                else if (cbc && !PyLong_CheckExact(k)
                         && (end = PyLong_AsSsize_t(k)) == -1 && PyErr_Occurred())
                    failed = 1;
                else if (cbc) {
                    /* buf[max(0, k - 16) : k]: a copy (the caller owns buf), kept inline */
                    Py_ssize_t len = PyByteArray_GET_SIZE(buf);
                    end = end < 0 ? 0 : end > len ? len : end;
                    const char *from = PyByteArray_AS_STRING(buf);
                    if (end >= OUT_TAIL) { /* a whole block: a fixed-size copy */
                        memcpy(self->out_tail, from + end - OUT_TAIL, OUT_TAIL);
                        self->out_len = OUT_TAIL;
                    }
                    else {
                        memcpy(self->out_tail, from, (size_t)end);
                        self->out_len = (unsigned char)end;
                    }
                    self->out_inline = 1;
                    Py_CLEAR(self->sw_out);
                }
                if (failed || note_held(self, core, data, n, size, NULL) < 0)
                    Py_CLEAR(k);
            }
            Py_DECREF(core);
            Py_DECREF(sw);
            return k;
        }
    }
    return slow(self, str_slow_update_into, args, nargs, kwnames);
}

static PyMethodDef chained_methods[] = {
    {"update", (PyCFunction)(void (*)(void))chained_update, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("update(data) -> the output for data (ECB and CBC hold a partial block back)")},
    {"update_into", (PyCFunction)(void (*)(void))chained_update_into,
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("update_into(data, buf) -> the length of the output written into buf")},
    {NULL},
};

static PyTypeObject ChainedCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload._directpath.ChainedCore",
    .tp_doc = PyDoc_STR("A Cipher context's held-back path (compiled)."),
    .tp_basicsize = sizeof(ChainedCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)chained_dealloc,
    .tp_traverse = (traverseproc)chained_traverse,
    .tp_clear = (inquiry)chained_clear,
    .tp_methods = chained_methods,
    .tp_members = chained_members,
    .tp_getset = chained_getset,
};

/* -- DirectStreamCore: a Cipher context on a lane no engine claims --------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *lane;
    PyObject *ctx;
    /* Set with _lane: it is a LaneCore (else every update takes the Python path). */
    char lane_is_core;
    /* Set with _ctx: its bound update and update_into when builtin (no lookup per op). */
    PyObject *calls[CHAIN_CALLS];
} DirectStreamCore;

static int
stream_traverse(DirectStreamCore *self, visitproc visit, void *arg)
{
    Py_VISIT(self->lane);
    Py_VISIT(self->ctx);
    for (int i = 0; i < CHAIN_CALLS; i++)
        Py_VISIT(self->calls[i]);
    return 0;
}

static int
stream_clear(DirectStreamCore *self)
{
    Py_CLEAR(self->lane);
    Py_CLEAR(self->ctx);
    for (int i = 0; i < CHAIN_CALLS; i++)
        Py_CLEAR(self->calls[i]);
    self->lane_is_core = 0;
    return 0;
}

static void
stream_dealloc(DirectStreamCore *self)
{
    PyObject_GC_UnTrack(self);
    stream_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
stream_get_lane(DirectStreamCore *self, void *closure)
{
    return get_field(self->lane, "_lane");
}

static int
stream_set_lane(DirectStreamCore *self, PyObject *value, void *closure)
{
    self->lane_is_core = (char)set_lane(&self->lane, value);
    return 0;
}

static PyObject *
stream_get_ctx(DirectStreamCore *self, void *closure)
{
    return get_field(self->ctx, "_ctx");
}

static int
stream_set_ctx(DirectStreamCore *self, PyObject *value, void *closure)
{
    return set_bound(&self->ctx, self->calls, chain_call_names, CHAIN_CALLS, value);
}

static PyGetSetDef stream_getset[] = {
    {"_lane", (getter)stream_get_lane, (setter)stream_set_lane, NULL, NULL},
    {"_ctx", (getter)stream_get_ctx, (setter)stream_set_ctx, NULL, NULL},
    {NULL},
};

/* OpenSSL's context `ctx` runs call (args, nargs); when `gave` says it gave output, the lane
 * counts an op of n bytes. Kept alive across the call: it may set _ctx or _lane again. */
static PyObject *
stream_run(DirectStreamCore *self, int call, PyObject *name, PyObject *const *args,
           Py_ssize_t nargs, Py_ssize_t n)
{
    PyObject *ctx = Py_NewRef(self->ctx);
    PyObject *lane = Py_NewRef(self->lane);
    PyObject *out = call_on(ctx, self->calls[call], name, args, nargs);
    if (out != NULL) {
        int gave;
        if (PyBytes_CheckExact(out))
            gave = PyBytes_GET_SIZE(out) != 0;
        else
            gave = PyObject_IsTrue(out); /* update_into's count */
        if (gave < 0 || (gave && lane_tally((LaneCore *)lane, n) < 0))
            Py_CLEAR(out);
    }
    Py_DECREF(lane);
    Py_DECREF(ctx);
    return out;
}

static PyObject *
stream_update(DirectStreamCore *self, PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames)
{
    if (nargs == 1 && kwnames == NULL && PyBytes_CheckExact(args[0]) && self->lane_is_core
        && self->ctx != NULL && self->ctx != Py_None)
        return stream_run(self, UPDATE, str_update, args, 1, PyBytes_GET_SIZE(args[0]));
    return slow(self, str_slow_update, args, nargs, kwnames);
}

static PyObject *
stream_update_into(DirectStreamCore *self, PyObject *const *args, Py_ssize_t nargs,
                   PyObject *kwnames)
{
    if (nargs == 2 && kwnames == NULL && PyBytes_CheckExact(args[0])
        && PyByteArray_CheckExact(args[1]) && self->lane_is_core && self->ctx != NULL
        && self->ctx != Py_None)
        return stream_run(self, UPDATE_INTO, str_update_into, args, 2,
                          PyBytes_GET_SIZE(args[0]));
    return slow(self, str_slow_update_into, args, nargs, kwnames);
}

static PyMethodDef stream_methods[] = {
    {"update", (PyCFunction)(void (*)(void))stream_update, METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("update(data) -> the output for data (ECB and CBC hold a partial block back)")},
    {"update_into", (PyCFunction)(void (*)(void))stream_update_into,
     METH_FASTCALL | METH_KEYWORDS,
     PyDoc_STR("update_into(data, buf) -> how many bytes of output were written into buf")},
    {NULL},
};

static PyTypeObject DirectStreamCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cryptoffload._directpath.DirectStreamCore",
    .tp_doc = PyDoc_STR("A Cipher context on a lane no engine claims (compiled)."),
    .tp_basicsize = sizeof(DirectStreamCore),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)stream_dealloc,
    .tp_traverse = (traverseproc)stream_traverse,
    .tp_clear = (inquiry)stream_clear,
    .tp_methods = stream_methods,
    .tp_getset = stream_getset,
};

/* -- module ----------------------------------------------------------------------------- */

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *var, *box, *tag;
    if (!PyArg_ParseTuple(args, "O!O!O:configure", &PyContextVar_Type, &var, &PyList_Type,
                          &box, &tag))
        return NULL;
    if (PyList_GET_SIZE(box) != 1) {
        PyErr_SetString(PyExc_ValueError, "the default box must hold exactly one item");
        return NULL;
    }
    if (!PyType_Check(tag) || !PyType_IsSubtype((PyTypeObject *)tag,
                                                (PyTypeObject *)PyExc_Exception)) {
        PyErr_SetString(PyExc_TypeError, "invalid_tag must be an exception class");
        return NULL;
    }
    Py_INCREF(var);
    Py_INCREF(box);
    Py_INCREF(tag);
    Py_XSETREF(current_var, var);
    Py_XSETREF(default_box, box);
    Py_XSETREF(invalid_tag, tag);
    Py_RETURN_NONE;
}

static PyObject *
note_using(PyObject *module, PyObject *unused)
{
    using_seen = 1;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"note_using", note_using, METH_NOARGS,
     PyDoc_STR("note_using(): a `using` block is about to set the ContextVar (from now on the "
               "direct path looks it up)")},
    {"configure", configure, METH_VARARGS,
     PyDoc_STR("configure(current, default_box, invalid_tag): where the provider in force is "
               "found, and the exception a failed tag raises")},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cryptoffload._directpath",
    .m_doc = PyDoc_STR("The AEAD direct path, compiled (see cryptoffload.directpath)."),
    .m_size = -1,
    .m_methods = module_methods,
};

#define INTERN(var, text)                                                              \
    do {                                                                               \
        var = PyUnicode_InternFromString(text);                                        \
        if (var == NULL)                                                               \
            return NULL;                                                               \
    } while (0)

PyMODINIT_FUNC
PyInit__directpath(void)
{
    INTERN(str_encrypt, "encrypt");
    INTERN(str_fold_due, "fold_due");
    INTERN(str_decrypt, "decrypt");
    INTERN(str_encrypt_into, "encrypt_into");
    INTERN(str_decrypt_into, "decrypt_into");
    INTERN(str_slow_encrypt, "_encrypt");
    INTERN(str_slow_decrypt, "_decrypt");
    INTERN(str_slow_encrypt_into, "_encrypt_into");
    INTERN(str_slow_decrypt_into, "_decrypt_into");
    INTERN(str_update, "update");
    INTERN(str_update_into, "update_into");
    INTERN(str_slow_update, "_update_slow");
    INTERN(str_slow_update_into, "_update_into_slow");
    if (PyType_Ready(&SizeLogType) < 0 || PyType_Ready(&LaneCoreType) < 0
        || PyType_Ready(&AeadCoreType) < 0 || PyType_Ready(&ChainedCoreType) < 0
        || PyType_Ready(&DirectStreamCoreType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    Py_INCREF(&LaneCoreType);
    if (PyModule_AddObject(module, "LaneCore", (PyObject *)&LaneCoreType) < 0) {
        Py_DECREF(&LaneCoreType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&AeadCoreType);
    if (PyModule_AddObject(module, "AeadCore", (PyObject *)&AeadCoreType) < 0) {
        Py_DECREF(&AeadCoreType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&ChainedCoreType);
    if (PyModule_AddObject(module, "ChainedCore", (PyObject *)&ChainedCoreType) < 0) {
        Py_DECREF(&ChainedCoreType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&DirectStreamCoreType);
    if (PyModule_AddObject(module, "DirectStreamCore", (PyObject *)&DirectStreamCoreType) < 0) {
        Py_DECREF(&DirectStreamCoreType);
        Py_DECREF(module);
        return NULL;
    }
    if (PyModule_AddIntConstant(module, "TAIL", TAIL) < 0
        || PyModule_AddIntConstant(module, "FOLD_AT", FOLD_AT) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    /* What directpath.py expects (its API): a build left from older sources is not used. */
    if (PyModule_AddIntConstant(module, "API", 6) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&SizeLogType);
    if (PyModule_AddObject(module, "SizeLog", (PyObject *)&SizeLogType) < 0) {
        Py_DECREF(&SizeLogType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
