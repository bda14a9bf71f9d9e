#!/usr/bin/env python3
"""hookgen: writes the shim's CUDA hook tables from the CUDA headers.

    python3 shim/gen/hookgen.py [--check] [--include DIR] [--cudart LIB]

Reads the CUDA runtime and driver API headers (`cuda_runtime_api.h` and the runtime's GL/EGL/VDPAU
interop headers; `cuda.h`, `cudaGL.h`, `cudaEGL.h`, `cudaVDPAU.h`, and `cudaTypedefs.h` for the ABI
versions `cuGetProcAddress` maps names to), preprocessed by `gcc -E` with the stand-ins in `stub/` for
the nvcc-only and windowing-system headers, and writes

* `shim/src/intercept/tables/runtime.rs`: one hook per `cuda*`/`__cuda*` function `libcudart.so` exports
  (the export list is read from the library with `nm -D`; `_ptds`/`_ptsz` variants take the signature
  of the function they are the per-thread form of);
* `shim/src/intercept/tables/driver.rs`: one hook per driver function `cuda.h` (and the driver interop
  headers) declares, in every ABI the library exports: versioned (`_v2`, `_v3`), per-thread (`_ptds`,
  `_ptsz`) and legacy (the 32-bit forms `__CUDA_API_VERSION_INTERNAL` declares);
* `docs/interception.md`: what is hooked, at which level and class, and what is not and why.

What a header cannot say (the class of a call, its capture level, which arguments go into the entry,
the signatures of the undeclared `__cuda*` registration functions, the functions written by hand) is in
`overrides.txt`. Everything else is hooked at level 4, class `Other`, with no arguments kept.

`--check` writes nothing and fails when a generated file differs from what is checked in (CI runs it).
The CI wheels pin the header version: `nvidia-cuda-runtime==13.0.96`.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_INC = os.path.join(ROOT, "ci/build/deps/py/nvidia/cu13/include")
DEFAULT_CUDART = os.path.join(ROOT, "ci/build/deps/py/nvidia/cu13/lib/libcudart.so.13")
STUB = os.path.join(HERE, "stub")
OUT_RUNTIME = os.path.join(ROOT, "shim/src/intercept/tables/runtime.rs")
OUT_ZE = os.path.join(ROOT, "shim/src/intercept/tables/level_zero.rs")
OUT_UR = os.path.join(ROOT, "shim/src/intercept/tables/unified_runtime.rs")
# Level Zero: Debian's libze-dev headers and libze1 loader (1.8.12 in CI).
DEFAULT_ZE_INC = "/usr/include"
DEFAULT_ZE_LIB = "/usr/lib/x86_64-linux-gnu/libze_loader.so.1"
# Unified Runtime: the header of the release the PyPI loader (intel-cmplr-lib-ur 2026.2.0, UR 0.12.0)
# was built from, oneapi-src/unified-runtime at UR_COMMIT (a mirror of intel/llvm), which no registry
# ships: the table is generated where the header is (`--ur-include`) and checked in; without it,
# `--check` checks the table against the loader's exports instead.
UR_COMMIT = "578c2a84af3c5a666afb5a0a0657d11f998e914b"
UR_VERSION = "0.12.0"
DEFAULT_UR_INC = os.path.join(ROOT, "ci/build/deps/ur/include")
DEFAULT_UR_LIB = os.path.join(ROOT, "ci/build/deps/ur/lib/libur_loader.so.0")  # sh ci/ur/install.sh
OUT_DRIVER = os.path.join(ROOT, "shim/src/intercept/tables/driver.rs")
OUT_DOC = os.path.join(ROOT, "docs/interception.md")
OUT_CBIDS = os.path.join(ROOT, "shim/src/timing/cupti/cbids.rs")
# Classes whose calls issue device work (`causeway_ring::layout::Class::issues_work`; a shim test keeps
# the generated callback lists and that method in agreement).
WORK_CLASSES = {"Launch", "Copy", "Memset", "GraphLaunch", "Prefetch", "MemOp", "StreamOp"}

RUST_KEYWORDS = set(
    "as async await break const continue crate do dyn else enum extern false final fn for if impl in "
    "let loop macro match mod move mut override priv pub ref return self static struct super trait true "
    "try type typeof unsafe unsized use virtual where while yield abstract become box".split()
)

INTS = {
    "char": "i8", "signed char": "i8", "unsigned char": "u8",
    "short": "i16", "short int": "i16", "signed short": "i16", "unsigned short": "u16",
    "unsigned short int": "u16",
    "int": "i32", "signed": "i32", "signed int": "i32", "unsigned": "u32", "unsigned int": "u32",
    "long": "i64", "long int": "i64", "signed long": "i64", "unsigned long": "u64",
    "unsigned long int": "u64", "long long": "i64", "long long int": "i64",
    "unsigned long long": "u64", "unsigned long long int": "u64",
    "size_t": "usize", "_Bool": "u8", "float": "f32", "double": "f64",
}


class Unsupported(Exception):
    """A declaration the hook machinery cannot stand in for exactly (said in the coverage list)."""


# ---- reading the preprocessed headers -----------------------------------------------------------------

def preprocess(inc, includes, defines=()):
    src = "".join(f'#include "{h}"\n' for h in includes)
    cmd = ["gcc", "-E", "-P", "-x", "c", f"-I{STUB}", f"-I{inc}"] + [f"-D{d}" for d in defines] + ["-"]
    r = subprocess.run(cmd, input=src, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"hookgen: gcc -E {' '.join(includes)} failed:\n{r.stderr}")
    text = re.sub(r"\s+", " ", r.stdout)
    return strip_attributes(text)


def strip_attributes(text):
    """Removes `__attribute__((...))` (balanced) and `__declspec(...)`."""
    out, i = [], 0
    while True:
        j = text.find("__attribute__", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        k = text.index("(", j)
        depth = 0
        while True:
            if text[k] == "(":
                depth += 1
            elif text[k] == ")":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        i = k + 1


def statements(text):
    """Top-level statements: declarations end at `;`, function definitions at their closing brace
    (dropped)."""
    out, cur, depth = [], [], 0
    for ch in text:
        cur.append(ch)
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                s = "".join(cur)
                head = s[: s.index("{")].rstrip()
                if head.endswith(")") and not head.lstrip().startswith("typedef"):
                    cur = []  # a function definition (static inline): not an exported symbol
        elif ch == ";" and depth == 0:
            out.append("".join(cur).strip())
            cur = []
    return out


def split_top(s, sep=","):
    parts, cur, depth = [], [], 0
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


class Types:
    """What the typedefs, structs and enums of the preprocessed headers say about a C type."""

    def __init__(self, inc, headers, defines=()):
        self.inc, self.headers, self.defines = inc, headers, defines
        self.sizes = {}
        self.typedefs = {}  # name -> C type text, or ("struct"/"union"/"enum", tag or body)
        self.structs = {}  # tag -> body text
        self.unions = set()
        self.enums = set()

    def read(self, stmts):
        for s in stmts:
            m = re.match(r"^(typedef\s+)?(struct|union|enum)\s*(\w*)\s*\{(.*)\}\s*([^{}]*);$", s)
            if m:
                kind, tag, body, names = m.group(2), m.group(3), m.group(4), m.group(5)
                first = split_top(names)[0].strip() if names.strip() else ""
                key = tag or first.lstrip("* ") or f"anon{len(self.structs)}"
                if kind == "struct":
                    self.structs[key] = body
                elif kind == "union":
                    self.unions.add(key)
                else:
                    self.enums.add(key)
                if m.group(1):
                    for n in split_top(names):
                        n = n.strip()
                        if n.startswith("*"):
                            self.typedefs[n.lstrip("* ")] = "void *"
                        elif n:
                            self.typedefs[n] = f"{kind} {key}"
                continue
            if not s.startswith("typedef"):
                continue
            body = s[len("typedef"):].strip().rstrip(";").strip()
            fp = re.match(r"^.*\(\s*(?:\w+\s+)*\*\s*(\w+)\s*\)\s*\(.*\)$", body)
            if fp:
                self.typedefs[fp.group(1)] = "void *"
                continue
            ft = re.match(r"^[\w\s\*]*?\b(\w+)\s*\(.*\)$", body)
            if ft:
                self.typedefs[ft.group(1)] = "fn"
                continue
            m = re.match(r"^(.*?)(\w+)\s*(\[[^\]]*\])?$", body)
            if m:
                self.typedefs[m.group(2)] = m.group(1).strip() + (" *" if m.group(3) else "")

    def rust(self, ctype, structs_used, depth=0, spelled=None):
        """The Rust type with the same ABI as C type `ctype` (a parameter or return type)."""
        if depth > 20:
            raise Unsupported(f"typedef loop at {ctype}")
        t = ctype.replace("const ", " ").replace("volatile ", " ").replace("restrict", " ")
        t = re.sub(r"\s+", " ", t).strip()
        if "*" in t or "[" in t:
            return "P"
        if t == "void":
            return "()"
        if t in INTS:
            return INTS[t]
        m = re.match(r"^(struct|union|enum) (\w+)$", t)
        if m:
            kind, tag = m.groups()
            if kind == "enum":
                return "i32"
            if kind == "union":
                raise Unsupported(f"a union ({t}) passed by value")
            return self.struct(tag, structs_used, depth, spelled or t)
        if t in self.typedefs:
            target = self.typedefs[t]
            if target == "fn":
                raise Unsupported(f"a function type ({t}) passed by value")
            return self.rust(target, structs_used, depth + 1, spelled or t)
        if t in self.enums:
            return "i32"
        raise Unsupported(f"unknown type {ctype!r}")

    def struct(self, tag, structs_used, depth, spelled):
        """A struct passed or returned by value. Up to 16 bytes the x86-64 and AArch64 calling
        conventions classify it by its fields, so its fields are mirrored; larger ones travel in
        memory as bytes, so an opaque block of the C size and alignment (measured by gcc) is exact."""
        if tag in self.unions:
            raise Unsupported(f"a union ({tag}) passed by value")
        if tag not in self.structs:
            raise Unsupported(f"struct {tag} has no definition in the headers")
        name = f"S_{tag}"
        if name in structs_used:
            return name
        size, align = self.measure(spelled)
        if size > 16:
            structs_used[name] = (size, align)
            return name
        fields = []
        for f in self.structs[tag].split(";"):
            f = f.strip()
            if not f:
                continue
            if "{" in f or "(" in f or ":" in f:
                raise Unsupported(f"struct {tag} has a field the generator does not lay out ({f})")
            m = re.match(r"^(.*?)(\w+\s*(?:\[[^\]]*\])*(?:\s*,\s*\w+\s*(?:\[[^\]]*\])*)*)$", f)
            head = m.group(1)
            for decl in m.group(2).split(","):
                dm = re.match(r"^\s*(\w+)\s*((?:\[[^\]]*\])*)$", decl)
                ty = self.rust(head, structs_used, depth + 1)
                for dim in reversed(re.findall(r"\[([^\]]*)\]", dm.group(2))):
                    ty = f"[{ty}; {int(eval(dim, {}))}]"
                fields.append((dm.group(1), ty))
        structs_used[name] = fields
        return name

    def measure(self, spelled):
        """sizeof and _Alignof of C type `spelled`, from gcc."""
        if spelled in self.sizes:
            return self.sizes[spelled]
        src = "".join(f'#include "{h}"\n' for h in self.headers)
        src += f"char cw_size[sizeof({spelled})] = {{1}};\nchar cw_align[_Alignof({spelled})] = {{1}};\n"
        with tempfile.TemporaryDirectory() as d:
            obj = os.path.join(d, "m.o")
            cmd = ["gcc", "-c", "-x", "c", f"-I{STUB}", f"-I{self.inc}", "-o", obj, "-"]
            cmd[1:1] = [f"-D{x}" for x in self.defines]
            r = subprocess.run(cmd, input=src, capture_output=True, text=True)
            if r.returncode != 0:
                raise Unsupported(f"gcc cannot measure {spelled}: {r.stderr.strip().splitlines()[0]}")
            nm = subprocess.run(["nm", "-S", obj], capture_output=True, text=True).stdout
        got = {p[3]: int(p[1], 16) for p in (l.split() for l in nm.splitlines()) if len(p) == 4}
        self.sizes[spelled] = (got["cw_size"], got["cw_align"])
        return self.sizes[spelled]


def functions(stmts, prefixes):
    """{name: (return C type, [(param C type, param name)] or 'varargs')} of the declared functions."""
    out = {}
    for s in stmts:
        if s.startswith("typedef") or "{" in s:
            continue
        m = re.match(r"^(?:extern\s+)?(?:static\s+)?(.*?)\b(\w+)\s*\((.*)\)\s*;$", s)
        if not m:
            continue
        ret, name, params = m.group(1).strip(), m.group(2), m.group(3)
        if not name.startswith(prefixes) or not ret or "(" in ret:
            continue
        ret = re.sub(r"\b(extern|__inline__|inline|CUDAAPI|CUDARTAPI)\b", "", ret).strip()
        ps = []
        parts = split_top(params)
        if parts == ["void"] or parts == []:
            parts = []
        varargs = False
        for i, p in enumerate(parts):
            if p == "...":
                varargs = True
                break
            p = re.sub(r"=.*$", "", p).strip()  # C++ default arguments never survive -x c, but be safe
            fpm = re.match(r"^(.*)\(\s*(?:\w+\s+)*\*\s*(\w*)\s*\)\s*\(.*\)$", p)
            if fpm:
                ps.append(("void *", fpm.group(2) or f"p{i}"))
                continue
            pm = re.match(r"^(.*?[\s\*])(\w+)\s*((?:\[[^\]]*\])*)$", p)
            type_words = {"int", "char", "long", "short", "unsigned", "signed", "float", "double", "void"}
            if pm and pm.group(1).strip() and pm.group(2) not in type_words and pm.group(1).strip() not in (
                "struct", "enum", "union"
            ):
                ty = pm.group(1).strip() + (" *" if pm.group(3) else "")
                ps.append((ty, pm.group(2)))
            else:
                ps.append((p, f"p{i}"))
        out[name] = (ret, "varargs" if varargs else ps)
    return out


# ---- overrides ----------------------------------------------------------------------------------------

class Override:
    def __init__(self, line_no, name, level, cls, args, after, sig, out=None, with_=None):
        self.line_no, self.name, self.level, self.cls = line_no, name, level, cls
        self.args, self.after, self.sig, self.out = args, after, sig, out
        self.with_ = with_
        self.used = False


def read_overrides(path):
    """`overrides.txt`: see its header."""
    out = {}
    manual = set()
    sigs = {}
    for n, raw in enumerate(open(path), 1):
        line = raw.split("#", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        head, _, rest = line.partition(":")
        words = head.split()
        if words[0] == "manual":
            manual.update(words[1:])
            continue
        if words[0] == "signature":
            # signature LAYER NAME: RET (TYPE NAME, ...): a function no shipped header declares.
            m = re.match(r"^\s*(.*?)\s*\((.*)\)\s*$", rest)
            params = []
            for x in split_top(m.group(2)):
                pm = re.match(r"^(.*?)(\w+)$", x.strip())
                params.append((pm.group(1).strip(), pm.group(2)))
            sigs[(words[1], words[2])] = (m.group(1), params)
            continue
        if len(words) != 3:
            sys.exit(f"hookgen: overrides.txt:{n}: expected `NAME LEVEL CLASS: a0; a1; a2 [; after EXPR]`")
        name, level, cls = words
        parts = [p.strip() for p in rest.split(";")] if rest.strip() else ["0", "0", "0"]
        after = None
        if parts and parts[-1].startswith("after "):
            after = parts.pop()[len("after "):].strip()
        handed = None
        if parts and parts[-1].startswith("out "):
            handed = parts.pop()[len("out "):].strip()
        with_ = None
        if parts and parts[-1].startswith("with "):
            with_ = parts.pop()[len("with "):].strip()
        while len(parts) < 3:
            parts.append("0")
        if len(parts) != 3:
            sys.exit(f"hookgen: overrides.txt:{n}: more than three arguments for {name}")
        if name in out:
            sys.exit(f"hookgen: overrides.txt:{n}: {name} listed twice")
        out[name] = Override(n, name, int(level), cls, parts, after, None, handed, with_)
    return out, manual, sigs


def base_name(name):
    n = re.sub(r"_(ptsz|ptds)$", "", name)
    return re.sub(r"_v\d+$", "", n)


def pick_override(overrides, name):
    o = overrides.get(name) or overrides.get(re.sub(r"_(ptsz|ptds)$", "", name)) or overrides.get(base_name(name))
    if o:
        o.used = True
    return o


# ---- the tables ---------------------------------------------------------------------------------------

def rust_ident(n):
    return n + "_" if n in RUST_KEYWORDS else n


# Unified Runtime enqueues and Level Zero appends of these classes are timed at level 3
# (shim/src/timing/ur.rs, ze.rs): the hook makes sure each has an output event (`event phEvent`) or
# a signal event (`signal hSignalEvent`).
UR_TIMED_CLASSES = {"Launch", "Copy", "Memset"}


def hook_line(name, sig, ov, types, structs_used, abi):
    ret_c, params = sig
    if params == "varargs":
        raise Unsupported("takes a variable argument list (C varargs cannot be forwarded)")
    ret = types.rust(ret_c, structs_used)
    args = []
    seen = set()
    for i, (ty, pn) in enumerate(params):
        pn = rust_ident(pn)
        if pn in seen:
            pn = f"{pn}_{i}"
        seen.add(pn)
        args.append(f"{pn}: {types.rust(ty, structs_used)}")
    level, cls, a = 4, "Other", ["0", "0", "0"]
    after = ""
    if ov:
        level, cls, a = ov.level, ov.cls, ov.args
        if ov.with_:
            after += f", with {ov.with_}"
        if name.startswith("urEnqueue") and cls in UR_TIMED_CLASSES and any(pn == "phEvent" for _, pn in params):
            after += ", event phEvent"
        if name.startswith("zeCommandListAppend") and cls in UR_TIMED_CLASSES and any(pn == "hSignalEvent" for _, pn in params):
            after += ", signal hSignalEvent"
        if ov.out:
            after += f", out {ov.out}"
        if ov.after:
            after += f", after {ov.after}"
    return (f"    {name}: {level} {cls} abi {abi} ({', '.join(args)}) -> {ret} => "
            f"[{a[0]}, {a[1]}, {a[2]}]{after};")


def struct_defs(structs_used):
    out = []
    for name, fields in structs_used.items():
        if name == "S_dim3" and fields == [("x", "u32"), ("y", "u32"), ("z", "u32")]:
            # The launch helpers (`hooks::grid`) take the machinery's own dim3.
            out.append("pub use crate::intercept::hooks::Dim3 as S_dim3;")
            continue
        if isinstance(fields, tuple):
            size, align = fields
            out.append(f"/// Passed in memory (more than 16 bytes): the C struct's {size} bytes, aligned to {align}.")
            out.append(f"#[repr(C, align({align}))]\n#[derive(Clone, Copy)]\n#[allow(non_camel_case_types, dead_code)]")
            out.append(f"pub struct {name}([u8; {size}]);")
        else:
            out.append("#[repr(C)]\n#[derive(Clone, Copy)]\n#[allow(non_camel_case_types, dead_code)]")
            out.append(f"pub struct {name} {{")
            for fn, ty in fields:
                out.append(f"    pub {rust_ident(fn)}: {ty},")
            out.append("}")
    zeroed = [n for n, f in structs_used.items() if not (n == "S_dim3" and not isinstance(f, tuple))]
    if zeroed:
        out.append(f"crate::intercept::hooks::zeroed_ret!({', '.join(zeroed)});")
    return "\n".join(out)


HEADER = """// @generated by shim/gen/hookgen.py from the CUDA {version} headers ({source}) and
// shim/gen/overrides.txt. Do not edit: change overrides.txt and run `python3 shim/gen/hookgen.py`.
//
// Each line: exported name, capture level, class, the ABI version `cuGetProcAddress` maps the name to
// (0: none in cudaTypedefs.h), the C signature in Rust types of the same ABI, and which arguments go
// into the entry's a0/a1/a2 (see `causeway_ring::layout::Class` for what each class keeps where).
"""


def emit(path, layer, first_id, missing, lines, structs_used, source, version, check, uses,
         generator_version=False):
    if generator_version:
        body = [HEADER.replace("CUDA {version}", "{version}").format(version=version, source=source)]
    else:
        body = [HEADER.format(version=version, source=source)]
    body.append(f"//! {layer} hook table (generated: see shim/gen/hookgen.py).\n")
    body.append("#![allow(non_snake_case, clippy::unnecessary_cast, clippy::identity_op)]\n")
    body.append(uses)
    body.append("")
    if structs_used:
        body.append(struct_defs(structs_used))
        body.append("")
    body.append("hook_table! {")
    body.append(f"    TABLE, {layer}, first_id = {first_id}, missing = {missing};")
    body.extend(lines)
    body.append("}")
    text = "\n".join(body) + "\n"
    return write_or_check(path, text, check)


def rustfmt(text):
    """`text` as `cargo fmt` leaves it, so that formatting the tree never makes them stale."""
    r = subprocess.run(["rustfmt", "--edition", "2021", "--emit", "stdout", "--quiet"],
                       input=text, capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        sys.exit(f"hookgen: rustfmt failed on generated code:\n{r.stderr}")
    return r.stdout


def write_or_check(path, text, check):
    if path.endswith(".rs"):
        text = rustfmt(text)
    old = open(path).read() if os.path.exists(path) else None
    if old == text:
        return True
    if check:
        print(f"hookgen: {os.path.relpath(path, ROOT)} is not current: run `python3 shim/gen/hookgen.py`",
              file=sys.stderr)
        return False
    with open(path, "w") as f:
        f.write(text)
    return True


def export_table(layer, names, decl_of, types, overrides, manual, coverage):
    """Hook lines for every exported name in `names` that has a declaration (`decl_of(name)`); the
    others go into `coverage` as hooked by hand or not hooked, with why."""
    lines, structs = [], {}
    for name in names:
        if name in manual:
            coverage.append((layer, name, "-", "-", "-", "hooked by hand (shim/src/intercept)"))
            continue
        decl = decl_of(name)
        if decl is None:
            coverage.append((layer, name, "-", "-", "-", "not hooked: no declaration in the headers"))
            continue
        ov = pick_override(overrides, name)
        try:
            lines.append(hook_line(name, decl, ov, types, structs, 0))
            coverage.append((layer, name, ov.level if ov else 4, ov.cls if ov else "Other", "", "", decl[0]))
        except Unsupported as e:
            coverage.append((layer, name, "-", "-", "-", f"not hooked: {e}"))
    return lines, structs


def intel_table(layer, inc, headers, prefixes, lib, lib_prefixes, overrides, manual, coverage):
    """Hook lines for every export of `lib` (names starting with `lib_prefixes`) that `headers`
    declare; the rest go into `coverage` as not hooked."""
    types = Types(inc, headers)
    st = statements(preprocess(inc, headers))
    types.read(st)
    funcs = functions(st, prefixes)
    return export_table(layer, exports(lib, lib_prefixes), funcs.get, types, overrides, manual, coverage)


def ur_table_against_loader(lib, check, coverage):
    """Without the UR header: the checked-in table's hooks, each an export of the loader when the loader
    is here; its hooks and the doc's list are the coverage."""
    text = open(OUT_UR).read() if os.path.exists(OUT_UR) else ""
    hooked = re.findall(r"^\s+(ur\w+):", text, re.M)
    doc = open(OUT_DOC).read() if os.path.exists(OUT_DOC) else ""
    listed = re.findall(r"^- `(ur\w+)` \(unified_runtime\): (.*)$", doc, re.M)
    for name, note in listed:
        coverage.append(("unified_runtime", name, "-", "-", "-", note))
    rows = re.findall(r"^\| `(ur\w+)` \| unified_runtime \| (\S+) \| (\w+) \|\s*\| `([^`]*)` \|$", doc, re.M)
    for name, level, cls, ret in rows:
        coverage.append(("unified_runtime", name, int(level), cls, "", "", ret))
    if not os.path.exists(lib):
        print(f"hookgen: no UR header or loader here: {os.path.relpath(OUT_UR, ROOT)} kept as checked in",
              file=sys.stderr)
        return True
    have = set(exports(lib, ("ur",)))
    missing = sorted(set(hooked) - have)
    uncovered = sorted(have - set(hooked) - {n for n, _ in listed})
    if missing or uncovered:
        print(f"hookgen: {os.path.relpath(OUT_UR, ROOT)} does not match {lib}: hooks the loader lacks "
              f"{missing[:5]}, exports neither hooked nor listed {uncovered[:5]}", file=sys.stderr)
        return False
    return True


