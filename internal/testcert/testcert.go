// Package testcert makes TLS certificates at test time: a certificate
// authority of its own and a leaf for 127.0.0.1, ::1 and localhost signed by
// it. Tests trust the authority explicitly, so a client that verifies
// certificates as net/http does accepts the leaf, and one without the
// authority rejects it.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"time"
)

// Certs is an authority and a server certificate it signed.
type Certs struct {
	Pool   *x509.CertPool  // holds the authority: a client's RootCAs
	Server tls.Certificate // for 127.0.0.1, ::1 and localhost
}

// New makes a fresh authority and server certificate, valid from an hour
// ago for a day.
func New() (*Certs, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "weft test authority"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:     []string{"localhost"},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &Certs{
		Pool:   pool,
		Server: tls.Certificate{Certificate: [][]byte{leafDER, caDER}, PrivateKey: key},
	}, nil
}

// ServerConfig returns a server configuration with the certificate.
func (c *Certs) ServerConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{c.Server}}
}

// ClientConfig returns a client configuration that trusts the authority.
func (c *Certs) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: c.Pool}
}
