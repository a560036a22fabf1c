//! TLS for the test SMTP server: a certificate authority made for one test
//! run (never a file in the repository, never a system root), the server
//! certificates it signs, and the written PEM file the server under test
//! reads as `mail.smtp_ca_file`.
//!
//! Why a CA of its own and not a self-signed server certificate: the relay
//! trusts a *CA* named in `mail.smtp_ca_file`, as an operator with a
//! private CA configures it; a test that trusted the server certificate
//! itself would not be the configuration production runs.

use std::{path::PathBuf, sync::Arc};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::{
    ServerConfig,
    pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer},
};

/// A certificate authority that exists for one test run.
pub struct TestCa {
    certificate: rcgen::Certificate,
    key: KeyPair,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TestCa")
    }
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}

impl TestCa {
    /// A new CA with a key of its own (each CA is a stranger to every
    /// other: a certificate one signs is refused by a client trusting
    /// another).
    pub fn new() -> Self {
        let key = KeyPair::generate().expect("a CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(
            DnType::CommonName,
            format!("AdmitOne test CA {}", uuid::Uuid::new_v4()),
        );
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let certificate = params.self_signed(&key).expect("a self-signed CA");
        Self { certificate, key }
    }

    /// The CA's certificate, PEM.
    pub fn pem(&self) -> String {
        self.certificate.pem()
    }

    /// The CA's certificate written to a file of its own (removed when the
    /// returned value is dropped), for `mail.smtp_ca_file`.
    pub fn pem_file(&self) -> PemFile {
        let path =
            std::env::temp_dir().join(format!("admitone-test-ca-{}.pem", uuid::Uuid::new_v4()));
        std::fs::write(&path, self.pem()).expect("write the CA's PEM");
        PemFile { path }
    }

    /// A server's TLS configuration: a certificate for `names` (DNS names
    /// or IP addresses) signed by this CA, sent with the CA's certificate.
    pub fn server_config(&self, names: &[&str]) -> Arc<ServerConfig> {
        let key = KeyPair::generate().expect("a server key");
        let mut params =
            CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
                .expect("server certificate parameters");
        params.distinguished_name.push(
            DnType::CommonName,
            names.first().copied().unwrap_or("server"),
        );
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let certificate = params
            .signed_by(&key, &self.certificate, &self.key)
            .expect("a server certificate");
        let chain = vec![certificate.der().clone(), self.certificate.der().clone()];
        let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let config =
            ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .expect("TLS versions")
                .with_no_client_auth()
                .with_single_cert(chain, private)
                .expect("a server TLS configuration");
        Arc::new(config)
    }
}

/// A written PEM file, removed on drop.
#[derive(Debug)]
pub struct PemFile {
    path: PathBuf,
}

impl PemFile {
    pub fn path(&self) -> String {
        self.path.display().to_string()
    }
}

impl Drop for PemFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
