"""A virtual accelerator: a CPU-backed torch device that places tensors like CUDA does.

``install()`` registers a device called ``vgpu`` (torch's PrivateUse1 backend renamed, with the
Python hooks of ``torch.utils.backend_registration``). Its tensors are wrapper subclasses around
CPU tensors, so every computation is the CPU's, bit for bit; what differs is *placement*, which
behaves the way a CUDA device does and so exposes the device slips that a CPU-only test suite
cannot see:

* mixing a ``vgpu`` tensor with a CPU tensor of one or more dimensions in an op raises
  ``RuntimeError: Expected all tensors to be on the same device`` (CPU scalars, i.e. 0-d tensors,
  mix as on CUDA; CPU index tensors are accepted by indexing, ``x[idx]`` and ``x[idx] = v``, as
  on CUDA; ``copy_`` and ``.to()`` cross devices, as on CUDA);
* ``.numpy()`` raises ``TypeError`` (a device tensor must come to the CPU first);
* a random op on ``vgpu`` wants a ``vgpu`` generator (``torch.Generator(device="vgpu")``), and a
  CPU op refuses one, as CUDA does;
* ``.item()``, ``.tolist()``, ``.cpu()``, ``.to("cpu")``, autograd, ``torch.optim`` and
  ``nn.Module.to`` work.

It is test tooling: nothing in the library imports it. :func:`activate` turns it on for a block
(the ``device`` fixture of ``tests/conftest.py`` runs the device-sensitive tests on ``cpu`` and on
it); :func:`install` turns it on for good (``tests/integration/test_chapters_vgpu.py`` runs every chapter
notebook so). Its own tests: ``tests/unit/test_virtual_accelerator.py``.
``torch.save`` of a ``vgpu`` tensor is not supported (the library's checkpoints hold CPU tensors),
and neither is ``torch.load(map_location="vgpu")``.

>>> import torch
>>> from sts_lib.testing import virtual_accelerator as va
>>> with va.activate() as dev:
...     x = torch.ones(3, device=dev)
...     (x * 2).sum().item()
6.0
>>> with va.activate() as dev:
...     x + torch.ones(3)
Traceback (most recent call last):
...
RuntimeError: Expected all tensors to be on the same device, but found at least two devices,
vgpu:0 and cpu! (in aten.add.Tensor)
"""

from __future__ import annotations

import contextlib
import threading

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

NAME = "vgpu"
DEVICE: torch.device | None = None  # torch.device("vgpu", 0), once install() has named the backend
_CPU = torch.device("cpu")
aten = torch.ops.aten

# Ops that accept CPU index tensors next to device tensors on CUDA (advanced indexing).
_INDEX_OPS = {aten.index.Tensor, aten.index_put.default, aten.index_put_.default, aten._index_put_impl_.default}
# Ops that cross devices on purpose.
_CROSS_OPS = {
    aten.copy_.default,
    aten._to_copy.default,
    aten._copy_from.default,
    aten._copy_from_and_resize.default,
    aten.lift_fresh.default,
}


class VirtualTensor(torch.Tensor):
    """A tensor that says it lives on ``vgpu:0`` and holds a CPU tensor, ``elem``, with its data."""

    elem: torch.Tensor
    __slots__ = ["elem"]
    __torch_function__ = torch._C._disabled_torch_function_impl  # all the work is at the dispatcher

    @staticmethod
    def __new__(cls, elem: torch.Tensor, requires_grad: bool = False):
        r = torch.Tensor._make_wrapper_subclass(
            cls,
            elem.size(),
            strides=elem.stride(),
            storage_offset=elem.storage_offset(),
            dtype=elem.dtype,
            layout=elem.layout,
            device=DEVICE,
            requires_grad=requires_grad,
        )
        r.elem = elem
        return r

    def __repr__(self, *, tensor_contents=None):  # what a user sees in a notebook: CUDA's format
        return repr(self.elem).replace("tensor(", "vtensor(", 1)[:-1] + f", device='{DEVICE}')"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _dispatch(func, args, kwargs or {})

    def __format__(self, spec):  # f"{x:.3f}" of a 0-d tensor works on CUDA (through .item())
        return self.elem.item().__format__(spec) if self.dim() == 0 else object.__format__(self, spec)

    def tolist(self):
        return self.elem.tolist()

    def numpy(self, *args, **kwargs):
        raise TypeError(
            f"can't convert {DEVICE} device type tensor to numpy. "
            "Use Tensor.cpu() to copy the tensor to host memory first."
        )

    def __array__(self, *args, **kwargs):  # np.asarray(x) on a CUDA tensor fails the same way
        self.numpy()


