"""The grader's integrity check of a learner's kernel: has learner code changed the machinery the checks rely on?

The hidden checks run in the same kernel as the learner's code, after it, so
learner code could have changed what they rely on: an input transformer that
rewrites the cells after it, a patched `showtraceback`, `sys.excepthook`, a
builtin, an event callback, or a function of the package, moto or IPython
changed in memory. Before every hidden cell the grader sends a short guard
cell of its own (a fresh nonce each time); it reports what differs from a
clean kernel. Before the first hidden cell and after the last, the deep guard
also compares the code of every function in the modules the checks use with
digests a clean Python computed before any learner kernel started. Anything
found fails the learner's checks closed and is named in the report.

Learner code runs in the same process and could in principle imitate even
this guard; what it cannot do is use one of the generic tricks above without
being named, or reach the grader's record (another user's files).

A little over one sitting (~345 lines) on purpose: a security check is read
whole, so the clean digests, the guard cell and its verdict stay together.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

MARKER = "MERCADOFRESCO-GUARD"
REFERENCE_MODULES = (
    "moto.core.base_backend",
    "moto.core.responses",
    "moto.sqs.models",
    "moto.sqs.responses",
    "moto.dynamodb.models",
    "moto.dynamodb.responses",
    "botocore.client",
    "botocore.endpoint",
    "boto3.session",
    "IPython.core.interactiveshell",
    "IPython.core.inputtransformer2",
    "IPython.core.compilerop",
    "ipykernel.compiler",
    "codeop",
    "ast",
    "ipykernel.ipkernel",
    "ipykernel.kernelbase",
    "ipykernel.zmqshell",
    "ipykernel.iostream",
    "json",
    "functools",
    "contextlib",
    "dataclasses",
    "random",
    "copy",
)
SHELL_METHODS = (
    "run_cell",
    "run_cell_async",
    "_run_cell",
    "should_run_async",
    "transform_cell",
    "transform_ast",
    "run_ast_nodes",
    "run_code",
    "showtraceback",
    "_showtraceback",
    "showsyntaxerror",
    "excepthook",
    "user_expressions",
    "ev",
    "ex",
)
KERNEL_METHODS = ("do_execute", "execute_request", "send_response", "_publish_execute_input", "_publish_status")
CHECKED_BUILTINS = [
    "print",
    "len",
    "set",
    "sorted",
    "dict",
    "list",
    "tuple",
    "int",
    "float",
    "str",
    "bool",
    "any",
    "all",
    "max",
    "min",
    "sum",
    "abs",
    "isinstance",
    "getattr",
    "hasattr",
    "globals",
    "range",
    "enumerate",
    "zip",
    "repr",
    "type",
    "id",
    "iter",
    "next",
    "exec",
    "eval",
    "compile",
    "__import__",
    "AssertionError",
    "Exception",
    "BaseException",
    "StopIteration",
    "SystemExit",
    "KeyboardInterrupt",
]

# The code below runs twice: in a clean Python (the reference) and in the learner's kernel (the guard cell).
LIBRARY = r"""
def _mf_guard_library():
    import hashlib, sys, types

    def code_digest(code):
        parts = [code.co_code, repr(code.co_names).encode(), repr(code.co_varnames).encode()]
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                parts.append(code_digest(const).encode())
            elif isinstance(const, frozenset):
                parts.append(repr(sorted(map(repr, const))).encode())
            else:
                parts.append(repr(const).encode())
        return hashlib.sha1(b"\0".join(parts)).hexdigest()[:16]

    def value_digest(value):
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            return "property:" + "/".join(value_digest(f) for f in (value.fget, value.fset) if f is not None)
        code = getattr(getattr(value, "__func__", value), "__code__", None)
        return code_digest(code) if isinstance(code, types.CodeType) else type(value).__name__

    def module_functions(module):
        found = {}
        for name, value in list(vars(module).items()):
            if getattr(value, "__module__", None) != module.__name__:
                continue
            if isinstance(value, types.FunctionType):
                found[name] = value_digest(value)
            elif isinstance(value, type):
                for attr, member in list(vars(value).items()):
                    if isinstance(member, (types.FunctionType, staticmethod, classmethod, property)):
                        found[f"{name}.{attr}"] = value_digest(member)
        return found

    def module_digest(functions):
        text = "\n".join(f"{name}={digest}" for name, digest in sorted(functions.items()))
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    return code_digest, value_digest, module_functions, module_digest
"""

REFERENCE_SCRIPT = (
    LIBRARY
    + r"""