def exports(lib, prefixes):
    """The functions `lib` exports whose names start with `prefixes`, sorted."""
    r = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"hookgen: nm -D {lib}: {r.stderr}")
    names = set()
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWi":
            n = parts[2].split("@")[0]
            if n.startswith(prefixes):
                names.add(n)
    return sorted(names)


def cudart_exports(lib):
    return exports(lib, ("cuda", "__cuda"))


def abi_versions(inc, types):
    """cudaTypedefs.h: {base name: {'': [(version, signature)], '_ptds': [...], '_ptsz': [...]}}."""
    text = open(os.path.join(inc, "cudaTypedefs.h")).read()
    out = {}
    for m in re.finditer(r"typedef\s+CUresult\s*\(\s*CUDAAPI\s*\*\s*PFN_(\w+?)_v(\d+)(_ptds|_ptsz)?\s*\)", text):
        base, ver, pt = m.group(1), int(m.group(2)), m.group(3) or ""
        out.setdefault(base, {}).setdefault(pt, set()).add(ver)
    return {b: {pt: sorted(v) for pt, v in d.items()} for b, d in out.items()}


def variant_rank(name):
    n = re.sub(r"_(ptsz|ptds)$", "", name)
    m = re.search(r"_v(\d+)$", n)
    return int(m.group(1)) if m else 1


