"""TLS for the twin: a throw-away CA and a server certificate, generated at start.

The unmodified SDK opens TLS channels to ``127.0.0.1`` while naming authorities such as
``api.spot.robot``, ``auth.spot.robot`` and ``id.spot.robot``; a server certificate whose
subjectAltName covers ``*.spot.robot`` satisfies all of them. The client trusts the CA
through ``create_standard_sdk(..., cert_resource_glob=ca_pem_path)``.

Only the CA *certificate* is written to disk (the client needs a file to trust); both
private keys live in memory for the life of the twin and are never written anywhere.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DNS_NAMES = ("*.spot.robot", "spot.robot", "localhost")
IP_ADDRESSES = ("127.0.0.1",)


@dataclass(frozen=True)
class TwinCertificates:
    ca_pem_path: Path  # the CA certificate a client trusts (public)
    server_chain_pem: bytes  # server certificate (public)
    server_key_pem: bytes = b""  # server private key: memory only

    def __repr__(self) -> str:  # never print key material
        return f"TwinCertificates(ca_pem_path={str(self.ca_pem_path)!r})"


def generate_certificates(directory: Path, *, valid_days: int = 7) -> TwinCertificates:
    """A fresh CA and a server certificate for ``*.spot.robot`` and 127.0.0.1 (ECDSA P-256)."""
    now = dt.datetime.now(dt.UTC)
    not_before, not_after = now - dt.timedelta(minutes=5), now + dt.timedelta(days=valid_days)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "CLUE Twin throw-away CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )

    key = ec.generate_private_key(ec.SECP256R1())
    san = [x509.DNSName(n) for n in DNS_NAMES]
    san += [x509.IPAddress(ipaddress.ip_address(a)) for a in IP_ADDRESSES]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "api.spot.robot")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName(san), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    directory.mkdir(parents=True, exist_ok=True)
    ca_path = directory / "twin-ca.pem"
    ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    return TwinCertificates(
        ca_pem_path=ca_path,
        server_chain_pem=cert.public_bytes(serialization.Encoding.PEM),
        server_key_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
