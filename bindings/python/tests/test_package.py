# SPDX-License-Identifier: MIT OR Apache-2.0
"""The package as a user gets it: its version, its docstrings, its typing
(py.typed and the stubs of the compiled module). These tests read what the
imported package ships, so they check the build tree under ctest and the
installed package under the pip acceptance test alike."""

import ast
import builtins
import importlib.machinery
import inspect
import re
import types
from pathlib import Path

import pytest

import rlx_attn_mask as rlx
from rlx_attn_mask import _core

SOURCE_ROOT = Path(__file__).resolve().parents[3]
PACKAGE_DIR = Path(rlx.__file__).resolve().parent
STUB_DIR = PACKAGE_DIR / "_core"

# Special methods whose presence changes what a type checker accepts
# (len(), [], ==, hash(), construction): the stubs must carry them too.
TYPED_DUNDERS = {"__init__", "__len__", "__getitem__", "__iter__",
                 "__contains__", "__eq__", "__hash__", "__call__"}


def cmake_project_version():
    text = (SOURCE_ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
    match = re.search(r"^\s*project\s*\([^)]*?\bVERSION\s+([0-9][0-9.]*)",
                      text, re.MULTILINE | re.IGNORECASE)
    assert match, "no project(... VERSION x.y.z) in the top CMakeLists.txt"
    return match.group(1)


def test_version_is_the_cmake_project_version():
    assert rlx.__version__ == cmake_project_version()
    assert rlx.__version__ == _core.__version__


def test_core_is_the_extension_not_the_stub_directory():
    # _core/ beside _core*.so holds stubs only; Python must import the .so.
    assert _core.__file__ is not None
    assert _core.__file__.endswith(
        tuple(importlib.machinery.EXTENSION_SUFFIXES))


# Docstrings ----------------------------------------------------------------

def public(names):
    return [n for n in names if not n.startswith("_")]


def inherited_slot(obj):
    """object's own __init__ & co., which a pybind11 class without a
    constructor (BlockMask) shows: nothing of this module's."""
    return type(obj).__name__ in ("wrapper_descriptor", "method-wrapper",
                                  "slot wrapper")


def documented(obj):
    """A docstring with more than pybind11's generated signature line."""
    doc = inspect.getdoc(obj) or ""
    if isinstance(obj, (types.BuiltinFunctionType, types.MethodType)) or \
            type(obj).__name__ == "instancemethod":
        name = getattr(obj, "__name__", "")
        lines = doc.splitlines()
        if lines and lines[0].startswith(name + "("):
            doc = "\n".join(lines[1:])
    return doc.strip() != ""


def missing_docstrings(module, prefix):
    missing = []
    for name in public(dir(module)):
        obj = getattr(module, name)
        where = f"{prefix}.{name}"
        if isinstance(obj, types.ModuleType):
            if obj.__name__.startswith(rlx.__name__):
                if not documented(obj):
                    missing.append(where)
                missing += missing_docstrings(obj, where)
            continue
        if getattr(obj, "__module__", "").split(".")[0] not in (
                rlx.__name__, "builtins") and not inspect.isbuiltin(obj):
            continue  # imported helpers (typing, operator)
        if inspect.isclass(obj):
            if not documented(obj):
                missing.append(where)
            for attr, raw in vars(obj).items():
                if attr.startswith("_") and attr != "__init__" or \
                        inherited_slot(raw):
                    continue
                if type(raw).__name__ == "pybind11_static_property":
                    continue  # a class constant (MAX_CAPPED_BUCKETS)
                if isinstance(raw, property):
                    ok = bool((raw.__doc__ or "").strip())
                else:
                    member = getattr(obj, attr)
                    if not callable(member):
                        continue  # a constant: int, float
                    ok = documented(member)
                if not ok:
                    missing.append(f"{where}.{attr}")
        elif callable(obj):
            if not documented(obj):
                missing.append(where)
    return missing


def test_every_public_name_has_a_docstring():
    assert documented(rlx)
    assert missing_docstrings(rlx, "rlx_attn_mask") == []
    assert missing_docstrings(_core, "_core") == []


# Stubs ---------------------------------------------------------------------

def stub_tree(path):
    source = path.read_text(encoding="utf-8")
    compile(source, str(path), "exec", dont_inherit=True)  # as py_compile
    return ast.parse(source, str(path))


def stub_names(tree):
    """{name: [nodes]} of a stub's top level; a class is
    {name: {member: [nodes]}}."""
    names = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.ClassDef):
            members = {}
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    members.setdefault(item.name, []).append(item)
                elif isinstance(item, ast.AnnAssign):
                    members[item.target.id] = [item]
            names[node.name] = members
        elif isinstance(node, ast.AnnAssign):
            names[node.target.id] = [node]
        elif isinstance(node, ast.ImportFrom) and node.module in (None, ""):
            for alias in node.names:  # from . import x as x: a submodule
                names[alias.asname or alias.name] = [node]
    return names


def runtime_signature(obj):
    """pybind11's signature line, parsed: (positional names, keyword-only
    names, number of defaults)."""
    line = (obj.__doc__ or "").splitlines()[0]
    head = line.split(" -> ")[0] if " -> " in line else line
    fn = ast.parse(f"def {head}: pass").body[0]
    a = fn.args
    return ([p.arg for p in a.args], [p.arg for p in a.kwonlyargs],
            len(a.defaults) + sum(d is not None for d in a.kw_defaults))