def driver_abi(names, versions):
    """The ABI version of each exported driver name: the k-th variant of a base name (by its `_vN`
    suffix; none = 1) is the k-th version cudaTypedefs.h lists for that base and stream mode."""
    out = {}
    groups = {}
    for n in names:
        pt = re.search(r"_(ptsz|ptds)$", n)
        groups.setdefault((base_name(n), "_" + pt.group(1) if pt else ""), []).append(n)
    for (base, pt), ns in groups.items():
        vs = versions.get(base, {}).get(pt, [])
        ns.sort(key=variant_rank)
        if len(vs) >= len(ns):
            # More versions than exports: the later versions share an ABI with the last export.
            for i, n in enumerate(ns):
                out[n] = vs[i] if i < len(ns) - 1 else vs[-1] if len(ns) == len(vs) else vs[i]
        else:
            for n in ns:
                out[n] = 0
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="fail if a generated file is not current")
    ap.add_argument("--include", default=DEFAULT_INC, help="CUDA include directory")
    ap.add_argument("--cudart", default=DEFAULT_CUDART, help="libcudart.so whose exports to hook")
    ap.add_argument("--ze-include", default=DEFAULT_ZE_INC, help="directory holding level_zero/ze_api.h")
    ap.add_argument("--ze-lib", default=DEFAULT_ZE_LIB, help="the Level Zero loader whose exports to hook")
    ap.add_argument("--ur-include", default=DEFAULT_UR_INC,
                    help=f"directory holding unified-runtime/ur_api.h (UR {UR_VERSION}, commit {UR_COMMIT[:9]})")
    ap.add_argument("--ur-lib", default=DEFAULT_UR_LIB, help="the Unified Runtime loader whose exports to hook")
    a = ap.parse_args()
    inc = a.include
    if not os.path.exists(os.path.join(inc, "cuda.h")):
        sys.exit(f"hookgen: no cuda.h in {inc} (run `bash ci/test.sh` once, or pass --include)")
    version = re.search(r"#define CUDA_VERSION (\d+)", open(os.path.join(inc, "cuda.h")).read()).group(1)
    version = f"{int(version) // 1000}.{int(version) % 1000 // 10}"
    overrides, manual, sigs = read_overrides(os.path.join(HERE, "overrides.txt"))

    # Runtime. `__CUDA_RUNTIME_H__` keeps the EGL interop header from pulling in the C++ cuda_runtime.h.
    rt_heads = ["cuda_runtime_api.h", "GL/gl.h", "cuda_gl_interop.h", "vdpau/vdpau.h",
                "cuda_vdpau_interop.h", "cuda_egl_interop.h"]
    rt_defs = ("__CUDA_RUNTIME_H__",)
    rt_types = Types(inc, rt_heads, rt_defs)
    rt_funcs = {}
    for defs in [(), ("CUDA_API_PER_THREAD_DEFAULT_STREAM",)]:
        st = statements(preprocess(inc, rt_heads, rt_defs + defs))
        rt_types.read(st)
        rt_funcs.update(functions(st, ("cuda",)))

    # Driver: the default names, the per-thread ones, and the legacy ABIs the library still exports.
    dr_heads = ["GL/gl.h", "vdpau/vdpau.h", "EGL/egl.h", "cuda.h", "cudaGL.h", "cudaEGL.h", "cudaVDPAU.h"]
    dr_types = Types(inc, dr_heads)
    dr_funcs = {}
    for defs in [(), ("CUDA_API_PER_THREAD_DEFAULT_STREAM",), ("__CUDA_API_VERSION_INTERNAL",)]:
        st = statements(preprocess(inc, dr_heads, defs))
        dr_types.read(st)
        for k, v in functions(st, ("cu",)).items():
            if k.startswith("cuda"):
                continue
            if k in dr_funcs and dr_funcs[k] != v:
                # The same exported name must mean one ABI in every mode.
                sig = lambda d: "varargs" if d[1] == "varargs" else [dr_types.rust(t, {}) for t, _ in d[1]]
                if sig(dr_funcs[k]) != sig(v):
                    sys.exit(f"hookgen: {k} is declared with two signatures")
                continue
            dr_funcs[k] = v
    # Functions no shipped header declares: their signatures from overrides.txt.
    for (layer, n), (ret, params) in sigs.items():
        (rt_funcs if layer == "runtime" else dr_funcs)[n] = (ret, [(t, p) for t, p in params])

    coverage = []  # (layer, name, level, class, abi, note)
    ok = True

    # Runtime table: the library's exports; `_ptds`/`_ptsz` variants take their base's declaration.
    rt_lines, rt_structs = export_table(
        "runtime", cudart_exports(a.cudart),
        lambda n: rt_funcs.get(n) or rt_funcs.get(re.sub(r"_(ptsz|ptds)$", "", n)),
        rt_types, overrides, manual, coverage)

    # Driver table: every declared name.
    versions = abi_versions(inc, dr_types)
    dr_names = sorted(dr_funcs)
    abis = driver_abi([n for n in dr_names if n not in manual], versions)
    dr_lines, dr_structs = [], {}
    for name in dr_names:
        if name in manual:
            coverage.append(("driver", name, "-", "-", "-", "hooked by hand (shim/src/intercept)"))
            continue
        ov = pick_override(overrides, name)
        try:
            dr_lines.append(hook_line(name, dr_funcs[name], ov, dr_types, dr_structs, abis.get(name, 0)))
            coverage.append(("driver", name, ov.level if ov else 4, ov.cls if ov else "Other",
                             abis.get(name, 0) or "", "", dr_funcs[name][0]))
        except Unsupported as e:
            coverage.append(("driver", name, "-", "-", "-", f"not hooked: {e}"))

    ok &= write_or_check(OUT_CBIDS, cbids_rs(inc, coverage, version), a.check)

    # Level Zero and Unified Runtime: every export of the loader a header declares.
    uses_intel = "use crate::intercept::hooks::*;\nuse crate::intercept::links;"
    ze_heads = ["level_zero/ze_api.h", "level_zero/zet_api.h", "level_zero/zes_api.h", "level_zero/ze_ddi.h",
                "level_zero/zet_ddi.h", "level_zero/zes_ddi.h", "level_zero/loader/ze_loader.h",
                "level_zero/layers/zel_tracing_api.h", "level_zero/layers/zel_tracing_register_cb.h"]
    if not os.path.exists(os.path.join(a.ze_include, ze_heads[0])):
        sys.exit(f"hookgen: no {ze_heads[0]} in {a.ze_include} (apt-get install libze-dev, or pass --ze-include)")
    ze_ver = re.search(r"ZE_API_VERSION_CURRENT\s*=\s*ZE_MAKE_VERSION\(\s*(\d+),\s*(\d+)\s*\)",
                       open(os.path.join(a.ze_include, ze_heads[0])).read())
    ze_ver = f"{ze_ver.group(1)}.{ze_ver.group(2)}" if ze_ver else "?"
    ze_lines = intel_table("level_zero", a.ze_include, ze_heads, ("ze",), a.ze_lib, ("ze",), overrides, manual,
                           coverage)
    ok &= emit(OUT_ZE, "LevelZero", 5000, 0x78000001, ze_lines[0], ze_lines[1],
               "level_zero/ze_api.h, zet_api.h, zes_api.h and their ddi headers (libze-dev); exports of "
               "libze_loader.so.1", f"Level Zero {ze_ver}", a.check, uses_intel, generator_version=True)
    # ur_api.h uses C++'s `bool` without stdbool.h.
    ur_heads = ["stdbool.h", "unified-runtime/ur_api.h", "unified-runtime/ur_ddi.h", "unified-runtime/ur_print.h"]
    if os.path.exists(os.path.join(a.ur_include, ur_heads[1])):
        ur_lines = intel_table("unified_runtime", a.ur_include, ur_heads, ("ur",), a.ur_lib, ("ur",), overrides,
                               manual, coverage)
        ok &= emit(OUT_UR, "UnifiedRuntime", 7000, 37, ur_lines[0], ur_lines[1],
                   f"unified-runtime/ur_api.h and ur_ddi.h (oneapi-src/unified-runtime {UR_COMMIT[:9]}); exports "
                   "of libur_loader.so.0 (PyPI intel-cmplr-lib-ur 2026.2.0)", f"Unified Runtime {UR_VERSION}",
                   a.check, uses_intel, generator_version=True)
    else:
        # No header here: the checked-in table stands; it must still cover what the loader exports.
        for o in overrides.values():
            if o.name.startswith("ur"):
                o.used = True
        ok &= ur_table_against_loader(a.ur_lib, a.check, coverage)

    unused = [o.name for o in overrides.values() if not o.used]
    if unused:
        sys.exit(f"hookgen: overrides.txt names functions neither table has: {', '.join(unused)}")

    uses_rt = ("use crate::intercept::graph;\n"
               "use crate::intercept::hooks::*;\n"
               "use causeway_ring::layout::capture_phase;")
    uses_dr = uses_rt
    ok &= emit(OUT_RUNTIME, "Runtime", 1, 3, rt_lines, rt_structs,
               "cuda_runtime_api.h and interop headers; exports of libcudart.so", version, a.check, uses_rt)
    ok &= emit(OUT_DRIVER, "Driver", 2000, 3, dr_lines, dr_structs,
               "cuda.h, cudaGL.h, cudaEGL.h, cudaVDPAU.h, cudaTypedefs.h", version, a.check, uses_dr)
    ok &= write_or_check(OUT_DOC, coverage_doc(coverage, version), a.check)
    n_rt = sum(1 for c in coverage if c[0] == "runtime")
    n_dr = sum(1 for c in coverage if c[0] == "driver")
    not_hooked = [c for c in coverage if c[5].startswith("not hooked")]
    hooked = lambda layer: sum(1 for c in coverage if c[0] == layer and not c[5])
    total = lambda layer: sum(1 for c in coverage if c[0] == layer)
    print(f"hookgen: runtime {len(rt_lines)}/{n_rt} hooked, driver {len(dr_lines)}/{n_dr} hooked, "
          f"level zero {hooked('level_zero')}/{total('level_zero')}, unified runtime "
          f"{hooked('unified_runtime')}/{total('unified_runtime')}; {len(not_hooked)} not hooked "
          "(docs/interception.md)")
    if not ok:
        sys.exit(1)


