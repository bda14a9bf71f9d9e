"""Work tokens from Python: say which unit of your work (a request, a step, a batch) the calls on a
thread belong to, and where it moves between threads.

    tok = causeway.token(hi, lo, generation)     # 128 bits and a generation, all yours to choose
    with tok:                                    # begin ... end on this thread
        launch(...)
        causeway.handoff(tok, to=worker_tid)     # the work moves: to a thread id or a queue id
    # on the worker thread:
    with causeway.accept(tok):                   # accept now ... end on leaving
        launch(...)

The functions are the shim's (``causeway_token_*`` in libcauseway.so, ``include/causeway.h``),
found through ``ctypes.CDLL(None)`` when the program runs under ``LD_PRELOAD`` of the shim (``causeway
record``); elsewhere every call does nothing. ``docs/format.md``, "Work tokens", says what is recorded.
"""

import ctypes as _ct
import threading as _threading
from collections import namedtuple as _namedtuple

__all__ = ["Token", "token", "begin", "end", "handoff", "accept", "tokens_enabled"]

_U64 = 1 << 64
_U32 = 1 << 32
_lock = _threading.Lock()
_fns = None


def _functions():
    """The shim's four functions (or None each), looked up once."""
    global _fns
    if _fns is None:
        with _lock:
            if _fns is None:
                try:
                    lib = _ct.CDLL(None)
                except OSError:
                    lib = None
                u64, u32 = _ct.c_uint64, _ct.c_uint32
                found = {}
                for name, args in (
                    ("begin", (u64, u64, u32)),
                    ("end", (u64, u64, u32)),
                    ("handoff", (u64, u64, u32, u64)),
                    ("accept", (u64, u64, u32)),
                ):
                    f = getattr(lib, "causeway_token_" + name, None) if lib is not None else None
                    if f is not None:
                        f.argtypes = args
                        f.restype = None
                    found[name] = f
                _fns = found
    return _fns


def tokens_enabled():
    """Whether the shim's token functions are loaded (the program runs under the shim)."""
    return _functions()["begin"] is not None


def _check(value, bound, what):
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < bound:
        raise ValueError(f"{what} must be an int in [0, {bound}), not {value!r}")
    return value


class Token(_namedtuple("Token", "hi lo generation")):
    """A work token: ``hi`` and ``lo`` (64 bits each) and ``generation`` (32 bits). Used as a context
    manager it begins on entry and ends on exit, on the current thread."""

    __slots__ = ()

    def __enter__(self):
        begin(self)
        return self

    def __exit__(self, *exc):
        end(self)
        return False


def token(hi, lo, generation=0):
    """The token (hi, lo, generation); ``with causeway.token(...)`` begins and ends it."""
    return Token(_check(hi, _U64, "hi"), _check(lo, _U64, "lo"), _check(generation, _U32, "generation"))


def _as_token(t):
    return t if isinstance(t, Token) else token(*t)


def _call(name, t, *extra):
    f = _functions()[name]
    if f is not None:
        f(t.hi, t.lo, t.generation, *extra)


def begin(t):
    """Calls on this thread from now on belong to token ``t`` (a Token or a (hi, lo, generation))."""
    _call("begin", _as_token(t))


def end(t):
    """Token ``t`` ends on this thread."""
    _call("end", _as_token(t))


def handoff(t, to=0):
    """This thread hands token ``t`` to ``to``: a thread's native id (``threading.get_native_id()``)
    or any nonzero id you give a queue; 0 = not said. The receiver calls ``accept``."""
    _call("handoff", _as_token(t), _check(to, _U64, "to"))


class _Accepted:
    __slots__ = ("token",)

    def __init__(self, t):
        self.token = t

    def __enter__(self):
        return self.token

    def __exit__(self, *exc):
        end(self.token)
        return False


def accept(t):
    """This thread takes over token ``t`` handed off to it, now. Used as a context manager, the
    token ends on this thread on leaving it; otherwise call ``end`` yourself."""
    t = _as_token(t)
    _call("accept", t)
    return _Accepted(t)