def _wants_device(kwargs) -> bool:
    dev = kwargs.get("device")
    return dev is not None and torch.device(dev).type == NAME


class VirtualGenerator(torch._C.Generator):
    """A generator on ``vgpu``: a CPU generator underneath (so draws equal the CPU's)."""

    @property
    def device(self):
        return DEVICE


def _check_generator(func, args, kwargs) -> None:
    g = kwargs.get("generator")
    if g is None:
        g = next((a for a in args if isinstance(a, torch._C.Generator)), None)
    if g is None:
        return
    on_device = _wants_device(kwargs) or any(isinstance(a, VirtualTensor) for a in args)
    if on_device and not isinstance(g, VirtualGenerator):
        raise RuntimeError(f"Expected a '{NAME}' device type for generator but found 'cpu' (in {func})")
    if not on_device and isinstance(g, VirtualGenerator):
        raise RuntimeError(f"Expected a 'cpu' device type for generator but found '{NAME}' (in {func})")


def _deep(items) -> bool:
    """Whether ``items`` (a list or tuple) holds a container: past the one level :func:`_tensors` and
    :func:`_map` walk themselves."""
    return any(isinstance(x, (list, tuple, dict)) for x in items)


def _tensors(args, kwargs) -> list[torch.Tensor]:
    """The tensors among an op's arguments. An aten schema nests them at most one level (``Tensor[]``,
    ``Tensor?[]``), so one level finds them all; anything deeper goes through torch's pytree, which walks any
    depth but took two thirds of a training step's time here when it walked every op."""
    out = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, torch.Tensor):
            out.append(a)
        elif isinstance(a, dict) or (isinstance(a, (list, tuple)) and _deep(a)):
            return [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        elif isinstance(a, (list, tuple)):
            out += [x for x in a if isinstance(x, torch.Tensor)]
    return out


def _map(fn, x):
    """``fn`` on ``x``, or on each item of a list or tuple (one level, as :func:`_tensors`; a structseq or a
    deeper nesting through torch's pytree)."""
    if type(x) in (list, tuple) and not _deep(x):
        return type(x)(fn(y) for y in x)
    if isinstance(x, (list, tuple, dict)):
        return tree_map(fn, x)
    return fn(x)


def _dispatch(func, args, kwargs):
    tensors = _tensors(args, kwargs)
    on_device = any(isinstance(t, VirtualTensor) for t in tensors) or _wants_device(kwargs)
    if not on_device:
        return func(*args, **kwargs)
    if func not in _CROSS_OPS:
        for t in tensors:
            if isinstance(t, VirtualTensor) or t.dim() == 0:
                continue
            if func in _INDEX_OPS and t.dtype in (torch.long, torch.int, torch.bool) and t is not args[0]:
                continue
            raise RuntimeError(
                "Expected all tensors to be on the same device, but found at least two devices, "
                f"{DEVICE} and {t.device}! (in {func})"
            )
    if func is aten._to_copy.default:
        src = args[0]
        inner = src.elem if isinstance(src, VirtualTensor) else src
        dev = kwargs.get("device")
        kw = {k: v for k, v in kwargs.items() if k != "device"}
        out = aten._to_copy.default(inner, **kw)
        if dev is None:
            dev = src.device
        return VirtualTensor(out) if torch.device(dev).type == NAME else out
    if func is aten.copy_.default:
        dst, src = args[0], args[1]
        inner_src = src.elem if isinstance(src, VirtualTensor) else src
        if isinstance(dst, VirtualTensor):
            dst.elem.copy_(inner_src, *args[2:], **kwargs)
        else:
            dst.copy_(inner_src, *args[2:], **kwargs)
        return dst
    unwrapped = {id(t.elem): t for t in tensors if isinstance(t, VirtualTensor)}
    a, kw = tuple(_map(_unwrap, x) for x in args), {k: _map(_unwrap, v) for k, v in kwargs.items()}
    if _wants_device(kw):
        kw["device"] = _CPU
    out = func(*a, **kw)
    return _map(lambda o: _wrap(o, unwrapped), out)


def _unwrap(x):
    if isinstance(x, VirtualTensor):
        return x.elem
    if isinstance(x, VirtualGenerator):
        return x  # a CPU generator underneath: the C++ op accepts it
    return x


def _wrap(o, unwrapped):
    if isinstance(o, torch.Tensor) and not isinstance(o, VirtualTensor):
        if id(o) in unwrapped:  # an in-place or out= op returns its argument itself
            return unwrapped[id(o)]
        if o.device.type == "cpu":
            return VirtualTensor(o)
    return o


class _GeneratorCheck(TorchFunctionMode):
    """Checks generators where the Python object is still in hand (the dispatcher sees a copy)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        _check_generator(func, args, kwargs)
        return func(*args, **kwargs)


class _Mode(TorchDispatchMode):
    """Sees every op: factories with ``device='vgpu'``, ``.to('vgpu')`` of CPU tensors, generator checks."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return _dispatch(func, args, kwargs or {})


class _GeneratorMeta(type(torch._C.Generator)):
    def __instancecheck__(cls, obj):
        return isinstance(obj, torch._C.Generator)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, torch._C.Generator)


