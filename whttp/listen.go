package whttp

// The net/http-shaped entry points: listen on an address, and serve TLS
// from certificate files. Each is a thin wrapper over weft.Listen and
// Serve.

import (
	"crypto/tls"
	"net/http"

	"github.com/weft-go/weft"
)

// ListenAndServe listens on s.Addr (":http" if empty) and serves it as
// Serve does: it suspends t for as long as it serves, and returns nil when
// t is cancelled (the graceful stop), http.ErrServerClosed after Shutdown
// or Close, or the error that made listening fail. After Shutdown or Close
// it returns http.ErrServerClosed without listening.
func (s *Server) ListenAndServe(t *weft.Task) error {
	if s.isClosed() {
		return http.ErrServerClosed
	}
	ln, err := weft.Listen(t, "tcp", addrOr(s.Addr, ":http"))
	if err != nil {
		return err
	}
	return s.Serve(t, ln)
}

// ListenAndServeTLS listens on s.Addr (":https" if empty) and serves HTTPS
// on it as ServeTLS does, with the same returns as ListenAndServe.
func (s *Server) ListenAndServeTLS(t *weft.Task, certFile, keyFile string) error {
	if s.isClosed() {
		return http.ErrServerClosed
	}
	config, err := s.tlsConfigWith(certFile, keyFile)
	if err != nil {
		return err
	}
	ln, err := weft.Listen(t, "tcp", addrOr(s.Addr, ":https"))
	if err != nil {
		return err
	}
	return s.serve(t, ln, config)
}

// ServeTLS serves HTTPS on ln as Serve does with s.TLSConfig set: each
// connection starts with a TLS handshake, and HTTP/2 is offered by ALPN
// unless Protocols says otherwise. certFile and keyFile name a PEM
// certificate (chain) and its private key, loaded once before serving; as
// with net/http they may be empty when s.TLSConfig already holds
// Certificates, GetCertificate or GetConfigForClient. s.TLSConfig is not
// changed (a clone is used). It suspends t for as long as it serves, with
// Serve's returns, or returns the error of loading the files at once
// (closing ln).
func (s *Server) ServeTLS(t *weft.Task, ln *weft.Listener, certFile, keyFile string) error {
	config, err := s.tlsConfigWith(certFile, keyFile)
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return err
	}
	return s.serve(t, ln, config)
}

// tlsConfigWith returns a clone of s.TLSConfig (or a new config) holding
// the key pair in certFile and keyFile, which are loaded only when given
// or when the config has no other source of certificates.
func (s *Server) tlsConfigWith(certFile, keyFile string) (*tls.Config, error) {
	config := &tls.Config{}
	if s.TLSConfig != nil {
		config = s.TLSConfig.Clone()
	}
	has := len(config.Certificates) > 0 || config.GetCertificate != nil || config.GetConfigForClient != nil
	if !has || certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		config.Certificates = append([]tls.Certificate{cert}, config.Certificates...)
	}
	return config, nil
}

// isClosed reports whether Shutdown or Close was called.
func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func addrOr(addr, def string) string {
	if addr == "" {
		return def
	}
	return addr
}

// ListenAndServe listens on addr and serves handler on it, as net/http's
// function of that name does, with Server.ListenAndServe's suspension and
// returns; a nil handler serves http.DefaultServeMux. Cancel t to stop it
// gracefully.
func ListenAndServe(t *weft.Task, addr string, handler Handler) error {
	s := &Server{Addr: addr, Handler: handler}
	return s.ListenAndServe(t)
}

// ListenAndServeTLS is ListenAndServe over TLS with the key pair in
// certFile and keyFile, as net/http's function of that name.
func ListenAndServeTLS(t *weft.Task, addr, certFile, keyFile string, handler Handler) error {
	s := &Server{Addr: addr, Handler: handler}
	return s.ListenAndServeTLS(t, certFile, keyFile)
}
