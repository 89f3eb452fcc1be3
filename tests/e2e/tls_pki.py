"""A throwaway certificate authority for the TLS e2e tests, made by the
`openssl` command at test time (nothing checked in to expire)."""

import os
import shutil
import subprocess


def openssl(*args):
    p = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"openssl {' '.join(args)}: {p.stderr}"
    return p.stdout


class Pki:
    """A CA, and server certificates for localhost and 127.0.0.1 it signs."""

    KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def __init__(self, directory):
        if shutil.which("openssl") is None:
            raise AssertionError("the `openssl` command is missing: scripts/setup.sh installs it")
        self.dir = directory
        self.ca = os.path.join(directory, "ca.pem")
        openssl("req", "-x509", *self.KEY, "-keyout", os.path.join(directory, "ca.key"), "-out", self.ca,
                "-days", "2", "-subj", "/CN=swiftlet-e2e-ca", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        with open(os.path.join(directory, "server.ext"), "w") as f:
            f.write("basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
                    "subjectAltName=DNS:localhost,IP:127.0.0.1\n")

    def issue(self, name, serial_hex):
        """(cert, key) files of a new server certificate."""
        base = os.path.join(self.dir, name)
        openssl("req", *self.KEY, "-keyout", base + ".key", "-out", base + ".csr", "-subj", "/CN=localhost")
        openssl("x509", "-req", "-in", base + ".csr", "-CA", self.ca, "-CAkey", os.path.join(self.dir, "ca.key"),
                "-set_serial", "0x" + serial_hex, "-days", "2", "-extfile", os.path.join(self.dir, "server.ext"),
                "-out", base + ".pem")
        return base + ".pem", base + ".key"

    def served_serial(self, port):
        """The serial number of the certificate a new connection is shown."""
        p = subprocess.run(f"openssl s_client -connect 127.0.0.1:{port} -servername localhost -CAfile {self.ca}"
                           f" -verify_return_error </dev/null 2>/dev/null | openssl x509 -noout -serial",
                           shell=True, capture_output=True, text=True, timeout=60)
        return p.stdout.strip().removeprefix("serial=")