class _Generator(torch._C.Generator, metaclass=_GeneratorMeta):
    """``torch.Generator`` as installed: ``torch.Generator(device='vgpu')`` gives a VirtualGenerator."""

    def __new__(cls, device=None):
        if device is not None and torch.device(device).type == NAME:
            return VirtualGenerator()
        return torch._C.Generator(device) if device is not None else torch._C.Generator()


class _Backend:
    """The module torch looks up as ``torch.vgpu``."""

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def device_count() -> int:
        return 1

    @staticmethod
    def current_device() -> int:
        return 0

    @staticmethod
    def _is_in_bad_fork() -> bool:
        return False

    @staticmethod
    def manual_seed_all(seed: int) -> None:
        pass  # called by torch.manual_seed; the device draws with the CPU's default generator, just seeded


_lock = threading.Lock()
_registered = False
_permanent: list | None = None


_LIB = None


def _register_factories() -> None:
    """Kernels at the backend itself for allocation and host-to-device copies, which C++ reaches without
    the dispatch modes: autograd's device thread materialises zero gradients with them, and
    ``torch.tensor(data, device=)`` and indexing with a Python list copy through ``_copy_from``."""
    global _LIB
    _LIB = torch.library.Library("aten", "IMPL")

    def empty_strided(size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
        return VirtualTensor(torch.empty_strided(size, stride, dtype=dtype, layout=layout, device="cpu"))

    def empty(size, *, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
        return VirtualTensor(torch.empty(size, dtype=dtype, layout=layout, device="cpu", memory_format=memory_format))

    def copy_from(src, dst, non_blocking=False):  # what C++ calls inside torch.tensor(..., device=) and x[list]
        inner = src.elem if isinstance(src, VirtualTensor) else src
        (dst.elem if isinstance(dst, VirtualTensor) else dst).copy_(inner)
        return dst

    _LIB.impl("empty_strided", empty_strided, "PrivateUse1")
    _LIB.impl("empty.memory_format", empty, "PrivateUse1")
    _LIB.impl("_copy_from", copy_from, "PrivateUse1")


def register() -> torch.device:
    """Name the backend ``vgpu`` and make ``torch.Generator(device='vgpu')`` work (once per process).

    Registering changes nothing for CPU code; the device only behaves like one inside
    :func:`activate` (or after :func:`install`). Call it before the process's first backward pass:
    autograd's engine sizes its per-device queues then, from the device types registered so far
    (a later backward on ``vgpu`` fails with an internal assert about ``device_ready_queues_``).
    """
    global _registered, DEVICE
    with _lock:
        if not _registered:
            from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

            _setup_privateuseone_for_python_backend(NAME, backend_module=_Backend())
            torch.Generator = _Generator
            DEVICE = torch.device(NAME, 0)
            _register_factories()
            _registered = True
    return DEVICE


@contextlib.contextmanager
def activate():
    """Within the block, on this thread: factories and ``.to()`` reach ``vgpu``, and generators are checked.

    >>> import torch
    >>> from sts_lib.testing import virtual_accelerator as va
    >>> with va.activate() as dev:
    ...     torch.zeros(2, device=dev).device
    device(type='vgpu', index=0)
    """
    dev = register()
    with _GeneratorCheck(), _Mode():
        yield dev


def install() -> torch.device:
    """Register ``vgpu`` and keep it active on this thread for the rest of the process (a notebook
    kernel's first cell); returns its device."""
    global _permanent
    dev = register()
    with _lock:
        if _permanent is None:
            _permanent = [_GeneratorCheck(), _Mode()]
            for mode in _permanent:
                mode.__enter__()
    return dev
