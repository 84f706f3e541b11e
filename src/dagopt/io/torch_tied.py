"""Tied weights registered under one name while a module is exported.

``torch.export`` lifts a tied weight once per name it is registered under but the
traced graph reads only the first, and the joint forward + backward trace then fails
with "Found a parameter that did not receive a gradient": every language model whose
LM head is tied to its token embedding (GPT-2, GPT-Neo, Llama-style models with
``tie_word_embeddings``), T5's embedding shared by its encoder and decoder.
``registered_once(module)`` registers each shared submodule and each tied parameter
under its first name only for the duration of the export and restores the module
exactly afterwards (same ``named_parameters``, ``named_modules`` and ``state_dict``
keys, in the same order). While it holds, the module computes exactly as before: a
shared submodule stays an attribute of its other parents, and a tied parameter is read
from its first owner by a forward pre-hook.
"""

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Any

import torch


@contextlib.contextmanager
def registered_once(module: torch.nn.Module) -> Iterator[None]:
    """Within the block, each shared submodule and tied parameter of ``module`` has one name."""
    saved_modules: dict[int, tuple[torch.nn.Module, dict[str, Any]]] = {}
    saved_parameters: dict[int, tuple[torch.nn.Module, dict[str, Any]]] = {}
    hooks: list[Any] = []
    try:
        _unregister_shared_modules(module, saved_modules)
        _unregister_tied_parameters(module, saved_parameters, hooks)
        yield
    finally:
        for hook in hooks:
            hook.remove()
        for owner, registered in chain(saved_modules.values(), saved_parameters.values()):
            for name in registered:
                owner.__dict__.pop(name, None)
        for owner, registered in saved_modules.values():
            owner._modules.clear()
            owner._modules.update(registered)
        for owner, registered in saved_parameters.values():
            owner._parameters.clear()
            owner._parameters.update(registered)


def _unregister_shared_modules(
    module: torch.nn.Module, saved: dict[int, tuple[torch.nn.Module, dict[str, Any]]]
) -> None:
    """A submodule with tensors met a second time becomes a plain attribute of that parent."""
    seen: set[int] = set()
    for parent in list(module.modules()):
        for name, child in list(parent._modules.items()):
            if child is None:
                continue
            if id(child) in seen and _holds_tensors(child):
                saved.setdefault(id(parent), (parent, dict(parent._modules)))
                del parent._modules[name]
                object.__setattr__(parent, name, child)
            seen.add(id(child))


def _unregister_tied_parameters(
    module: torch.nn.Module,
    saved: dict[int, tuple[torch.nn.Module, dict[str, Any]]],
    hooks: list[Any],
) -> None:
    """A parameter met a second time is read from its first owner by a forward pre-hook."""
    owners: dict[int, tuple[torch.nn.Module, str]] = {}
    for submodule in module.modules():
        for name, parameter in list(submodule._parameters.items()):
            if parameter is None:
                continue
            if id(parameter) not in owners:
                owners[id(parameter)] = (submodule, name)
                continue
            saved.setdefault(id(submodule), (submodule, dict(submodule._parameters)))
            del submodule._parameters[name]
            object.__setattr__(submodule, name, parameter)
            hooks.append(
                submodule.register_forward_pre_hook(_TiedParameter(name, *owners[id(parameter)]))
            )


def _holds_tensors(module: torch.nn.Module) -> bool:
    """Whether ``module`` has a parameter or buffer that ``torch.export`` could lift twice
    (a shared pooling or flatten has none and stays registered everywhere, so a
    ``ModuleList`` that holds it still iterates over it)."""
    return next(chain(module.parameters(), module.buffers()), None) is not None


@dataclass(frozen=True)
class _TiedParameter:
    """Forward pre-hook: set ``module.<attr>`` to the current ``owner.<owner_attr>``."""

    attr: str
    owner: Any
    owner_attr: str

    def __call__(self, module: Any, args: Any) -> None:
        object.__setattr__(module, self.attr, getattr(self.owner, self.owner_attr))
