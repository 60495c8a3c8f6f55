"""Prints where packages go under an install prefix, relative to it (python/CMakeLists.txt)."""
import os
import sys
import sysconfig

prefix = os.path.abspath(sys.argv[1])
# A folder already on this interpreter's path wins (Debian: <prefix>/lib/python3.X/dist-packages
# for /usr/local); otherwise the standard layout, which PYTHONPATH can name.
for entry in sys.path:
    if entry.startswith(prefix + os.sep) and entry.endswith(("dist-packages", "site-packages")):
        print(os.path.relpath(entry, prefix))
        break
else:
    scheme = sysconfig.get_path("platlib", "posix_prefix", vars={"base": prefix, "platbase": prefix})
    print(os.path.relpath(scheme, prefix))