def stub_signature(node):
    a = node.args
    return ([p.arg for p in a.posonlyargs + a.args],
            [p.arg for p in a.kwonlyargs],
            len(a.defaults) + sum(d is not None for d in a.kw_defaults))


def same_signature(stub, runtime):
    # pybind11 names an argument it was given no name for arg0, arg1, ...:
    # positional only, so the stub may call it anything.
    (s_pos, s_kw, s_defaults), (r_pos, r_kw, r_defaults) = stub, runtime
    return (len(s_pos) == len(r_pos) and s_kw == r_kw and
            s_defaults == r_defaults and
            all(r == s or re.fullmatch(r"arg[0-9]+", r)
                for s, r in zip(s_pos, r_pos)))


def check_function(where, obj, nodes, errors):
    want = runtime_signature(obj)
    if not any(same_signature(stub_signature(n), want) for n in nodes):
        errors.append(f"{where}: stub signature {stub_signature(nodes[0])} "
                      f"differs from the module's {want}")


def check_module(module, path, errors):
    names = stub_names(stub_tree(path))
    for name in public(dir(module)) + (
            ["__version__"] if module is _core else []):
        obj = getattr(module, name)
        where = f"{module.__name__}.{name}"
        if name not in names:
            errors.append(f"{where} is not in {path.name}")
            continue
        if isinstance(obj, types.ModuleType):
            check_module(obj, path.parent / f"{name}.pyi", errors)
        elif inspect.isclass(obj):
            members = names[name]
            if not isinstance(members, dict):
                errors.append(f"{where} is not a class in {path.name}")
                continue
            for attr, raw in vars(obj).items():
                # __hash__ = None: unhashable (pybind11 with __eq__ alone).
                if attr.startswith("_") and attr not in TYPED_DUNDERS or \
                        inherited_slot(raw) or raw is None:
                    continue
                if attr not in members:
                    errors.append(f"{where}.{attr} is not in {path.name}")
                    continue
                member = getattr(obj, attr)
                if not isinstance(raw, property) and callable(member):
                    check_function(f"{where}.{attr}", member, members[attr],
                                   errors)
        elif callable(obj):
            check_function(where, obj, names[name], errors)


def test_py_typed_and_stubs_are_shipped():
    assert (PACKAGE_DIR / "py.typed").is_file()
    assert (STUB_DIR / "__init__.pyi").is_file()
    assert (STUB_DIR / "ladder_cost.pyi").is_file()


def test_stubs_hold_every_public_name_with_its_signature():
    errors = []
    check_module(_core, STUB_DIR / "__init__.pyi", errors)
    assert errors == []


def test_stub_names_are_not_more_than_the_module():
    # A name in the stubs that the module lacks would type-check and fail.
    names = stub_names(stub_tree(STUB_DIR / "__init__.pyi"))
    extra = [n for n in names if not n.startswith("_") and
             not hasattr(_core, n)]
    assert extra == []
    for name, members in names.items():
        if isinstance(members, dict) and hasattr(_core, name):
            cls = getattr(_core, name)
            assert [m for m in members if not hasattr(cls, m)] == [], name


def defined_names(tree):
    names = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def annotation_names(tree):
    """The names the stubs' annotations and defaults use (what a type
    checker must resolve)."""
    used = set()
    for node in ast.walk(tree):
        exprs = []
        if isinstance(node, ast.arg) and node.annotation is not None:
            exprs.append(node.annotation)
        elif isinstance(node, ast.FunctionDef):
            exprs += [node.returns] if node.returns is not None else []
            exprs += node.decorator_list
        elif isinstance(node, ast.AnnAssign):
            exprs.append(node.annotation)
            exprs += [node.value] if node.value is not None else []
        elif isinstance(node, ast.Assign):
            exprs.append(node.value)
        elif isinstance(node, ast.ClassDef):
            exprs += node.bases
        for expr in exprs:
            used |= {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    return used


@pytest.mark.parametrize("stub", ["__init__.pyi", "ladder_cost.pyi"])
def test_stub_annotations_name_what_the_stubs_define(stub):
    # No type checker is packaged for Debian 12: this catches at least a
    # misspelt or unimported name, which would make the checker's type Any.
    tree = stub_tree(STUB_DIR / stub)
    assert annotation_names(tree) - defined_names(tree) == set()


@pytest.mark.parametrize("name", ["__init__", "bucketed_cache", "models"])
def test_pure_python_modules_compile(name):
    stub_tree(PACKAGE_DIR / f"{name}.py")


@pytest.mark.parametrize("name", ["bucketed_cache", "models"])
def test_pure_python_modules_are_annotated(name):
    # The pure-Python modules carry their types inline (py.typed), as the
    # stubs carry the extension's: every public function and method has
    # its parameters and its return annotated.
    tree = stub_tree(PACKAGE_DIR / f"{name}.py")
    missing = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef) or \
                node.name.startswith("_") and node.name != "__init__":
            continue
        a = node.args
        params = [p for p in a.posonlyargs + a.args + a.kwonlyargs
                  if p.arg not in ("self", "cls")]
        if node.returns is None or any(p.annotation is None
                                       for p in params):
            missing.append(f"{name}.{node.name}")
    assert missing == []