import importlib, json, pkgutil, sys
import mercadofresco
code_digest, value_digest, module_functions, module_digest = _mf_guard_library()
names = [m.name for m in pkgutil.walk_packages(mercadofresco.__path__, "mercadofresco.")]
package, others = {}, {}
for name in names:
    if ".course." in name or name.endswith(".__main__"):
        continue
    try:
        package[name] = module_functions(importlib.import_module(name))
    except Exception:
        pass
for name in json.loads(sys.argv[1]):
    try:
        others[name] = [module_digest(module_functions(importlib.import_module(name)))]
    except Exception:
        pass
# The workbook's own narrow patch of moto's SQS (world.build applies it): its digests are accepted too.
from mercadofresco import moto_speedups
_speedups = moto_speedups.apply()
for name in others:
    digest = module_digest(module_functions(sys.modules[name]))
    if digest not in others[name]:
        others[name].append(digest)
_speedups.undo()
from ipykernel.zmqshell import ZMQInteractiveShell
from ipykernel.ipkernel import IPythonKernel
from ipykernel.iostream import OutStream
shell = {name: value_digest(getattr(ZMQInteractiveShell, name)) for name in json.loads(sys.argv[2])}
kernel = {
    name: value_digest(getattr(IPythonKernel, name)) for name in json.loads(sys.argv[3]) if hasattr(IPythonKernel, name)
}
shell["<OutStream.write>"] = value_digest(OutStream.write)
print(json.dumps({"package": package, "modules": others, "shell": shell, "kernel": kernel}))
"""
)

GUARD = r"""
def _mf_guard(nonce, reference, deep):
    import builtins, sys, threading, types
    code_digest, value_digest, module_functions, module_digest = _mf_guard_library()
    found = []
    ip = sys.modules["IPython.core.interactiveshell"].InteractiveShell._instance
    cleanup = [getattr(t, "__name__", type(t).__name__) for t in ip.input_transformers_cleanup]
    if cleanup != ["leading_empty_lines", "leading_indent", "PromptStripper", "PromptStripper"]:
        found.append(f"input transformers changed: {cleanup}")
    manager = ip.input_transformer_manager
    if [getattr(t, "__name__", "?") for t in manager.line_transforms] != ["cell_magic"]:
        found.append("line transformers changed")
    if [t.__name__ for t in manager.token_transformers] != ["MagicAssign", "SystemAssign", "EscapedCommand", "HelpEnd"]:
        found.append("token transformers changed")
    if ip.input_transformers_post or ip.ast_transformers:
        found.append("input_transformers_post or ast_transformers registered")
    if type(ip.compile).__module__ != "ipykernel.compiler" or type(ip.compile).__name__ != "XCachingCompiler":
        found.append("the shell's compiler was replaced")
    machinery = {
        "compiler": ip.compile,
        "input transformer manager": ip.input_transformer_manager,
        "display hook": ip.displayhook,
        "display publisher": ip.display_pub,
        "event manager": ip.events,
        "builtin trap": ip.builtin_trap,
        "session": ip.kernel.session,
    }
    for label, part in machinery.items():  # a method replaced on the object itself (compile.ast_parse = ...)
        for name, value in list(vars(part).items()):
            if callable(value) and not isinstance(value, type) and callable(getattr(type(part), name, None)):
                found.append(f"the {label}'s {name} was replaced")
    for name, expected in reference["shell"].items():
        if name.startswith("<"):
            continue
        value = getattr(ip, name, None)
        if getattr(value, "__self__", None) is not ip or value_digest(value) != expected:
            found.append(f"the shell's {name} was replaced")
    for name, expected in reference["kernel"].items():
        value = getattr(ip.kernel, name, None)
        if getattr(value, "__self__", None) is not ip.kernel or value_digest(value) != expected:
            found.append(f"the kernel's {name} was replaced")
    hook = sys.excepthook
    if getattr(hook, "__self__", None) is not ip or value_digest(hook) != reference["shell"]["excepthook"]:
        found.append("sys.excepthook was replaced")
    for stream in (sys.stdout, sys.stderr):
        write = stream.write  # IPython tees the stream through a closure of its own (checked by the deep guard)
        teed = getattr(write, "__qualname__", "") == "InteractiveShell._tee.<locals>.write"
        clean = teed or value_digest(write) == reference["shell"]["<OutStream.write>"]
        if type(stream).__name__ != "OutStream" or not clean:
            found.append("sys.stdout or sys.stderr was replaced")
    if sys.gettrace() or sys.getprofile() or threading._trace_hook or threading._profile_hook:
        found.append("a trace or profile function is set")
    for name in dir(builtins):
        value = getattr(builtins, name)
        if not callable(value):
            continue
        home = getattr(getattr(value, "__func__", value), "__module__", None)
        if home is None:  # a builtin function: its home is the module it is bound to
            home = getattr(getattr(value, "__self__", None), "__name__", "builtins")
        if str(home).split(".")[0] not in BUILTIN_HOMES:
            found.append(f"builtins.{name} was replaced")
    if ip.user_ns.get("__builtins__", builtins) not in (builtins, vars(builtins)):
        found.append("__builtins__ was replaced")
    for name in reference["builtins"]:
        if name in ip.user_ns:
            found.append(f"the notebook shadows the builtin {name}")
    for event, callbacks in ip.events.callbacks.items():
        for callback in callbacks:
            home = str(getattr(callback, "__module__", "") or type(callback).__module__)
            if home.split(".")[0] not in ("IPython", "ipykernel", "matplotlib_inline", "matplotlib", "ipywidgets"):
                found.append(f"an event callback on {event} ({getattr(callback, '__name__', '?')})")
    if deep:
        for name, expected in reference["package"].items():
            module = sys.modules.get(name)
            if module is None:
                continue
            actual = module_functions(module)
            changed = sorted(k for k, v in expected.items() if actual.get(k) != v)
            if changed:
                found.append(f"{name} changed in memory: {', '.join(changed[:5])}")
        for name, expected in reference["modules"].items():
            module = sys.modules.get(name)
            if module is not None and module_digest(module_functions(module)) not in expected:
                found.append(f"{name} changed in memory")
    print(nonce, repr([str(item) for item in found]))


