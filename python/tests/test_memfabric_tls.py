"""memfabric_hybrid's TLS calls end to end: set_conf_store_tls and set_conf_store_tls_key with
a Python decrypt function, then a config store and a client over mutual TLS (an SHM world of
one rank that starts the store), in a fresh process since the setting is process-wide."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import free_port

CHILD = r"""
import sys
import memfabric_hybrid as mf
from memfabric_hybrid import shm
folder, url = sys.argv[1], sys.argv[2]
key = open(folder + "/node.key").read()
calls = []
def decrypt(cipher):
    calls.append(cipher)
    return "secret-password" if cipher == "CIPHER(secret-password)" else "wrong"
assert mf.set_conf_store_tls(True, "bogusKey: x") != 0
assert "bogusKey" in mf.get_and_clear_last_err_msg()
info = f"tlsCaPath: {folder}; tlsCaFile: ca.pem; tlsCert: {folder}/node.pem"
assert mf.set_conf_store_tls(True, info) == 0, mf.get_last_err_msg()
assert mf.set_conf_store_tls_key(key, "CIPHER(wrong)", decrypt) != 0
assert mf.set_conf_store_tls_key(key, "CIPHER(secret-password)", decrypt) == 0, mf.get_last_err_msg()
assert calls, "the decrypt function was not called"
config = shm.ShmConfig()
config.init_timeout = 20
assert shm.initialize(url, 1, 0, 0, config) == 0, mf.get_last_err_msg()
memory = shm.create(0, 1, 0, 2 << 20)
memory.barrier()
assert memory.all_gather(b"tls") == b"tls"
memory.destroy()
shm.uninitialize()
assert mf.set_conf_store_tls(False, "") == 0
print("tls ok")
"""


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=60)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl program")
def test_tls_with_a_python_decrypt_function(tmp_path):
    d = str(tmp_path)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=ca",
            cwd=d)
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-aes-256-cbc", "-pass", "pass:secret-password", "-out", "node.key", cwd=d)
    openssl("req", "-new", "-key", "node.key", "-passin", "pass:secret-password", "-out",
            "node.csr", "-subj", "/CN=node", cwd=d)
    openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "node.pem", "-days", "2", cwd=d)
    child = subprocess.run([sys.executable, "-c", CHILD, d, f"tcp://127.0.0.1:{free_port()}"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=120, env=dict(os.environ, MEMLOOM_LOG_LEVEL="fatal"))
    assert child.returncode == 0 and "tls ok" in child.stdout, child.stdout
