"""The CA bundle the library verifies RDS and RDS Proxy with: what it holds, where it came from, that OpenSSL reads it."""

from __future__ import annotations

import datetime
import hashlib
import re
import ssl
import warnings
from pathlib import Path

import pytest

from rag.store.connection import RDS_CA_BUNDLE, RDS_CA_REGIONS

# certs/README.md: part 1 is Amazon RDS's global bundle, part 2 the Amazon Trust Services roots (RDS Proxy).
GLOBAL_BUNDLE_BYTES = 174_184
GLOBAL_BUNDLE_SHA256 = "fefac91d6800404461cece76724bc0a2383f4f556a1c9beb0813fac6f2e1e49f"
FILE_SHA256 = "7dace888be77a3eeb36f43594f249f86b2936b861436686198b340f4ed057d7a"
AMAZON_TRUST_ROOTS = {
    "Amazon Root CA 1", "Amazon Root CA 2", "Amazon Root CA 3", "Amazon Root CA 4",
    "Starfield Services Root Certificate Authority - G2",
}  # fmt: skip
G1_ROOT = re.compile(r"Amazon RDS ([a-z]{2}-[a-z]+-\d) Root CA (RSA2048|RSA4096|ECC384) G1")


def load(pem: bytes) -> list:
    from cryptography import x509

    with warnings.catch_warnings():  # a 2019 RDS CA has a negative serial number (cryptography warns)
        warnings.simplefilter("ignore")
        return x509.load_pem_x509_certificates(pem)


def common_name(cert) -> str:  # noqa: ANN001
    from cryptography import x509

    return cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value


def common_name_of_issuer(cert) -> str:  # noqa: ANN001
    from cryptography import x509

    return cert.issuer.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value


@pytest.fixture(scope="module")
def certificates() -> list:
    return load(RDS_CA_BUNDLE.read_bytes())


def test_the_bundle_is_the_documented_file() -> None:
    data = RDS_CA_BUNDLE.read_bytes()
    assert hashlib.sha256(data).hexdigest() == FILE_SHA256
    assert hashlib.sha256(data[:GLOBAL_BUNDLE_BYTES]).hexdigest() == GLOBAL_BUNDLE_SHA256
    assert data[GLOBAL_BUNDLE_BYTES:].startswith(b"-----BEGIN CERTIFICATE-----")


def test_every_certificate_is_an_amazon_rds_ca_or_an_amazon_trust_services_root(certificates: list) -> None:
    from cryptography import x509

    rds, roots = [], []
    for cert in certificates:
        name = common_name(cert)
        if name.startswith("Amazon RDS "):
            organization = cert.subject.get_attributes_for_oid(x509.NameOID.ORGANIZATION_NAME)[0].value
            unit = cert.subject.get_attributes_for_oid(x509.NameOID.ORGANIZATIONAL_UNIT_NAME)[0].value
            assert (organization, unit) == ("Amazon Web Services, Inc.", "Amazon RDS"), name
            assert common_name_of_issuer(cert).startswith("Amazon RDS "), name
            rds.append(cert)
        else:
            assert name in AMAZON_TRUST_ROOTS, name
            roots.append(cert)
        if cert.issuer == cert.subject:
            cert.verify_directly_issued_by(cert)  # a root: its own signature holds
    assert (len(rds), len(roots)) == (115, 5)


def test_the_proxy_roots_are_those_of_mozillas_store(certificates: list) -> None:
    import certifi
    from cryptography.hazmat.primitives import hashes

    mozilla = {c.fingerprint(hashes.SHA256()) for c in load(Path(certifi.where()).read_bytes())}
    ours = [c for c in certificates if common_name(c) in AMAZON_TRUST_ROOTS]
    assert len(ours) == 5 and all(c.fingerprint(hashes.SHA256()) in mozilla for c in ours)


def test_the_regions_the_code_verifies_are_those_with_valid_g1_roots_in_the_bundle(certificates: list) -> None:
    now = datetime.datetime.now(datetime.UTC)
    roots: dict[str, set[str]] = {}
    for cert in certificates:
        if (match := G1_ROOT.fullmatch(common_name(cert))) and cert.not_valid_after_utc > now:
            roots.setdefault(match[1], set()).add(match[2])
    assert set(roots) == RDS_CA_REGIONS
    # rds-ca-rsa2048-g1 is RDS's default CA for new instances: every covered region has its root.
    assert all("RSA2048" in kinds for kinds in roots.values())


def test_openssl_loads_the_bundle_as_trust_anchors() -> None:
    context = ssl.create_default_context(cafile=str(RDS_CA_BUNDLE))
    assert len(context.get_ca_certs()) == 120