def cbids_rs(inc, coverage, version):
    """CUPTI's callback ids of the work-issuing hooks: runtime (id, name) pairs and driver ids."""
    work = {(c[0], c[1]) for c in coverage if not c[5] and c[3] in WORK_CLASSES}
    rt = []
    for m in re.finditer(r"CUPTI_RUNTIME_TRACE_CBID_(\w+?)_v\d+\s*=\s*(\d+)",
                         open(os.path.join(inc, "cupti_runtime_cbid.h")).read()):
        if ("runtime", m.group(1)) in work:
            rt.append((int(m.group(2)), m.group(1)))
    dr = []
    for m in re.finditer(r"CUPTI_DRIVER_TRACE_CBID_(\w+)\s*=\s*(\d+)",
                         open(os.path.join(inc, "cupti_driver_cbid.h")).read()):
        if ("driver", m.group(1)) in work:
            dr.append((int(m.group(2)), m.group(1)))
    out = [f"// @generated by shim/gen/hookgen.py from the CUDA {version} CUPTI headers",
           "// (cupti_runtime_cbid.h, cupti_driver_cbid.h) and the hook tables. Do not edit.",
           "",
           "//! CUPTI callback ids of the hooks that issue device work (generated: see shim/gen/hookgen.py).",
           "",
           "/// Runtime callback ids and the hook each stands for, sorted by id.",
           "pub(crate) const RUNTIME_CBIDS: &[(u32, &str)] = &["]
    out += [f'    ({i}, "{n}"),' for i, n in sorted(rt)]
    out += ["];", "",
            "/// Driver callback ids (ids are never reused), sorted: the calls whose work a device record",
            "/// can carry. Callbacks on these only, not the whole domain, so other driver calls pay nothing.",
            "pub(crate) const DRIVER_CBIDS: &[u32] = &["]
    out += [f"    {i}, // {n}" for i, n in sorted(dr)]
    out += ["];", ""]
    return "\n".join(out)