BUILTIN_HOMES = ("builtins", "IPython", "ipykernel", "_sitebuiltins", "_frozen_importlib", "io", "_io", "_pydev_bundle")
"""


def reference(python: str = sys.executable, env: dict[str, str] | None = None) -> dict:
    """Digests of the clean machinery and modules, computed by a fresh Python that ran no learner code."""
    args = [json.dumps(REFERENCE_MODULES), json.dumps(SHELL_METHODS), json.dumps(KERNEL_METHODS)]
    result = subprocess.run(
        [python, "-c", REFERENCE_SCRIPT, *args], capture_output=True, text=True, check=True, env=env, timeout=300
    )
    data = json.loads(result.stdout.strip().splitlines()[-1])
    return data | {"builtins": CHECKED_BUILTINS}


def cached_reference(cache_dir: Path) -> dict:
    """`reference()`, kept on disk until the package or an installed library changes (it takes a few seconds)."""
    from importlib import metadata

    import mercadofresco

    package = Path(mercadofresco.__file__).parent
    libraries = ("moto", "botocore", "boto3", "ipython", "ipykernel")
    stamp = [sys.version, *(f"{name}={metadata.version(name)}" for name in libraries)]
    stamp += [f"{p}:{p.stat().st_mtime_ns}:{p.stat().st_size}" for p in sorted(package.rglob("*.py"))]
    key = hashlib.sha256("\n".join(stamp).encode()).hexdigest()[:20]
    path = cache_dir / f"guard-reference-{key}.json"
    with contextlib.suppress(OSError, ValueError):
        return json.loads(path.read_text())
    data = reference()
    cache_dir.mkdir(parents=True, exist_ok=True)
    for stale in cache_dir.glob("guard-reference-*.json"):  # digests of a package that has changed since
        stale.unlink(missing_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.partial")
    partial.write_text(json.dumps(data))
    partial.replace(path)
    return data


def cell(nonce: str, ref: dict, deep: bool) -> str:
    """The guard cell: prints `nonce` and the list of what it found, as JSON, on one line."""
    sent = ref if deep else {key: ref[key] for key in ("shell", "kernel", "builtins")}
    call = f"_mf_guard({nonce!r}, {sent!r}, {deep})"  # a Python literal: no module the learner could patch reads it
    return f"{LIBRARY}\n{GUARD}\n{call}\ndel _mf_guard, _mf_guard_library\n"


def findings(stdout: str, nonce: str) -> list[str] | None:
    """What the guard found, or None if its answer never came (the guard did not run as sent)."""
    for line in stdout.splitlines():
        if line.startswith(nonce + " "):
            try:
                found = ast.literal_eval(line[len(nonce) + 1 :])
            except (ValueError, SyntaxError):
                return None
            return [str(item) for item in found] if isinstance(found, list) else None
    return None
