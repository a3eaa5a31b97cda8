"""A self-signed certificate for a cloud API fake on 127.0.0.1, for the clients that speak
HTTPS only (``kubectl`` sends its bearer token over HTTPS only, as client-go does; the Azure
SDK's credentials ask for HTTPS)."""

from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path

from spotwise.core.clock import SYSTEM_CLOCK, Clock


def self_signed(
    folder: Path, name: str, *, subject: str, clock: Clock = SYSTEM_CLOCK
) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost valid for two days, named ``subject``, and its
    key (mode 0600), in ``folder``: ``NAME.pem`` and ``NAME.key``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    issuer = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    now = datetime.datetime.fromtimestamp(clock.time(), datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(issuer)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = folder / f"{name}.pem", folder / f"{name}.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    secret = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(secret)
    return cert_path, key_path