def coverage_doc(coverage, version):
    out = [
        "# What the shim intercepts",
        "",
        f"Generated by `python3 shim/gen/hookgen.py` from the CUDA {version} headers, the Level Zero",
        "headers of Debian's libze-dev (1.8.12) and the loader's exports, the Unified Runtime "
        f"{UR_VERSION} header",
        f"(oneapi-src/unified-runtime {UR_COMMIT[:9]}) and the exports of the PyPI loader (intel-cmplr-lib-ur",
        "2026.2.0), and `shim/gen/overrides.txt`; CI fails when it is not current. Level: the lowest capture level that",
        "records the call (`causeway record --level`). Class: what the scanner knows the call does",
        "(`causeway_ring::layout::Class`). ABI: the version `cuGetProcAddress` maps the name to",
        "(`cudaTypedefs.h`).",
        "",
    ]
    not_hooked = [c for c in coverage if c[5]]
    out.append(f"{sum(1 for c in coverage if not c[5])} entry points hooked; "
               f"{len(not_hooked)} handled otherwise or not hooked:")
    out.append("")
    for layer, name, _, _, _, note, *_ in not_hooked:
        out.append(f"- `{name}` ({layer}): {note}")
    out.append("")
    out.append("## By level and class")
    out.append("")
    by = {}
    for layer, name, level, cls, _, note, *_ in coverage:
        if not note:
            by.setdefault((level, cls), []).append(name)
    out.append("| level | class | entry points |")
    out.append("|---|---|---:|")
    for (level, cls), names in sorted(by.items()):
        out.append(f"| {level} | {cls} | {len(names)} |")
    out.append("")
    out.append("## Every hooked entry point")
    out.append("")
    out.append("Returns: the C return type (the entry's result is the value for integer types, 0 for the")
    out.append("rest).")
    out.append("")
    out.append("| name | layer | level | class | ABI | returns |")
    out.append("|---|---|---|---|---|---|")
    for layer, name, level, cls, abi, note, *ret in coverage:
        if not note:
            out.append(f"| `{name}` | {layer} | {level} | {cls} | {abi} | `{ret[0]}` |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
