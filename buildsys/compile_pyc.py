"""Run by Pyodide under node (compile_pyc.mjs): the site's Python compiled ahead (pyodide_runtime.compile_python)."""
import os, py_compile, sys, sysconfig, zipfile
from importlib.util import cache_from_source

STDLIB_ZIP = "/lib/python%d%d.zip/" % sys.version_info[:2]
SITE_PACKAGES = "/" + sysconfig.get_paths()["purelib"].lstrip("/") + "/"  # Pyodide's starts with "//"

def compiled(source, dfile):
    os.makedirs("/tmp/pyc", exist_ok=True)
    with open("/tmp/pyc/source.py", "wb") as f:
        f.write(source)
    py_compile.compile("/tmp/pyc/source.py", cfile="/tmp/pyc/out.pyc", dfile=dfile, doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    with open("/tmp/pyc/out.pyc", "rb") as f:
        return f.read()

def add(out, name, data):
    info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    out.writestr(info, data, compresslevel=9)

def started(code):
    exec(code, {})
    files = [getattr(m, "__file__", None) or "" for m in list(sys.modules.values())]
    return {f[len(STDLIB_ZIP):] for f in files if f.startswith(STDLIB_ZIP)}, \
        {f[len(SITE_PACKAGES):] for f in files if f.startswith(SITE_PACKAGES)}

def stdlib_pyc(source, dest, imported):
    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(dest, "w") as zout:
        for name in zin.namelist():
            if name in imported:
                add(zout, name + "c", compiled(zin.read(name), STDLIB_ZIP + name))
            elif not name.endswith("/"):
                add(zout, name, zin.read(name))

def site_pycache(wheels, dest, imported, whole):
    with zipfile.ZipFile(dest, "w") as zout:
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as zin:
                for name in sorted(n for n in zin.namelist() if n.endswith(".py")):
                    if name in imported or name.split("/")[0] in whole:
                        add(zout, cache_from_source(name), compiled(zin.read(name), SITE_PACKAGES + name))
